/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An allowed ICMP error to the guest carries no more than error reporting
 * and path MTU discovery need: its header and the quoted IP header with the
 * first 8 bytes after it (RFC 792; RFC 4443 2.4 asks for "as much as
 * possible", which is no requirement on the receiver: Linux's icmp_rcv()
 * and icmpv6_rcv() read the quoted header and 8 bytes, and TCP, UDP and
 * ping find their socket and the sequence number there). Everything after
 * it would be up to a kilobyte, per error, that any host knowing a flow's
 * tuple could write into the guest unjudged. So TC cuts the packet there
 * and rewrites what the cut changes: the IP length and checksum, the
 * ICMP(v6) checksum (ICMPv6's covers a pseudo header) and the RFC 4884
 * length of a multi-part message, whose extensions the cut removed.
 */
#ifndef TF_ICMP_BPF_H
#define TF_ICMP_BPF_H

#include "judge.bpf.h"

/* The ICMP message kept: its 8-byte header, the quoted IP header, 8 bytes. */
#define TF_ICMP4_KEEP (ICMP_HLEN + IP4_HLEN + ICMP_QUOTE_L4)
#define TF_ICMP6_KEEP (ICMP_HLEN + IP6_HLEN + ICMP_QUOTE_L4)

static __always_inline __u16 csum_fold32(__s64 sum)
{
	__u32 s = (__u32)sum;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* Whether an allowed error about a flow carries more than it may (j->trim). */
static __always_inline int icmp_error_too_long(const struct judge *j)
{
	return j->p.l4_len > (j->p.family == TF_FAM_IPV4 ? TF_ICMP4_KEEP : TF_ICMP6_KEEP);
}

static __always_inline int icmp4_trim(struct __sk_buff *skb)
{
	void *data, *end;
	struct iphdr *iph;
	__u8 *icmp;

	if (bpf_skb_change_tail(skb, ETH_HLEN + IP4_HLEN + TF_ICMP4_KEEP, 0))
		return -1;
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	iph = data + ETH_HLEN;
	icmp = data + ETH_HLEN + IP4_HLEN;
	if (icmp + TF_ICMP4_KEEP > (__u8 *)end)
		return -1;
	iph->tot_len = bpf_htons(IP4_HLEN + TF_ICMP4_KEEP);
	iph->check = 0;
	iph->check = csum_fold32(bpf_csum_diff(NULL, 0, (void *)iph, IP4_HLEN, 0));
	/* Destination unreachable, time exceeded, parameter problem: byte 5 is the RFC 4884 length. */
	icmp[5] = 0;
	icmp[2] = icmp[3] = 0;
	*(__u16 *)(icmp + 2) = csum_fold32(bpf_csum_diff(NULL, 0, (void *)icmp, TF_ICMP4_KEEP, 0));
	return 0;
}

static __always_inline int icmp6_trim(struct __sk_buff *skb)
{
	__be32 ph[2] = { bpf_htonl(TF_ICMP6_KEEP), bpf_htonl(IPPROTO_ICMPV6) };
	struct ipv6hdr *ip6;
	void *data, *end;
	__s64 sum;
	__u8 *icmp;

	if (bpf_skb_change_tail(skb, ETH_HLEN + IP6_HLEN + TF_ICMP6_KEEP, 0))
		return -1;
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	ip6 = data + ETH_HLEN;
	icmp = data + ETH_HLEN + IP6_HLEN;
	if (icmp + TF_ICMP6_KEEP > (__u8 *)end)
		return -1;
	ip6->payload_len = bpf_htons(TF_ICMP6_KEEP);
	/* Destination unreachable and time exceeded: byte 4 is the RFC 4884 length. */
	if (icmp[0] == ICMPV6_DEST_UNREACH || icmp[0] == ICMPV6_TIME_EXCEED)
		icmp[4] = 0;
	icmp[2] = icmp[3] = 0;
	sum = bpf_csum_diff(NULL, 0, (void *)&ip6->saddr, 32, 0);
	sum = bpf_csum_diff(NULL, 0, ph, sizeof(ph), (__u32)sum);
	sum = bpf_csum_diff(NULL, 0, (void *)icmp, TF_ICMP6_KEEP, (__u32)sum);
	*(__u16 *)(icmp + 2) = csum_fold32(sum);
	return 0;
}

/*
 * Cut an allowed ICMP error the judge marked (j->trim); a cut that fails
 * refuses it. A frame shorter than what its IP header claims is malformed:
 * the cut would pad it with zeros instead.
 */
static __always_inline enum judgement tc_icmp_trim(struct __sk_buff *skb, struct judge *j)
{
	int v4 = j->p.family == TF_FAM_IPV4;
	int err;

	if (skb->len < ETH_HLEN + (v4 ? IP4_HLEN + TF_ICMP4_KEEP : IP6_HLEN + TF_ICMP6_KEEP))
		return deny(j, TF_REASON_MALFORMED);
	err = v4 ? icmp4_trim(skb) : icmp6_trim(skb);
	if (err)
		return deny(j, TF_REASON_ICMP_ERROR_SIZE);
	return JUDGE_ALLOW;
}

#endif /* TF_ICMP_BPF_H */
