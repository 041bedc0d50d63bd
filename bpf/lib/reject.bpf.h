/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rejections (docs/reject.md): a session with on_deny reject answers a
 * denied packet from its guest, so the guest fails at once instead of
 * timing out. The answer is made of the denied packet itself, rewritten in
 * place and sent back out of the device it came in by:
 * - a TCP segment (not an RST): an RST, as RFC 9293 3.10.7.1 builds it;
 * - a DNS query the policy refuses (dns_name_denied, dns_qtype): the query
 *   turned into its answer, RCODE REFUSED, with no records;
 * - anything else (UDP, ICMP echo): ICMP destination unreachable,
 *   "communication administratively prohibited" (ICMPv6 code 1), quoting
 *   the denied packet's IP header and first 8 bytes after it.
 * Nothing in it comes from beyond the boundary: every byte is the guest's
 * own or a constant. Only what passed the L2, IP and anti-spoofing checks
 * is answered, only reasons an answer can explain (reply_kind()), the
 * floor only if the operator says so, and at most cfg_reject_* a second
 * per session and CPU; past that, the packet is dropped and counted.
 *
 * At TC the answer is redirected to the device's egress, where
 * tc_to_guest lets exactly it through (reject_passes()); at XDP it goes
 * back by XDP_TX, which tun hands the guest directly (driver XDP only:
 * xdp_on_skb()).
 */
#ifndef TF_REJECT_BPF_H
#define TF_REJECT_BPF_H

#include <bpf/bpf_core_read.h>
#include "icmp.bpf.h"
#include "record.bpf.h"
#include "tls.bpf.h"

/* Set by the daemon at load: the floor is answered too (1, on_deny_floor), and the rate (GCRA). */
const volatile __u8 cfg_reject_floor = 1;
const volatile __u64 cfg_reject_interval_ns = 10000000;
const volatile __u64 cfg_reject_tau_ns = 1990000000;

enum reply { RJ_NONE, RJ_RST, RJ_ICMP, RJ_DNS };

#define DNS_HLEN	      12
#define DNS_RCODE_REFUSED     5
#define ICMP_PKT_FILTERED     13 /* RFC 1812 5.2.7.1: communication administratively prohibited */
#define ICMPV6_ADM_PROHIBITED 1
#define CHECKSUM_PARTIAL      3
#define TF_RJ_PASS_NS	      1000000	 /* the answer's tc_to_guest run follows within this */
#define TF_RJ_MARK	      0x7466726a /* "tfrj": the skb mark of an answer on its way out */

/*
 * The reasons an answer can explain. The floor's too, by default: an
 * answer to every address but the floor's would tell the guest where the
 * floor is (other sessions' addresses, the host's); an operator may drop
 * them all silently instead (cfg_reject_floor 0).
 */
static __always_inline int reject_reason(__u16 r)
{
	if ((r >= TF_REASON_FLOOR_THIS_NET && r <= TF_REASON_OTHER_SESSION) ||
	    r == TF_REASON_FLOOR_HOST || r == TF_REASON_FLOOR_GATEWAY)
		return cfg_reject_floor;
	switch (r) {
	case TF_REASON_NO_RULE:
	case TF_REASON_PORT_NOT_ALLOWED:
	case TF_REASON_DENY_RULE:
	case TF_REASON_TCP_NO_FLOW:
	case TF_REASON_REVOKED:
	case TF_REASON_DNS_NOT_RESOLVER:
	case TF_REASON_DNS_TCP:
	case TF_REASON_DNS_NAME_DENIED:
	case TF_REASON_DNS_QTYPE:
	case TF_REASON_TLS_NO_SNI:
	case TF_REASON_TLS_SNI_DENIED:
	case TF_REASON_TLS_SNI_MISMATCH:
	case TF_REASON_TLS_SNI_IP:
	case TF_REASON_TLS_ECH:
	case TF_REASON_TLS_NOT_TLS:
	case TF_REASON_TLS_SSLV2:
	case TF_REASON_TLS_MALFORMED:
	case TF_REASON_TLS_FASTOPEN:
	case TF_REASON_TLS_REASSEMBLY:
	case TF_REASON_TLS_TOO_BIG:
	case TF_REASON_TLS_UDP:
	case TF_REASON_TLS_MPTCP:
	case TF_REASON_TLS_SECOND_HELLO:
	case TF_REASON_TLS_FRAGMENTED:
		return 1;
	}
	return 0;
}

