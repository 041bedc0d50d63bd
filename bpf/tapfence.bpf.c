// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence datapath entry points. Per session device:
 *   tc_from_guest  TC ingress (tcx): guest -> host, the default mode
 *   xdp_from_guest XDP: guest -> host, opt-in (early drop), via libxdp
 *   tc_to_guest    TC egress (tcx): host -> guest
 *   tc_guard_*     tcx on a guarded device, behind a session's (guard.bpf.h)
 * Allow returns "next" (TC_ACT_UNSPEC / XDP_PASS) so other programs on the
 * hook still run; deny drops.
 *
 * At TC the stack has already moved a VLAN tag out of the frame into
 * skb->vlan_tci (skb_vlan_untag() in __netif_receive_skb_core()), so the
 * tag is checked through vlan_present; XDP sees it in the frame.
 */
#include "vmlinux.h"
#include "lib/const.bpf.h"
#include "lib/from_guest.bpf.h"
#include "lib/to_guest.bpf.h"
#include "lib/dns.bpf.h"
#include "lib/tls_hello.bpf.h"
#include "lib/icmp.bpf.h"
#include "lib/record.bpf.h"
#include "lib/guard.bpf.h"
#include "lib/reject.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Headers the judges read at most: Ethernet + IPv6 + ICMPv6 + inner IPv6 + 8 bytes. */
#define TF_PULL_LEN 128
/* The outer headers alone: Ethernet + IPv4/IPv6 + the fixed TCP header the judges read. */
#define TF_HDR4_LEN (ETH_HLEN + IP4_HLEN + TCP_HLEN_MIN)
#define TF_HDR6_LEN (ETH_HLEN + IP6_HLEN + TCP_HLEN_MIN)
_Static_assert(TF_PULL_LEN >= ETH_HLEN + IP6_HLEN + ICMP_HLEN + IP6_HLEN + ICMP_QUOTE_L4,
	       "TF_PULL_LEN holds an ICMPv6 error's quote");

/*
 * Pull up to want bytes into the linear area, only when they are not there
 * already: bpf_skb_pull_data() also makes the skb writable, which copies
 * cloned skbs (TCP's are), so an unconditional pull would cost a copy.
 */
static __always_inline void tc_linearize(struct __sk_buff *skb, __u32 want)
{
	long data = skb->data, data_end = skb->data_end;

	if (want > skb->len)
		want = skb->len;
	if (data_end - data < want)
		bpf_skb_pull_data(skb, want);
	/* Keep clang from merging the ctx loads below with the ones above into
	 * one load through a computed ctx offset, which the verifier rejects. */
	asm volatile("" ::: "memory");
}

/*
 * What to pull first: a small packet whole (NDP, ICMP errors, ARP: cheap),
 * a large one (GRO/GSO data, whose linear part often holds the headers
 * only) just its outer headers, so bulk traffic is not copied for us.
 */
static __always_inline __u32 tc_first_pull(const struct __sk_buff *skb)
{
	if (skb->len <= TF_PULL_LEN)
		return TF_PULL_LEN;
	return skb->protocol == bpf_htons(ETH_P_IP) ? TF_HDR4_LEN : TF_HDR6_LEN;
}

/*
 * A GSO skb (a guest's UDP segmentation offload write: a virtio-net header
 * with a gso_type) is cut into several datagrams after us, so what the
 * resolver receives is not the message that was judged: a query that reads
 * as allowed whole can carry, inside its EDNS0 OPT record, a later segment
 * that is a complete query for any name. One query is one datagram.
 */
static __always_inline int tc_is_gso(const struct __sk_buff *skb)
{
	return skb->gso_size || skb->gso_segs > 1;
}

/*
 * JUDGE_NEED_DNS at TC: the message copied into the scratch (it may lie
 * beyond the linear area), then judged by its content: a query from the
 * guest (one datagram, never GSO), or an answer to it.
 */
