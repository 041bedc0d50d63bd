/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What both directions judge the same way, by the direction's own ends
 * (sender and receiver: the guest and its gateway): the device's session
 * and the Ethernet header, ARP, NDP, and the IP headers' refusals.
 */
#ifndef TF_L2_BPF_H
#define TF_L2_BPF_H

#include "judge.bpf.h"

/*
 * The device's session, the Ethernet header, the sender's MAC (the
 * guest's from it, the gateway's to it) and VLAN tags (in the frame, or
 * taken off by the stack at TC). Returns the Ethernet header, or NULL once
 * j is denied.
 */
static __always_inline struct ethhdr *judge_l2(struct judge *j, struct cursor *c, __u8 dir)
{
	const struct tf_session *s;
	struct ethhdr *eth;

	j->dir = dir;
	s = bpf_map_lookup_elem(&tf_sessions, &j->dev);
	if (!s) {
		deny(j, TF_REASON_NO_SESSION);
		return NULL;
	}
	j->s = s;
	j->mode = s->flags & (TF_SF_AUDIT | TF_SF_REJECT);
	j->sid = s->sid;
	j->ver = s->rules_ver;
	j->p.pver = s->policy_ver;

	eth = parse_eth(c, &j->p);
	if (!eth) {
		deny(j, TF_REASON_MALFORMED);
		return NULL;
	}
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

/*
 * ARP between the guest and its gateway only, in direction dir (a
 * constant: each caller's copy keeps one side): Ethernet/IPv4, a request
 * or reply from the sender's MAC and address about the receiver's address,
 * to broadcast or to the receiver's MAC.
 */
static __always_inline enum judgement judge_arp(struct judge *j, struct cursor *c,
						const struct ethhdr *eth, const __u8 dir)
{
	const struct tf_session *s = j->s;
	const int out = dir == TF_DIR_FROM_GUEST;
	const __u8 *sender_mac = out ? s->guest_mac : s->gw_mac;
	const __u8 *receiver_mac = out ? s->gw_mac : s->guest_mac;
	__be32 sender_ip = out ? s->guest_ip4 : s->gw_ip4;
	__be32 receiver_ip = out ? s->gw_ip4 : s->guest_ip4;
	struct arp_eth *a = parse_arp(c);

	if (!a)
		return deny(j, TF_REASON_MALFORMED);
	if (a->htype != bpf_htons(ARPHRD_ETHER) || a->ptype != bpf_htons(ETH_P_IP) ||
	    a->hlen != ETH_ALEN || a->plen != sizeof(__be32) ||
	    (a->op != bpf_htons(ARPOP_REQUEST) && a->op != bpf_htons(ARPOP_REPLY)))
		return deny(j, TF_REASON_ARP);
	if (!(s->flags & TF_SF_IPV4) || !mac_eq(a->sha, sender_mac) ||
	    *(__be32 *)a->spa != sender_ip || *(__be32 *)a->tpa != receiver_ip)
		return deny(j, TF_REASON_ARP);
	if (!mac_is_bcast(eth->h_dest) && !mac_eq(eth->h_dest, receiver_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	return allow(j, TF_REASON_ALLOW_ARP, 0);
}

/* The NDP messages a guest sends its gateway (to_guest adds router advertisements). */
static __always_inline int is_ndp_type(__u8 type)
{
	return type == NDISC_ROUTER_SOLICITATION || type == NDISC_NEIGHBOUR_SOLICITATION ||
	       type == NDISC_NEIGHBOUR_ADVERTISEMENT;
}

/*
 * NDP between the guest and its gateway, in direction dir (a constant):
 * hop limit 255, from one of the sender's addresses, on the link (to
 * link-scope multicast or to one of the receiver's addresses) and to the
 * receiver's MAC or an IPv6 multicast MAC; the stack forwards NDP-typed
 * ICMPv6 to anywhere like any other packet. From the guest, which may
 * solicit before it has an address (::), a wrong source is spoofing and
 * its MAC is checked before the destination; and what it sends is only
 * what reaching the gateway needs: router solicitation, neighbour
 * solicitation for the gateway, advertisement of its own address.
 */
static __always_inline enum judgement judge_ndp(struct judge *j, struct cursor *c,
						const struct ipv6hdr *ip6, const struct ethhdr *eth,
						const __u8 dir)
{
	const struct tf_session *s = j->s;
	const int out = dir == TF_DIR_FROM_GUEST;
	const __u8 *sender = out ? s->guest_ip6 : s->gw_ip6;
	const __u8 *sender_ll = out ? s->guest_ip6_ll : s->gw_ip6_ll;
	const __u8 *receiver = out ? s->gw_ip6 : s->guest_ip6;
	const __u8 *receiver_ll = out ? s->gw_ip6_ll : s->guest_ip6_ll;
	const __u8 *receiver_mac = out ? s->gw_mac : s->guest_mac;
	__u8 type = j->p.icmp_type;
	struct nd_target *t;

	if (ip6->hop_limit != NDP_HOP_LIMIT)
		return deny(j, TF_REASON_NDP);
	if (!ip6_eq(&ip6->saddr, sender) && !ip6_eq(&ip6->saddr, sender_ll) &&
	    !(out && ip6_is_unspec(&ip6->saddr)))
		return deny(j, out ? TF_REASON_SPOOFED_SRC : TF_REASON_NDP);
	if (out && !mac_is_ip6_mcast(eth->h_dest) && !mac_eq(eth->h_dest, receiver_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	if (!ip6_is_ll_mcast(&ip6->daddr) && !ip6_eq(&ip6->daddr, receiver) &&
	    !ip6_eq(&ip6->daddr, receiver_ll))
		return deny(j, TF_REASON_NDP);
	if (!out && !mac_is_ip6_mcast(eth->h_dest) && !mac_eq(eth->h_dest, receiver_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	if (!out || type == NDISC_ROUTER_SOLICITATION)
		return allow(j, TF_REASON_ALLOW_NDP, 0);
	/* parse_l4() took type, code, checksum and the 4 flag bytes: the target follows. */
	t = cur_pull(c, sizeof(*t));
	if (!t)
		return deny(j, TF_REASON_MALFORMED);
	if (type == NDISC_NEIGHBOUR_SOLICITATION &&
	    (ip6_eq(t->addr, s->gw_ip6) || ip6_eq(t->addr, s->gw_ip6_ll)))
		return allow(j, TF_REASON_ALLOW_NDP, 0);
	if (type == NDISC_NEIGHBOUR_ADVERTISEMENT &&
	    (ip6_eq(t->addr, s->guest_ip6) || ip6_eq(t->addr, s->guest_ip6_ll)))
		return allow(j, TF_REASON_ALLOW_NDP, 0);
	return deny(j, TF_REASON_NDP);
}

/* What an IPv4 header says before its payload is read: options and fragments are refused. */
static __always_inline __u16 ip4_reason(const struct iphdr *iph)
{
	if (iph->ihl != 5)
		return TF_REASON_IP_OPTIONS;
	if (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return TF_REASON_FRAGMENT;
	return 0;
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

#endif /* TF_L2_BPF_H */
