/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Flow lifetime: idle timeouts by protocol and TCP state, and the
 * last-seen time and TCP flags each packet leaves on its flow, in both
 * directions. An expired flow is not deleted here: it counts as absent
 * (a packet of it is judged as new), and the next insert on its tuple,
 * or LRU pressure, replaces it.
 */
#ifndef TF_FLOW_BPF_H
#define TF_FLOW_BPF_H

#include "judge.bpf.h"
#include "record.bpf.h"

/*
 * Idle timeouts, s: set by the daemon at load from its "timeouts" config
 * (docs/operations.md). Defaults: conntrack's.
 */
const volatile __u32 cfg_to_tcp_syn_s = 120;
const volatile __u32 cfg_to_tcp_est_s = 432000;
const volatile __u32 cfg_to_tcp_fin_s = 120;
const volatile __u32 cfg_to_tcp_rst_s = 10;
const volatile __u32 cfg_to_udp_s = 30;
const volatile __u32 cfg_to_udp_replied_s = 120;
const volatile __u32 cfg_to_icmp_s = 30;
const volatile __u32 cfg_to_other_s = 600;

/* Read by libbpf from the kernel's config at load; 0 where it has none. */
extern unsigned int CONFIG_HZ __kconfig __weak;

/*
 * The flows' clock (struct tf_flow.seen): jiffies where the kernel's HZ is
 * known, one load (the verifier inlines bpf_jiffies64()), else the coarse
 * monotonic clock in ns, a helper call that made a fast-path packet a
 * fifth dearer in make bench. CONFIG_HZ is a constant to the verifier, so
 * each program keeps one of the two.
 */
static __always_inline __u64 flow_clock(void)
{
	return CONFIG_HZ ? bpf_jiffies64() : bpf_ktime_get_coarse_ns();
}

/* Ticks of flow_clock() per second. */
static __always_inline __u64 flow_hz(void)
{
	return CONFIG_HZ ? CONFIG_HZ : NSEC_PER_SEC;
}

static __always_inline __u32 flow_timeout_s(__u8 proto, __u8 flags)
{
	switch (proto) {
	case IPPROTO_TCP:
		if (flags & TF_FF_RST)
			return cfg_to_tcp_rst_s;
		if (flags & TF_FF_FIN)
			return cfg_to_tcp_fin_s;
		return (flags & TF_FF_REPLIED) ? cfg_to_tcp_est_s : cfg_to_tcp_syn_s;
	case IPPROTO_UDP:
		return (flags & TF_FF_REPLIED) ? cfg_to_udp_replied_s : cfg_to_udp_s;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return cfg_to_icmp_s;
	}
	return cfg_to_other_s;
}

/*
 * 1 if flow f (of protocol proto) was idle past its timeout at now, plus
 * the grain its last-seen time may lag by (flow_touch()), so that it never
 * expires early. Signed: another CPU may have stamped a tick later than ours.
 */
static __always_inline int flow_expired(const struct tf_flow *f, __u8 proto, __u64 now)
{
	__u64 hz = flow_hz();

	return (__s64)(now - f->seen) >
	       (__s64)((__u64)flow_timeout_s(proto, f->flags) * hz + hz / TF_FLOW_SEEN_GRAIN);
}

/* The TF_FF_* a packet adds to its flow: its FIN and RST, and from the remote end, REPLIED. */
static __always_inline __u8 flow_pkt_flags(const struct judge *j)
{
	__u8 fl = j->dir == TF_DIR_TO_GUEST ? TF_FF_REPLIED : 0;

	if (j->p.proto == IPPROTO_TCP) {
		if (j->p.tcp_flags & TCP_FLAG_FIN)
			fl |= TF_FF_FIN;
		if (j->p.tcp_flags & TCP_FLAG_RST)
			fl |= TF_FF_RST;
	}
	return fl;
}

/*
 * A packet of flow f at now: its flags, and its time once it is a grain
 * (1/TF_FLOW_SEEN_GRAIN s) behind, so a busy flow's cache line is not dirtied on every packet.
 * Plain stores, not atomics: two CPUs setting different bits at once may
 * lose one (a FIN or RST shortens the timeout again on its retransmission,
 * a lost REPLIED only shortens it), and f may be an LRU element recycled
 * under us, whose new flow then only looks a little younger.
 */
static __always_inline void flow_touch(struct tf_flow *f, __u8 fl, __u64 now)
{
	if (fl & ~f->flags)
		f->flags |= fl;
	if ((__s64)(now - f->seen) > (__s64)(flow_hz() / TF_FLOW_SEEN_GRAIN))
		f->seen = now;
}

