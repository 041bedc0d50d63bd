/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DNS with the session's resolver, judged by content (host rules).
 *
 * Guest -> resolver (UDP to its address and port): the query is parsed;
 * its name must be allowed by a host rule of the session (tf_names), and
 * it is recorded as outstanding (tf_dnsq) before it leaves.
 * Resolver -> guest: the answer must match an outstanding query of the
 * session (guest port, id, question); the A/AAAA records of the asked name
 * and its CNAME chain are learnt (tf_learned) before the answer is let
 * through, in the same run, so the guest can never connect before the
 * address is known. decide_out() then allows new flows to learnt
 * addresses until their TTL ends.
 *
 * The message is copied (bpf_skb_load_bytes() / bpf_xdp_load_bytes(), by
 * the entry program) into the per-CPU scratch tf_dnsbuf and parsed there
 * by include/tapfence/dns.h, the parser the unit tests and the fuzzer run.
 */
#ifndef TF_DNS_BPF_H
#define TF_DNS_BPF_H

#include "policy.bpf.h"
#include "record.bpf.h"

/* TTLs of learnt addresses are clamped to [min, max] seconds; set by tapfenced before load. */
const volatile __u32 cfg_ttl_min_s = 5;
const volatile __u32 cfg_ttl_max_s = 3600;
/* An outstanding query older than this no longer matches an answer. */
const volatile __u32 cfg_dnsq_timeout_s = 10;

/*
 * The parse as one bpf_loop(): the verifier checks dns_step_cb() once
 * (kernel/bpf/verifier.c, check_helper_call() for BPF_FUNC_loop, and since
 * 6.7 until its state converges) instead of walking every path through
 * nested per-record and per-byte loops, which overflows its 1M-instruction
 * budget. The kernel inlines the loop when the callback is a constant
 * (inline_bpf_loop(), 5.19), so a step costs a direct call.
 */
static __always_inline int dns_parse_run(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	struct dns_loop_ctx c = { .msg = msg, .p = p, .len = len };

	bpf_loop(TF_DNS_STEPS_MAX, dns_step_cb, &c, 0);
	return dns_parse_end(p);
}

static __always_inline struct dns_scratch *dns_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&tf_dnsbuf, &zero);
}

/* Where the DNS message starts in the frame: the UDP payload, as parse_l4() found it. */
static __always_inline __u32 dns_msg_off(const struct judge *j)
{
	return j->p.pay_off;
}

/*
 * The DNS message's length, from the UDP header, or 0 if it cannot be a
 * message this datapath parses: shorter than a header, longer than
 * TF_DNS_MSG_MAX (fail closed), or longer than the IP packet says.
 */
static __always_inline __u32 dns_msg_len(const struct judge *j)
{
	__u32 len = j->p.udp_len;

	if (len > j->p.l4_len || len < UDP_HLEN + TF_DNS_HDR_LEN || len > UDP_HLEN + TF_DNS_MSG_MAX)
		return 0;
	return len - UDP_HLEN;
}

/*
 * A query from the guest: allowed by a host rule, recorded, then let out
 * on a flow (so later packets of the port are known to the flow table,
 * as before host rules). Every query is judged, not just a flow's first.
 */
static __always_inline enum judgement dns_query(struct judge *j, struct dns_scratch *s, __u32 len)
{
	struct tf_dnsq_key qk = { .sid = j->sid, .gport = j->p.sport };
	struct tf_flow_key fk = {};
	struct tf_rule_val perm;
	struct tf_name_val *v;
	void *flows, *qmap;
	int st, audit = 0;

	dns_parse_start(&s->p, 0, NULL, 0, 0);
	st = dns_parse_run(&s->p, s->msg, len);
	if (s->p.nchain)
		j->name_len = s->p.chain_len[0];
	if (st == DNS_QTYPE)
		return deny(j, TF_REASON_DNS_QTYPE);
	if (st != DNS_OK)
		return deny(j, TF_REASON_DNS_MALFORMED);

	s->key.prefixlen = TF_NAME_KEY_FIXED_BITS + 8 * s->p.rev_len;
	s->key.sid = j->sid;
	s->key.ver = j->ver;
	copy_words(s->key.name, s->p.rev, TF_DNS_NAME_MAX);
	v = bpf_map_lookup_elem(&tf_names, &s->key);
	__builtin_memset(&perm, 0, sizeof(perm));
	if (v)
		perm = v->len == s->p.rev_len ? v->exact : v->sub;
	if (!perm.protos) {
		/* In audit mode recorded all the same, with no permission: its answer teaches nothing. */
		if (!audit_passes(j, TF_REASON_DNS_NAME_DENIED))
			return deny(j, TF_REASON_DNS_NAME_DENIED);
		audit = 1;
	}

	s->q.created_ns = bpf_ktime_get_ns();
	s->q.ver = j->ver;
	s->q.perm = perm;
	s->q.name_idx = v ? v->idx : 0;
	s->q.sub = v && v->len != s->p.rev_len;
	s->q.pad = 0;
	s->q.qtype = s->p.qtype;
	s->q.name_len = s->p.rev_len;
	copy_words(s->q.name, s->p.rev, TF_DNS_NAME_MAX);
	qk.id = bpf_htons(s->p.id);
	qmap = bpf_map_lookup_elem(&tf_dnsq, &j->sid);
	if (!qmap || bpf_map_update_elem(qmap, &qk, &s->q, BPF_ANY))
		return deny(j, TF_REASON_DNS_QUERY_TABLE);

	flows = session_flows(j->sid);
	if (!flows)
		return deny(j, TF_REASON_NO_SESSION);
	flow_key_out(&j->p, &fk);
	if (open_flow(j, flows, &fk, TF_REASON_ALLOW_DNS, 0) != JUDGE_ALLOW)
		return JUDGE_DENY;
	return audit ? audited(j, TF_REASON_DNS_NAME_DENIED) : JUDGE_ALLOW;
}

