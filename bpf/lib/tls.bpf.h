/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TLS flow states (docs/tls.md). A TCP flow to a TLS port of the
 * permission that allowed it starts in TF_FLOW_TLS_WAIT: packets without
 * payload pass both ways (the handshake, ACKs, FIN, RST), the guest's
 * payload goes to the ClientHello reader (tls_hello.bpf.h, through
 * JUDGE_NEED_TLS) and the server's is held back. An allowed hello moves the
 * flow to TF_FLOW_TLS_VERIFY: the guest's resent hello bytes must equal
 * the judged ones, and its records after the hello are followed (a later
 * ClientHello is judged like the first), until the server acknowledges the
 * whole hello: TF_FLOW_TLS_FOLLOW, where the server's payload passes and
 * the guest's records are still followed, up to its first
 * application_data record. The server's acknowledgement of that record's
 * header opens the flow: TF_FLOW_OPEN (one lookup per packet from then
 * on). A refused hello leaves the flow TF_FLOW_TLS_DENIED: no payload
 * passes again.
 */
#ifndef TF_TLS_BPF_H
#define TF_TLS_BPF_H

#include "judge.bpf.h"
#include "flow.bpf.h"

/*
 * A SYN's TCP options into the per-CPU scratch, for tcp_syn_mptcp() to
 * read in this same run: every byte behind a check against the packet's
 * end at a constant offset, the one form of bound the verifier follows
 * here; bytes past the end leave syn_optlen short of syn_optwant, which
 * reads as malformed.
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
 * with c just past the fixed TCP header parse_l4() read.
 */
