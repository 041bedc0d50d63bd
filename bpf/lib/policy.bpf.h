/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest->host decision for an IP packet whose headers passed L2, the
 * anti-spoofing check and the L4 parse: DNS to the resolver (judged by
 * content, dns.bpf.h), flow fast path, other name resolution, other
 * sessions, the hard floor, addresses learnt from DNS answers and the
 * session's rules. Each step is one map lookup, whatever the number of
 * sessions, rules and names.
 */
#ifndef TF_POLICY_BPF_H
#define TF_POLICY_BPF_H

#include "verdict.bpf.h"
#include "parse.bpf.h"
#include "tls.bpf.h"

#define DNS_PORT    53
#define DOT_PORT    853		/* RFC 7858 (TCP), RFC 9250 (QUIC) */
#define MDNS_PORT   5353	/* RFC 6762 */
#define LLMNR_PORT  5355	/* RFC 4795 */

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

/* 1 if addr is one of session s's gateway addresses (IPv4, IPv6 global or link-local). */
static __always_inline int is_gateway(const struct tf_session *s, __u8 family, const __u8 *addr)
{
	if (family == TF_FAM_IPV4)
		return (s->flags & TF_SF_IPV4) && s->gw_ip4 && *(const __be32 *)addr == s->gw_ip4;
	if (!(s->flags & TF_SF_IPV6))
		return 0;
	return ip6_eq(addr, s->gw_ip6_ll) || (!ip6_is_unspec(s->gw_ip6) && ip6_eq(addr, s->gw_ip6));
}

/*
 * The floor as session s sees it: its gateway is a host address even when
 * it is not one of the daemon's namespace (floor_gateway), unless an
 * operator exception covers it; then the tf_floor entry. One LPM lookup
 * either way: the gateway is compared with the session value in hand.
 */
static __always_inline __u16 floor_session_reason(const struct tf_session *s, __u8 family,
						  const __u8 *addr)
{
	struct tf_floor_key k = {
		.prefixlen = TF_FLOOR_KEY_FIXED_BITS + (family == TF_FAM_IPV4 ? 32 : 128),
		.family = family,
	};
	struct tf_floor_val *v;

	__builtin_memcpy(k.addr, addr, 16);
	v = bpf_map_lookup_elem(&tf_floor, &k);
	if (v && v->action == TF_FLOOR_EXEMPT)
		return 0;
	if (is_gateway(s, family, addr))
		return TF_REASON_FLOOR_GATEWAY;
	if (!v || v->action != TF_FLOOR_DENY)
		return 0;
	return v->reason ? v->reason : TF_REASON_UNKNOWN;
}

static __always_inline __u16 floor_reason(const struct judge *j)
{
	return floor_session_reason(j->s, j->p.family, j->p.daddr);
}

/* Bit port of bitmap (sid, ver, cls, proto): port classes are per generation. */
static __always_inline int port_bit(const struct judge *j, __u32 ver, __u16 cls, __u8 proto,
				    __u16 port)
{
	struct tf_port_key k = {
		.sid = j->sid,
		.ver = ver,
		.cls = cls,
		.proto = proto,
		.hi = port >> 8,
	};
	struct tf_port_bits *b = bpf_map_lookup_elem(&tf_ports, &k);

	if (!b)
		return 0;
	port &= 0xff;
	return (b->w[(port >> 6) & 3] >> (port & 63)) & 1;
}

static __always_inline int port_allowed(const struct judge *j, __u32 ver,
					const struct tf_rule_val *v, __u8 bit)
{
	if (v->all_ports & bit)
		return 1;
	if (!(v->protos & bit) || !v->cls)
		return 0;
	return port_bit(j, ver, v->cls, j->p.proto, bpf_ntohs(j->p.dport));
}

/*
 * 1 if permission v (of generation ver) makes the packet's port a TLS port:
 * a TCP connection there must show an allowed SNI, and UDP there (QUIC)
 * gets no SNI check, so it is refused unless a CIDR rule allows it.
 */
