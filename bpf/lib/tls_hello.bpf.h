/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest's ClientHello on a TLS flow (states: tls.bpf.h; format:
 * include/tapfence/tls.h; design: docs/tls.md).
 *
 * TF_FLOW_TLS_WAIT: each payload segment must continue the bytes held
 * (sequence number - isn == bytes held); bytes it resends must equal them.
 * Its new bytes are appended to the flow's buffer in tf_tlsbuf and the
 * segment is dropped (tls_pending): nothing reaches the server before the
 * verdict. When the records hold a whole hello, it is parsed (where it
 * lies if it is one record, else de-framed into the per-CPU scratch) and
 * judged: SNI allowed by a host rule for this
 * port, and, for a flow allowed as a learnt address, a name the address
 * was learnt for (tf_tlsbind). Allowed: the completing segment passes and
 * the flow goes to TF_FLOW_TLS_VERIFY, where the client's retransmission
 * of the dropped segments passes if its bytes equal the judged ones.
 * Refused: TF_FLOW_TLS_DENIED. A gap, different resent bytes, a hello over
 * TF_TLS_BUF or one that does not parse: refused (fail closed); a client
 * resending the hello's first byte twice with nothing new: tls_fragmented.
 *
 * After the verdict (TF_FLOW_TLS_VERIFY, then TF_FLOW_TLS_FOLLOW) the
 * guest's bytes go on into the same buffer, compared and appended alike,
 * and are read as records (tls_follow_step()) up to the header of its
 * first application_data record: a later ClientHello is held and judged
 * like the first (tls_second_hello if refused). The server's ack of that
 * header opens the flow (tls_flow_reply()).
 *
 * Packet bytes are read with bpf_skb_load_bytes() (TC) or
 * bpf_xdp_load_bytes() (XDP): the functions below take the context and a
 * constant xdp flag, and each entry point gets its own copy with the
 * other helper's call folded away.
 */
#ifndef TF_TLS_HELLO_BPF_H
#define TF_TLS_HELLO_BPF_H

#include "policy.bpf.h"

/* A buffer older than this is swept when a session's table is full; set by tapfenced before load. */
const volatile __u32 cfg_tls_timeout_s = 10;
/* 1: a hello with encrypted_client_hello is judged by its outer SNI; 0: refused (tls_ech). */
const volatile __u32 cfg_tls_ech_outer = 0;

#define TLS_CHUNKS (TF_TLS_BUF / TF_TLS_SLACK)

static __always_inline struct tls_scratch *tls_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&tf_tlsscratch, &zero);
}

static __always_inline long tls_load(void *ctx, const int xdp, __u32 off, void *to, __u32 len)
{
	if (xdp)
		return bpf_xdp_load_bytes(ctx, off, to, len);
	return bpf_skb_load_bytes(ctx, off, to, len);
}

/*
 * What the chunk callbacks below share: they copy packet bytes [pay_off,
 * pay_off + n) into the held wire bytes from off on, a chunk of
 * TF_TLS_SLACK bytes per bpf_loop() iteration (tls_append()), or compare
 * them, a word per iteration, reading the chunk in at its first word
 * (tls_differs()). A callback without a loop in it is verified once, where
 * loops would be walked for every chunk and word with their own bounds.
 */
struct tls_chunk_ctx {
	void *ctx;   /* the program's context */
	__u8 *wire;  /* the held bytes */
	__u8 *chunk; /* scratch for one chunk of packet bytes */
	__u64 off;   /* where in wire the packet's bytes go */
	__u64 pay_off;
	__u64 n;
	__u64 differ; /* compare: a difference; append: a failed read */
};

/* Chunk i's length, 0 past the end (64-bit: the register compared is the one passed). */
static __always_inline __u64 tls_chunk_len(const struct tls_chunk_ctx *c, __u64 i)
{
	__u64 len, done = i * TF_TLS_SLACK;

	if (done >= c->n || done >= TF_TLS_BUF)
		return 0;
	len = c->n - done;
	return len > TF_TLS_SLACK ? TF_TLS_SLACK : len;
}

