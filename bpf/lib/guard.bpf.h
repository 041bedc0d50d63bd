/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guard (docs/guard.md): a device whose name the operator's guard
 * patterns match denies everything until a session claims it, and again
 * once the session is gone. Two layers: nftables prerouting chains (inet
 * and bridge, user/daemon/guard_nft.c) that drop what a matching device
 * brings in unless it carries cfg_guard_mark (matched per packet, so a
 * new device is covered before any daemon sees it); and these tcx
 * programs, which the daemon attaches to each matching device no session
 * claims, to drop, count and report (rate limited, as session 0) at the
 * device itself.
 *
 * tc_from_guest (and tc_gso_guard in XDP mode) set cfg_guard_mark on
 * what they pass: a guest cannot set an skb's mark (a tap's skbs start
 * with none, and veth clears it crossing namespaces), so the mark says
 * tapfence allowed the packet.
 */
#ifndef TF_GUARD_BPF_H
#define TF_GUARD_BPF_H

#include "record.bpf.h"

/* The skb mark bit the nftables guard chain accepts (0: no guard configured). */
const volatile __u32 cfg_guard_mark = 0;

static __always_inline void guard_count(const struct tf_sess_key *dev)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(&tf_guard_drops, dev);

	if (v)
		(*v)++;
	else
		bpf_map_update_elem(&tf_guard_drops, dev, &one, BPF_NOEXIST);
}

/*
 * A device no session claims: drop, count, report. The frame is parsed
 * only as far as the event needs (a frame that does not parse is
 * reported without addresses: it drops all the same).
 */
static __always_inline int guard(struct __sk_buff *skb, __u8 dir)
{
	struct judge j = { .dev = skb_dev(skb), .dir = dir };
	const struct tf_session *s;
	struct cursor c = {};

	s = bpf_map_lookup_elem(&tf_sessions, &j.dev);
	if (s && !(s->flags & TF_SF_VIA_GUARD))
		return TC_ACT_UNSPEC; /* claimed: the session's programs, ahead of this one, judged */
	if (s) {
		/* Claimed with no links of its own: its program judges from here. */
		bpf_tail_call(skb, &tf_jump,
			      dir == TF_DIR_FROM_GUEST ? TF_JUMP_FROM_GUEST : TF_JUMP_TO_GUEST);
		/* No program to jump to: denied like an unclaimed device, never passed unjudged. */
	}
	guard_count(&j.dev);
	bpf_skb_pull_data(skb, ETH_HLEN + IP6_HLEN);
	c.pos = (void *)(long)skb->data;
	c.end = (void *)(long)skb->data_end;
	if (parse_eth(&c, &j.p)) {
		if (j.p.ethertype == bpf_htons(ETH_P_IP))
			parse_ip4(&c, &j.p);
		else if (j.p.ethertype == bpf_htons(ETH_P_IPV6))
			parse_ip6(&c, &j.p);
	}
	record(&j, deny(&j, TF_REASON_GUARD_UNCLAIMED));
	return TC_ACT_SHOT;
}

static __always_inline void guard_mark(struct __sk_buff *skb)
{
	if (cfg_guard_mark)
		skb->mark |= cfg_guard_mark;
}

#endif /* TF_GUARD_BPF_H */
