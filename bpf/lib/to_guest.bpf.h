/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host -> guest: only ARP/NDP from the gateway, packets of flows the guest
 * opened, DNS answers to queries it made (dns.bpf.h), and ICMP errors
 * about such flows (PMTU discovery), each an event and cut to what it
 * needs (icmp.bpf.h). Everything else is unsolicited.
 */
#ifndef TF_TO_GUEST_BPF_H
#define TF_TO_GUEST_BPF_H

#include "l2.bpf.h"
#include "policy.bpf.h"
#include "icmp.bpf.h"

/*
 * Tracked flow lookup for what an ICMP error quotes (remote = the quoted
 * destination): a live flow allowed under the generation in force. An
 * error about a flow not re-judged since a rule change is refused; the
 * flow's own next packet re-judges it.
 */
static __always_inline int flow_known(const struct judge *j, const __u8 *raddr, __u8 family,
				      __u8 proto, __be16 gport, __be16 rport)
{
	struct tf_flow_key k = { .family = family, .proto = proto, .gport = gport, .rport = rport };
	void *flows = session_flows(j->sid);
	struct tf_flow *f;

	if (!flows)
		return 0;
	__builtin_memcpy(k.raddr, raddr, 16);
	f = bpf_map_lookup_elem(flows, &k);
	return f && f->policy_ver == j->p.pver && !flow_expired(f, proto, flow_clock());
}

/* The inner L4 of an ICMP error: the guest's packet, so guest = source. */
static __always_inline int inner_flow_known(const struct judge *j, struct cursor *c, __u8 family,
					    __u8 proto, const __u8 *raddr)
{
	__be16 *ports;
	struct icmp_head *ih;

	switch (proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		ports = cur_pull(c, 4);
		if (!ports)
			return 0;
		return flow_known(j, raddr, family, proto, ports[0], ports[1]);
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		ih = cur_pull(c, sizeof(*ih));
		if (!ih)
			return 0;
		return flow_known(j, raddr, family, proto, ih->id, 0);
	}
	return 0;
}

static __always_inline enum judgement ip4_icmp_error(struct judge *j, struct cursor *c)
{
	struct iphdr *in;
	__u8 raddr[16] = {};

	if (c->pos + sizeof(*in) + ICMP_QUOTE_L4 > c->end && !j->pulled)
		return JUDGE_NEED_PULL;
	in = cur_pull(c, sizeof(*in));

	if (!in || in->version != 4 || in->ihl != 5)
		return deny(j, TF_REASON_MALFORMED);
	if (in->saddr != j->s->guest_ip4)
		return deny(j, TF_REASON_UNSOLICITED);
	ip4_copy(raddr, &in->daddr);
	if (!inner_flow_known(j, c, TF_FAM_IPV4, in->protocol, raddr))
		return deny(j, TF_REASON_UNSOLICITED);
	j->trim = icmp_error_too_long(j);
	return allow(j, TF_REASON_ALLOW_ICMP_ERROR, 1);
}

static __always_inline enum judgement ip6_icmp_error(struct judge *j, struct cursor *c)
{
	struct ipv6hdr *in;
	__u8 raddr[16];

	if (c->pos + sizeof(*in) + ICMP_QUOTE_L4 > c->end && !j->pulled)
		return JUDGE_NEED_PULL;
	in = cur_pull(c, sizeof(*in));

	if (!in || in->version != 6)
		return deny(j, TF_REASON_MALFORMED);
	if (!ip6_eq(&in->saddr, j->s->guest_ip6))
		return deny(j, TF_REASON_UNSOLICITED);
	ip6_copy(raddr, &in->daddr);
	if (!inner_flow_known(j, c, TF_FAM_IPV6, in->nexthdr, raddr))
		return deny(j, TF_REASON_UNSOLICITED);
	j->trim = icmp_error_too_long(j);
	return allow(j, TF_REASON_ALLOW_ICMP_ERROR, 1);
}