static __always_inline __u64 dns_ttl_ns(__u32 ttl)
{
	if (ttl < cfg_ttl_min_s)
		ttl = cfg_ttl_min_s;
	if (ttl > cfg_ttl_max_s)
		ttl = cfg_ttl_max_s;
	return (__u64)ttl * NSEC_PER_SEC;
}

/*
 * An event about one record of an answer, beside the answer's own:
 * dns_rebind names the refused address in family/daddr (saddr zero),
 * dns_learn_limit (r = NULL) says records were not learnt.
 */
static __always_inline void dns_note(const struct judge *j, __u16 reason, const struct dns_rec *r)
{
	struct tf_event *e;

	count(j->sid, reason);
	e = event_fill(j, JUDGE_DENY, reason);
	if (!e)
		return;
	if (r) {
		e->family = r->family;
		__builtin_memset(e->saddr, 0, 16);
		__builtin_memcpy(e->daddr, r->addr, 16);
	}
	event_send(e);
}

/*
 * An address no answer may open: the hard floor (unless exempt), host
 * addresses and the session's gateway included, or any guest's address.
 */
static __always_inline int dns_rebinds(const struct judge *j, const struct dns_rec *r)
{
	struct tf_addr_key k = { .family = r->family };

	if (floor_session_reason(j->s, r->family, r->addr))
		return 1;
	__builtin_memcpy(k.addr, r->addr, 16);
	return bpf_map_lookup_elem(&tf_addrs, &k) != NULL;
}

/*
 * 1 if learnt entry l says all that n does but its expiry: the version,
 * permission, name index and asked name. Every word after expires_ns is
 * compared (no early exit), padding included, which both sides zero; a
 * daemon-written entry that differs only in padding just takes the
 * update.
 */
static __always_inline int learned_same(const struct tf_learned *l, const struct tf_learned *n)
{
	const __u64 *a = (const __u64 *)l, *b = (const __u64 *)n;
	__u64 diff = 0;
	__u32 i;

	for (i = 1; i < sizeof(*l) / 8; i++)
		diff |= a[i] ^ b[i];
	return !diff;
}
_Static_assert(sizeof(struct tf_learned) % 8 == 0 &&
		       __builtin_offsetof(struct tf_learned, expires_ns) == 0,
	       "learned_same() compares the words after expires_ns");

/*
 * Learn record i of the answer with s->l, the permission and name of the
 * query; 1 if it could not be stored. A function of its own (a BPF-to-BPF
 * call): inlined into the loop, clang gives its keys stack slots of their
 * own and tc_to_guest's frame passes the 512-byte limit (the verifier
 * checks each frame and the sum along the call chain,
 * check_max_stack_depth() in kernel/bpf/verifier.c).
 *
 * An address already learnt the same way (learned_same(): the same asked
 * name, permission and generation, what a name asked again gives) is
 * refreshed in place: its binding's expiry and then its own are written
 * into the elements found, where an update takes a bucket lock, a free
 * element and a copy of the value and key (the binding's is 268 bytes).
 * An LRU element can be recycled under a reader, and neither value holds
 * its key:
 * - the entry's expiry is read before the comparison and replaced by a
 *   compare-and-swap, which fails (and the update is made instead) if the
 *   element took another value meanwhile: a recycling writes the expiry
 *   too. An element recycled before the read and holding the same name,
 *   permission and generation, so another address of that name, takes
 *   this record's expiry, and this address stays unlearnt until asked
 *   again (its new flows are no_rule: closed);
 * - a binding holds its expiry alone: one recycled between its lookup and
 *   the write is another (address, name) pair of this session's that an
 *   answer taught, whose end moves to this record's, within ttl_max_s. It
 *   opens nothing by itself: an SNI is checked against the bindings only
 *   on a flow a learnt entry of that address allowed, and only once the
 *   name passed the host rules.
 * A binding not found is updated, as a new address's is.
 */