/*
 * What a denied packet from the guest is answered with. partial: its
 * checksum is the guest's to finish (a virtio-net NEEDS_CSUM write): the
 * answers keep their L4 header where it was, which an RST and a DNS answer
 * do; an ICMP error does only for UDP (the word tun would finish falls in
 * its unused field).
 */
/*
 * 1 if the denied packet's destination may be an answer's source: not this
 * network, loopback, multicast, the reserved and broadcast range, or
 * IPv4-mapped (RFC 1122 3.2.1.3, RFC 4291 2.5.5.2), whatever the reason
 * (DNS elsewhere and tcp_no_flow are decided before the floor).
 */
static __always_inline int reply_source_ok(const struct judge *j)
{
	const __u8 *a = j->p.daddr;
	int i, zero = 1;

	if (j->p.family == TF_FAM_IPV4)
		return a[0] != 0 && a[0] != 127 && a[0] < 224;
	if (a[0] == 0xff)
		return 0;
	for (i = 0; i < 10; i++)
		zero &= !a[i];
	if (zero && a[10] == 0xff && a[11] == 0xff)
		return 0; /* ::ffff:0:0/96 */
	for (i = 10; i < 15; i++)
		zero &= !a[i];
	return !zero || a[15] > 1; /* not :: or ::1 */
}

static __always_inline __u8 reply_kind(const struct judge *j, int partial)
{
	if (!(j->mode & TF_SF_REJECT) || j->dir != TF_DIR_FROM_GUEST || !reject_reason(j->reason))
		return RJ_NONE;
	if ((j->p.family != TF_FAM_IPV4 && j->p.family != TF_FAM_IPV6) || !reply_source_ok(j))
		return RJ_NONE;
	if (j->p.proto == IPPROTO_TCP)
		return j->p.tcp_flags & TCP_FLAG_RST ? RJ_NONE : RJ_RST;
	if (j->p.proto == IPPROTO_UDP && j->name_len && !j->name_tls && j->name_len < TF_NAME_MAX &&
	    (j->reason == TF_REASON_DNS_NAME_DENIED || j->reason == TF_REASON_DNS_QTYPE))
		return RJ_DNS;
	if (partial && j->p.proto != IPPROTO_UDP)
		return RJ_NONE;
	if (j->p.proto != IPPROTO_UDP && j->p.proto != IPPROTO_ICMP && j->p.proto != IPPROTO_ICMPV6)
		return RJ_NONE;
	return RJ_ICMP;
}

static __always_inline struct tf_rjscratch *rj_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&tf_rjscratch, &zero);
}

/*
 * The answer a denied packet gets (RJ_*), within the session's rate; one
 * over it is counted and gets none. gso: a segmentation-offload write,
 * cut into packets after us, is never answered.
 */
static __always_inline __u8 reject_wanted(const struct judge *j, int partial, int gso)
{
	__u8 kind = gso || partial < 0 ? RJ_NONE : reply_kind(j, partial);
	__u32 sid = j->sid;
	__u64 *tat;

	if (kind == RJ_NONE)
		return RJ_NONE;
	tat = bpf_map_lookup_elem(&tf_rjrate, &sid);
	if (!tat || !gcra(tat, bpf_ktime_get_ns(), cfg_reject_interval_ns, cfg_reject_tau_ns)) {
		count(sid, TF_CNT_REJECT_LIMITED);
		return RJ_NONE;
	}
	return kind;
}

/* The answer's length: Ethernet, IP, and its L4 part. */
static __always_inline __u32 reply_len(const struct judge *j, __u8 kind)
{
	__u32 l3 = ETH_HLEN + (j->p.family == TF_FAM_IPV4 ? IP4_HLEN : IP6_HLEN);

	if (kind == RJ_RST)
		return l3 + TCP_HLEN_MIN;
	if (kind == RJ_DNS) /* the question: the name in wire form (its length + 2), type, class */
		return l3 + UDP_HLEN + DNS_HLEN + j->name_len + 2 + 4;
	return l3 + ICMP_HLEN + (l3 - ETH_HLEN) + ICMP_QUOTE_L4;
}