static __always_inline int tls_port(const struct judge *j, __u32 ver, const struct tf_rule_val *v)
{
	if (j->p.proto != IPPROTO_TCP && j->p.proto != IPPROTO_UDP)
		return 0;
	if (v->all_ports & TF_PB_TLS)
		return 1;
	if (!(v->protos & TF_PB_TLS) || !v->cls)
		return 0;
	return port_bit(j, ver, v->cls, TF_PORTS_TLS, bpf_ntohs(j->p.dport));
}

/* Returns TF_REASON_PORT_NOT_ALLOWED, or 0 if permission v (of generation ver) allows the packet. */
static __always_inline __u16 perm_reason(const struct judge *j, __u32 ver,
					 const struct tf_rule_val *v)
{
	__u8 bit;

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
	return port_allowed(j, ver, v, bit) ? 0 : TF_REASON_PORT_NOT_ALLOWED;
}

/* Returns the deny reason, or 0 if a rule of the session allows the packet (*perm: its permission). */
static __always_inline __u16 rule_reason(const struct judge *j, struct tf_rule_val *perm)
{
	struct tf_rule_key k = {
		.prefixlen = TF_RULE_KEY_FIXED_BITS + (j->p.family == TF_FAM_IPV4 ? 32 : 128),
		.sid = j->sid,
		.ver = j->ver,
		.family = j->p.family,
	};
	struct tf_rule_val *v;

	__builtin_memcpy(k.addr, j->p.daddr, 16);
	v = bpf_map_lookup_elem(&tf_rules, &k);
	if (!v)
		return TF_REASON_NO_RULE;
	*perm = *v;
	return perm_reason(j, j->ver, perm);
}

/*
 * An address learnt from a DNS answer (dns.bpf.h): TF_REASON_NO_RULE if
 * there is none (or its TTL ended), else what its permission (*perm, of
 * generation *ver) says.
 */
static __always_inline __u16 learned_reason(const struct judge *j, struct tf_rule_val *perm,
					    __u32 *ver)
{
	struct tf_learn_key k = { .sid = j->sid, .family = j->p.family };
	struct tf_learned *l;
	void *lmap;
	__u64 expires;

	__builtin_memcpy(k.addr, j->p.daddr, 16);
	lmap = bpf_map_lookup_elem(&tf_learned, &j->sid);
	l = lmap ? bpf_map_lookup_elem(lmap, &k) : NULL;
	if (!l)
		return TF_REASON_NO_RULE;
	/* Copies: an LRU element can be recycled under a reader. */
	expires = l->expires_ns;
	*ver = l->ver;
	*perm = l->perm;
	/*
	 * An entry of another generation was learnt across a policy switch
	 * the daemon's rebase may already have passed: it counts for nothing
	 * (the daemon moves current entries to the new generation).
	 */
	if (bpf_ktime_get_ns() >= expires || *ver != j->ver)
		return TF_REASON_NO_RULE;
	return perm_reason(j, *ver, perm);
}