static __noinline int dns_learn_one(const struct judge *j, struct dns_scratch *s, __u32 i,
				    __u64 now)
{
	struct dns_rec *r = &s->p.rec[i & (TF_DNS_LEARN_MAX - 1)];
	struct tf_learn_key k = { .sid = j->sid, .family = r->family };
	__u32 sid = j->sid;
	struct tf_learned *l;
	void *lmap, *bmap;
	__u64 *exp = NULL, old = 0;
	int same = 0;

	if (dns_rebinds(j, r)) {
		dns_note(j, TF_REASON_DNS_REBIND, r);
		return 0;
	}
	lmap = bpf_map_lookup_elem(&tf_learned, &sid);
	bmap = bpf_map_lookup_elem(&tf_tlsbind, &sid);
	if (!lmap || !bmap)
		return 1;
	__builtin_memcpy(k.addr, r->addr, 16);
	s->l.expires_ns = now + dns_ttl_ns(r->ttl);
	/* The (address, name) pair first: an SNI check never sees the address without it. */
	s->bkey.family = r->family;
	__builtin_memcpy(s->bkey.addr, r->addr, 16);
	l = bpf_map_lookup_elem(lmap, &k);
	if (l) {
		old = *(volatile __u64 *)&l->expires_ns;
		same = learned_same(l, &s->l);
	}
	if (same)
		exp = bpf_map_lookup_elem(bmap, &s->bkey);
	if (exp)
		*exp = s->l.expires_ns;
	else if (bpf_map_update_elem(bmap, &s->bkey, &s->l.expires_ns, BPF_ANY))
		return 1;
	if (same && l && __sync_val_compare_and_swap(&l->expires_ns, old, s->l.expires_ns) == old)
		return 0;
	return bpf_map_update_elem(lmap, &k, &s->l, BPF_ANY) ? 1 : 0;
}

static __always_inline void dns_learn(const struct judge *j, struct dns_scratch *s, __u64 now)
{
	int lost = s->p.lost;
	__u32 i;

	s->l.ver = s->q.ver;
	s->l.perm = s->q.perm;
	s->l.name_idx = s->q.name_idx;
	s->l.sub = s->q.sub;
	s->l.pad = 0;
	s->l.name_len = s->q.name_len;
	copy_halves(s->l.name, s->q.name, TF_DNS_NAME_MAX);
	s->l.pad2[0] = 0;
	s->l.pad2[1] = 0;
	__builtin_memset(s->bkey.pad, 0, sizeof(s->bkey.pad));
	copy_u32s(s->bkey.name, s->q.name, TF_DNS_NAME_MAX);
	for (i = 0; i < TF_DNS_LEARN_MAX; i++) {
		if (i >= s->p.nrec)
			break;
		lost |= dns_learn_one(j, s, i, now);
	}
	if (lost)
		dns_note(j, TF_REASON_DNS_LEARN_LIMIT, NULL);
}

/*
 * An answer from the resolver: matched to its query or dropped; learnt
 * from before it is let through. The outstanding query is consumed by the
 * first answer whose question matches, whatever becomes of it, so a
 * duplicate is unmatched; a failed delete means another CPU consumed it.
 */
static __always_inline enum judgement dns_answer(struct judge *j, struct dns_scratch *s, __u32 len)
{
	struct tf_dnsq_key qk = { .sid = j->sid, .gport = j->p.dport };
	struct tf_dnsq *q;
	void *qmap;
	__u64 now;
	int st;

	__builtin_memcpy(&qk.id, s->msg, sizeof(qk.id));
	qmap = bpf_map_lookup_elem(&tf_dnsq, &j->sid);
	if (!qmap)
		return deny(j, TF_REASON_DNS_UNMATCHED);
	q = bpf_map_lookup_elem(qmap, &qk);
	if (!q)
		return deny(j, TF_REASON_DNS_UNMATCHED);
	/* A copy: an LRU element can be recycled under a reader. */
	copy_words(&s->q, q, sizeof(s->q));
	now = bpf_ktime_get_ns();
	if (now - s->q.created_ns > (__u64)cfg_dnsq_timeout_s * NSEC_PER_SEC) {
		bpf_map_delete_elem(qmap, &qk);
		return deny(j, TF_REASON_DNS_UNMATCHED);
	}
	dns_parse_start(&s->p, 1, s->q.name, s->q.name_len, s->q.qtype);
	st = dns_parse_run(&s->p, s->msg, len);
	if (!s->p.matched)
		return deny(j, st == DNS_MALFORMED ? TF_REASON_DNS_MALFORMED :
						     TF_REASON_DNS_UNMATCHED);
	j->name_len = s->p.chain_len[0];
	if (bpf_map_delete_elem(qmap, &qk))
		return deny(j, TF_REASON_DNS_UNMATCHED);
	if (st == DNS_TRUNCATED)
		return deny(j, TF_REASON_DNS_TRUNCATED);
	if (st != DNS_OK)
		return deny(j, TF_REASON_DNS_MALFORMED);
	if (s->q.perm.protos)
		dns_learn(j, s, now);
	return allow(j, TF_REASON_ALLOW_DNS_ANSWER, 1);
}

#endif /* TF_DNS_BPF_H */
