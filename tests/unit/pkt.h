/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A compact frame builder for the unit tests: a declarative description
 * (struct pk, written as a designated initializer in a fixture table) in,
 * an Ethernet frame out. Ethernet (optionally VLAN-tagged), ARP, IPv4 with
 * options and fragment bits, IPv6 with one extension header, TCP, UDP,
 * GRE, ICMP/ICMPv6 echo, NDP and errors quoting an inner packet.
 * Checksums stay zero: the datapath does not verify them. Header-only,
 * since the Makefile links each tests/unit/test_*.c on its own.
 */
#ifndef TF_TEST_PKT_H
#define TF_TEST_PKT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>

#define PK_MAX 512

#define PK_FIN 0x01
#define PK_SYN 0x02
#define PK_RST 0x04
#define PK_PSH 0x08
#define PK_ACK 0x10

/* struct pk.exthdr: marks the field as set, since hop-by-hop is next header 0. */
#define PK_EXT(nh) (0x100 | (nh))

struct pk {
	/* Ethernet; NULL MACs take the defaults given to pk_build() */
	const char *smac, *dmac;
	__u16 ethertype;		   /* 0: from the content (ARP, IPv4, IPv6; else 0x88cc) */
	__u16 vlan;			   /* a VLAN TPID (0x8100, 0x88a8): tag the frame, VID 5 */
	int arp;			   /* an ARP packet (ar_* fields) instead of IP */
	__u16 ar_hrd, ar_op;		   /* 0: Ethernet (1), request (1) */
	const char *sha, *spa, *tha, *tpa; /* sha NULL: the frame's source MAC */
	/* IP: the family follows the address text; no src means no IP */
	const char *src, *dst;
	__u8 proto;
	__u8 version;  /* override the version nibble */
	__u8 ihl;      /* IPv4: 0 = 5; above 5 appends NOP options */
	__u16 tot_len; /* IPv4: override the total length */
	__u16 frag;    /* IPv4: the frag_off field, host order */
	__u8 hop;      /* TTL / hop limit; 0 = 64 */
	__u16 exthdr;  /* IPv6: PK_EXT(nh), one 8-byte extension header before L4 */
	/* L4 */
	__u16 sport, dport;
	__u32 seq, ack;		/* TCP; seq 0 = 1 */
	__u8 flags;		/* TCP flags (PK_SYN ...) */
	__u8 doff;		/* TCP data offset; 0 = 5 */
	__u8 type, code;	/* ICMP / ICMPv6 */
	__u16 id;		/* echo identifier */
	__u16 mtu;		/* ICMP frag-needed / ICMPv6 packet-too-big */
	const char *target;	/* NDP NS/NA target */
	const struct pk *inner; /* ICMP error: the quoted packet, from its IP header */
	unsigned int trunc;	/* cut the frame to this many bytes */
};

/* A built frame, and what its outermost headers carry (to check events). */
struct pk_frame {
	__u8 data[PK_MAX];
	unsigned int len;
	__u8 smac[6];
	__be16 ethertype; /* the first one (the TPID if tagged) */
	__u8 family;	  /* 4, 6, or 0 if not IP */
	__u8 proto;	  /* IPv4 protocol / IPv6 first next header */
	__u8 saddr[16], daddr[16];
	__be16 sport, dport; /* TCP and UDP */
};

static inline int pk_mac(const char *s, __u8 out[6])
{
	unsigned int b[6];
	int i;

	if (!s || sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		out[i] = (__u8)b[i];
	return 0;
}

/* 4 or 6 (IPv4 in out[0..3], the rest zero), or 0 if s is not an address. */
static inline int pk_addr(const char *s, __u8 out[16])
{
	memset(out, 0, 16);
	if (!s)
		return 0;
	if (inet_pton(AF_INET, s, out) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, out) == 1)
		return 6;
	return 0;
}

static inline void pk_put16(__u8 *b, unsigned int v)
{
	b[0] = (__u8)(v >> 8);
	b[1] = (__u8)v;
}

static inline unsigned int pk_ip(const struct pk *p, __u8 *b, struct pk_frame *f);

