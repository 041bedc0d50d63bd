/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The record step, after the judgement: count the packet under its
 * reason, then emit its event within the session's budget. A full ringbuf
 * only costs the event (counted as lost); it never changes the verdict.
 */
#ifndef TF_RECORD_BPF_H
#define TF_RECORD_BPF_H

#include "judge.bpf.h"

static __always_inline void count(__u32 sid, __u32 slot)
{
	__u32 idx = sid * TF_CNT_SLOTS + slot;
	__u64 *v = bpf_map_lookup_elem(&tf_counters, &idx);

	if (v)
		(*v)++;
}

/*
 * A flow of session sid that took an entry of its own (opened) or left it
 * (!opened): with the table's entry count, the daemon derives how many a
 * full table evicted (docs/operations.md, "Flow table"). An atomic add, so
 * that a program preempted on its CPU (PREEMPT_RT) by another loses no
 * count. Per new flow or removal, not per packet.
 */
static __always_inline void count_flow(__u32 sid, int opened)
{
	struct tf_flowcnt *v = bpf_map_lookup_elem(&tf_flowcnt, &sid);

	if (!v)
		return;
	if (opened)
		__sync_fetch_and_add(&v->opened, 1);
	else
		__sync_fetch_and_add(&v->removed, 1);
}

static __always_inline void stat_inc(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&tf_stats, &stat);

	if (v)
		(*v)++;
}

/*
 * Events per second and burst a session may emit on one CPU (0: no limit).
 * A packet is judged the same whether or not its event is suppressed.
 */
const volatile __u32 cfg_events_per_s = 200;
const volatile __u32 cfg_events_burst = 400;
/* Derived by the daemon at load, so the datapath divides nothing: 1e9 / per_s, (burst - 1) * that. */
const volatile __u64 cfg_event_interval_ns = 5000000;
const volatile __u64 cfg_event_tau_ns = 1995000000;

/*
 * A wake-up is an interrupt on the packet's CPU and a context switch, tens
 * of microseconds on a busy host: paid once per event when events are few,
 * it cost more than the event. So an event wakes the daemon only if none
 * did for TF_EV_WAKE_MS, or it is the one that takes the ring past
 * cfg_ev_wake_bytes (an eighth of it, set by the loader): one wake-up per
 * crossing, not one per event while the daemon drains a full ring. The
 * daemon drains again TF_LINGER_MS after every drain that read events,
 * which finds the others.
 */
const volatile __u64 cfg_ev_wake_bytes = 0;
__u64 ev_woke_ns; /* when an event last woke the daemon (this object's own) */

/* Over the budget, an event whose (reason, remote end) had one this long ago gets out anyway. */
#define TF_EVSEEN_NS 1000000000ULL

/*
 * GCRA: 1 if one more may go now by the bucket whose arrival time is *tat,
 * at one per interval with a burst of tau / interval + 1.
 */
static __always_inline int gcra(__u64 *tat, __u64 now, __u64 interval, __u64 tau)
{
	if (*tat < now)
		*tat = now;
	if (*tat - now > tau)
		return 0;
	*tat += interval;
	return 1;
}

/*
 * 1 if an event over the budget names a (reason, remote end) that has had
 * no event of this session for TF_EVSEEN_NS: a flood of one denial must not
 * hide another. Only events over the budget look here, so the table holds
 * what floods, and only its first sight in each second gets out, from the
 * second budget (b->novel_tat_ns).
 */
static __always_inline int event_novel(const struct judge *j, __u16 reason, __u64 now,
				       struct tf_evbucket *b)
{
	struct tf_evseen_key k = {
		.sid = j->sid,
		.reason = reason,
		.dir = j->dir,
		.family = j->p.family,
		.proto = j->p.proto,
	};
	__u64 *seen;

	if (j->dir == TF_DIR_FROM_GUEST) {
		k.port = j->p.dport;
		__builtin_memcpy(k.addr, j->p.daddr, 16);
	} else {
		k.port = j->p.sport;
		__builtin_memcpy(k.addr, j->p.saddr, 16);
	}
	seen = bpf_map_lookup_elem(&tf_evseen, &k);
	if (seen && now - *seen < TF_EVSEEN_NS)
		return 0;
	if (!gcra(&b->novel_tat_ns, now, cfg_event_interval_ns, cfg_event_tau_ns))
		return 0;
	bpf_map_update_elem(&tf_evseen, &k, &now, BPF_ANY);
	return 1;
}

/*
 * GCRA over the session's per-CPU bucket: 1 if an event may go out now;
 * *suppressed gets (and resets) what was held back before it. Over the
 * budget, a novel event (event_novel()) spends a second budget of the same
 * rate and burst, so a session emits at most twice its budget.
 */
