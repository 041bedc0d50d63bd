/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest->host decision for an IP packet whose headers passed L2, the
 * anti-spoofing check and the L4 parse: DNS to the resolver (judged by
 * content, dns.bpf.h), flow fast path, other name resolution, other
 * sessions, the hard floor, addresses learnt from DNS answers and the
 * session's rules. Each step is one map lookup, whatever the number of
 * sessions, rules and names. The decision from other name resolution on
 * (policy_judge()) also re-judges established flows after a rule change,
 * here and in to_guest.bpf.h.
 */
#ifndef TF_POLICY_BPF_H
#define TF_POLICY_BPF_H

#include "judge.bpf.h"
#include "flow.bpf.h"
#include "tls.bpf.h"
#include <tapfence/perm.h>

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

/* 1 if (addr, port) of family is session s's resolver. */
static __always_inline int resolver_is(const struct tf_session *s, __u8 family, const __u8 *addr,
				       __be16 port)
{
	if (port != s->resolver_port)
		return 0;
	if (family == TF_FAM_IPV4)
		return (s->flags & TF_SF_RESOLVER4) && *(const __be32 *)addr == s->resolver_ip4;
	return (s->flags & TF_SF_RESOLVER6) && ip6_eq(addr, s->resolver_ip6);
}

/* 1 if the guest -> host packet goes to the session's resolver. */
static __always_inline int is_resolver(const struct judge *j)
{
	return resolver_is(j->s, j->p.family, j->p.daddr, j->p.dport);
}

/*
 * The decisions below judge a flow by its key, seen from the guest (remote
 * end k->raddr:k->rport), so that a packet in either direction can be
 * judged by the one decision (policy_judge()).
 */
