/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest->host decision for an IP packet whose headers passed L2, the
 * anti-spoofing check and the L4 parse: flow fast path, then DNS, other
 * sessions, the hard floor and the session's rules. Each step is one map
 * lookup, whatever the number of sessions and rules.
 */
#ifndef TF_POLICY_BPF_H
#define TF_POLICY_BPF_H

#include "verdict.bpf.h"
#include "parse.bpf.h"

#define DNS_PORT 53

static __always_inline void *session_flows(__u32 sid)
{
	return bpf_map_lookup_elem(&tf_flows, &sid);
}

/* The flow key of a guest->host packet: remote = destination. */
static __always_inline void flow_key_out(const struct pkt *p, struct tf_flow_key *k)
{
	__builtin_memcpy(k->raddr, p->daddr, 16);
	k->gport = p->sport;
	k->rport = p->dport;
	k->family = p->family;
	k->proto = p->proto;
}

static __always_inline int is_resolver(const struct judge *j)
{
	const struct tf_session *s = j->s;

	if (j->p.dport != s->resolver_port)
		return 0;
	if (j->p.family == TF_FAM_IPV4)
		return (s->flags & TF_SF_RESOLVER4) &&
		       *(__be32 *)j->p.daddr == s->resolver_ip4;
	return (s->flags & TF_SF_RESOLVER6) && ip6_eq(j->p.daddr, s->resolver_ip6);
}

static __always_inline int other_session(const struct judge *j)
{
	struct tf_addr_key k = { .family = j->p.family };
	__u32 *owner;

	__builtin_memcpy(k.addr, j->p.daddr, 16);
	owner = bpf_map_lookup_elem(&tf_addrs, &k);
	return owner && *owner != j->sid;
}

/* Returns 0 if the floor does not apply, else the reason to deny with. */
static __always_inline __u16 floor_reason(const struct judge *j)
{
	struct tf_floor_key k = {
		.prefixlen = TF_FLOOR_KEY_FIXED_BITS + (j->p.family == TF_FAM_IPV4 ? 32 : 128),
		.family = j->p.family,
	};
	struct tf_floor_val *v;

	__builtin_memcpy(k.addr, j->p.daddr, 16);
	v = bpf_map_lookup_elem(&tf_floor, &k);
	if (!v || v->action != TF_FLOOR_DENY)
		return 0;
	return v->reason ? v->reason : TF_REASON_UNKNOWN;
}

static __always_inline int port_allowed(const struct judge *j, const struct tf_rule_val *v,
					__u8 bit)
{
	struct tf_port_key k = {
		.sid = j->sid,
		.ver = j->ver,
		.cls = v->cls,
		.proto = j->p.proto,
	};
	struct tf_port_bits *b;
	__u16 port = bpf_ntohs(j->p.dport);

	if (v->all_ports & bit)
		return 1;
	if (!(v->protos & bit) || !v->cls)
		return 0;
	k.hi = port >> 8;
	b = bpf_map_lookup_elem(&tf_ports, &k);
	if (!b)
		return 0;
	port &= 0xff;
	return (b->w[(port >> 6) & 3] >> (port & 63)) & 1;
}

/* Returns the deny reason, or 0 if a rule of the session allows the packet. */
static __always_inline __u16 rule_reason(const struct judge *j)
{
	struct tf_rule_key k = {
		.prefixlen = TF_RULE_KEY_FIXED_BITS + (j->p.family == TF_FAM_IPV4 ? 32 : 128),
		.sid = j->sid,
		.ver = j->ver,
		.family = j->p.family,
	};
	struct tf_rule_val *v;
	__u8 bit;

	__builtin_memcpy(k.addr, j->p.daddr, 16);
	v = bpf_map_lookup_elem(&tf_rules, &k);
	if (!v)
		return TF_REASON_NO_RULE;
	switch (j->p.proto) {
	case IPPROTO_TCP:
		bit = TF_PB_TCP;
		break;
	case IPPROTO_UDP:
		bit = TF_PB_UDP;
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		/* Only the family's own ICMP is "icmp"; ICMPv6 inside IPv4 is just another protocol. */
		if ((j->p.proto == IPPROTO_ICMP) == (j->p.family == TF_FAM_IPV4))
			return (v->protos & TF_PB_ICMP) ? 0 : TF_REASON_PORT_NOT_ALLOWED;
		return (v->protos & TF_PB_OTHER) ? 0 : TF_REASON_PORT_NOT_ALLOWED;
	default:
		return (v->protos & TF_PB_OTHER) ? 0 : TF_REASON_PORT_NOT_ALLOWED;
	}
	return port_allowed(j, v, bit) ? 0 : TF_REASON_PORT_NOT_ALLOWED;
}

/* Insert or refresh the flow; a failed insert denies (fail closed). */
static __always_inline int open_flow(struct judge *j, void *flows, const struct tf_flow_key *k,
				     __u16 reason)
{
	struct tf_flow f = {
		.created_ns = bpf_ktime_get_ns(),
		.policy_ver = j->ver,
		.state = TF_FLOW_OPEN,
	};

	if (bpf_map_update_elem(flows, k, &f, BPF_ANY))
		return deny(j, TF_REASON_FLOW_TABLE_FULL);
	return allow(j, reason, 1);
}

/*
 * A TCP SYN (without ACK) always goes through the full decision, even on
 * a known tuple: it starts a new connection, and rule changes apply to new
 * connections. Every other packet of a tracked flow takes the fast path.
 */
static __always_inline int decide_out(struct judge *j)
{
	struct tf_flow_key k = {};
	void *flows = session_flows(j->sid);
	int syn = j->p.proto == IPPROTO_TCP &&
		  (j->p.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN;
	__u16 reason;

	if (!flows)
		return deny(j, TF_REASON_NO_SESSION);
	flow_key_out(&j->p, &k);
	if (!syn && bpf_map_lookup_elem(flows, &k))
		return allow(j, TF_REASON_ALLOW_FLOW, 0);
	if (j->p.proto == IPPROTO_TCP && !syn)
		return deny(j, TF_REASON_TCP_NO_FLOW);

	if (j->p.proto == IPPROTO_TCP || j->p.proto == IPPROTO_UDP) {
		if (is_resolver(j))
			return open_flow(j, flows, &k, TF_REASON_ALLOW_DNS);
		if (j->p.dport == bpf_htons(DNS_PORT)) {
			reason = TF_REASON_DNS_NOT_RESOLVER;
			goto refuse;
		}
	}
	if (other_session(j)) {
		reason = TF_REASON_OTHER_SESSION;
		goto refuse;
	}
	reason = floor_reason(j);
	if (reason)
		goto refuse;
	reason = rule_reason(j);
	if (reason)
		goto refuse;
	return open_flow(j, flows, &k, TF_REASON_ALLOW_RULE);

refuse:
	/* A refused SYN on a tuple we still track ends that stale flow. */
	if (syn)
		bpf_map_delete_elem(flows, &k);
	return deny(j, reason);
}

#endif /* TF_POLICY_BPF_H */