static __always_inline enum judgement tc_dns(struct __sk_buff *skb, struct judge *j,
					     const int query)
{
	struct dns_scratch *s = dns_scratch();
	__u32 len = dns_msg_len(j);

	if (query && tc_is_gso(skb))
		return deny(j, TF_REASON_DNS_GSO);
	if (!s)
		return deny(j, TF_REASON_UNKNOWN);
	if (!len || bpf_skb_load_bytes(skb, dns_msg_off(j), s->msg, len))
		return deny(j, TF_REASON_DNS_MALFORMED);
	return query ? dns_query(j, s, len) : dns_answer(j, s, len);
}

/* JUDGE_NEED_DNS at XDP: the query, copied with the XDP helper. */
static __always_inline enum judgement xdp_dns_query(struct xdp_md *ctx, struct judge *j)
{
	struct dns_scratch *s = dns_scratch();
	__u32 len = dns_msg_len(j);

	if (!s)
		return deny(j, TF_REASON_UNKNOWN);
	if (!len || bpf_xdp_load_bytes(ctx, dns_msg_off(j), s->msg, len))
		return deny(j, TF_REASON_DNS_MALFORMED);
	return dns_query(j, s, len);
}

/*
 * Each entry point: judge, do what the judgement needs, record the
 * verdict. A judgement the entry point has no step for denies, named.
 */
SEC("tc")
int tc_from_guest(struct __sk_buff *skb)
{
	struct judge j = { .dev = skb_dev(skb), .vlan = skb->vlan_present };
	enum judgement v;

	tc_linearize(skb, tc_first_pull(skb));
	v = judge_from_guest(&j, (void *)(long)skb->data, (void *)(long)skb->data_end);
	switch (v) {
	case JUDGE_ALLOW:
	case JUDGE_DENY:
	case JUDGE_AUDIT:
		break;
	case JUDGE_NEED_DNS:
		v = tc_dns(skb, &j, 1);
		break;
	case JUDGE_NEED_TLS:
		v = tls_segment_tc(skb, &j);
		break;
	default:
		v = deny(&j, TF_REASON_UNKNOWN);
		break;
	}
	/* Only a session that answers pays for the checksum state's reads. */
	if (v == JUDGE_DENY && (j.mode & TF_SF_REJECT))
		j.reply = reject_wanted(&j, skb_csum_partial(skb, &j), tc_is_gso(skb));
	if (record(&j, v) != JUDGE_ALLOW)
		return j.reply ? tc_reject(skb, &j) : TC_ACT_SHOT;
	guard_mark(skb);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int tc_to_guest(struct __sk_buff *skb)
{
	struct judge j = { .dev = skb_dev(skb), .vlan = skb->vlan_present };
	enum judgement v;

	if (skb->mark == TF_RJ_MARK && reject_passes(skb))
		return TC_ACT_UNSPEC; /* the answer to a denied packet, redirected here */
	tc_linearize(skb, tc_first_pull(skb));
	v = judge_to_guest(&j, (void *)(long)skb->data, (void *)(long)skb->data_end);
	if (v == JUDGE_NEED_PULL) {
		tc_linearize(skb, TF_PULL_LEN);
		j.pulled = 1;
		v = judge_to_guest(&j, (void *)(long)skb->data, (void *)(long)skb->data_end);
	}
	switch (v) {
	case JUDGE_ALLOW:
		if (j.trim)
			v = tc_icmp_trim(skb, &j);
		break;
	case JUDGE_DENY:
		break;
	case JUDGE_NEED_DNS:
		v = tc_dns(skb, &j, 0);
		break;
	default:
		v = deny(&j, TF_REASON_UNKNOWN);
		break;
	}
	return record(&j, v) == JUDGE_ALLOW ? TC_ACT_UNSPEC : TC_ACT_SHOT;
}

SEC("xdp")
int xdp_from_guest(struct xdp_md *ctx)
{
	struct judge j = { .dev = xdp_dev(ctx) };
	enum judgement v;

	v = judge_from_guest(&j, (void *)(long)ctx->data, (void *)(long)ctx->data_end);
	switch (v) {
	case JUDGE_ALLOW:
	case JUDGE_DENY:
	case JUDGE_AUDIT:
		break;
	case JUDGE_NEED_DNS:
		v = xdp_dns_query(ctx, &j);
		break;
	case JUDGE_NEED_TLS:
		v = tls_segment_xdp(ctx, &j);
		break;
	default:
		v = deny(&j, TF_REASON_UNKNOWN);
		break;
	}
	if (v == JUDGE_DENY && (j.mode & TF_SF_REJECT))
		j.reply = reject_wanted(&j, 0, xdp_on_skb(ctx));
	if (record(&j, v) != JUDGE_ALLOW)
		return j.reply ? xdp_reject(ctx, &j) : XDP_DROP;
	return XDP_PASS;
}

/*
 * tcx ingress in XDP mode. XDP judges a guest's GSO write as one frame
 * (tun builds an skb for a frame with a gso_type and runs the program on
 * it whole) and cannot see that the stack cuts it into datagrams after
 * XDP_PASS; the skb here says so. A GSO skb to the resolver is refused as
 * tc_from_guest refuses it (dns_gso); anything else XDP has judged, and
 * passes untouched. A GSO skb that does not parse fails closed. XDP passed
 * the same frame, so its IP header is whole and its version right.
 */
SEC("tc")
int tc_gso_guard(struct __sk_buff *skb)
{
	struct judge j = { .dev = skb_dev(skb) };
	struct cursor c = {};
	struct ethhdr *eth;
	struct iphdr *iph;
	enum judgement v = JUDGE_DENY;

	if (!tc_is_gso(skb)) {
		guard_mark(skb); /* XDP passed it */
		return TC_ACT_UNSPEC;
	}
	tc_linearize(skb, tc_first_pull(skb));
	c.pos = (void *)(long)skb->data;
	c.end = (void *)(long)skb->data_end;
	eth = judge_l2(&j, &c, TF_DIR_FROM_GUEST);
	if (!eth)
		goto out;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = parse_ip4(&c, &j.p);
		if (!iph || iph->ihl != 5) {
			v = deny(&j, TF_REASON_MALFORMED);
			goto out;
		}
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		if (!parse_ip6(&c, &j.p)) {
			v = deny(&j, TF_REASON_MALFORMED);
			goto out;
		}
	} else {
		v = deny(&j, TF_REASON_L2_ETHERTYPE);
		goto out;
	}
	if (parse_l4(&c, &j.p)) {
		v = deny(&j, TF_REASON_MALFORMED);
		goto out;
	}
	if (j.p.proto != IPPROTO_UDP || !is_resolver(&j)) {
		guard_mark(skb);
		return TC_ACT_UNSPEC;
	}
	v = deny(&j, TF_REASON_DNS_GSO);
out:
	return record(&j, v) == JUDGE_ALLOW ? TC_ACT_UNSPEC : TC_ACT_SHOT;
}