static __always_inline int other_session(__u32 sid, const struct tf_flow_key *k)
{
	struct tf_addr_key ak = { .family = k->family };
	__u32 *owner;

	__builtin_memcpy(ak.addr, k->raddr, 16);
	owner = bpf_map_lookup_elem(&tf_addrs, &ak);
	return owner && *owner != sid;
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

/* Bit port of bitmap (sid, ver, cls, proto): port classes are per generation. */
static __always_inline int port_bit(__u32 sid, __u32 ver, __u16 cls, __u8 proto, __u16 port)
{
	struct tf_port_key k = {
		.sid = sid,
		.ver = ver,
		.cls = cls,
		.proto = proto,
		.hi = port >> 8,
	};
	struct tf_port_bits *b = bpf_map_lookup_elem(&tf_ports, &k);

	return b && tf_port_bits_has(b, port);
}

/*
 * 1 if evaluation e of permission v (of generation ver, tapfence/perm.h)
 * allows port (network order): at once, or by the chunk of v's class that
 * the bitmaps of proto (an IP protocol, or TF_PORTS_TLS) hold.
 */
static __always_inline int perm_ports(__u32 sid, __u32 ver, const struct tf_rule_val *v,
				      enum tf_perm e, __u8 proto, __be16 port)
{
	if (e == TF_PERM_ALLOW)
		return 1;
	if (e != TF_PERM_PORT)
		return 0;
	return port_bit(sid, ver, v->cls, proto, bpf_ntohs(port));
}

/* 1 if permission v (of generation ver) makes the flow's port a TLS port (tf_perm_tls()). */
static __always_inline int tls_port(__u32 sid, const struct tf_flow_key *k, __u32 ver,
				    const struct tf_rule_val *v)
{
	return perm_ports(sid, ver, v, tf_perm_tls(v, k->proto), TF_PORTS_TLS, k->rport);
}

/*
 * Returns TF_REASON_PORT_NOT_ALLOWED, or 0 if permission v (of generation
 * ver) allows protocol proto of family to port (network order).
 */
static __always_inline __u16 perm_check(__u32 sid, __u8 proto, __u8 family, __be16 port, __u32 ver,
					const struct tf_rule_val *v)
{
	enum tf_perm e = tf_perm_eval(v, tf_perm_bit(proto, family));

	return perm_ports(sid, ver, v, e, proto, port) ? 0 : TF_REASON_PORT_NOT_ALLOWED;
}

/* perm_check() for the guest -> host packet being judged: its protocol and destination port. */
static __always_inline __u16 perm_reason(const struct judge *j, __u32 ver,
					 const struct tf_rule_val *v)
{
	return perm_check(j->sid, j->p.proto, j->p.family, j->p.dport, ver, v);
}

/* perm_check() for flow k: its protocol and remote port. */
static __always_inline __u16 flow_perm_reason(__u32 sid, const struct tf_flow_key *k, __u32 ver,
					      const struct tf_rule_val *v)
{
	return perm_check(sid, k->proto, k->family, k->rport, ver, v);
}

/* Returns the deny reason, or 0 if a rule of the session allows the flow (*perm: its permission). */
static __always_inline __u16 rule_reason(__u32 sid, __u32 jver, const struct tf_flow_key *k,
					 struct tf_rule_val *perm)
{
	struct tf_rule_key rk = {
		.prefixlen = TF_RULE_KEY_FIXED_BITS + (k->family == TF_FAM_IPV4 ? 32 : 128),
		.sid = sid,
		.ver = jver,
		.family = k->family,
	};
	struct tf_rule_val *v;

	__builtin_memcpy(rk.addr, k->raddr, 16);
	v = bpf_map_lookup_elem(&tf_rules, &rk);
	if (!v)
		return TF_REASON_NO_RULE;
	*perm = *v;
	return flow_perm_reason(sid, k, jver, perm);
}

/*
 * TF_REASON_DENY_RULE if a deny rule of the session covers flow k (the
 * longest TF_FAM_DENY entry containing its remote address allows its
 * protocol and port: what the deny rules take), else 0. Deny rules win over
 * every allowance, CIDR or learnt (docs/deny.md).
 */
static __always_inline __u16 deny_reason(__u32 sid, __u32 jver, const struct tf_flow_key *k)
{
	struct tf_rule_key rk = {
		.prefixlen = TF_RULE_KEY_FIXED_BITS + (k->family == TF_FAM_IPV4 ? 32 : 128),
		.sid = sid,
		.ver = jver,
		.family = k->family | TF_FAM_DENY,
	};
	struct tf_rule_val *v;

	__builtin_memcpy(rk.addr, k->raddr, 16);
	v = bpf_map_lookup_elem(&tf_rules, &rk);
	if (!v || flow_perm_reason(sid, k, jver, v))
		return 0;
	return TF_REASON_DENY_RULE;
}

/*
 * An address learnt from a DNS answer (dns.bpf.h): TF_REASON_NO_RULE if
 * there is none (or its TTL ended), else what its permission (*perm, of
 * generation *ver) says. keep: the flow being re-judged was allowed by its
 * learnt address, which then counts past its TTL: the TTL bounds when
 * flows to it may open, not how long they last (as a connection outlives
 * the DNS answer that named its address), while the permission, which the
 * daemon re-derives for every generation, still has the last word.
 */
static __always_inline __u16 learned_reason(__u32 sid, __u32 jver, const struct tf_flow_key *k,
					    __u8 keep, struct tf_rule_val *perm, __u32 *ver)
{
	struct tf_learn_key lk = { .sid = sid, .family = k->family };
	struct tf_learned *l;
	void *lmap;
	__u64 expires;

	__builtin_memcpy(lk.addr, k->raddr, 16);
	lmap = bpf_map_lookup_elem(&tf_learned, &sid);
	l = lmap ? bpf_map_lookup_elem(lmap, &lk) : NULL;
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
	if ((!keep && bpf_ktime_get_ns() >= expires) || *ver != jver)
		return TF_REASON_NO_RULE;
	return flow_perm_reason(sid, k, *ver, perm);
}

/* Ports that carry name resolution past the session's resolver: refused everywhere. */
static __always_inline int dns_elsewhere(const struct tf_flow_key *k)
{
	__be16 port = k->rport;

	if (port == bpf_htons(DNS_PORT) || port == bpf_htons(DOT_PORT))
		return 1; /* DNS, DNS over TLS (TCP) and over QUIC (UDP) */
	return k->proto == IPPROTO_UDP &&
	       (port == bpf_htons(MDNS_PORT) || port == bpf_htons(LLMNR_PORT));
}

/* How the policy in force allows a flow (policy_judge()). */
struct allowance {
	__u16 reason; /* TF_REASON_ALLOW_RULE or TF_REASON_ALLOW_LEARNED */
	__u8 tls;     /* a TLS port: the connection needs an allowed ClientHello */
	__u8 bind;    /* ... whose SNI is a name the address was learnt for */
};

/*
 * What policy_judge() needs of the judge (struct judge holds a pointer,
 * which a global function's argument memory cannot pass on).
 */
struct judge_ref {
	__u32 sid;
	__u32 ver;
	__u16 sflags;
	__u8 keep;
	__u8 pad;
};

/*
 * What the session's policy in force says of flow k, as for a new flow:
 * name resolution elsewhere, other sessions, the hard floor, deny rules,
 * learnt addresses, rules. Returns the deny reason, or 0 with *a saying how it is
 * allowed. r->keep: see learned_reason(). Nothing here depends on the
 * packet, only on the flow, so both directions re-judge an established
 * flow with it (policy.bpf.h, to_guest.bpf.h).
 *
 * A global function, verified once per program rather than inlined into
 * every path that reaches it: with it inlined in the new-flow and the
 * re-judge paths, tc_from_guest verified in 103k instructions, with it
 * global in 77k (before re-judging existed: 87k), tc_to_guest in 96k, now
 * 82k. Its arguments are checked for NULL, as the verifier asks of a
 * global function's pointers. sess is the session's value as the judge
 * read it (a map value: a global function takes one whole, where a pointer
 * inside r would reach it as a number).
 *
 * A flow may be allowed by a learnt address and by a CIDR rule. An
 * allowance without a TLS check wins; else a CIDR rule's TLS port asks
 * for an allowed SNI, and a learnt address's TLS port for an allowed SNI
 * that the address was learnt for (bind).
 */
__noinline __u16 policy_judge(const struct judge_ref *r, const struct tf_flow_key *k,
			      struct allowance *a, const struct tf_session *sess)
{
	struct tf_rule_val lperm = {}, rperm = {};
	__u16 reason, learned;
	__u32 lver = 0, sid, ver;

	if (!r || !k || !a || !sess)
		return TF_REASON_UNKNOWN;
	sid = r->sid;
	ver = r->ver;
	if ((k->proto == IPPROTO_TCP || k->proto == IPPROTO_UDP) && dns_elsewhere(k))
		return TF_REASON_DNS_NOT_RESOLVER;
	if (other_session(sid, k))
		return TF_REASON_OTHER_SESSION;
	if (sess->sid != sid)
		return TF_REASON_NO_SESSION;
	reason = floor_session_reason(sess, k->family, k->raddr);
	if (reason)
		return reason;
	if (r->sflags & TF_SF_DENY) {
		reason = deny_reason(sid, ver, k);
		if (reason)
			return reason;
	}
	learned = (r->sflags & TF_SF_HOSTS) ? learned_reason(sid, ver, k, r->keep, &lperm, &lver) :
					      TF_REASON_NO_RULE;
	a->tls = 0;
	a->bind = 0;
	a->reason = TF_REASON_ALLOW_LEARNED;
	if (!learned && !tls_port(sid, k, lver, &lperm))
		return 0;
	reason = rule_reason(sid, ver, k, &rperm);
	a->reason = TF_REASON_ALLOW_RULE;
	if (!reason && !tls_port(sid, k, ver, &rperm))
		return 0;
	if (reason && learned)
		return reason == TF_REASON_NO_RULE ?
			       learned :
			       reason; /* a learnt address, but not this port */
	/* A TLS port, allowed by the CIDR rule (no bind) or else by the learnt address. */
	if (k->proto != IPPROTO_TCP)
		return TF_REASON_TLS_UDP; /* QUIC carries no SNI we read */
	a->tls = 1;
	a->bind = reason != 0;
	a->reason = a->bind ? TF_REASON_ALLOW_LEARNED : TF_REASON_ALLOW_RULE;
	return 0;
}

/* policy_judge() for the session j is judged under; keep: see learned_reason(). */
static __always_inline __u16 judge_flow(const struct judge *j, const struct tf_flow_key *k,
					__u8 keep, struct allowance *a)
{
	struct judge_ref r = {
		.sid = j->sid,
		.ver = j->ver,
		.sflags = j->s->flags,
		.keep = keep,
	};

	return policy_judge(&r, k, a, j->s);
}

/*
 * Insert or refresh the flow (tracked: k has an entry, flow_insert()); a
 * failed insert denies (fail closed).
 */
static __always_inline enum judgement
open_flow(struct judge *j, void *flows, const struct tf_flow_key *k, __u16 reason, int tracked)
{
	struct tf_flow f = {
		.seen = flow_clock(),
		.policy_ver = j->p.pver,
		.state = TF_FLOW_OPEN,
		.flags = reason == TF_REASON_ALLOW_LEARNED ? TF_FF_LEARNED : 0,
	};

	if (flow_insert(j->sid, flows, k, &f, tracked))
		return deny(j, TF_REASON_FLOW_TABLE_FULL);
	return allow(j, reason, 1);
}

/*
 * A new flow the policy denies for reason, in audit mode: opened as a
 * plain flow (no TLS check: nothing allowed it), reported once; its later
 * packets take the fast path. A failed insert denies.
 */
static __always_inline enum judgement
audit_flow(struct judge *j, void *flows, const struct tf_flow_key *k, __u16 reason, int tracked)
{
	if (open_flow(j, flows, k, reason, tracked) != JUDGE_ALLOW)
		return JUDGE_DENY;
	return audited(j, reason);
}

/*
 * Flow f (key k, a copy in nf) was allowed under another policy generation
 * than the packet is judged by, and policy_judge() said reason (0: allowed
 * as *a). Returns 0 if the flow goes on, stamped with the session's
 * generation (nf: its new value), else the deny reason: refused, the flow
 * ends, revoked, from this packet on, whichever direction it travels.
 *
 * A TLS flow keeps its state's meaning; a re-judge never relaxes a flow:
 * - a flow allowed again but not on a TLS port keeps its state (a waiting
 *   or refused TLS flow stays so);
 * - a flow opened plainly (no hello read) whose port is now a TLS port is
 *   revoked: its bytes were never checked;
 * - a flow waiting for its hello takes the new allowance's binding (the
 *   stricter of the two); one whose hello was judged without the binding
 *   the new allowance asks for is revoked, since the hello is not kept to
 *   be judged again. The SNI itself is not re-checked (docs/tls.md).
 */
static __always_inline __u16 flow_rejudged(struct judge *j, void *flows,
					   const struct tf_flow_key *k, struct tf_flow *nf,
					   __u16 reason, const struct allowance *a)
{
	if (!reason && a->tls) {
		if (nf->state == TF_FLOW_OPEN && !nf->ch_end)
			reason = TF_REASON_REVOKED;
		else if (a->bind && !nf->bind &&
			 (nf->state == TF_FLOW_TLS_VERIFY || nf->state == TF_FLOW_TLS_FOLLOW ||
			  nf->state == TF_FLOW_OPEN))
			reason = TF_REASON_REVOKED;
		nf->bind |= a->bind;
	}
	if (reason) {
		flow_remove(j->sid, flows, k);
		tls_buf_drop(j->sid, k);
		return TF_REASON_REVOKED;
	}
	nf->policy_ver = j->p.pver;
	nf->flags = (nf->flags & ~TF_FF_LEARNED) |
		    (a->reason == TF_REASON_ALLOW_LEARNED ? TF_FF_LEARNED : 0);
	/* A copy, written whole: a store through the lookup's pointer could land in a recycled element. */
	if (bpf_map_update_elem(flows, k, nf, BPF_EXIST))
		return TF_REASON_FLOW_TABLE_FULL;
	return 0;
}

/* Guest -> host on a live flow f of the generation in force (the map's element or a copy). */
static __always_inline enum judgement flow_out(struct judge *j, const struct tf_flow_key *k,
					       const struct tf_flow *f)
{
	if (f->state == TF_FLOW_OPEN) {
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
	return tls_flow_out(j, k, f);
}

/*
 * A TCP SYN (without ACK) always goes through the full decision, even on
 * a known tuple: it starts a new connection. Every other packet of a live
 * flow allowed under the generation in force takes the fast path; a flow
 * in a TLS state goes to tls_flow_out(). A flow allowed under another
 * generation (a rule changed since) is re-judged by the same decision as a
 * new flow, without a SYN, and goes on or is revoked (flow_rejudged()); an
 * expired flow counts as absent: judged as new, so TCP that is not a SYN
 * is tcp_no_flow. DNS to the session's resolver is the exception: every
 * UDP query is judged by its content (JUDGE_NEED_DNS), and TCP is refused
 * (dns_tcp: a TCP stream would need reassembly to be read, so it is not
 * read at all).
 */
static __always_inline enum judgement decide_out(struct judge *j)
{
	struct tf_flow_key k = {};
	void *flows = session_flows(j->sid);
	int syn = j->p.proto == IPPROTO_TCP &&
		  (j->p.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN;
	struct allowance a = {};
	struct tf_flow *f = NULL, nf;
	__u64 now = 0;
	__u16 reason;
	int tracked = 0; /* the tuple has an entry (flow_insert()) */

	if (!flows)
		return deny(j, TF_REASON_NO_SESSION);
	flow_key_out(&j->p, &k);
	if (j->p.proto == IPPROTO_UDP && is_resolver(j))
		return JUDGE_NEED_DNS;
	if (j->p.proto == IPPROTO_TCP && is_resolver(j)) {
		reason = TF_REASON_DNS_TCP;
		goto refuse;
	}
	if (!syn) {
		f = bpf_map_lookup_elem(flows, &k);
		tracked = f != NULL;
		if (f) {
			now = flow_clock();
			if (flow_expired(f, k.proto, now)) {
				f = NULL;
			} else if (f->policy_ver == j->p.pver) {
				flow_touch(f, flow_pkt_flags(j), now);
				if (flow_close_step(f, j) && f->state == TF_FLOW_OPEN) {
					flow_remove(j->sid, flows, &k);
					return allow(j, TF_REASON_ALLOW_FLOW, 0);
				}
				return flow_out(j, &k, f);
			}
		}
		if (!f && j->p.proto == IPPROTO_TCP)
			return deny(j, TF_REASON_TCP_NO_FLOW);
	}

	if (f) {
		/* A copy first: an LRU element can be recycled under a reader. */
		__builtin_memcpy(&nf, f, sizeof(nf));
		reason = judge_flow(j, &k, nf.flags & TF_FF_LEARNED, &a);
		flow_touch(&nf, flow_pkt_flags(j), now);
		if (audit_passes(j, reason)) {
			/* Kept as a plain flow, reported: enforce mode would revoke it. */
			a.reason = TF_REASON_ALLOW_RULE;
			a.tls = 0;
			if (flow_rejudged(j, flows, &k, &nf, 0, &a))
				return deny(j, TF_REASON_FLOW_TABLE_FULL);
			if (flow_out(j, &k, &nf) != JUDGE_ALLOW)
				return JUDGE_DENY;
			return audited(j, reason);
		}
		reason = flow_rejudged(j, flows, &k, &nf, reason, &a);
		if (reason)
			return deny(j, reason);
		return flow_out(j, &k, &nf);
	}
	reason = judge_flow(j, &k, 0, &a);
	/* A SYN allowed: one lookup saves a failed insert when it is a retransmission. */
	if (syn && (!reason || audit_passes(j, reason)))
		tracked = bpf_map_lookup_elem(flows, &k) != NULL;
	if (audit_passes(j, reason))
		return audit_flow(j, flows, &k, reason, tracked);
	if (reason)
		goto refuse;
	if (!a.tls)
		return open_flow(j, flows, &k, a.reason, tracked);
	if (tcp_payload_len(j)) {
		reason = TF_REASON_TLS_FASTOPEN;
		goto refuse;
	}
	if (tcp_syn_mptcp(j)) {
		reason = TF_REASON_TLS_MPTCP;
		goto refuse;
	}
	return tls_flow_new(j, flows, &k, a.bind, a.reason, tracked);

refuse:
	/* A refused SYN on a tuple we still track ends that stale flow. */
	if (syn)
		flow_remove(j->sid, flows, &k);
	return deny(j, reason);
}

#endif /* TF_POLICY_BPF_H */