/* The pseudo header's sum for the answer (from the denied packet's destination to its source). */
static __always_inline __s64 reply_pseudo(const struct judge *j, __u8 proto, __u32 len)
{
	__be32 ph[3];

	if (j->p.family == TF_FAM_IPV4) {
		ph[0] = *(const __be32 *)j->p.daddr;
		ph[1] = *(const __be32 *)j->p.saddr;
		ph[2] = bpf_htonl(((__u32)proto << 16) | len);
		return bpf_csum_diff(NULL, 0, ph, sizeof(ph), 0);
	}
	ph[0] = bpf_htonl(len);
	ph[1] = bpf_htonl(proto);
	return bpf_csum_diff(NULL, 0, (void *)j->p.daddr, 16,
			     bpf_csum_diff(NULL, 0, (void *)j->p.saddr, 16,
					   bpf_csum_diff(NULL, 0, ph, 8, 0)));
}

/* A folded sum, not complemented: what a CHECKSUM_PARTIAL packet carries for the device to finish. */
static __always_inline __u16 csum_seed(__s64 sum)
{
	return (__u16)~csum_fold32(sum);
}

/*
 * Ethernet and IP headers of the answer, of total length len, written
 * whole: from the gateway's MAC (the denied frame's destination, in
 * sc->gw) to the guest's.
 */
static __always_inline int reply_l3(const struct judge *j, void *data, void *end, __u32 len,
				    __u8 proto, const struct tf_rjscratch *sc)
{
	struct ethhdr *eth = data;
	struct iphdr *iph = data + ETH_HLEN;
	struct ipv6hdr *ip6 = data + ETH_HLEN;

	if ((void *)(ip6 + 1) > end)
		return -1;
	__builtin_memcpy(eth->h_source, sc->gw, 6);
	__builtin_memcpy(eth->h_dest, j->p.smac, 6);
	eth->h_proto = bpf_htons(j->p.family == TF_FAM_IPV4 ? ETH_P_IP : ETH_P_IPV6);
	if (j->p.family == TF_FAM_IPV6) {
		*(__be32 *)ip6 = bpf_htonl(0x60000000);
		ip6->payload_len = bpf_htons(len - ETH_HLEN - IP6_HLEN);
		ip6->nexthdr = proto;
		ip6->hop_limit = 64;
		__builtin_memcpy(&ip6->saddr, j->p.daddr, 16);
		__builtin_memcpy(&ip6->daddr, j->p.saddr, 16);
		return 0;
	}
	*(__u8 *)iph = 0x45;
	iph->tos = 0;
	iph->tot_len = bpf_htons(len - ETH_HLEN);
	iph->id = 0;
	iph->frag_off = bpf_htons(0x4000); /* DF */
	iph->ttl = 64;
	iph->protocol = proto;
	iph->saddr = *(const __be32 *)j->p.daddr;
	iph->daddr = *(const __be32 *)j->p.saddr;
	iph->check = 0;
	iph->check = csum_fold32(bpf_csum_diff(NULL, 0, (void *)iph, IP4_HLEN, 0));
	return 0;
}

/* The RST (RFC 9293 3.10.7.1): to a segment with an ACK, from its ack; else acking all it took. */
static __always_inline int reply_rst(const struct judge *j, __u8 *th, void *end, int partial)
{
	__u32 took = tcp_payload_len(j) + !!(j->p.tcp_flags & TCP_FLAG_SYN) +
		     !!(j->p.tcp_flags & TCP_FLAG_FIN);
	__s64 sum = reply_pseudo(j, IPPROTO_TCP, TCP_HLEN_MIN);

	if (th + TCP_HLEN_MIN > (__u8 *)end)
		return -1;
	*(__be16 *)th = j->p.dport;
	*(__be16 *)(th + 2) = j->p.sport;
	if (j->p.tcp_flags & TCP_FLAG_ACK) {
		*(__be32 *)(th + 4) = bpf_htonl(j->p.tcp_ack);
		*(__be32 *)(th + 8) = 0;
		th[TCP_FLAGS_OFF] = TCP_FLAG_RST;
	} else {
		*(__be32 *)(th + 4) = 0;
		*(__be32 *)(th + 8) = bpf_htonl(j->p.tcp_seq + took);
		th[TCP_FLAGS_OFF] = TCP_FLAG_RST | TCP_FLAG_ACK;
	}
	th[12] = (TCP_HLEN_MIN / 4) << 4;
	*(__u32 *)(th + 14) = 0; /* window, checksum */
	*(__u16 *)(th + 18) = 0; /* urgent pointer */
	*(__u16 *)(th + 16) =
		partial ? csum_seed(sum) :
			  csum_fold32(bpf_csum_diff(NULL, 0, (void *)th, TCP_HLEN_MIN, sum));
	return 0;
}