/* Append chunk i of the packet's bytes to the held ones. */
static __always_inline long tls_append_step(struct tls_chunk_ctx *c, const int xdp, __u64 i)
{
	__u64 done = i * TF_TLS_SLACK, len = tls_chunk_len(c, i);

	if (len == 0)
		return 1;
	if (tls_load(c->ctx, xdp, c->pay_off + done, c->wire + ((c->off + done) & TF_TLS_MASK),
		     len)) {
		c->differ = 1;
		return 1;
	}
	return 0;
}

/* Compare word i of the packet's bytes with the held ones, reading its chunk in at its first word. */
static __always_inline long tls_cmp_step(struct tls_chunk_ctx *c, const int xdp, __u64 i)
{
	__u64 d, left, done = i * 8, len = tls_chunk_len(c, i / 32);

	if (done >= c->n || len == 0)
		return 1;
	if (!(i & 31) && tls_load(c->ctx, xdp, c->pay_off + done, c->chunk, len)) {
		c->differ = 1;
		return 1;
	}
	d = *(const __u64 *)(c->chunk + (done & (TF_TLS_SLACK - 1))) ^
	    *(const __u64 *)(c->wire + ((c->off + done) & TF_TLS_MASK));
	left = c->n - done;
	if (left < 8)
		d &= (1ULL << (left * 8)) - 1;
	c->differ |= d;
	return c->differ != 0;
}

/* The bpf_loop() callbacks, one per context type: each keeps one helper that reads packet bytes. */
static long tls_append_skb_cb(__u64 i, void *ctx)
{
	return tls_append_step(ctx, 0, i);
}

static long tls_append_xdp_cb(__u64 i, void *ctx)
{
	return tls_append_step(ctx, 1, i);
}

static long tls_cmp_skb_cb(__u64 i, void *ctx)
{
	return tls_cmp_step(ctx, 0, i);
}

static long tls_cmp_xdp_cb(__u64 i, void *ctx)
{
	return tls_cmp_step(ctx, 1, i);
}

/* Append n bytes of the packet at pay_off to b's wire bytes (have + n <= TF_TLS_BUF). */
static __always_inline int tls_append(struct tls_chunk_ctx *c, const int xdp, __u32 pay_off,
				      struct tf_tls_buf *b, __u32 n)
{
	c->wire = b->wire;
	c->off = b->have;
	c->pay_off = pay_off;
	c->n = n;
	c->differ = 0;
	bpf_loop(TLS_CHUNKS, xdp ? tls_append_xdp_cb : tls_append_skb_cb, c, 0);
	return c->differ ? -1 : 0;
}

/* 1 if the n packet bytes at pay_off differ from b's wire bytes at off (off + n <= have). */
static __always_inline int tls_differs(struct tls_chunk_ctx *c, const int xdp, __u32 pay_off,
				       struct tf_tls_buf *b, __u32 off, __u32 n)
{
	if (off + n > TF_TLS_BUF)
		return 1;
	c->wire = b->wire;
	c->off = off;
	c->pay_off = pay_off;
	c->n = n;
	c->differ = 0;
	bpf_loop(TF_TLS_BUF / 8, xdp ? tls_cmp_xdp_cb : tls_cmp_skb_cb, c, 0);
	return c->differ != 0;
}

struct tls_walk_ctx {
	struct tf_tls_buf *b;
	int st;
};

static long tls_follow_cb(__u64 i __attribute__((unused)), void *ctx)
{
	struct tls_walk_ctx *c = ctx;
	int progress, st = tls_follow_step(c->b, &progress);

	c->st = st;
	return st != TLS_MORE || !progress;
}

/*
 * Read the held bytes of b on: the first hello, or the records after a
 * judged one (tls.h stage 3). A context of its own per call: one shared
 * between the calls took the verifier 20,000 instructions more (it prunes
 * less).
 */
static __always_inline int tls_follow(struct tf_tls_buf *b)
{
	struct tls_walk_ctx wc = { .b = b, .st = TLS_MALFORMED };

	bpf_loop(TF_TLS_FOLLOW_STEPS, tls_follow_cb, &wc, 0);
	return wc.st;
}