/* Writes new flow f on tuple k, which has none: counted as opened. 0 or the update's error. */
static __always_inline long flow_add(__u32 sid, void *flows, const struct tf_flow_key *k,
				     const struct tf_flow *f)
{
	long err = bpf_map_update_elem(flows, k, f, BPF_NOEXIST);

	if (!err)
		count_flow(sid, 1);
	return err;
}

/*
 * Writes new flow f on tuple k, over an older one if the tuple has it.
 * A flow that takes an entry of its own is counted as opened: with the
 * removals (flow_remove()) and the table's entry count, the daemon derives
 * how many flows the full table evicted (docs/operations.md). One that
 * another CPU removed between the two tries is added as new, so that no
 * entry goes uncounted. tracked: the caller found an entry on k, which is
 * then overwritten first, else added first: a failed LRU update costs
 * about as much as one that succeeds, so the guess saves one (a SYN
 * retransmitted, an expired flow). 0 or the update's error.
 */
static __always_inline int flow_insert(__u32 sid, void *flows, const struct tf_flow_key *k,
				       const struct tf_flow *f, int tracked)
{
	long err = tracked ? bpf_map_update_elem(flows, k, f, BPF_EXIST) : -ENOENT;

	if (err != -ENOENT)
		return (int)err;
	err = flow_add(sid, flows, k, f);

	if (err != -EEXIST)
		return (int)err;
	err = bpf_map_update_elem(flows, k, f, BPF_EXIST);
	if (err != -ENOENT)
		return (int)err;
	return (int)flow_add(sid, flows, k, f);
}

/* Removes flow k, counted when it was there (flow_insert()). */
static __always_inline void flow_remove(__u32 sid, void *flows, const struct tf_flow_key *k)
{
	if (!bpf_map_delete_elem(flows, k))
		count_flow(sid, 0);
}

static __always_inline __u32 tcp_payload_len(const struct judge *j)
{
	return j->p.l4_len - j->p.tcp_hlen;
}

/*
 * A TCP connection's close, followed on its flow f by packet j, as
 * conntrack follows it to TIME_WAIT: the first FIN and where it ends, then
 * the other end's FIN, on a segment that acknowledges exactly the first,
 * and where that ends. Returns 1 if j is the last ACK: a bare ACK (no FIN,
 * SYN, RST or payload) from the first FIN's end, acknowledging exactly the
 * second FIN. The flow is removed then (if open), not kept for
 * timeouts.tcp_fin_s, so a guest's closed connections do not fill its
 * table and push its idle open ones out (docs/architecture.md, Close).
 *
 * Acknowledgement numbers, not flags alone: a duplicate ACK for data lost
 * before the FIN, or an ACK of data still in flight, is not the last ACK;
 * a FIN forged from off the path (it cannot know the sequence numbers) is
 * not a second FIN, and as a first one it is never acknowledged by the
 * guest's stack, so it ends nothing. A second FIN that does not
 * acknowledge the first (a simultaneous close) is not followed: that flow
 * keeps its timeout. Plain stores, as flow_touch(): a lost one only keeps
 * the flow to its timeout.
 */
static __always_inline int flow_close_step(struct tf_flow *f, const struct judge *j)
{
	__u8 fl = j->p.tcp_flags, guest = j->dir == TF_DIR_FROM_GUEST;
	__u32 len;
	int acks;

	if (j->p.proto != IPPROTO_TCP || (fl & (TCP_FLAG_SYN | TCP_FLAG_RST)))
		return 0;
	len = tcp_payload_len(j);
	if (!(f->flags & TF_FF_FIN1)) {
		if (fl & TCP_FLAG_FIN) {
			f->fin_end = j->p.tcp_seq + len + 1;
			f->flags |= TF_FF_FIN1 | (guest ? TF_FF_FIN1_GUEST : 0);
		}
		return 0;
	}
	acks = (fl & TCP_FLAG_ACK) && j->p.tcp_ack == f->fin_end;
	if (!(f->flags & TF_FF_FIN1_GUEST) == !guest)
		return (f->flags & TF_FF_FIN2) && (fl & TCP_FLAG_FIN) == 0 && !len && acks;
	if ((fl & TCP_FLAG_FIN) && !(f->flags & TF_FF_FIN2) && acks) {
		f->fin_end = j->p.tcp_seq + len + 1;
		f->flags |= TF_FF_FIN2;
	}
	return 0;
}

#endif /* TF_FLOW_BPF_H */
