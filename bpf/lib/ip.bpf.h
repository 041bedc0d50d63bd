/* SPDX-License-Identifier: GPL-2.0 */
/* IP-level helpers shared by both directions: L4 ports, NDP types, IPv6 extension headers. */
#ifndef TF_IP_BPF_H
#define TF_IP_BPF_H

#include "policy.bpf.h"

/*
 * A SYN's TCP options into the per-CPU scratch, for the TLS SYN path to
 * read in this same run (tls.bpf.h): every byte behind a check against the
 * packet's end at a constant offset, the one form of bound the verifier
 * follows here; bytes past the end leave syn_optlen short of syn_optwant,
 * which reads as malformed.
 */
static __always_inline void tcp_opts_copy(struct judge *j, const struct cursor *c, __u32 n)
{
	__u32 zero = 0, k;
	const __u8 *o = c->pos;
	struct tls_scratch *t = bpf_map_lookup_elem(&tf_tlsscratch, &zero);

	if (!t)
		return;
	t->syn_optlen = 0;
	t->syn_optwant = (__u8)n;
#pragma unroll
	for (k = 0; k < TF_TCP_OPTS_MAX; k++) {
		if (k < n && (void *)(o + k + 1) <= c->end) {
			t->syn_opts[k] = o[k];
			t->syn_optlen = k + 1;
		}
	}
	j->p.tcp_opts = 1;
}

/*
 * A guest's SYN: keep its options for a TLS port's check. Called by the
 * guest -> host judges only (a SYN-ACK to the guest needs nothing of it),
 * with c just past the TCP header parse_l4() read.
 */
static __always_inline void syn_opts_from_guest(struct judge *j, const struct cursor *c)
{
	if (j->p.proto == IPPROTO_TCP &&
	    (j->p.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN && j->p.tcp_hlen > 20)
		tcp_opts_copy(j, c, j->p.tcp_hlen - 20);
}

/* Ports (or ICMP type/code) into j->p; the ICMP echo id stands in for sport. */
static __always_inline int parse_l4(struct judge *j, struct cursor *c)
{
	struct tcphdr *th;
	struct udphdr *uh;
	struct icmp_head *ih;

	switch (j->p.proto) {
	case IPPROTO_TCP:
		th = cur_pull(c, sizeof(*th));
		if (!th || th->doff < 5)
			return -1;
		j->p.sport = th->source;
		j->p.dport = th->dest;
		j->p.tcp_flags = ((__u8 *)th)[13];
		j->p.tcp_hlen = th->doff * 4;
		j->p.tcp_seq = bpf_ntohl(th->seq);
		j->p.tcp_ack = bpf_ntohl(th->ack_seq);
		return j->p.tcp_hlen > j->p.l4_len ? -1 : 0;
	case IPPROTO_UDP:
		uh = cur_pull(c, sizeof(*uh));
		if (!uh)
			return -1;
		j->p.sport = uh->source;
		j->p.dport = uh->dest;
		j->p.udp_len = bpf_ntohs(uh->len);
		return 0;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		ih = cur_pull(c, sizeof(*ih));
		if (!ih)
			return -1;
		j->p.icmp_type = ih->type;
		j->p.sport = ih->id;
		j->p.dport = 0;
		return 0;
	}
	return 0;
}

static __always_inline int is_ndp_type(__u8 type)
{
	return type == NDISC_ROUTER_SOLICITATION || type == NDISC_NEIGHBOUR_SOLICITATION ||
	       type == NDISC_NEIGHBOUR_ADVERTISEMENT;
}

/* Extension headers are not walked: any of them denies (documented). */
static __always_inline __u16 ip6_nexthdr_reason(__u8 nh)
{
	switch (nh) {
	case IPPROTO_FRAGMENT:
		return TF_REASON_FRAGMENT;
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_ESP:
	case IPPROTO_MH:
		return TF_REASON_IPV6_EXTHDR;
	}
	return 0;
}

/*
 * What both directions judge first: the device's session, the Ethernet
 * header, the sender's MAC (the guest's from it, the gateway's to it) and
 * VLAN tags (in the frame, or taken off by the stack at TC). Returns the
 * Ethernet header, or NULL once j is denied.
 */
static __always_inline struct ethhdr *judge_l2(struct judge *j, struct cursor *c, __u8 dir)
{
	const struct tf_session *s;
	struct ethhdr *eth;

	j->dir = dir;
	s = bpf_map_lookup_elem(&tf_sessions, &j->ifindex);
	if (!s) {
		deny(j, TF_REASON_NO_SESSION);
		return NULL;
	}
	j->s = s;
	j->sid = s->sid;
	j->ver = s->policy_ver;

	eth = cur_pull(c, sizeof(*eth));
	if (!eth) {
		deny(j, TF_REASON_MALFORMED);
		return NULL;
	}
	__builtin_memcpy(j->p.smac, eth->h_source, 6);
	j->p.ethertype = eth->h_proto;
	if (!mac_eq(eth->h_source, dir == TF_DIR_FROM_GUEST ? s->guest_mac : s->gw_mac)) {
		deny(j, TF_REASON_L2_SRC_MAC);
		return NULL;
	}
	if (j->vlan || eth->h_proto == bpf_htons(ETH_P_8021Q) ||
	    eth->h_proto == bpf_htons(ETH_P_8021AD)) {
		deny(j, TF_REASON_L2_VLAN);
		return NULL;
	}
	return eth;
}

#endif /* TF_IP_BPF_H */