struct tls_copy_ctx {
	struct tls_copy c;
	const __u8 *wire;
	__u8 *hs;
};

static long tls_copy_cb(__u64 i __attribute__((unused)), void *ctx)
{
	struct tls_copy_ctx *c = ctx;

	return tls_copy_step(&c->c, c->wire, c->hs);
}

struct tls_parse_ctx {
	struct tls_parse *p;
	const __u8 *hs;
};

static long tls_parse_cb(__u64 i __attribute__((unused)), void *ctx)
{
	struct tls_parse_ctx *c = ctx;

	return tls_parse_step(c->p, c->hs);
}

struct tls_sweep_ctx {
	__u64 now;
};

static long tls_sweep_cb(void *map, const void *key, void *value, void *ctx)
{
	const struct tf_tls_buf *b = value;
	struct tls_sweep_ctx *c = ctx;

	if (!b->busy && c->now - b->created_ns > (__u64)cfg_tls_timeout_s * NSEC_PER_SEC)
		bpf_map_delete_elem(map, key);
	return 0;
}

/* A new, empty buffer for the flow; a full table is swept of stale ones first. NULL if none. */
static __always_inline struct tf_tls_buf *tls_buf_new(void *bufs, const struct tf_flow_key *k)
{
	struct tls_sweep_ctx sc = { .now = bpf_ktime_get_ns() };
	struct tf_tls_buf *zero, *b;
	__u32 z = 0;

	zero = bpf_map_lookup_elem(&tf_tlszero, &z);
	if (!zero)
		return NULL;
	if (bpf_map_update_elem(bufs, k, zero, BPF_NOEXIST)) {
		bpf_for_each_map_elem(bufs, tls_sweep_cb, &sc, 0);
		if (bpf_map_update_elem(bufs, k, zero, BPF_NOEXIST))
			return NULL;
	}
	b = bpf_map_lookup_elem(bufs, k);
	if (b)
		b->created_ns = sc.now;
	return b;
}

/* Refuse the hello: the flow passes no payload again (audit mode: opens), its buffer goes. */
static __always_inline enum judgement tls_refuse(struct judge *j, const struct tf_flow_key *k,
						 __u16 reason)
{
	void *flows = session_flows(j->sid);
	struct tf_flow *cur = flows ? bpf_map_lookup_elem(flows, k) : NULL;
	struct tls_scratch *t = tls_scratch();

	int audit = audit_passes(j, reason);

	if (!t)
		return deny(j, reason);
	/* Not over a new connection another CPU just reset the tuple for. */
	if (cur && cur->isn == t->flow.isn) {
		/* In audit mode the flow opens plainly: its hello was read, nothing else is. */
		t->flow.state = audit ? TF_FLOW_OPEN : TF_FLOW_TLS_DENIED;
		t->flow.reason = reason;
		if (audit)
			t->flow.ch_end = 0;
		bpf_map_update_elem(flows, k, &t->flow, BPF_EXIST);
		tls_buf_drop(j->sid, k);
	} else {
		audit = 0;
	}
	return audit ? audited(j, reason) : deny(j, reason);
}

static __always_inline __u16 tls_status_reason(int st)
{
	switch (st) {
	case TLS_NOT_TLS:
		return TF_REASON_TLS_NOT_TLS;
	case TLS_SSLV2:
		return TF_REASON_TLS_SSLV2;
	case TLS_TOO_BIG:
		return TF_REASON_TLS_TOO_BIG;
	case TLS_NO_SNI:
		return TF_REASON_TLS_NO_SNI;
	case TLS_SNI_IP:
		return TF_REASON_TLS_SNI_IP;
	case TLS_SNI_LONG:
		return TF_REASON_TLS_SNI_DENIED; /* longer than any host rule */
	case TLS_ECH:
		return TF_REASON_TLS_ECH;
	}
	return TF_REASON_TLS_MALFORMED;
}

/*
 * Judge the whole hello in b (its records from b->h_start to b->rec_off): 0
 * if allowed, else the reason. The SNI stays in the scratch for the event
 * (j->name_tls).
 */
