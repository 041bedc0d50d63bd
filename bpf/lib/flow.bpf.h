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

#include "verdict.bpf.h"
#include "parse.bpf.h"

/*
 * Idle timeouts, ns, each with TF_FLOW_SEEN_GRAIN_NS of slack: set by the
 * daemon at load from its "timeouts" config (docs/operations.md), so the
 * datapath multiplies nothing. Defaults: conntrack's.
 */
const volatile __u64 cfg_to_tcp_syn_ns = 120 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_tcp_est_ns = 432000 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_tcp_fin_ns = 120 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_tcp_rst_ns = 10 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_udp_ns = 30 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_udp_replied_ns = 120 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_icmp_ns = 30 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;
const volatile __u64 cfg_to_other_ns = 600 * 1000000000ULL + TF_FLOW_SEEN_GRAIN_NS;

static __always_inline __u64 flow_timeout(__u8 proto, __u8 flags)
{
	switch (proto) {
	case IPPROTO_TCP:
		if (flags & TF_FF_RST)
			return cfg_to_tcp_rst_ns;
		if (flags & TF_FF_FIN)
			return cfg_to_tcp_fin_ns;
		return (flags & TF_FF_REPLIED) ? cfg_to_tcp_est_ns : cfg_to_tcp_syn_ns;
	case IPPROTO_UDP:
		return (flags & TF_FF_REPLIED) ? cfg_to_udp_replied_ns : cfg_to_udp_ns;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return cfg_to_icmp_ns;
	}
	return cfg_to_other_ns;
}

/*
 * 1 if flow f (of protocol proto) was idle past its timeout at now. Signed:
 * another CPU may have stamped a coarse time a tick later than ours.
 */
static __always_inline int flow_expired(const struct tf_flow *f, __u8 proto, __u64 now)
{
	return (__s64)(now - f->seen_ns) > (__s64)flow_timeout(proto, f->flags);
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
 * behind, so a busy flow's cache line is not dirtied on every packet.
 * Plain stores, not atomics: two CPUs setting different bits at once may
 * lose one (a FIN or RST shortens the timeout again on its retransmission,
 * a lost REPLIED only shortens it), and f may be an LRU element recycled
 * under us, whose new flow then only looks a little younger.
 */
static __always_inline void flow_touch(struct tf_flow *f, __u8 fl, __u64 now)
{
	if (fl & ~f->flags)
		f->flags |= fl;
	if ((__s64)(now - f->seen_ns) > (__s64)TF_FLOW_SEEN_GRAIN_NS)
		f->seen_ns = now;
}

#endif /* TF_FLOW_BPF_H */