/*
 * The DNS answer: the query's header and question, with QR, RA and RCODE
 * REFUSED set, AA, TC, AD and CD clear, and no records (an OPT record the
 * query carried is cut off with the rest). Its checksum is summed over a
 * copy in the scratch, zero padded to a word.
 */
static __always_inline int reply_dns(const struct judge *j, void *ctx, const int xdp, __u8 *udp,
				     void *end, __u32 l4_off, int partial, struct tf_rjscratch *sc)
{
	__u32 qlen = (j->name_len & 0xff) + 2 + 4, ulen = UDP_HLEN + DNS_HLEN + qlen;
	__s64 sum = reply_pseudo(j, IPPROTO_UDP, ulen);
	__u8 *dns = udp + UDP_HLEN, *root;
	__u16 check;

	if (dns + DNS_HLEN > (__u8 *)end)
		return -1;
	root = dns + DNS_HLEN + (j->name_len & 0xff) + 1;
	if (root + 1 > (__u8 *)end || *root)
		return -1; /* not the question the judge read */
	*(__be16 *)udp = j->p.dport;
	*(__be16 *)(udp + 2) = j->p.sport;
	*(__be16 *)(udp + 4) = bpf_htons(ulen);
	*(__u16 *)(udp + 6) = 0;
	dns[2] = 0x80 | (dns[2] & 0x79);   /* QR, opcode, RD */
	dns[3] = 0x80 | DNS_RCODE_REFUSED; /* RA */
	*(__be16 *)(dns + 4) = bpf_htons(1);
	*(__u32 *)(dns + 6) = 0;
	*(__u16 *)(dns + 10) = 0;
	if (partial) {
		check = csum_seed(sum);
	} else {
		*(__u32 *)&sc->msg[ulen & 0x1fc] = 0;
		if (tls_load(ctx, xdp, l4_off, sc->msg, ulen & 0x1ff))
			return -1;
		check = csum_fold32(
			bpf_csum_diff(NULL, 0, (void *)sc->msg, ((ulen & 0x1ff) + 3) & 0x3fc, sum));
		if (!check)
			check = 0xffff; /* 0 says "no checksum" (IPv4), is refused (IPv6, RFC 8200 8.1) */
	}
	/* Pointers are void once a helper read the packet: find the field again. */
	return xdp ? bpf_xdp_store_bytes(ctx, l4_off + 6, &check, 2) :
		     bpf_skb_store_bytes(ctx, l4_off + 6, &check, 2, 0);
}

/*
 * The ICMP error, quoting what sc->quote saved of the denied packet. For a
 * CHECKSUM_PARTIAL UDP datagram, the device finishes the word at UDP
 * offset 6, which now falls in the error's unused field: seeded with what
 * keeps the error's checksum right after the device's (0 for ICMP, the
 * pseudo header's sum for ICMPv6), and right as it is if none does.
 */
static __always_inline int reply_icmp(const struct judge *j, __u8 *ic, void *end, int partial,
				      const struct tf_rjscratch *sc)
{
	__s64 sum;

	if (ic + ICMP_HLEN + IP4_HLEN + ICMP_QUOTE_L4 > (__u8 *)end)
		return -1;
	*(__u32 *)(ic + 4) = 0;
	if (j->p.family == TF_FAM_IPV4) {
		ic[0] = ICMP_DEST_UNREACH;
		ic[1] = ICMP_PKT_FILTERED;
		__builtin_memcpy(ic + ICMP_HLEN, sc->quote, IP4_HLEN + ICMP_QUOTE_L4);
		*(__u16 *)(ic + 2) = 0;
		*(__u16 *)(ic + 2) = csum_fold32(bpf_csum_diff(
			NULL, 0, (void *)ic, ICMP_HLEN + IP4_HLEN + ICMP_QUOTE_L4, 0));
		return 0;
	}
	if (ic + ICMP_HLEN + IP6_HLEN + ICMP_QUOTE_L4 > (__u8 *)end)
		return -1;
	ic[0] = ICMPV6_DEST_UNREACH;
	ic[1] = ICMPV6_ADM_PROHIBITED;
	__builtin_memcpy(ic + ICMP_HLEN, sc->quote, IP6_HLEN + ICMP_QUOTE_L4);
	sum = reply_pseudo(j, IPPROTO_ICMPV6, ICMP_HLEN + IP6_HLEN + ICMP_QUOTE_L4);
	if (partial)
		*(__u16 *)(ic + 6) = csum_seed(sum);
	*(__u16 *)(ic + 2) = 0;
	*(__u16 *)(ic + 2) = csum_fold32(
		bpf_csum_diff(NULL, 0, (void *)ic, ICMP_HLEN + IP6_HLEN + ICMP_QUOTE_L4, sum));
	return 0;
}