/* A guarded device's two hooks (guard.bpf.h), behind any session's programs. */
SEC("tc")
int tc_guard_from_guest(struct __sk_buff *skb)
{
	return guard(skb, TF_DIR_FROM_GUEST);
}

SEC("tc")
int tc_guard_to_guest(struct __sk_buff *skb)
{
	return guard(skb, TF_DIR_TO_GUEST);
}

/*
 * How full every hash table is, for the daemon's metrics (user/daemon/
 * metrics.c): a struct tf_fill_rec per map on the system, from the counts
 * the kernel keeps per CPU for hash maps. A walk of one iterator, where
 * counting each session's tables' entries from userspace would be a system
 * call per entry.
 */
extern __s64 bpf_map_sum_elem_count(const struct bpf_map *map) __ksym;

/*
 * Set by the daemon around a walk that wants the flow tables only (its
 * look for evictions, session.c): the other maps' lines are left out.
 */
__u32 fill_flows_only;

SEC("iter/bpf_map")
int tf_map_fill(struct bpf_iter__bpf_map *ctx)
{
	struct bpf_map *map = ctx->map;
	struct tf_fill_rec rec = {};

	if (!map)
		return 0;
	if (fill_flows_only && (map->map_type != BPF_MAP_TYPE_LRU_HASH ||
				map->key_size != sizeof(struct tf_flow_key) ||
				map->value_size != sizeof(struct tf_flow)))
		return 0;
	rec.id = map->id;
	rec.n = bpf_map_sum_elem_count(map);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
