/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The judgement of one packet: what the judges return, and the state they
 * fill on the way (struct judge) for the record step (record.bpf.h).
 */
#ifndef TF_JUDGE_BPF_H
#define TF_JUDGE_BPF_H

#include "maps.bpf.h"
#include "parse.bpf.h"

/*
 * What a judge says of a packet. DENY and ALLOW are verdicts, with the
 * reason in j->reason. The NEED_* judgements are work only the entry
 * program can do, which it does before it records a verdict:
 * - NEED_DNS: a DNS message to judge by its content, which only the entry
 *   program can copy (bpf_skb_load_bytes() and bpf_xdp_load_bytes() each
 *   exist for one program type; dns.bpf.h);
 * - NEED_PULL: an ICMP error's quoted headers lie past the linear area (TC
 *   pulls only the outer headers of large packets): pull more and judge
 *   again; the judges set nothing before returning it;
 * - NEED_TLS: guest payload on a flow whose ClientHello is awaited or
 *   being verified (its copy in tf_tlsscratch): read the bytes
 *   (tls_hello.bpf.h).
 * AUDIT is a verdict too: a session in audit mode passes a packet its
 * policy denies for j->reason (audit_passes()); record() counts and
 * reports it, and makes it an allow.
 */
enum judgement {
	JUDGE_DENY,
	JUDGE_ALLOW,
	JUDGE_AUDIT,
	JUDGE_NEED_DNS,
	JUDGE_NEED_PULL,
	JUDGE_NEED_TLS,
};
_Static_assert(JUDGE_DENY == TF_VERDICT_DENY && JUDGE_ALLOW == TF_VERDICT_ALLOW &&
		       JUDGE_AUDIT == TF_VERDICT_AUDIT,
	       "a recorded judgement is the event's verdict");

struct judge {
	const struct tf_session *s;
	struct tf_sess_key dev; /* the device judged on: tf_sessions' key */
	__u32 sid;
	__u32 ver; /* the session's rules_ver: generation of its policy's keys (pver: in p) */
	__u16 reason;
	__u8 dir;
	__u8 emit;	/* an allow worth an event (a new flow) */
	__u8 vlan;	/* the skb carried a tag the stack already took off */
	__u8 pulled;	/* TC pulled TF_PULL_LEN already: no JUDGE_NEED_PULL again */
	__u16 name_len; /* the event names the DNS question in tf_dnsbuf (0: no name) */
	__u8 name_tls;	/* ... or the SNI in tf_tlsscratch */
	__u8 trim; /* an allowed ICMP error quoting more than it may: TC cuts it (icmp.bpf.h) */
	__u8 mode; /* the session's TF_SF_AUDIT and TF_SF_REJECT (j->s is lost past a global call) */
	__u8 reply; /* a denied packet from the guest is answered so (enum reply, reject.bpf.h) */
	struct pkt p;
};

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

/*
 * The device a packet is judged on, as tf_sessions keys it: its ifindex and
 * its network namespace's cookie (the same number SO_NETNS_COOKIE gives
 * userspace). bpf_get_netns_cookie() will not do: at TC it names the
 * namespace of the skb's socket or the init namespace, not the device's,
 * and XDP may not call it.
 */
static __always_inline struct tf_sess_key skb_dev(struct __sk_buff *skb)
{
	struct sk_buff *kskb = bpf_cast_to_kern_ctx(skb);
	struct tf_sess_key k = { .ifindex = skb->ifindex };

	k.netns = kskb->dev->nd_net.net->net_cookie;
	return k;
}

static __always_inline struct tf_sess_key xdp_dev(struct xdp_md *ctx)
{
	struct xdp_buff *xdp = bpf_cast_to_kern_ctx(ctx);
	struct tf_sess_key k = { .ifindex = ctx->ingress_ifindex };

	k.netns = xdp->rxq->dev->nd_net.net->net_cookie;
	return k;
}

static __always_inline enum judgement deny(struct judge *j, __u16 reason)
{
	j->reason = reason;
	return JUDGE_DENY;
}

/* emit: the allow is worth an event (a new flow, an answer learnt from, a hello judged). */
static __always_inline enum judgement allow(struct judge *j, __u16 reason, __u8 emit)
{
	j->reason = reason;
	j->emit = emit;
	return JUDGE_ALLOW;
}

/*
 * 1 if a session in audit mode passes a packet denied for reason: what an
 * allowlist entry could allow (an address, a port, a name, an SNI), never
 * the floor, anti-spoofing, a malformed or unreadable packet, or a
 * protocol rule no allowlist changes (docs/audit-mode.md).
 */
static __always_inline int audit_passes(const struct judge *j, __u16 reason)
{
	if (!(j->mode & TF_SF_AUDIT))
		return 0;
	switch (reason) {
	case TF_REASON_NO_RULE:
	case TF_REASON_PORT_NOT_ALLOWED:
	case TF_REASON_DNS_NAME_DENIED:
	case TF_REASON_TLS_SNI_DENIED:
	case TF_REASON_TLS_SNI_MISMATCH:
	case TF_REASON_TLS_UDP:
	case TF_REASON_DENY_RULE:
		return 1;
	}
	return 0;
}

/* A packet passed in audit mode that enforce mode would deny for reason (an event each). */
static __always_inline enum judgement audited(struct judge *j, __u16 reason)
{
	j->reason = reason;
	j->emit = 1;
	return JUDGE_AUDIT;
}

#endif /* TF_JUDGE_BPF_H */