static __always_inline void syn_opts_from_guest(struct judge *j, const struct cursor *c)
{
	if (j->p.proto == IPPROTO_TCP &&
	    (j->p.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN &&
	    j->p.tcp_hlen > TCP_HLEN_MIN)
		tcp_opts_copy(j, c, j->p.tcp_hlen - TCP_HLEN_MIN);
}

struct tcp_opts_ctx {
	const __u8 *o;
	__u32 n, i;
	int verdict; /* 1: MPTCP or options that do not parse */
};

/* One option per step (a bpf_loop() callback: verified once, not per option). */
static long tcp_opt_cb(__u64 k __attribute__((unused)), void *ctx)
{
	struct tcp_opts_ctx *c = ctx;
	__u32 i = c->i;
	__u8 kind, len;

	if (i >= c->n || i >= TF_TCP_OPTS_MAX)
		return 1;
	kind = c->o[i];
	if (kind == TCPOPT_EOL)
		return 1;
	if (kind == TCPOPT_NOP) {
		c->i = i + 1;
		return 0;
	}
	if (i + 2 > c->n || i + 1 >= TF_TCP_OPTS_MAX) {
		c->verdict = 1;
		return 1;
	}
	len = c->o[i + 1];
	if (len < 2 || kind == TCPOPT_MPTCP) {
		c->verdict = 1;
		return 1;
	}
	c->i = i + len;
	return 0;
}

/*
 * 1 if a SYN's options hold Multipath TCP, or do not parse: a TLS port
 * refuses such a SYN, since MPTCP lets data sent on another subflow take a
 * place in the server's stream that the judged hello's bytes were meant to
 * have.
 */
static __always_inline int tcp_syn_mptcp(const struct judge *j)
{
	struct tcp_opts_ctx c = {};
	struct tls_scratch *t;
	__u32 zero = 0;

	if (!j->p.tcp_opts)
		return 0;
	t = bpf_map_lookup_elem(&tf_tlsscratch, &zero);
	if (!t || t->syn_optlen != t->syn_optwant)
		return 1;
	c.o = t->syn_opts;
	c.n = t->syn_optlen;
	bpf_loop(TF_TCP_OPTS_MAX, tcp_opt_cb, &c, 0);
	return c.verdict;
}

/* Forget a flow's hello buffer, if it has one. */
static __always_inline void tls_buf_drop(__u32 sid, const struct tf_flow_key *k)
{
	void *bufs = bpf_map_lookup_elem(&tf_tlsbuf, &sid);

	if (bufs)
		bpf_map_delete_elem(bufs, k);
}

/*
 * A SYN (without data: decide_out() refuses TCP Fast Open on TLS ports)
 * that a permission allows on a TLS port. bind: the SNI must also be a
 * name the destination was learnt for (it was allowed as a learnt address).
 */
static __always_inline enum judgement tls_flow_new(struct judge *j, void *flows,
						   const struct tf_flow_key *k, __u8 bind,
						   __u16 reason, int tracked)
{
	struct tf_flow f = {
		.seen = flow_clock(),
		.policy_ver = j->p.pver,
		.state = TF_FLOW_TLS_WAIT,
		.bind = bind,
		.isn = j->p.tcp_seq + 1,
		.flags = reason == TF_REASON_ALLOW_LEARNED ? TF_FF_LEARNED : 0,
	};

	tls_buf_drop(j->sid, k); /* an earlier connection's, on the same tuple */
	if (flow_insert(j->sid, flows, k, &f, tracked))
		return deny(j, TF_REASON_FLOW_TABLE_FULL);
	return allow(j, reason, 1);
}

/*
 * Guest -> host, not a SYN, on a flow in a TLS state (f). Urgent data is
 * refused: the server's stack would take the urgent byte out of the stream
 * it hands the application, which would then read another hello than the
 * one judged. Payload is read only once the server's SYN-ACK to this
 * connection's SYN was seen, and only if it acknowledges exactly that
 * SYN-ACK (the server sends nothing else before the verdict): so the bytes
 * judged are the server's stream from its first byte, not bytes of another
 * connection attempt on the tuple that the server never accepted.
 */
static __always_inline enum judgement tls_flow_out(struct judge *j, const struct tf_flow_key *k,
						   const struct tf_flow *f)
{
	struct tls_scratch *t;
	__u32 zero = 0;

	/* The copy for tls_segment() goes to the scratch: the stack is 512 bytes for everything. */
	t = bpf_map_lookup_elem(&tf_tlsscratch, &zero);
	if (!t)
		return deny(j, TF_REASON_UNKNOWN);
	__builtin_memcpy(&t->flow, f, sizeof(t->flow));
	if (t->flow.state == TF_FLOW_TLS_DENIED)
		return tcp_payload_len(j) ? deny(j, t->flow.reason) :
					    allow(j, TF_REASON_ALLOW_FLOW, 0);
	if (j->p.tcp_flags & TCP_FLAG_URG)
		return deny(j, TF_REASON_TLS_MALFORMED);
	if (tcp_payload_len(j)) {
		/* After the verdict the bytes are compared with the ones read: any ack will do. */
		if (t->flow.state == TF_FLOW_TLS_WAIT &&
		    (!t->flow.armed || !(j->p.tcp_flags & TCP_FLAG_ACK) ||
		     j->p.tcp_ack != t->flow.srv_isn + 1))
			return deny(j, TF_REASON_TLS_PENDING);
		return JUDGE_NEED_TLS;
	}
	/*
	 * A connection that ends frees its buffer, also after the verdict: a
	 * client that gives up before its first application_data record (a
	 * certificate it refuses, a probe) would leave it to the sweep. The
	 * guest's payload after that is refused (no buffer), as nothing of it
	 * could be compared.
	 */
	if (j->p.tcp_flags & (TCP_FLAG_RST | TCP_FLAG_FIN))
		tls_buf_drop(j->sid, k);
	return allow(j, TF_REASON_ALLOW_FLOW, 0);
}

/* Open the flow (f, the guest's first application_data header acknowledged): free its buffer. */
static __always_inline void tls_flow_open(struct judge *j, const struct tf_flow_key *k,
					  struct tf_flow *f, __u32 open_at)
{
	/* The fast path refuses guest payload before open_at: the server has all of it. */
	f->ch_end = open_at;
	f->state = TF_FLOW_OPEN;
	tls_buf_drop(j->sid, k);
}

/*
 * Host -> guest on a flow in a TLS state (f, key k in flows): the server's
 * acknowledgement of the whole allowed hello lets its payload pass
 * (TF_FLOW_TLS_FOLLOW), its acknowledgement of the guest's first
 * application_data header opens the flow; before (and on refused flows)
 * only packets without payload pass. Transitions are single stores into
 * the flow: the guest's side writes tls_open_at meanwhile.
 */
static __always_inline enum judgement tls_flow_reply(struct judge *j, void *flows,
						     const struct tf_flow_key *k, struct tf_flow *f)
{
	__u8 syn_ack = j->p.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK);
	struct tf_flow nf;

	__builtin_memcpy(&nf, f, sizeof(nf));
	/* The SYN-ACK to the guest's SYN: the server's stream starts after its seq. */
	if (nf.state == TF_FLOW_TLS_WAIT && !nf.armed && syn_ack == (TCP_FLAG_SYN | TCP_FLAG_ACK) &&
	    j->p.tcp_ack == nf.isn && !tcp_payload_len(j)) {
		nf.armed = 1;
		nf.srv_isn = j->p.tcp_seq;
		if (bpf_map_update_elem(flows, k, &nf, BPF_EXIST))
			return deny(j, TF_REASON_FLOW_TABLE_FULL);
		return allow(j, TF_REASON_ALLOW_FLOW, 0);
	}
	/* That server acknowledging the whole hello, from its own first byte. */
	if (nf.state == TF_FLOW_TLS_VERIFY && (j->p.tcp_flags & TCP_FLAG_ACK) &&
	    !(j->p.tcp_flags & TCP_FLAG_SYN) && j->p.tcp_seq == nf.srv_isn + 1 &&
	    (__s32)(j->p.tcp_ack - (nf.isn + nf.ch_end)) >= 0) {
		if (nf.tls_open_at && (__s32)(j->p.tcp_ack - (nf.isn + nf.tls_open_at)) >= 0)
			tls_flow_open(j, k, f, nf.tls_open_at);
		else
			f->state = TF_FLOW_TLS_FOLLOW;
		return allow(j, TF_REASON_ALLOW_FLOW, 0);
	}
	if (nf.state == TF_FLOW_TLS_FOLLOW) {
		if ((j->p.tcp_flags & TCP_FLAG_ACK) && !(j->p.tcp_flags & TCP_FLAG_SYN) &&
		    nf.tls_open_at && (__s32)(j->p.tcp_ack - (nf.isn + nf.tls_open_at)) >= 0)
			tls_flow_open(j, k, f, nf.tls_open_at);
		return allow(j, TF_REASON_ALLOW_FLOW, 0);
	}
	if (tcp_payload_len(j))
		return deny(j, nf.state == TF_FLOW_TLS_DENIED ? nf.reason : TF_REASON_TLS_PENDING);
	return allow(j, TF_REASON_ALLOW_FLOW, 0);
}

#endif /* TF_TLS_BPF_H */