/* Ports that carry name resolution past the session's resolver: refused everywhere. */
static __always_inline int dns_elsewhere(const struct judge *j)
{
	__be16 port = j->p.dport;

	if (port == bpf_htons(DNS_PORT) || port == bpf_htons(DOT_PORT))
		return 1;	/* DNS, DNS over TLS (TCP) and over QUIC (UDP) */
	return j->p.proto == IPPROTO_UDP &&
	       (port == bpf_htons(MDNS_PORT) || port == bpf_htons(LLMNR_PORT));
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
 * connections. Every other packet of an open flow takes the fast path;
 * a flow in a TLS state goes to tls_flow_out(). DNS to the session's
 * resolver is the exception: every UDP query is judged by its content
 * (TF_JUDGE_DNS), and TCP is refused (dns_tcp: a TCP stream would need
 * reassembly to be read, so it is not read at all).
 *
 * A new flow may be allowed by a learnt address and by a CIDR rule. An
 * allowance without a TLS check wins; else a CIDR rule's TLS port asks
 * for an allowed SNI, and a learnt address's TLS port for an allowed SNI
 * that the address was learnt for (bind).
 */
static __always_inline int decide_out(struct judge *j)
{
	struct tf_flow_key k = {};
	void *flows = session_flows(j->sid);
	int syn = j->p.proto == IPPROTO_TCP &&
		  (j->p.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN;
	struct tf_rule_val lperm = {}, rperm = {};
	struct tf_flow *f;
	__u16 reason, learned, allowed;
	__u32 lver = 0;
	__u8 bind;

	if (!flows)
		return deny(j, TF_REASON_NO_SESSION);
	flow_key_out(&j->p, &k);
	if (j->p.proto == IPPROTO_UDP && is_resolver(j))
		return TF_JUDGE_DNS;
	if (j->p.proto == IPPROTO_TCP && is_resolver(j)) {
		reason = TF_REASON_DNS_TCP;
		goto refuse;
	}
	if (!syn) {
		f = bpf_map_lookup_elem(flows, &k);
		if (f && f->state == TF_FLOW_OPEN) {
			/*
			 * A flow opened by an allowed hello never carries the hello's
			 * bytes again: the server acknowledged them, and no bytes
			 * other than the judged ones may reach it there.
			 */
			if (f->ch_end && j->p.proto == IPPROTO_TCP && tcp_payload_len(j) &&
			    (__s32)(j->p.tcp_seq - (f->isn + f->ch_end)) < 0)
				return deny(j, TF_REASON_TLS_REASSEMBLY);
			return allow(j, TF_REASON_ALLOW_FLOW, 0);
		}
		if (f)
			return tls_flow_out(j, &k, f);
	}
	if (j->p.proto == IPPROTO_TCP && !syn)
		return deny(j, TF_REASON_TCP_NO_FLOW);

	if ((j->p.proto == IPPROTO_TCP || j->p.proto == IPPROTO_UDP) && dns_elsewhere(j)) {
		reason = TF_REASON_DNS_NOT_RESOLVER;
		goto refuse;
	}
	if (other_session(j)) {
		reason = TF_REASON_OTHER_SESSION;
		goto refuse;
	}
	reason = floor_reason(j);
	if (reason)
		goto refuse;
	learned = (j->s->flags & TF_SF_HOSTS) ? learned_reason(j, &lperm, &lver) : TF_REASON_NO_RULE;
	if (!learned && !tls_port(j, lver, &lperm))
		return open_flow(j, flows, &k, TF_REASON_ALLOW_LEARNED);
	reason = rule_reason(j, &rperm);
	if (!reason && !tls_port(j, j->ver, &rperm))
		return open_flow(j, flows, &k, TF_REASON_ALLOW_RULE);
	if (reason && learned) {
		if (reason == TF_REASON_NO_RULE)
			reason = learned;	/* a learnt address, but not this port */
		goto refuse;
	}
	/* A TLS port, allowed by the CIDR rule (no bind) or else by the learnt address. */
	bind = reason != 0;
	allowed = bind ? TF_REASON_ALLOW_LEARNED : TF_REASON_ALLOW_RULE;
	if (j->p.proto != IPPROTO_TCP) {
		reason = TF_REASON_TLS_UDP;	/* QUIC carries no SNI we read */
		goto refuse;
	}
	if (tcp_payload_len(j)) {
		reason = TF_REASON_TLS_FASTOPEN;
		goto refuse;
	}
	if (tcp_syn_mptcp(j)) {
		reason = TF_REASON_TLS_MPTCP;
		goto refuse;
	}
	return tls_flow_new(j, flows, &k, bind, allowed);

refuse:
	/* A refused SYN on a tuple we still track ends that stale flow. */
	if (syn)
		bpf_map_delete_elem(flows, &k);
	return deny(j, reason);
}

#endif /* TF_POLICY_BPF_H */
