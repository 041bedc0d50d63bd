/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Cursor-based header parsers (after xdp-tools' parsing_helpers.h): each
 * takes the cursor, checks bounds against the end of the packet, and
 * returns the header or NULL. Work on plain packet pointers, so XDP and TC
 * share them.
 */
#ifndef TF_PARSE_BPF_H
#define TF_PARSE_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* uapi #defines that vmlinux.h (types only) cannot carry. */
#define ETH_P_IP        0x0800
#define ETH_P_ARP       0x0806
#define ETH_P_IPV6      0x86DD
#define ETH_P_8021Q     0x8100
#define ETH_P_8021AD    0x88A8
#define IP_MF           0x2000
#define IP_OFFSET       0x1FFF
#define TC_ACT_UNSPEC   (-1)
#define TC_ACT_SHOT     2
#define ARPOP_REQUEST   1
#define ARPOP_REPLY     2
#define TCP_FLAG_FIN    0x01
#define TCP_FLAG_SYN    0x02
#define TCP_FLAG_RST    0x04
#define TCP_FLAG_ACK    0x10
#define TCP_FLAG_URG    0x20

/* IPv6 next-header values (uapi #defines, not in vmlinux.h). */
#define IPPROTO_HOPOPTS     0
#define IPPROTO_ROUTING     43
#define IPPROTO_FRAGMENT    44
#define IPPROTO_ICMPV6      58
#define IPPROTO_DSTOPTS     60
#define IPPROTO_MH          135

#define ICMP_ECHOREPLY      0
#define ICMP_DEST_UNREACH   3
#define ICMP_ECHO           8
#define ICMP_TIME_EXCEEDED  11
#define ICMP_PARAMETERPROB  12
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PKT_TOOBIG   2
#define ICMPV6_TIME_EXCEED  3
#define ICMPV6_PARAMPROB    4
#define ICMPV6_ECHO_REQUEST 128
#define ICMPV6_ECHO_REPLY   129
#define NDISC_ROUTER_SOLICITATION    133
#define NDISC_ROUTER_ADVERTISEMENT   134
#define NDISC_NEIGHBOUR_SOLICITATION 135
#define NDISC_NEIGHBOUR_ADVERTISEMENT 136

struct cursor {
	void *pos;
	void *end;
};

/* ARP for Ethernet/IPv4, as on the wire (struct arphdr stops before the addresses). */
struct arp_eth {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[6];
	__u8 spa[4];
	__u8 tha[6];
	__u8 tpa[4];
} __attribute__((packed));

/* The first 8 bytes of any ICMP/ICMPv6 message; echo id/seq when it is an echo. */
struct icmp_head {
	__u8 type;
	__u8 code;
	__sum16 csum;
	__be16 id;
	__be16 seq;
};

/* What an NS/NA carries after the ICMPv6 header. */
struct nd_target {
	__u8 addr[16];
};

static __always_inline void *cur_pull(struct cursor *c, __u32 len)
{
	void *p = c->pos;

	if (p + len > c->end)
		return NULL;
	c->pos = p + len;
	return p;
}

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] &&
	       a[3] == b[3] && a[4] == b[4] && a[5] == b[5];
}

static __always_inline int mac_is_bcast(const __u8 *a)
{
	return (a[0] & a[1] & a[2] & a[3] & a[4] & a[5]) == 0xff;
}

/* 33:33:xx:xx:xx:xx, the IPv6 multicast MACs NDP uses. */
static __always_inline int mac_is_ip6_mcast(const __u8 *a)
{
	return a[0] == 0x33 && a[1] == 0x33;
}

static __always_inline int ip6_eq(const void *a, const void *b)
{
	const __u32 *x = a, *y = b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

static __always_inline int ip6_is_unspec(const void *a)
{
	const __u32 *x = a;

	return (x[0] | x[1] | x[2] | x[3]) == 0;
}

/* ff02::/16, link-scope multicast (all-nodes, all-routers, solicited-node). */
static __always_inline int ip6_is_ll_mcast(const void *a)
{
	const __u8 *b = a;

	return b[0] == 0xff && b[1] == 0x02;
}

static __always_inline int ip6_is_link_local(const __u8 *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static __always_inline void ip6_copy(__u8 *dst, const void *src)
{
	__builtin_memcpy(dst, src, 16);
}

static __always_inline void ip4_copy(__u8 *dst, const void *src)
{
	__builtin_memcpy(dst, src, 4);
}

#endif /* TF_PARSE_BPF_H */