static __always_inline __u16 tls_judge_hello(struct judge *j, const struct tf_tls_buf *b,
					     struct tls_scratch *t)
{
	struct tls_copy_ctx cc = { .c = { .off = b->h_start, .end = b->rec_off },
				   .wire = b->wire,
				   .hs = t->hs };
	struct tls_parse_ctx pc = { .p = &t->p, .hs = t->hs };
	struct tf_rule_val perm;
	struct tf_name_val *v;
	void *bmap;
	__u64 *exp;
	__u32 sid = j->sid;
	int st, name_st;

	if (b->h_start == 0 && b->rec_off == TF_TLS_REC_HDR + b->hs_need &&
	    tls_u16(b->wire, 3) == b->hs_need) {
		/*
		 * One record holding exactly the hello, as common clients send their
		 * first: the copy would give these very bytes, so they are parsed
		 * where they lie (indexes masked to TF_TLS_BUF - 1 stay in wire).
		 */
		pc.hs = b->wire + TF_TLS_REC_HDR;
		tls_parse_start(&t->p, b->hs_need);
	} else {
		bpf_loop(TF_TLS_COPY_STEPS, tls_copy_cb, &cc, 0);
		tls_parse_start(&t->p, b->hs_need);
		/* A copy that stopped short would leave an earlier hello's bytes in the scratch. */
		if (cc.c.out != b->hs_need)
			return TF_REASON_TLS_MALFORMED;
	}
	bpf_loop(TF_TLS_PARSE_STEPS, tls_parse_cb, &pc, 0);
	st = t->p.phase == TLS_PH_DONE ? t->p.status : TLS_MALFORMED;
	/* The event names the SNI only when it is a host name or an IP literal: never raw bytes. */
	name_st = st == TLS_ECH ? t->p.ech_status : st;
	if (t->p.seen_sni && t->p.sni_len && !t->p.bad &&
	    (name_st == TLS_OK || name_st == TLS_SNI_IP || name_st == TLS_SNI_LONG)) {
		j->name_tls = 1;
		j->name_len = t->p.sni_len < TF_TLS_SNI_MAX ? t->p.sni_len : TF_TLS_SNI_MAX;
	}
	if (st == TLS_ECH && cfg_tls_ech_outer)
		st = t->p.ech_status;
	if (st != TLS_OK)
		return tls_status_reason(st);

	t->key.prefixlen = TF_NAME_KEY_FIXED_BITS + 8 * t->p.rev_len;
	t->key.sid = sid;
	t->key.ver = j->ver;
	copy_u32s(t->key.name, t->p.rev, TF_DNS_NAME_MAX);
	v = bpf_map_lookup_elem(&tf_names, &t->key);
	if (!v)
		return TF_REASON_TLS_SNI_DENIED;
	perm = v->len == t->p.rev_len ? v->exact : v->sub;
	if (perm_reason(j, j->ver, &perm))
		return TF_REASON_TLS_SNI_DENIED;
	if (!t->flow.bind)
		return 0;
	t->bkey.family = j->p.family;
	__builtin_memset(t->bkey.pad, 0, sizeof(t->bkey.pad));
	__builtin_memcpy(t->bkey.addr, j->p.daddr, 16);
	copy_u32s(t->bkey.name, t->p.rev, TF_DNS_NAME_MAX);
	bmap = bpf_map_lookup_elem(&tf_tlsbind, &sid);
	exp = bmap ? bpf_map_lookup_elem(bmap, &t->bkey) : NULL;
	if (!exp || bpf_ktime_get_ns() >= *exp)
		return TF_REASON_TLS_SNI_MISMATCH;
	return 0;
}

/*
 * 1 if the flow is still the one this run read (same connection, same
 * state): its value is written back whole, and another CPU may have reset
 * it for a new SYN meanwhile.
 */
static __always_inline int flow_unchanged(void *flows, const struct tf_flow_key *k, __u32 isn,
					  __u8 state)
{
	struct tf_flow *cur = bpf_map_lookup_elem(flows, k);

	return cur && cur->isn == isn && cur->state == state;
}

