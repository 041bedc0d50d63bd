/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest -> host, in order: L2 (guest MAC, ARP/NDP with the gateway only),
 * IP header sanity, anti-spoofing, then decide_out(). Used by the TC
 * ingress program (default) and the opt-in XDP program alike.
 */
#ifndef TF_FROM_GUEST_BPF_H
#define TF_FROM_GUEST_BPF_H

#include "ip.bpf.h"

static __always_inline int arp_from_guest(struct judge *j, struct cursor *c, const struct ethhdr *eth)
{
	const struct tf_session *s = j->s;
	struct arp_eth *a = cur_pull(c, sizeof(*a));

	if (!a)
		return deny(j, TF_REASON_MALFORMED);
	if (a->htype != bpf_htons(1) || a->ptype != bpf_htons(ETH_P_IP) ||
	    a->hlen != 6 || a->plen != 4)
		return deny(j, TF_REASON_ARP);
	if (a->op != bpf_htons(ARPOP_REQUEST) && a->op != bpf_htons(ARPOP_REPLY))
		return deny(j, TF_REASON_ARP);
	if (!(s->flags & TF_SF_IPV4) || !mac_eq(a->sha, s->guest_mac) ||
	    *(__be32 *)a->spa != s->guest_ip4 || *(__be32 *)a->tpa != s->gw_ip4)
		return deny(j, TF_REASON_ARP);
	if (!mac_is_bcast(eth->h_dest) && !mac_eq(eth->h_dest, s->gw_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	return allow(j, TF_REASON_ALLOW_ARP, 0);
}

static __always_inline int ip4_from_guest(struct judge *j, struct cursor *c)
{
	const struct tf_session *s = j->s;
	struct iphdr *iph = cur_pull(c, sizeof(*iph));

	if (!iph || iph->version != 4 || iph->ihl < 5 || bpf_ntohs(iph->tot_len) < iph->ihl * 4)
		return deny(j, TF_REASON_MALFORMED);
	j->p.family = TF_FAM_IPV4;
	j->p.l4_len = bpf_ntohs(iph->tot_len) - iph->ihl * 4;
	j->p.proto = iph->protocol;
	ip4_copy(j->p.saddr, &iph->saddr);
	ip4_copy(j->p.daddr, &iph->daddr);
	if (iph->ihl != 5)
		return deny(j, TF_REASON_IP_OPTIONS);
	if (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return deny(j, TF_REASON_FRAGMENT);
	/* L4 before the source check, so a spoofing event carries the ports. */
	if (parse_l4(j, c))
		return deny(j, TF_REASON_MALFORMED);
	syn_opts_from_guest(j, c);
	if (!(s->flags & TF_SF_IPV4) || iph->saddr != s->guest_ip4)
		return deny(j, TF_REASON_SPOOFED_SRC);
	if (j->p.proto == IPPROTO_ICMP && j->p.icmp_type != ICMP_ECHO)
		return deny(j, TF_REASON_ICMP_TYPE);
	return decide_out(j);
}

/*
 * NDP a guest needs to reach its gateway: router solicitation, neighbour
 * solicitation for the gateway, neighbour advertisement of its own
 * address. Hop limit 255 (RFC 4861 7.1.1: off-link NDP is invalid).
 */
static __always_inline int ndp_from_guest(struct judge *j, struct cursor *c,
					  const struct ipv6hdr *ip6, const struct ethhdr *eth)
{
	const struct tf_session *s = j->s;
	__u8 type = j->p.icmp_type;
	struct nd_target *t;

	if (ip6->hop_limit != 255)
		return deny(j, TF_REASON_NDP);
	if (!ip6_eq(&ip6->saddr, s->guest_ip6) && !ip6_eq(&ip6->saddr, s->guest_ip6_ll) &&
	    !ip6_is_unspec(&ip6->saddr))
		return deny(j, TF_REASON_SPOOFED_SRC);
	if (!mac_is_ip6_mcast(eth->h_dest) && !mac_eq(eth->h_dest, s->gw_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	/*
	 * NDP stays on the link: to link-scope multicast or to the gateway. The
	 * stack forwards NDP-typed ICMPv6 to anywhere like any other packet.
	 */
	if (!ip6_is_ll_mcast(&ip6->daddr) && !ip6_eq(&ip6->daddr, s->gw_ip6) &&
	    !ip6_eq(&ip6->daddr, s->gw_ip6_ll))
		return deny(j, TF_REASON_NDP);
	if (type == NDISC_ROUTER_SOLICITATION)
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

static __always_inline int ip6_from_guest(struct judge *j, struct cursor *c, const struct ethhdr *eth)
{
	const struct tf_session *s = j->s;
	struct ipv6hdr *ip6 = cur_pull(c, sizeof(*ip6));
	__u16 reason;

	if (!ip6 || ip6->version != 6)
		return deny(j, TF_REASON_MALFORMED);
	j->p.family = TF_FAM_IPV6;
	j->p.l4_len = bpf_ntohs(ip6->payload_len);
	j->p.proto = ip6->nexthdr;
	ip6_copy(j->p.saddr, &ip6->saddr);
	ip6_copy(j->p.daddr, &ip6->daddr);
	reason = ip6_nexthdr_reason(ip6->nexthdr);
	if (reason)
		return deny(j, reason);
	if (!(s->flags & TF_SF_IPV6))
		return deny(j, TF_REASON_SPOOFED_SRC);
	if (parse_l4(j, c))
		return deny(j, TF_REASON_MALFORMED);
	syn_opts_from_guest(j, c);
	if (j->p.proto == IPPROTO_ICMPV6 && is_ndp_type(j->p.icmp_type))
		return ndp_from_guest(j, c, ip6, eth);
	if (!mac_eq(eth->h_dest, s->gw_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	/*
	 * The guest's link-local address is its own only towards a link-local
	 * resolver (RFC 6724 rule 2 picks it as the source there).
	 */
	if (!ip6_eq(&ip6->saddr, s->guest_ip6) &&
	    !(ip6_eq(&ip6->saddr, s->guest_ip6_ll) && (s->flags & TF_SF_RESOLVER6) &&
	      ip6_is_link_local(s->resolver_ip6) && ip6_eq(&ip6->daddr, s->resolver_ip6)))
		return deny(j, TF_REASON_SPOOFED_SRC);
	if (j->p.proto == IPPROTO_ICMPV6 && j->p.icmp_type != ICMPV6_ECHO_REQUEST)
		return deny(j, TF_REASON_ICMP_TYPE);
	return decide_out(j);
}

static __always_inline int judge_from_guest(struct judge *j, void *data, void *data_end)
{
	struct cursor c = { .pos = data, .end = data_end };
	struct ethhdr *eth = judge_l2(j, &c, TF_DIR_FROM_GUEST);

	if (!eth)
		return TF_VERDICT_DENY;
	switch (eth->h_proto) {
	case bpf_htons(ETH_P_ARP):
		return arp_from_guest(j, &c, eth);
	case bpf_htons(ETH_P_IP):
		if (!mac_eq(eth->h_dest, j->s->gw_mac))
			return deny(j, TF_REASON_L2_DST_MAC);
		return ip4_from_guest(j, &c);
	case bpf_htons(ETH_P_IPV6):
		return ip6_from_guest(j, &c, eth);
	}
	return deny(j, TF_REASON_L2_ETHERTYPE);
}

#endif /* TF_FROM_GUEST_BPF_H */
