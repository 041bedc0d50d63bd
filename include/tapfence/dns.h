/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The DNS message parser, written once and compiled into the BPF datapath,
 * the unit tests and the libFuzzer harness (tests/fuzz/fuzz_dns.c).
 *
 * It is a state machine over a bounded byte buffer: dns_step() does one
 * small step (one label of a name, or one fixed-size field group) and says
 * whether the message is done. Each side drives it with its own loop: the
 * BPF programs with one bpf_loop() (bpf/lib/dns.bpf.h), so the verifier
 * checks one step instead of every path through nested loops; userspace
 * with the plain loop of dns_parse_run() below. Plain C only: no BPF
 * helper, no libc, every read of the message masked to the buffer size
 * (the verifier's bound) and checked against the message length first.
 *
 * Queries: one question, no compression, a name of [a-z0-9-_] labels
 * (after lowering A-Z), type A, AAAA or CNAME of class IN. The name comes
 * out in forward form (chain[0]: "www.github.com") and in reversed form
 * (rev: "moc.buhtig.www.", see abi.h).
 *
 * Answers: matched against the stored query (its reversed name, compared
 * case-insensitively, since resolvers randomise the case of the question,
 * draft-vixie-dnsext-dns0x20; and its type), then the answer section
 * walked: owner names are decompressed (a pointer must point strictly
 * before the bytes it was reached from, so every jump goes backwards and
 * no loop is possible; at most TF_DNS_JUMPS_MAX jumps per name) and
 * compared with the chain: the asked name, then each CNAME target whose
 * owner is the chain's tail, at most TF_DNS_CHAIN_MAX names. An owner that
 * is nothing but a pointer to where a chain name was read ("@12", the
 * common case) is that name, and is taken whole in one step
 * (dns_owner_whole()). A and AAAA
 * records owned by a chain name are collected (at most TF_DNS_LEARN_MAX)
 * with the smallest TTL along the chain. Records of other names and types
 * are skipped; authority and additional sections (EDNS0 OPT lives there)
 * are not read. Anything that does not fit or does not parse is
 * DNS_MALFORMED: the caller learns nothing from it.
 */
#ifndef TAPFENCE_DNS_H
#define TAPFENCE_DNS_H

#include "abi.h"

/*
 * Bytes of a DNS message the datapath copies and parses; a longer message
 * is malformed (fail closed). An unfragmented UDP answer on a 1500-byte
 * MTU is at most 1472 bytes, and fragments are dropped before DNS is read.
 * A power of two: every read is masked with TF_DNS_MSG_MAX - 1.
 */
#define TF_DNS_MSG_MAX	  2048
#define TF_DNS_HDR_LEN	  12
#define TF_DNS_WIRE_MAX	  255			/* RFC 1035 3.1: a name's wire length */
#define TF_DNS_FWD_MAX	  (TF_DNS_NAME_MAX - 1) /* forward form: reversed minus the dot */
#define TF_DNS_NAME_BUF	  256			/* name buffers: a power of two, for masking */
#define TF_DNS_CHAIN_MAX  4			/* the asked name and up to 3 CNAME targets */
#define TF_DNS_RR_MAX	  64 /* answer records walked; more are not learnt from */
#define TF_DNS_JUMPS_MAX  16 /* compression pointers followed per name */
#define TF_DNS_LABEL_STEP 8  /* label bytes one step reads */
#define TF_DNS_REV_STEP	  16 /* reversed-form bytes one step writes */

/* Steps of one name, at most: one per wire byte (<= 255) plus one per jump. */
#define TF_DNS_NAME_STEPS (TF_DNS_WIRE_MAX + TF_DNS_JUMPS_MAX)
/*
 * Enough for any message the limits above accept, whether owners are taken
 * whole or walked (struct dns_parse.walk_all): header, question, reversal,
 * then per record its owner, its fixed fields and a CNAME target (walked
 * even when it is not kept: a name no host name can be, or a full chain).
 */
#define TF_DNS_STEPS_MAX \
	(2 + TF_DNS_NAME_STEPS + TF_DNS_NAME_BUF + TF_DNS_RR_MAX * (1 + 2 * TF_DNS_NAME_STEPS))

#define DNS_T_A	    1
#define DNS_T_CNAME 5
#define DNS_T_AAAA  28
#define DNS_T_OPT   41
#define DNS_C_IN    1

#define DNS_F_QR     0x8000
#define DNS_F_OPCODE 0x7800
#define DNS_F_TC     0x0200
#define DNS_F_RCODE  0x000f

/* struct dns_parse.status, once the parse is done. */
enum dns_status {
	DNS_OK,	       /* a valid query / a matched answer, walked */
	DNS_MALFORMED, /* does not parse, or breaks a limit */
	DNS_QTYPE,     /* query: not A, AAAA or CNAME of class IN */
	DNS_MISMATCH,  /* answer: not to the stored query */
	DNS_TRUNCATED, /* answer: matched, with the TC bit */
};

enum dns_phase {
	DNS_PH_HDR,
	DNS_PH_QNAME,
	DNS_PH_QTAIL,
	DNS_PH_REV,
	DNS_PH_OWNER,
	DNS_PH_RR,
	DNS_PH_CNAME,
	DNS_PH_DONE,
};

#define DNS_NONE 0xff /* no chain slot */

/** struct dns_rec - an address record to learn. @ttl: seconds, smallest along the chain. */
struct dns_rec {
	__u32 ttl;
	__u8 family; /* TF_FAM_IPV4 (addr[0..3]) or TF_FAM_IPV6 */
	__u8 chain;  /* which chain name owns it (0: the asked name) */
	__u8 pad[2];
	__u8 addr[16];
};

/* Where a name being read is, and what it has produced so far. */
struct dns_name_walk {
	__u32 pos;  /* next byte to read */
	__u32 seg;  /* where reading started after the last jump: pointers go below */
	__u32 end;  /* offset just past the name where it sits (0: not yet known) */
	__u16 out;  /* forward-form bytes produced */
	__u16 wire; /* uncompressed wire length so far */
	__u8 left;  /* bytes left in the current label */
	__u8 jumps;
	__u8 bad;  /* a byte outside [a-z0-9-_], or longer than TF_DNS_FWD_MAX */
	__u8 cand; /* bit k: still equal to chain[k] */
	__u8 dst;  /* chain slot the name is written to, or DNS_NONE */
	__u8 pad[3];
};

/**
 * struct dns_parse - the parser's whole state, inputs and results. In BPF
 * it lives in a per-CPU scratch map (it is far larger than the stack).
 * Inputs (dns_parse_start): @answer, and for an answer @want, @want_len,
 * @want_qtype, the stored query's reversed name and type.
 * Results, valid once dns_parse_run() returned:
 * @status:   enum dns_status
 * @id:       transaction id (host order), from the header
 * @chain:    chain[0] is the question's name in forward form, chain_len[0]
 *            bytes, valid once @nchain > 0, which only a name of [a-z0-9-_.]
 *            within TF_DNS_FWD_MAX bytes reaches; an answer adds CNAME targets
 * @rev:      query: the question's name in reversed form, @rev_len bytes,
 *            zero padded (an answer compares with @want instead)
 * @matched:  answer: the question is the stored query's (case-insensitively)
 * @rec:      answer: @nrec address records of chain names
 * @lost:     answer: some address records could not be collected (more than
 *            TF_DNS_LEARN_MAX, more than TF_DNS_RR_MAX answer records, a
 *            chain longer than TF_DNS_CHAIN_MAX or a CNAME target not usable)
 * @walk_all: input: 1 to walk every owner name, never take one whole
 *            (the walk the unit tests and the fuzzer compare results with)
 */
struct dns_parse {
	__u8 answer;
	__u8 phase;
	__u8 status;
	__u8 matched;
	__u8 lost;
	__u8 nrec;
	__u8 nchain;
	__u8 owner; /* chain slot owning the current record, or DNS_NONE */
	__u8 walk_all;
	__u8 pad;
	__u16 id;
	__u16 flags;
	__u16 ancount;
	__u16 rr; /* answer records done */
	__u16 qtype;
	__u16 want_qtype;
	__u16 want_len;
	__u16 rev_len;
	__u16 k; /* reversal: next byte */
	__u16 arcount;
	__u32 pos;    /* next fixed field */
	__u32 rd_end; /* end of the current record's data */
	__u32 ttl;    /* TTL a CNAME target being read gets */
	struct dns_name_walk nw;
	__u16 chain_len[TF_DNS_CHAIN_MAX];
	__u32 chain_ttl[TF_DNS_CHAIN_MAX];
	/* where chain name k was read, the pointers it followed, the first chain name equal to it */
	__u16 chain_off[TF_DNS_CHAIN_MAX];
	__u8 chain_jumps[TF_DNS_CHAIN_MAX];
	__u8 chain_alias[TF_DNS_CHAIN_MAX];
	/* 8-aligned: the datapath copies them as 8-byte words */
	__u8 chain[TF_DNS_CHAIN_MAX][TF_DNS_NAME_BUF] __attribute__((aligned(8)));
	__u8 rev[TF_DNS_NAME_BUF] __attribute__((aligned(8)));
	__u8 want[TF_DNS_NAME_BUF] __attribute__((aligned(8)));
	struct dns_rec rec[TF_DNS_LEARN_MAX];
};

#define DNS_INLINE static inline __attribute__((always_inline))

/*
 * One byte of the message. The parser checks off < len before every read;
 * the mask is the bound the BPF verifier needs, and in userspace a read
 * past len traps, so the fuzzer finds any missing check.
 */
DNS_INLINE __u8 dns_u8(const __u8 *msg, __u32 len, __u32 off)
{
#ifndef __bpf__
	if (off >= len)
		__builtin_trap();
#else
	(void)len;
#endif
	return msg[off & (TF_DNS_MSG_MAX - 1)];
}

DNS_INLINE __u16 dns_u16(const __u8 *msg, __u32 len, __u32 off)
{
	return (__u16)(dns_u8(msg, len, off) << 8 | dns_u8(msg, len, off + 1));
}

DNS_INLINE __u32 dns_u32(const __u8 *msg, __u32 len, __u32 off)
{
	return (__u32)dns_u16(msg, len, off) << 16 | dns_u16(msg, len, off + 2);
}

/* Host names as host rules know them: RFC 952/1123 letters, digits, hyphen, plus '_'. */
DNS_INLINE int dns_name_char(__u8 c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

DNS_INLINE int dns_finish(struct dns_parse *p, __u8 status)
{
	p->status = status;
	p->phase = DNS_PH_DONE;
	return 1;
}

DNS_INLINE void dns_name_begin(struct dns_parse *p, __u32 pos, __u8 dst, __u8 cand)
{
	struct dns_name_walk *w = &p->nw;

	w->pos = pos;
	w->seg = pos;
	w->end = 0;
	w->out = 0;
	w->wire = 0;
	w->left = 0;
	w->jumps = 0;
	w->bad = 0;
	w->cand = cand;
	w->dst = dst;
}

/* Append one forward-form byte: write it to the destination slot, compare it with the chain. */
DNS_INLINE void dns_name_put(struct dns_parse *p, __u8 c)
{
	struct dns_name_walk *w = &p->nw;
	__u32 o = w->out;
	__u8 k;

	if (o >= TF_DNS_FWD_MAX) {
		w->bad = 1; /* too long for a reversed form: can match nothing */
		return;
	}
	if (w->dst < TF_DNS_CHAIN_MAX)
		p->chain[w->dst & (TF_DNS_CHAIN_MAX - 1)][o & (TF_DNS_NAME_BUF - 1)] = c;
	for (k = 0; k < TF_DNS_CHAIN_MAX; k++) {
		if (!(w->cand & (1 << k)))
			continue;
		if (o >= p->chain_len[k] || p->chain[k][o & (TF_DNS_NAME_BUF - 1)] != c)
			w->cand &= (__u8) ~(1 << k);
	}
	w->out = (__u16)(o + 1);
}

/*
 * An owner name that starts with a pointer to where chain name k was read
 * is chain name k: the same bytes, read by the same rules, its pointers
 * plus this one within TF_DNS_JUMPS_MAX (else it is walked, and fails as
 * it would). It ends here, with what the byte walk would leave: its
 * length, not bad, and equal to the first chain name equal to k.
 */
DNS_INLINE int dns_owner_whole(struct dns_parse *p, __u32 t, __u32 pos)
{
	struct dns_name_walk *w = &p->nw;
	__u8 k;

	if (p->walk_all || w->out || w->jumps || w->dst != DNS_NONE)
		return 0;
	for (k = 0; k < TF_DNS_CHAIN_MAX; k++) {
		if (k >= p->nchain || p->chain_off[k] != t || p->chain_jumps[k] >= TF_DNS_JUMPS_MAX)
			continue;
		w->end = pos + 2;
		w->out = p->chain_len[k];
		w->cand = (__u8)(1 << (p->chain_alias[k] & (TF_DNS_CHAIN_MAX - 1)));
		return 1;
	}
	return 0;
}

/*
 * One step of reading a name: a label's length byte and up to
 * TF_DNS_LABEL_STEP of its bytes, or the next bytes of a label, or the
 * root label, or one compression pointer. Returns 0 to go on, 1 when the
 * name is read, -1 if it is malformed. Compression only in answers; a
 * pointer must point into the message body (past the header) and strictly
 * below the bytes it was reached from (RFC 1035 4.1.4 speaks of "a prior
 * occurrence"), so every jump goes backwards and a loop is impossible.
 */
DNS_INLINE int dns_name_step(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	struct dns_name_walk *w = &p->nw;
	__u32 pos = w->pos, t, i;
	__u8 b, c, left = w->left;

	if (!left) {
		if (pos >= len)
			return -1;
		b = dns_u8(msg, len, pos);
		if (b == 0) {
			if (!w->end)
				w->end = pos + 1;
			return 1;
		}
		if ((b & 0xc0) == 0xc0) {
			if (!p->answer || pos + 1 >= len)
				return -1;
			t = (__u32)(b & 0x3f) << 8 | dns_u8(msg, len, pos + 1);
			if (t < TF_DNS_HDR_LEN || t >= w->seg || w->jumps >= TF_DNS_JUMPS_MAX)
				return -1;
			if (dns_owner_whole(p, t, pos))
				return 1;
			w->jumps++;
			if (!w->end)
				w->end = pos + 2;
			w->pos = t;
			w->seg = t;
			return 0;
		}
		if (b & 0xc0)
			return -1; /* 0x40 and 0x80 label types: obsolete (RFC 6891 5) */
		if (w->wire + b + 1 >= TF_DNS_WIRE_MAX)
			return -1; /* no room left for the root label */
		w->wire = (__u16)(w->wire + b + 1);
		if (w->out)
			dns_name_put(p, '.');
		left = b;
		pos++;
	}
	for (i = 0; i < TF_DNS_LABEL_STEP && left; i++) {
		if (pos >= len)
			return -1;
		c = dns_u8(msg, len, pos);
		if (c >= 'A' && c <= 'Z')
			c = (__u8)(c + ('a' - 'A'));
		if (!dns_name_char(c))
			w->bad = 1;
		dns_name_put(p, c);
		left--;
		pos++;
	}
	w->left = left;
	w->pos = pos;
	return 0;
}

DNS_INLINE int dns_hdr(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	__u16 qdcount, nscount, arcount;

	if (len < TF_DNS_HDR_LEN || len > TF_DNS_MSG_MAX)
		return dns_finish(p, DNS_MALFORMED);
	p->id = dns_u16(msg, len, 0);
	p->flags = dns_u16(msg, len, 2);
	qdcount = dns_u16(msg, len, 4);
	p->ancount = dns_u16(msg, len, 6);
	nscount = dns_u16(msg, len, 8);
	arcount = dns_u16(msg, len, 10);
	p->arcount = arcount;
	if (qdcount != 1 || (p->flags & DNS_F_OPCODE))
		return dns_finish(p, DNS_MALFORMED);
	if (p->answer) {
		if (!(p->flags & DNS_F_QR))
			return dns_finish(p, DNS_MALFORMED);
	} else {
		/* A standard query: no QR, TC or RCODE; nothing but an EDNS0 OPT beside the question. */
		if ((p->flags & (DNS_F_QR | DNS_F_TC | DNS_F_RCODE)) || p->ancount || nscount ||
		    arcount > 1)
			return dns_finish(p, DNS_MALFORMED);
	}
	dns_name_begin(p, TF_DNS_HDR_LEN, 0, 0);
	p->phase = DNS_PH_QNAME;
	return 0;
}

DNS_INLINE int dns_qname(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	int r = dns_name_step(p, msg, len);

	if (r == 0)
		return 0;
	if (r < 0)
		return dns_finish(p, DNS_MALFORMED);
	if (p->nw.bad || !p->nw.out)
		return dns_finish(p, p->answer ? DNS_MISMATCH : DNS_MALFORMED);
	/* Only a name of host-name bytes becomes chain[0], the name events carry. */
	p->chain_len[0] = p->nw.out;
	p->chain_ttl[0] = 0xffffffff;
	p->chain_off[0] = TF_DNS_HDR_LEN;
	p->chain_jumps[0] = p->nw.jumps;
	p->chain_alias[0] = 0;
	p->nchain = 1;
	p->pos = p->nw.end;
	p->phase = DNS_PH_QTAIL;
	return 0;
}

/*
 * After a query's question: nothing, or (arcount 1) one EDNS0 OPT record
 * (root owner, type 41) ending exactly at the end of the message. Bytes
 * beyond what was judged could reach the resolver unjudged.
 */
DNS_INLINE int dns_query_tail_ok(const struct dns_parse *p, const __u8 *msg, __u32 len)
{
	__u32 pos = p->pos;

	if (!p->arcount)
		return pos == len;
	if (pos + 11 > len || dns_u8(msg, len, pos) != 0 || dns_u16(msg, len, pos + 1) != DNS_T_OPT)
		return 0;
	return pos + 11 + dns_u16(msg, len, pos + 9) == len;
}

DNS_INLINE int dns_qtail(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	__u16 qclass;

	if (p->pos + 4 > len)
		return dns_finish(p, DNS_MALFORMED);
	p->qtype = dns_u16(msg, len, p->pos);
	qclass = dns_u16(msg, len, p->pos + 2);
	p->pos += 4;
	if (p->answer) {
		if (p->qtype != p->want_qtype || qclass != DNS_C_IN ||
		    p->chain_len[0] + 1 != p->want_len)
			return dns_finish(p, DNS_MISMATCH);
	} else if (qclass != DNS_C_IN ||
		   (p->qtype != DNS_T_A && p->qtype != DNS_T_AAAA && p->qtype != DNS_T_CNAME)) {
		return dns_finish(p, DNS_QTYPE);
	} else if (!dns_query_tail_ok(p, msg, len)) {
		return dns_finish(p, DNS_MALFORMED);
	}
	p->k = 0;
	p->phase = DNS_PH_REV;
	return 0;
}

/* Owner names are compared with every chain name at once: cand starts with all of them. */
DNS_INLINE void dns_owner_begin(struct dns_parse *p)
{
	dns_name_begin(p, p->pos, DNS_NONE, (__u8)((1 << p->nchain) - 1));
	p->phase = DNS_PH_OWNER;
}

/*
 * Up to TF_DNS_REV_STEP bytes of the reversed form: rev[k] = fwd[D - 1 - k],
 * then the dot. A query keeps it; an answer compares it with the stored
 * query's.
 */
DNS_INLINE int dns_rev(struct dns_parse *p)
{
	__u32 d = p->chain_len[0], k = p->k, i;
	__u8 c;

	for (i = 0; i < TF_DNS_REV_STEP; i++, k++) {
		if (k > d)
			break;
		c = k < d ? p->chain[0][(d - 1 - k) & (TF_DNS_NAME_BUF - 1)] : '.';
		if (!p->answer)
			p->rev[k & (TF_DNS_NAME_BUF - 1)] = c;
		else if (p->want[k & (TF_DNS_NAME_BUF - 1)] != c)
			return dns_finish(p, DNS_MISMATCH);
	}
	p->k = (__u16)k;
	if (k <= d)
		return 0;
	p->rev_len = (__u16)(d + 1);
	if (!p->answer)
		return dns_finish(p, DNS_OK);
	p->matched = 1;
	if (p->flags & DNS_F_TC)
		return dns_finish(p, DNS_TRUNCATED);
	/* NXDOMAIN, SERVFAIL, REFUSED...: matched, nothing to learn. */
	if ((p->flags & DNS_F_RCODE) || !p->ancount)
		return dns_finish(p, DNS_OK);
	dns_owner_begin(p);
	return 0;
}

DNS_INLINE int dns_next_rr(struct dns_parse *p)
{
	p->rr++;
	if (p->rr >= p->ancount)
		return dns_finish(p, DNS_OK);
	if (p->rr >= TF_DNS_RR_MAX) {
		p->lost = 1;
		return dns_finish(p, DNS_OK);
	}
	dns_owner_begin(p);
	return 0;
}

DNS_INLINE int dns_owner(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	int r = dns_name_step(p, msg, len);
	__u8 k;

	if (r == 0)
		return 0;
	if (r < 0)
		return dns_finish(p, DNS_MALFORMED);
	p->owner = DNS_NONE;
	for (k = TF_DNS_CHAIN_MAX; k-- > 0;)
		if (!p->nw.bad && (p->nw.cand & (1 << k)) && p->chain_len[k] == p->nw.out)
			p->owner = k; /* the first chain name it equals */
	p->pos = p->nw.end;
	p->phase = DNS_PH_RR;
	return 0;
}

DNS_INLINE void dns_collect(struct dns_parse *p, const __u8 *msg, __u32 len, __u32 rd, __u8 family,
			    __u32 ttl)
{
	struct dns_rec *r;
	__u32 i, n = family == TF_FAM_IPV4 ? 4 : 16;

	if (p->nrec >= TF_DNS_LEARN_MAX) {
		p->lost = 1;
		return;
	}
	r = &p->rec[p->nrec & (TF_DNS_LEARN_MAX - 1)];
	r->ttl = ttl;
	r->family = family;
	r->chain = p->owner;
	r->pad[0] = 0;
	r->pad[1] = 0;
	for (i = 0; i < 16; i++)
		r->addr[i] = i < n ? dns_u8(msg, len, rd + i) : 0;
	p->nrec++;
}

/* A record's fixed fields; collect it, follow it (CNAME of the chain's tail) or skip it. */
DNS_INLINE int dns_rr(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	__u32 pos = p->pos, ttl, rd, rd_end;
	__u16 type, class, rdlen;
	__u8 o = p->owner;

	if (pos + 10 > len)
		return dns_finish(p, DNS_MALFORMED);
	type = dns_u16(msg, len, pos);
	class = dns_u16(msg, len, pos + 2);
	ttl = dns_u32(msg, len, pos + 4);
	rdlen = dns_u16(msg, len, pos + 8);
	rd = pos + 10;
	rd_end = rd + rdlen;
	if (rd_end > len)
		return dns_finish(p, DNS_MALFORMED);
	p->pos = rd_end;
	if (ttl & 0x80000000)
		ttl = 0; /* RFC 2181 8: a TTL with the top bit set means zero */
	if (class != DNS_C_IN || o >= TF_DNS_CHAIN_MAX)
		return dns_next_rr(p);
	if (ttl > p->chain_ttl[o])
		ttl = p->chain_ttl[o];
	if (type == DNS_T_A || type == DNS_T_AAAA) {
		if (rdlen != (type == DNS_T_A ? 4 : 16))
			return dns_finish(p, DNS_MALFORMED);
		dns_collect(p, msg, len, rd, type == DNS_T_A ? TF_FAM_IPV4 : TF_FAM_IPV6, ttl);
	} else if (type == DNS_T_CNAME && o + 1 == p->nchain) {
		if (p->nchain >= TF_DNS_CHAIN_MAX) {
			p->lost = 1;
			return dns_next_rr(p);
		}
		p->ttl = ttl;
		p->rd_end = rd_end;
		p->chain_off[p->nchain & (TF_DNS_CHAIN_MAX - 1)] = (__u16)rd;
		/* compared with the chain as it is read, for its alias */
		dns_name_begin(p, rd, p->nchain, (__u8)((1 << p->nchain) - 1));
		p->phase = DNS_PH_CNAME;
		return 0;
	}
	return dns_next_rr(p);
}

DNS_INLINE int dns_cname(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	int r = dns_name_step(p, msg, len);
	__u8 n = p->nchain, k;

	if (r == 0)
		return 0;
	if (r < 0 || p->nw.end != p->rd_end)
		return dns_finish(p, DNS_MALFORMED);
	if (p->nw.bad || !p->nw.out || n >= TF_DNS_CHAIN_MAX) {
		p->lost = 1; /* a target no host name can be: its records are not learnt */
	} else {
		p->chain_len[n] = p->nw.out;
		p->chain_ttl[n] = p->ttl;
		p->chain_jumps[n] = p->nw.jumps;
		p->chain_alias[n] = n;
		for (k = TF_DNS_CHAIN_MAX; k-- > 0;)
			if (k < n && (p->nw.cand & (1 << k)) && p->chain_len[k] == p->nw.out)
				p->chain_alias[n] = k;
		p->nchain = n + 1;
	}
	p->pos = p->rd_end;
	return dns_next_rr(p);
}

/** dns_step() - one step of the parse; 1 when it is done (p->status set), else 0. */
DNS_INLINE int dns_step(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	switch (p->phase) {
	case DNS_PH_HDR:
		return dns_hdr(p, msg, len);
	case DNS_PH_QNAME:
		return dns_qname(p, msg, len);
	case DNS_PH_QTAIL:
		return dns_qtail(p, msg, len);
	case DNS_PH_REV:
		return dns_rev(p);
	case DNS_PH_OWNER:
		return dns_owner(p, msg, len);
	case DNS_PH_RR:
		return dns_rr(p, msg, len);
	case DNS_PH_CNAME:
		return dns_cname(p, msg, len);
	}
	return 1;
}

/* What a loop iteration needs; on the BPF stack, pointing into the scratch map. */
struct dns_loop_ctx {
	const __u8 *msg;
	struct dns_parse *p;
	__u32 len;
};

/* The loop body, with bpf_loop()'s callback signature: non-zero stops the loop. */
static inline long dns_step_cb(__u32 i, void *ctx)
{
	struct dns_loop_ctx *c = ctx;

	(void)i;
	return dns_step(c->p, c->msg, c->len);
}

/**
 * dns_parse_start() - make p ready to parse a query (answer = 0), or an
 * answer to the stored query whose reversed name is want (want_len bytes)
 * and whose type is want_qtype. Resets only what the parse reads before
 * writing; the name buffers are zeroed so results carry no stale bytes.
 */
DNS_INLINE void dns_parse_start(struct dns_parse *p, __u8 answer, const __u8 *want, __u16 want_len,
				__u16 want_qtype)
{
	p->answer = answer;
	p->walk_all = 0;
	p->phase = DNS_PH_HDR;
	p->status = DNS_MALFORMED;
	p->matched = 0;
	p->lost = 0;
	p->nrec = 0;
	p->nchain = 0;
	p->owner = DNS_NONE;
	p->rr = 0;
	p->rev_len = 0;
	p->chain_len[0] = 0;
	p->want_len = want_len;
	p->want_qtype = want_qtype;
	__builtin_memset(p->chain[0], 0, TF_DNS_NAME_BUF);
	__builtin_memset(p->rev, 0, TF_DNS_NAME_BUF);
	if (want)
		__builtin_memcpy(p->want, want, TF_DNS_NAME_MAX);
}

/* After the loop: a parse that ran out of steps is malformed. Returns the status. */
DNS_INLINE int dns_parse_end(struct dns_parse *p)
{
	if (p->phase != DNS_PH_DONE)
		dns_finish(p, DNS_MALFORMED);
	return p->status;
}

#ifndef __bpf__
/* Userspace driver; the BPF one (bpf/lib/dns.bpf.h) runs the same steps under bpf_loop(). */
static inline int dns_parse_run(struct dns_parse *p, const __u8 *msg, __u32 len)
{
	struct dns_loop_ctx c = { .msg = msg, .p = p, .len = len };
	__u32 i;

	for (i = 0; i < TF_DNS_STEPS_MAX; i++)
		if (dns_step_cb(i, &c))
			break;
	return dns_parse_end(p);
}
#endif

#endif /* TAPFENCE_DNS_H */
