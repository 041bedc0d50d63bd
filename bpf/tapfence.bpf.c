// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence datapath entry points. Per session device:
 *   tc_from_guest  TC ingress (tcx): guest -> host, the default mode
 *   xdp_from_guest XDP: guest -> host, opt-in (early drop), via libxdp
 *   tc_to_guest    TC egress (tcx): host -> guest
 * Allow returns "next" (TC_ACT_UNSPEC / XDP_PASS) so other programs on the
 * hook still run; deny drops.
 *
 * At TC the stack has already moved a VLAN tag out of the frame into
 * skb->vlan_tci (skb_vlan_untag() in __netif_receive_skb_core()), so the
 * tag is checked through vlan_present; XDP sees it in the frame.
 */
#include <bpf/bpf_helpers.h>
#include "lib/from_guest.bpf.h"
#include "lib/to_guest.bpf.h"
#include "lib/dns.bpf.h"
#include "lib/tls_hello.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Headers the judges read at most: Ethernet + IPv6 + ICMPv6 + inner IPv6 + 8 bytes. */
#define TF_PULL_LEN 128
/* The outer headers alone: Ethernet + IPv4/IPv6 + the 20 bytes of TCP the judges read. */
#define TF_HDR4_LEN (14 + 20 + 20)
#define TF_HDR6_LEN (14 + 40 + 20)

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
 * Copy the DNS message of the judged packet into the scratch (it may lie
 * beyond the linear area); its length, or 0 after denying j.
 */
static __always_inline __u32 tc_dns_copy(struct __sk_buff *skb, struct judge *j,
					 struct dns_scratch *s)
{
	__u32 len = dns_msg_len(j);