/* UDP from the session's resolver address and port: a DNS answer. */
static __always_inline int from_resolver(const struct judge *j)
{
	return j->p.proto == IPPROTO_UDP && resolver_is(j->s, j->p.family, j->p.saddr, j->p.sport);
}

/*
 * The flow of a host->guest packet (key k: remote = source), copied to *f:
 * 0 if it is live and allowed under the generation in force, re-judged
 * first if a rule changed since it was (as decide_out() does), else the
 * deny reason: unsolicited if there is none or it expired, revoked if the
 * policy in force no longer allows it.
 */
static __always_inline __u16 reply_flow(struct judge *j, void *flows, const struct tf_flow_key *k,
					struct tf_flow *f)
{
	struct tf_flow *cur = bpf_map_lookup_elem(flows, k);
	struct allowance a = {};
	__u64 now;
	__u16 reason;
	int last;

	if (!cur)
		return TF_REASON_UNSOLICITED;
	now = flow_clock();
	if (flow_expired(cur, k->proto, now))
		return TF_REASON_UNSOLICITED;
	if (cur->policy_ver == j->p.pver) {
		flow_touch(cur, flow_pkt_flags(j), now);
		last = flow_close_step(cur, j);
		__builtin_memcpy(f, cur, sizeof(*f));
		if (last && f->state == TF_FLOW_OPEN)
			flow_remove(j->sid, flows, k);
		return 0;
	}
	__builtin_memcpy(f, cur, sizeof(*f));
	reason = judge_flow(j, k, f->flags & TF_FF_LEARNED, &a);
	flow_touch(f, flow_pkt_flags(j), now);
	if (audit_passes(j, reason)) {
		/* Kept, as decide_out() keeps it; the guest's side reports it. */
		reason = 0;
		a.reason = TF_REASON_ALLOW_RULE;
		a.tls = 0;
	}
	return flow_rejudged(j, flows, k, f, reason, &a);
}

/*
 * TCP, UDP and ICMP echo replies: the flow the guest opened, seen from its
 * far end (TCP in a TLS state decides in tls_flow_reply()). DNS answers
 * are judged by content instead (JUDGE_NEED_DNS): the outstanding query they
 * must match is more than the flow says.
 */
static __always_inline enum judgement reply_to_guest(struct judge *j)
{
	struct tf_flow_key k = {
		.family = j->p.family,
		.proto = j->p.proto,
		.gport = j->p.dport,
		.rport = j->p.sport,
	};
	struct tf_flow f, *cur;
	void *flows;
	__u16 reason;

	if (from_resolver(j))
		return JUDGE_NEED_DNS;
	if (j->p.proto == IPPROTO_ICMP || j->p.proto == IPPROTO_ICMPV6) {
		k.gport = j->p.sport; /* echo id */
		k.rport = 0;
	}
	flows = session_flows(j->sid);
	if (!flows)
		return deny(j, TF_REASON_UNSOLICITED);
	__builtin_memcpy(k.raddr, j->p.saddr, 16);
	reason = reply_flow(j, flows, &k, &f);
	if (reason)
		return deny(j, reason);
	if (j->p.proto != IPPROTO_TCP || f.state == TF_FLOW_OPEN)
		return allow(j, TF_REASON_ALLOW_FLOW, 0);
	/*
	 * TLS transitions are single stores into the map's element, not a
	 * copy written back (tls_flow_reply(): the guest's side writes
	 * tls_open_at meanwhile).
	 */
	cur = bpf_map_lookup_elem(flows, &k);
	if (!cur)
		return deny(j, TF_REASON_UNSOLICITED);
	return tls_flow_reply(j, flows, &k, cur);
}