/* 1 while a hello is read (the first, or a later one) and the segment [off, off + n) reaches it. */
static __always_inline int tls_in_hello(const struct tf_tls_buf *b, __u32 off, __u32 n)
{
	return (!b->following || b->h2) && off + n > b->h_start;
}

/*
 * A guest segment with b claimed. Every byte of it below where reading
 * stopped (have, or open_at once following is done) must equal the bytes
 * held: what the server's stream holds there is what was read. New bytes
 * are appended and read on (tls_follow()). While a hello is read, a
 * segment reaching into it is held (dropped, tls_pending); a whole hello is
 * judged, and the segment that completed it passes. Once the first
 * application_data record's header is read, bytes past it pass unread.
 */
static __always_inline enum judgement tls_segment_held(struct tls_chunk_ctx *c, const int xdp,
						       struct judge *j, void *flows,
						       const struct tf_flow_key *k,
						       struct tf_tls_buf *b, struct tls_scratch *t,
						       __u32 pay_off, __u32 off, __u32 n)
{
	__u32 have, take, fresh, open_at;
	int st, judged = 0, first = 0;
	struct tf_flow *cur;
	__u16 reason;
	__u8 was;

	have = b->have;
	if (have > TF_TLS_BUF)
		return tls_refuse(j, k, TF_REASON_TLS_REASSEMBLY);
	if (b->f_done) {
		open_at = b->open_at;
		if (off >= open_at && off < (1U << 30))
			return allow(j, TF_REASON_ALLOW_FLOW, 0);
		if (off >= open_at || open_at > have)
			return tls_refuse(j, k, TF_REASON_TLS_REASSEMBLY);
		take = open_at - off < n ? open_at - off : n;
		if (tls_differs(c, xdp, pay_off, b, off, take))
			return tls_refuse(j, k, TF_REASON_TLS_REASSEMBLY);
		return allow(j, TF_REASON_ALLOW_FLOW, 0);
	}
	if (off > have)
		return tls_refuse(j, k, TF_REASON_TLS_REASSEMBLY);
	take = have - off < n ? have - off : n;
	if (take && tls_differs(c, xdp, pay_off, b, off, take))
		return tls_refuse(j, k, TF_REASON_TLS_REASSEMBLY);
	fresh = n - take;
	if (!fresh) {
		if (!tls_in_hello(b, off, n))
			return allow(j, TF_REASON_ALLOW_FLOW, 0); /* resent, read before */
		/*
		 * The first hello's first byte resent a second time with nothing
		 * new: the client's retransmission timer fired, its congestion
		 * window is spent on segments held here, and it sends no new byte
		 * before an acknowledgement that cannot come before the verdict.
		 */
		if (!b->following && off == 0 && ++b->resends >= 2)
			return tls_refuse(j, k, TF_REASON_TLS_FRAGMENTED);
		return deny(j, TF_REASON_TLS_PENDING);
	}
	pay_off += take;
	take = TF_TLS_BUF - have < fresh ? TF_TLS_BUF - have : fresh;
	if (tls_append(c, xdp, pay_off, b, take))
		return tls_refuse(j, k, TF_REASON_TLS_MALFORMED);
	b->have = have + take;

	st = tls_follow(b);
	if (st == TLS_HELLO) {
		first = !b->following;
		reason = tls_judge_hello(j, b, t);
		if (reason)
			return tls_refuse(j, k, first ? reason : TF_REASON_TLS_SECOND_HELLO);
		judged = 1;
		if (first)
			t->flow.ch_end = b->rec_off;
		tls_follow_from(b);
		st = tls_follow(b);
		/* One hello judged per segment: none completes two, or starts one after another. */
		if (st == TLS_HELLO || (st == TLS_MORE && b->h2))
			return tls_refuse(j, k, TF_REASON_TLS_SECOND_HELLO);
	}
	if (st == TLS_MORE) {
		if (take < fresh)
			return tls_refuse(j, k, TF_REASON_TLS_TOO_BIG);
		if (tls_in_hello(b, off, n))
			return deny(j, TF_REASON_TLS_PENDING);
	} else if (st != TLS_APPDATA) {
		if (!b->following)
			return tls_refuse(j, k, tls_status_reason(st));
		return tls_refuse(j, k,
				  st == TLS_TOO_BIG ? TF_REASON_TLS_TOO_BIG :
						      TF_REASON_TLS_SECOND_HELLO);
	}
	if (st == TLS_APPDATA)
		t->flow.tls_open_at = b->open_at;
	if (first) {
		was = t->flow.state;
		t->flow.state = TF_FLOW_TLS_VERIFY;
		if (!flow_unchanged(flows, k, t->flow.isn, was))
			return deny(j, TF_REASON_TLS_PENDING);
		if (bpf_map_update_elem(flows, k, &t->flow, BPF_EXIST))
			return deny(j, TF_REASON_FLOW_TABLE_FULL);
	} else if (st == TLS_APPDATA) {
		/* One field, not the whole value: the server's side moves the state meanwhile. */
		cur = bpf_map_lookup_elem(flows, k);
		if (cur && cur->isn == t->flow.isn)
			cur->tls_open_at = b->open_at;
	}
	return judged ? allow(j, TF_REASON_ALLOW_TLS, 1) : allow(j, TF_REASON_ALLOW_FLOW, 0);
}