static __always_inline int event_budget(const struct judge *j, __u16 reason, __u64 now,
					__u32 *suppressed)
{
	struct tf_evbucket *b;
	__u32 sid = j->sid;

	*suppressed = 0;
	if (!cfg_events_per_s)
		return 1;
	b = bpf_map_lookup_elem(&tf_evrate, &sid);
	if (!b)
		return 1;
	if (!gcra(&b->tat_ns, now, cfg_event_interval_ns, cfg_event_tau_ns) &&
	    !event_novel(j, reason, now, b)) {
		b->suppressed++;
		return 0;
	}
	*suppressed = b->suppressed;
	b->suppressed = 0;
	return 1;
}

/*
 * Reserve an event and fill it from j; NULL when the session's rate limit
 * holds it back (counted as suppressed) or the ringbuf is full (counted as
 * lost).
 */
static __always_inline struct tf_event *event_fill(const struct judge *j, enum judgement verdict,
						   __u16 reason)
{
	struct tf_event *e;
	struct dns_scratch *s;
	struct tls_scratch *t;
	__u32 zero = 0, suppressed;
	/* One clock read for the budget and the timestamp: tens of ns on a paravirtual clock. */
	__u64 now = bpf_ktime_get_ns();

	if (!event_budget(j, reason, now, &suppressed)) {
		count(j->sid, TF_CNT_EVENTS_SUPPRESSED);
		return NULL;
	}
	e = bpf_ringbuf_reserve(&tf_events, sizeof(*e), 0);
	if (!e) {
		stat_inc(TF_STAT_EVENTS_LOST);
		count(j->sid, TF_CNT_EVENTS_LOST);
		return NULL;
	}
	e->ts_ns = now;
	e->sid = j->sid;
	e->ifindex = j->dev.ifindex;
	e->netns = j->dev.netns;
	e->policy_ver = j->p.pver;
	e->reason = reason;
	e->verdict = verdict; /* a recorded judgement: the TF_VERDICT_* numbers */
	e->dir = j->dir;
	e->family = j->p.family;
	e->proto = j->p.proto;
	e->ethertype = j->p.ethertype;
	e->sport = j->p.sport;
	e->dport = j->p.dport;
	__builtin_memcpy(e->saddr, j->p.saddr, 16);
	__builtin_memcpy(e->daddr, j->p.daddr, 16);
	__builtin_memcpy(e->smac, j->p.smac, 6);
	e->suppressed = suppressed;
	e->rejected = !!j->reply;
	e->name_len = 0;
	if (j->name_len && j->name_tls) {
		t = bpf_map_lookup_elem(&tf_tlsscratch, &zero);
		if (t) {
			/* Forward form, zero padded by tls_parse_start(). */
			copy_words(e->name, t->p.sni, TF_NAME_MAX);
			e->name_len = j->name_len;
		}
	} else if (j->name_len) {
		s = bpf_map_lookup_elem(&tf_dnsbuf, &zero);
		if (s) {
			/* The forward form, zero padded by dns_parse_start(). */
			copy_words(e->name, s->p.chain[0], TF_NAME_MAX);
			e->name_len = j->name_len;
		}
	}
	return e;
}

static __always_inline void event_send(struct tf_event *e)
{
	const __u64 rec = (sizeof(*e) + BPF_RINGBUF_HDR_SZ + 7) & ~7ULL;
	__u64 flags = BPF_RB_NO_WAKEUP, held;

	if ((__s64)(e->ts_ns - ev_woke_ns) >= TF_EV_WAKE_MS * 1000000LL ||
	    ((held = bpf_ringbuf_query(&tf_events, BPF_RB_AVAIL_DATA)) >= cfg_ev_wake_bytes &&
	     held < cfg_ev_wake_bytes + rec)) {
		ev_woke_ns = e->ts_ns;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_submit(e, flags);
	stat_inc(TF_STAT_EVENTS);
}

static __always_inline void emit_event(const struct judge *j, enum judgement verdict)
{
	struct tf_event *e = event_fill(j, verdict, j->reason);

	if (e)
		event_send(e);
}

/*
 * Record a decided packet (JUDGE_ALLOW, JUDGE_DENY or JUDGE_AUDIT); returns
 * the verdict, an audited packet's as JUDGE_ALLOW: it passes. A segment held while a ClientHello is read (tls_pending) is
 * counted, not reported: the hello's verdict is the event.
 */
static __always_inline enum judgement record(const struct judge *j, enum judgement verdict)
{
	count(j->sid, j->reason);
	if (verdict == JUDGE_AUDIT)
		count(j->sid, TF_CNT_AUDITED);
	if ((verdict == JUDGE_DENY && j->reason != TF_REASON_TLS_PENDING) || j->emit)
		emit_event(j, verdict);
	return verdict == JUDGE_AUDIT ? JUDGE_ALLOW : verdict;
}

#endif /* TF_RECORD_BPF_H */