/*
 * What the answer takes from the denied frame, saved before it is resized:
 * its destination MAC (the gateway's) and, for an ICMP error, the quote
 * (its IP header and 8 bytes). An ICMP error is then written whole, so it
 * may grow at the head (XDP has headroom, not always tailroom).
 */
static __always_inline int reply_save(const struct judge *j, void *ctx, const int xdp, __u8 kind,
				      struct tf_rjscratch *sc)
{
	__u32 n = (j->p.family == TF_FAM_IPV4 ? IP4_HLEN : IP6_HLEN) + ICMP_QUOTE_L4;

	if (tls_load(ctx, xdp, 0, sc->gw, 6))
		return -1;
	if (kind != RJ_ICMP)
		return 0;
	if (j->p.l4_len < ICMP_QUOTE_L4)
		return -1;
	return tls_load(ctx, xdp, ETH_HLEN, sc->quote, n) ? -1 : 0;
}

/*
 * Rewrite the denied packet into its answer (kind), len bytes long once
 * resized by the caller: 0, or -1 if it cannot be (the packet is dropped).
 */
static __always_inline int reply_build(const struct judge *j, void *ctx, const int xdp, __u8 kind,
				       __u32 len, int partial, struct tf_rjscratch *sc)
{
	__u32 l4_off = ETH_HLEN + (j->p.family == TF_FAM_IPV4 ? IP4_HLEN : IP6_HLEN);
	__u8 proto = kind == RJ_RST		? IPPROTO_TCP :
		     kind == RJ_DNS		? IPPROTO_UDP :
		     j->p.family == TF_FAM_IPV4 ? IPPROTO_ICMP :
						  IPPROTO_ICMPV6;
	void *data, *end;

	if (xdp) {
		data = (void *)(long)((struct xdp_md *)ctx)->data;
		end = (void *)(long)((struct xdp_md *)ctx)->data_end;
	} else {
		data = (void *)(long)((struct __sk_buff *)ctx)->data;
		end = (void *)(long)((struct __sk_buff *)ctx)->data_end;
	}
	if (reply_l3(j, data, end, len, proto, sc))
		return -1;
	if (kind == RJ_RST)
		return reply_rst(j, data + l4_off, end, partial);
	if (kind == RJ_DNS)
		return reply_dns(j, ctx, xdp, data + l4_off, end, l4_off, partial, sc);
	return reply_icmp(j, data + l4_off, end, partial, sc);
}

/*
 * Whether the packet's checksum is the device's to finish (virtio-net
 * NEEDS_CSUM from the guest): 0 no, 1 yes, at the L4 checksum field of TCP
 * or UDP (what the answers keep in place), -1 somewhere else, as the guest
 * may say: no answer then, the device would write into it there.
 */
static __always_inline int skb_csum_partial(struct __sk_buff *skb, const struct judge *j)
{
	struct sk_buff *kskb = bpf_cast_to_kern_ctx(skb);
	__u64 head = 0, data = 0;
	__u16 start, off;

	if (kskb->ip_summed != CHECKSUM_PARTIAL)
		return 0;
	start = kskb->csum_start;
	off = kskb->csum_offset;
	bpf_probe_read_kernel(&head, sizeof(head), &kskb->head);
	bpf_probe_read_kernel(&data, sizeof(data), &kskb->data);
	if (start != data - head + ETH_HLEN + (j->p.family == TF_FAM_IPV4 ? IP4_HLEN : IP6_HLEN))
		return -1;
	if (off != (j->p.proto == IPPROTO_TCP ? 16 : j->p.proto == IPPROTO_UDP ? 6 : 0xffff))
		return -1;
	return 1;
}