/* The L4 header and what follows it; returns its length. */
static inline unsigned int pk_l4(const struct pk *p, __u8 *b)
{
	unsigned int n;

	switch (p->proto) {
	case IPPROTO_TCP:
		memset(b, 0, 20);
		pk_put16(b, p->sport);
		pk_put16(b + 2, p->dport);
		pk_put16(b + 4, (p->seq ? p->seq : 1) >> 16);
		pk_put16(b + 6, (p->seq ? p->seq : 1) & 0xffff);
		pk_put16(b + 8, p->ack >> 16);
		pk_put16(b + 10, p->ack & 0xffff);
		b[12] = (p->doff ? p->doff : 5) << 4;
		b[13] = p->flags;
		pk_put16(b + 14, 65535);
		return 20;
	case IPPROTO_UDP:
		memset(b, 0, 12);
		pk_put16(b, p->sport);
		pk_put16(b + 2, p->dport);
		pk_put16(b + 4, 12);
		return 12;
	case IPPROTO_GRE:
		memset(b, 0, 4);
		pk_put16(b + 2, 0x0800);
		return 4;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		memset(b, 0, 8);
		b[0] = p->type;
		b[1] = p->code;
		if (p->mtu) {
			pk_put16(b + 6, p->mtu); /* ICMP: next-hop MTU; ICMPv6: low half */
		} else if (p->id) {
			pk_put16(b + 4, p->id);
			pk_put16(b + 6, 1); /* seq */
		}
		n = 8;
		if (p->target)
			n += pk_addr(p->target, b + n) ? 16 : 0;
		if (p->inner)
			n += pk_ip(p->inner, b + n, NULL);
		return n;
	}
	memset(b, 0, 8);
	return 8;
}

/* The IP header (with options or extension header) and its payload; 0 on error. */
static inline unsigned int pk_ip(const struct pk *p, __u8 *b, struct pk_frame *f)
{
	__u8 src[16], dst[16];
	int fam = pk_addr(p->src, src);
	unsigned int ihl = p->ihl ? p->ihl : 5, hl, n, i;

	if (!fam || pk_addr(p->dst, dst) != fam)
		return 0;
	if (fam == 4) {
		hl = ihl > 5 ? ihl * 4 : 20;
		memset(b, 0, hl);
		b[0] = (__u8)((p->version ? p->version : 4) << 4 | (ihl & 0xf));
		pk_put16(b + 6, p->frag);
		b[8] = p->hop ? p->hop : 64;
		b[9] = p->proto;
		memcpy(b + 12, src, 4);
		memcpy(b + 16, dst, 4);
		for (i = 20; i < hl; i++)
			b[i] = 1; /* NOP option */
		n = pk_l4(p, b + hl);
		pk_put16(b + 2, p->tot_len ? p->tot_len : hl + n);
	} else {
		hl = 40;
		memset(b, 0, hl);
		b[0] = (__u8)((p->version ? p->version : 6) << 4);
		b[6] = p->exthdr ? (__u8)p->exthdr : p->proto;
		b[7] = p->hop ? p->hop : 64;
		memcpy(b + 8, src, 16);
		memcpy(b + 24, dst, 16);
		if (p->exthdr) {
			memset(b + hl, 0, 8);
			b[hl] = p->proto; /* next header; length 0: 8 bytes */
			if (p->exthdr == PK_EXT(IPPROTO_FRAGMENT)) {
				b[hl + 3] = 1; /* offset 0, M flag */
				b[hl + 7] = 1; /* identification */
			} else if (p->exthdr == PK_EXT(IPPROTO_HOPOPTS) ||
				   p->exthdr == PK_EXT(IPPROTO_DSTOPTS)) {
				b[hl + 2] = 1; /* PadN of 4 */
				b[hl + 3] = 4;
			}
			hl += 8;
		}
		n = pk_l4(p, b + hl);
		pk_put16(b + 4, hl - 40 + n);
	}
	if (f) {
		f->family = (__u8)fam;
		f->proto = fam == 4 ? b[9] : b[6];
		memcpy(f->saddr, src, 16);
		memcpy(f->daddr, dst, 16);
		if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
			f->sport = htons(p->sport);
			f->dport = htons(p->dport);
		}
	}
	return hl + n;
}