	if (!len || bpf_skb_load_bytes(skb, dns_msg_off(j), s->msg, len)) {
		deny(j, TF_REASON_DNS_MALFORMED);
		return 0;
	}
	return len;
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

SEC("tc")
int tc_from_guest(struct __sk_buff *skb)
{
	struct judge j = { .ifindex = skb->ifindex, .vlan = skb->vlan_present };
	struct dns_scratch *s;
	__u32 len;
	int v;

	tc_linearize(skb, tc_first_pull(skb));
	v = judge_from_guest(&j, (void *)(long)skb->data, (void *)(long)skb->data_end);
	if (v == TF_JUDGE_DNS) {
		s = dns_scratch();
		if (tc_is_gso(skb))
			v = deny(&j, TF_REASON_DNS_GSO);
		else if (!s)
			v = deny(&j, TF_REASON_UNKNOWN);
		else if ((len = tc_dns_copy(skb, &j, s)))
			v = dns_query(&j, s, len);
		else
			v = TF_VERDICT_DENY;
	} else if (v == TF_JUDGE_TLS) {
		v = tls_segment_tc(skb, &j);
	}
	return record(&j, v) == TF_VERDICT_ALLOW ? TC_ACT_UNSPEC : TC_ACT_SHOT;
}

SEC("tc")
int tc_to_guest(struct __sk_buff *skb)
{
	struct judge j = { .ifindex = skb->ifindex, .vlan = skb->vlan_present };
	struct dns_scratch *s;
	__u32 len;
	int v;

	tc_linearize(skb, tc_first_pull(skb));
	v = judge_to_guest(&j, (void *)(long)skb->data, (void *)(long)skb->data_end);
	if (v == TF_JUDGE_PULL) {
		tc_linearize(skb, TF_PULL_LEN);
		j.pulled = 1;
		v = judge_to_guest(&j, (void *)(long)skb->data, (void *)(long)skb->data_end);
	}
	if (v == TF_JUDGE_DNS) {
		s = dns_scratch();
		if (!s)
			v = deny(&j, TF_REASON_UNKNOWN);
		else if ((len = tc_dns_copy(skb, &j, s)))
			v = dns_answer(&j, s, len);
		else
			v = TF_VERDICT_DENY;
	} else if (v == TF_VERDICT_ALLOW && j.trim) {
		v = tc_icmp_trim(skb, &j);
	}
	return record(&j, v) == TF_VERDICT_ALLOW ? TC_ACT_UNSPEC : TC_ACT_SHOT;
}

SEC("xdp")
int xdp_from_guest(struct xdp_md *ctx)
{
	struct judge j = { .ifindex = ctx->ingress_ifindex };
	struct dns_scratch *s;
	__u32 len;
	int v;

	v = judge_from_guest(&j, (void *)(long)ctx->data, (void *)(long)ctx->data_end);
	if (v == TF_JUDGE_DNS) {
		s = dns_scratch();
		len = dns_msg_len(&j);
		if (!s)
			v = deny(&j, TF_REASON_UNKNOWN);
		else if (!len || bpf_xdp_load_bytes(ctx, dns_msg_off(&j), s->msg, len))
			v = deny(&j, TF_REASON_DNS_MALFORMED);
		else
			v = dns_query(&j, s, len);
	} else if (v == TF_JUDGE_TLS) {
		v = tls_segment_xdp(ctx, &j);
	}
	return record(&j, v) == TF_VERDICT_ALLOW ? XDP_PASS : XDP_DROP;
}

/*
 * tcx ingress in XDP mode. XDP judges a guest's GSO write as one frame
 * (tun builds an skb for a frame with a gso_type and runs the program on
 * it whole) and cannot see that the stack cuts it into datagrams after
 * XDP_PASS; the skb here says so. A GSO skb to the resolver is refused as
 * tc_from_guest refuses it (dns_gso); anything else XDP has judged, and
 * passes untouched. A GSO skb that does not parse fails closed.
 */
SEC("tc")
int tc_gso_guard(struct __sk_buff *skb)
{
	struct judge j = { .ifindex = skb->ifindex };
	struct cursor c;
	struct ethhdr *eth;
	struct iphdr *iph;
	struct ipv6hdr *ip6;
	int v = TF_VERDICT_DENY;

	if (!tc_is_gso(skb))
		return TC_ACT_UNSPEC;
	tc_linearize(skb, tc_first_pull(skb));
	c.pos = (void *)(long)skb->data;
	c.end = (void *)(long)skb->data_end;
	eth = judge_l2(&j, &c, TF_DIR_FROM_GUEST);
	if (!eth)
		goto out;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = cur_pull(&c, sizeof(*iph));
		if (!iph || iph->ihl != 5) {
			v = deny(&j, TF_REASON_MALFORMED);
			goto out;
		}
		j.p.family = TF_FAM_IPV4;
		j.p.proto = iph->protocol;
		j.p.l4_len = bpf_ntohs(iph->tot_len) - 20;
		ip4_copy(j.p.saddr, &iph->saddr);
		ip4_copy(j.p.daddr, &iph->daddr);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = cur_pull(&c, sizeof(*ip6));
		if (!ip6) {
			v = deny(&j, TF_REASON_MALFORMED);
			goto out;
		}
		j.p.family = TF_FAM_IPV6;
		j.p.proto = ip6->nexthdr;
		j.p.l4_len = bpf_ntohs(ip6->payload_len);
		ip6_copy(j.p.saddr, &ip6->saddr);
		ip6_copy(j.p.daddr, &ip6->daddr);
	} else {
		v = deny(&j, TF_REASON_L2_ETHERTYPE);
		goto out;
	}
	if (parse_l4(&j, &c)) {
		v = deny(&j, TF_REASON_MALFORMED);
		goto out;
	}
	if (j.p.proto != IPPROTO_UDP || !is_resolver(&j))
		return TC_ACT_UNSPEC;
	v = deny(&j, TF_REASON_DNS_GSO);
out:
	return record(&j, v) == TF_VERDICT_ALLOW ? TC_ACT_UNSPEC : TC_ACT_SHOT;
}