/*
 * TC: answer the denied packet (j->reply, decided before it was recorded)
 * and send the answer out of the device; TC_ACT_SHOT if it cannot be made.
 */
static __noinline int tc_reject(struct __sk_buff *skb, const struct judge *j)
{
	struct tf_rjscratch *sc = rj_scratch();
	int partial = skb_csum_partial(skb, j) > 0;
	__u32 len = reply_len(j, j->reply);

	if (!sc || reply_save(j, skb, 0, j->reply, sc))
		return TC_ACT_SHOT;
	if (bpf_skb_change_tail(skb, len, 0) || bpf_skb_pull_data(skb, len) ||
	    reply_build(j, skb, 0, j->reply, len, partial, sc))
		return TC_ACT_SHOT;
	sc->pass_ns = bpf_ktime_get_ns();
	sc->pass_netns = j->dev.netns;
	sc->pass_ifindex = skb->ifindex;
	sc->pass_len = skb->len;
	skb->mark = TF_RJ_MARK;
	count(j->sid, TF_CNT_REJECTED);
	return bpf_redirect(skb->ifindex, 0);
}

/*
 * 1 if the XDP program runs on an skb (generic XDP, do_xdp_generic()): tun
 * does so for a GSO write, whose answer would leave by generic_xdp_tx()
 * with the write's GSO metadata, past validate_xmit_skb(). Such a frame's
 * rxq is one of its device's own rx queues; a driver's XDP (tun's, veth's)
 * has its own.
 */
static __always_inline int xdp_on_skb(struct xdp_md *ctx)
{
	struct xdp_buff *x = bpf_cast_to_kern_ctx(ctx);
	__u64 rxq = 0, rx = 0;
	__u32 n = 0;

	if (bpf_probe_read_kernel(&rxq, sizeof(rxq), &x->rxq) ||
	    bpf_probe_read_kernel(&rx, sizeof(rx), &x->rxq->dev->_rx) ||
	    bpf_probe_read_kernel(&n, sizeof(n), &x->rxq->dev->num_rx_queues))
		return 1;
	return rxq >= rx && rxq < rx + (__u64)n * bpf_core_type_size(struct netdev_rx_queue);
}

/* XDP: the same, sent back by XDP_TX; XDP_DROP if it cannot be made. */
static __noinline int xdp_reject(struct xdp_md *ctx, const struct judge *j)
{
	struct tf_rjscratch *sc = rj_scratch();
	__u32 len = reply_len(j, j->reply);
	int delta = (int)len - (int)bpf_xdp_get_buff_len(ctx);

	if (!sc || reply_save(j, ctx, 1, j->reply, sc))
		return XDP_DROP;
	/* Only an ICMP error grows (an RST or a DNS answer is never longer than what it answers). */
	if (delta > 0 ? bpf_xdp_adjust_head(ctx, -delta) : bpf_xdp_adjust_tail(ctx, delta))
		return XDP_DROP;
	if (reply_build(j, ctx, 1, j->reply, len, 0, sc))
		return XDP_DROP;
	count(j->sid, TF_CNT_REJECTED);
	return XDP_TX;
}

/*
 * tc_to_guest, for a packet carrying TF_RJ_MARK: 1 if it is the answer
 * tc_reject() just redirected here. It came in by this very device (its
 * namespace, its ifindex), on this CPU, within TF_RJ_PASS_NS, as long as
 * the answer was. The redirect runs tcx egress before returning, so
 * nothing else comes between. The token is spent and the mark cleared
 * either way; a guest cannot set a mark, and the host would have to set
 * this one on a packet that came in by the device and went back out.
 */
static __noinline int reject_passes(struct __sk_buff *skb)
{
	struct tf_rjscratch *sc = rj_scratch();
	struct tf_sess_key dev = skb_dev(skb);
	int ok;

	skb->mark = 0;
	if (!sc || !sc->pass_ns)
		return 0;
	ok = skb->ingress_ifindex == skb->ifindex && sc->pass_ifindex == skb->ifindex &&
	     sc->pass_netns == dev.netns && sc->pass_len == skb->len &&
	     bpf_ktime_get_ns() - sc->pass_ns < TF_RJ_PASS_NS;
	sc->pass_ns = 0;
	return ok;
}

#endif /* TF_REJECT_BPF_H */
