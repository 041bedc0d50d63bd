/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest -> host, in order: L2 (guest MAC, ARP/NDP with the gateway only),
 * IP header sanity, anti-spoofing, then the decision (decide_out(),
 * policy.bpf.h). Used by the TC ingress program (default) and the opt-in
 * XDP program alike.
 */
#ifndef TF_FROM_GUEST_BPF_H
#define TF_FROM_GUEST_BPF_H

#include "l2.bpf.h"
#include "policy.bpf.h"

static __always_inline enum judgement ip4_from_guest(struct judge *j, struct cursor *c)
{
	const struct tf_session *s = j->s;
	struct iphdr *iph = parse_ip4(c, &j->p);
	__u16 reason;

	if (!iph)
		return deny(j, TF_REASON_MALFORMED);
	reason = ip4_reason(iph);
	if (reason)
		return deny(j, reason);
	/* L4 before the source check, so a spoofing event carries the ports. */
	if (parse_l4(c, &j->p))
		return deny(j, TF_REASON_MALFORMED);
	syn_opts_from_guest(j, c);
	if (!(s->flags & TF_SF_IPV4) || iph->saddr != s->guest_ip4)
		return deny(j, TF_REASON_SPOOFED_SRC);
	if (j->p.proto == IPPROTO_ICMP && j->p.icmp_type != ICMP_ECHO)
		return deny(j, TF_REASON_ICMP_TYPE);
	return decide_out(j);
}

static __always_inline enum judgement ip6_from_guest(struct judge *j, struct cursor *c,
						     const struct ethhdr *eth)
{
	const struct tf_session *s = j->s;
	struct ipv6hdr *ip6 = parse_ip6(c, &j->p);
	__u16 reason;

	if (!ip6)
		return deny(j, TF_REASON_MALFORMED);
	reason = ip6_nexthdr_reason(ip6->nexthdr);
	if (reason)
		return deny(j, reason);
	if (!(s->flags & TF_SF_IPV6))
		return deny(j, TF_REASON_SPOOFED_SRC);
	if (parse_l4(c, &j->p))
		return deny(j, TF_REASON_MALFORMED);
	syn_opts_from_guest(j, c);
	if (j->p.proto == IPPROTO_ICMPV6 && is_ndp_type(j->p.icmp_type))
		return judge_ndp(j, c, ip6, eth, TF_DIR_FROM_GUEST);
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

static __always_inline enum judgement judge_from_guest(struct judge *j, void *data, void *data_end)
{
	struct cursor c = { .pos = data, .end = data_end };
	struct ethhdr *eth = judge_l2(j, &c, TF_DIR_FROM_GUEST);

	if (!eth)
		return JUDGE_DENY;
	switch (eth->h_proto) {
	case bpf_htons(ETH_P_ARP):
		return judge_arp(j, &c, eth, TF_DIR_FROM_GUEST);
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