/* Guest payload on a flow in TF_FLOW_TLS_WAIT, _VERIFY or _FOLLOW (its copy: t->flow). */
static __always_inline enum judgement tls_segment(void *ctx, const int xdp, struct judge *j)
{
	struct tls_chunk_ctx c = { .ctx = ctx };
	struct tls_scratch *t = tls_scratch();
	__u32 pay_off = j->p.pay_off;
	__u32 n = tcp_payload_len(j), off;
	struct tf_flow_key *k;
	struct tf_tls_buf *b;
	void *flows, *bufs;
	enum judgement v;

	bufs = bpf_map_lookup_elem(&tf_tlsbuf, &j->sid);
	flows = session_flows(j->sid);
	if (!bufs || !flows || !t)
		return deny(j, TF_REASON_NO_SESSION);
	off = j->p.tcp_seq - t->flow.isn;
	k = &t->fkey;
	__builtin_memset(k, 0, sizeof(*k));
	flow_key_out(&j->p, k);
	c.chunk = t->chunk;
	b = bpf_map_lookup_elem(bufs, k);
	/* No buffer after a verdict: it was swept, or the server's ack just opened the flow. */
	if (!b && t->flow.state != TF_FLOW_TLS_WAIT)
		return deny(j, TF_REASON_TLS_REASSEMBLY);
	if (!b) {
		/*
		 * No buffer yet, and not the first byte: the first segment found the
		 * table full (or never came). Held like the rest: the client resends
		 * from the first byte, which takes a buffer then.
		 */
		if (off != 0)
			return deny(j, TF_REASON_TLS_PENDING);
		b = tls_buf_new(bufs, k);
		if (!b)
			return deny(j, TF_REASON_TLS_TABLE_FULL); /* the client resends */
	}
	/* One run at a time appends and judges; a segment racing it is held (and resent). */
	if (__sync_val_compare_and_swap(&b->busy, 0, 1) != 0)
		return deny(j, TF_REASON_TLS_PENDING);
	v = tls_segment_held(&c, xdp, j, flows, k, b, t, pay_off, off, n);
	__sync_lock_test_and_set(&b->busy, 0); /* xchg: a full barrier before the release */
	return v;
}

/*
 * Global functions: the verifier checks each once, on its own, with j as
 * plain memory of its size (nothing here follows j->s), instead of once
 * for every path of the judge that reaches it: that walk took the entry
 * programs to 450,000 instructions and seconds of load time. They return
 * JUDGE_ALLOW or JUDGE_DENY (a global function returns a plain int).
 */
__noinline int tls_segment_tc(struct __sk_buff *skb, struct judge *j)
{
	if (!j)
		return JUDGE_DENY;
	return tls_segment(skb, 0, j);
}

__noinline int tls_segment_xdp(struct xdp_md *ctx, struct judge *j)
{
	if (!j)
		return JUDGE_DENY;
	return tls_segment(ctx, 1, j);
}

#endif /* TF_TLS_HELLO_BPF_H */