static inline unsigned int pk_arp(const struct pk *p, __u8 *b, const __u8 *smac)
{
	__u8 a[16];

	memset(b, 0, 28);
	pk_put16(b, p->ar_hrd ? p->ar_hrd : 1);
	pk_put16(b + 2, 0x0800);
	b[4] = 6;
	b[5] = 4;
	pk_put16(b + 6, p->ar_op ? p->ar_op : 1);
	if (!p->sha || pk_mac(p->sha, b + 8))
		memcpy(b + 8, smac, 6);
	pk_addr(p->spa, a);
	memcpy(b + 14, a, 4);
	if (p->tha)
		pk_mac(p->tha, b + 18);
	pk_addr(p->tpa, a);
	memcpy(b + 24, a, 4);
	return 28;
}

/* Build the frame p describes; 0, or -1 if a MAC or an address does not parse. */
static inline int pk_build(const struct pk *p, const char *def_smac, const char *def_dmac,
			   struct pk_frame *f)
{
	__u8 *b = f->data;
	unsigned int n = 14, l, et_off = 12, et;

	memset(f, 0, sizeof(*f));
	if (pk_mac(p->dmac ? p->dmac : def_dmac, b) || pk_mac(p->smac ? p->smac : def_smac, b + 6))
		return -1;
	memcpy(f->smac, b + 6, 6);
	if (p->vlan) {
		pk_put16(b + 12, p->vlan);
		pk_put16(b + 14, 5); /* PCP 0, VID 5 */
		et_off = 16;
		n = 18;
	}
	if (p->arp) {
		et = 0x0806;
		n += pk_arp(p, b + n, b + 6);
	} else if (p->src) {
		l = pk_ip(p, b + n, f);
		if (!l)
			return -1;
		et = f->family == 4 ? 0x0800 : 0x86dd;
		n += l;
	} else {
		et = 0x88cc; /* LLDP */
		memset(b + n, 0, 46);
		n += 46;
	}
	if (p->ethertype)
		et = p->ethertype;
	pk_put16(b + et_off, et);
	f->ethertype = htons(p->vlan ? p->vlan : et);
	f->len = p->trunc && p->trunc < n ? p->trunc : n;
	return 0;
}

/*
 * A TCP segment bigger than struct pk_frame holds (a ClientHello): the
 * Ethernet header from p->smac to p->dmac, IPv4 or IPv6 as p->src is, TCP
 * from p->sport to p->dport with seq, ack, p->flags and a 65535 window,
 * then n bytes of pay. b has room for 14 + 40 + 20 + n bytes. Returns the
 * frame's length.
 */
static inline unsigned int pk_tcp_seg(__u8 *b, const struct pk *p, __u32 seq, __u32 ack,
				      const void *pay, unsigned int n)
{
	__u8 s[16], d[16], *t;
	int fam = pk_addr(p->src, s);
	unsigned int ip = fam == 4 ? 20 : 40, o = 14;

	pk_addr(p->dst, d);
	memset(b, 0, 14 + ip + 20);
	pk_mac(p->dmac, b);
	pk_mac(p->smac, b + 6);
	pk_put16(b + 12, fam == 4 ? 0x0800 : 0x86dd);
	if (fam == 4) {
		b[o] = 0x45;
		pk_put16(b + o + 2, ip + 20 + n);
		b[o + 8] = 64;
		b[o + 9] = IPPROTO_TCP;
		memcpy(b + o + 12, s, 4);
		memcpy(b + o + 16, d, 4);
	} else {
		b[o] = 0x60;
		pk_put16(b + o + 4, 20 + n);
		b[o + 6] = IPPROTO_TCP;
		b[o + 7] = 64;
		memcpy(b + o + 8, s, 16);
		memcpy(b + o + 24, d, 16);
	}
	t = b + o + ip;
	pk_put16(t, p->sport);
	pk_put16(t + 2, p->dport);
	pk_put16(t + 4, seq >> 16);
	pk_put16(t + 6, seq & 0xffff);
	pk_put16(t + 8, ack >> 16);
	pk_put16(t + 10, ack & 0xffff);
	t[12] = 5 << 4;
	t[13] = p->flags;
	pk_put16(t + 14, 65535);
	if (n)
		memcpy(t + 20, pay, n);
	return o + ip + 20 + n;
}

#endif /* TF_TEST_PKT_H */