static __always_inline enum judgement ip4_to_guest(struct judge *j, struct cursor *c)
{
	const struct tf_session *s = j->s;
	struct iphdr *iph = parse_ip4(c, &j->p);
	__u16 reason;

	if (!iph)
		return deny(j, TF_REASON_MALFORMED);
	reason = ip4_reason(iph);
	if (reason)
		return deny(j, reason);
	if (!(s->flags & TF_SF_IPV4) || iph->daddr != s->guest_ip4)
		return deny(j, TF_REASON_DST_NOT_GUEST);
	if (parse_l4(c, &j->p))
		return deny(j, TF_REASON_MALFORMED);
	if (j->p.proto == IPPROTO_ICMP) {
		switch (j->p.icmp_type) {
		case ICMP_ECHOREPLY:
			break;
		case ICMP_DEST_UNREACH:
		case ICMP_TIME_EXCEEDED:
		case ICMP_PARAMETERPROB:
			return ip4_icmp_error(j, c);
		default:
			return deny(j, TF_REASON_ICMP_TYPE);
		}
	} else if (j->p.proto != IPPROTO_TCP && j->p.proto != IPPROTO_UDP) {
		return deny(j, TF_REASON_L4_PROTO);
	}
	return reply_to_guest(j);
}

static __always_inline enum judgement ip6_to_guest(struct judge *j, struct cursor *c,
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
		return deny(j, TF_REASON_DST_NOT_GUEST);
	if (parse_l4(c, &j->p))
		return deny(j, TF_REASON_MALFORMED);
	if (j->p.proto == IPPROTO_ICMPV6 &&
	    (is_ndp_type(j->p.icmp_type) || j->p.icmp_type == NDISC_ROUTER_ADVERTISEMENT))
		return judge_ndp(j, c, ip6, eth, TF_DIR_TO_GUEST);
	if (!mac_eq(eth->h_dest, s->guest_mac))
		return deny(j, TF_REASON_L2_DST_MAC);
	if (!ip6_eq(&ip6->daddr, s->guest_ip6) &&
	    !(ip6_eq(&ip6->daddr, s->guest_ip6_ll) && (s->flags & TF_SF_RESOLVER6) &&
	      ip6_is_link_local(s->resolver_ip6) && ip6_eq(&ip6->saddr, s->resolver_ip6)))
		return deny(j, TF_REASON_DST_NOT_GUEST);
	if (j->p.proto == IPPROTO_ICMPV6) {
		switch (j->p.icmp_type) {
		case ICMPV6_ECHO_REPLY:
			break;
		case ICMPV6_DEST_UNREACH:
		case ICMPV6_PKT_TOOBIG:
		case ICMPV6_TIME_EXCEED:
		case ICMPV6_PARAMPROB:
			return ip6_icmp_error(j, c);
		default:
			return deny(j, TF_REASON_ICMP_TYPE);
		}
	} else if (j->p.proto != IPPROTO_TCP && j->p.proto != IPPROTO_UDP) {
		return deny(j, TF_REASON_L4_PROTO);
	}
	return reply_to_guest(j);
}

static __always_inline enum judgement judge_to_guest(struct judge *j, void *data, void *data_end)
{
	struct cursor c = { .pos = data, .end = data_end };
	struct ethhdr *eth = judge_l2(j, &c, TF_DIR_TO_GUEST);

	if (!eth)
		return JUDGE_DENY;
	switch (eth->h_proto) {
	case bpf_htons(ETH_P_ARP):
		return judge_arp(j, &c, eth, TF_DIR_TO_GUEST);
	case bpf_htons(ETH_P_IP):
		if (!mac_eq(eth->h_dest, j->s->guest_mac))
			return deny(j, TF_REASON_L2_DST_MAC);
		return ip4_to_guest(j, &c);
	case bpf_htons(ETH_P_IPV6):
		return ip6_to_guest(j, &c, eth);
	}
	return deny(j, TF_REASON_L2_ETHERTYPE);
}

#endif /* TF_TO_GUEST_BPF_H */
