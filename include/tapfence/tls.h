/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The TLS ClientHello reader, written once and compiled into the BPF
 * datapath (bpf/lib/tls.bpf.h), the unit tests and the libFuzzer harness
 * (tests/fuzz/fuzz_tls.c). Like dns.h: plain C over bounded buffers, no
 * helper, no libc, every buffer index masked to TF_TLS_BUF - 1, and the
 * work cut into small steps that each side drives with its own loop (BPF:
 * one bpf_loop() per stage; userspace: the run functions below).
 *
 * Two stages over a struct tf_tls_buf (abi.h):
 *
 * 1. De-framing. After each in-order append to @wire, the walk goes on
 *    over the TLS records held (type 22, version 3.x, 1..2^14 bytes) until
 *    the handshake message, a ClientHello (type 1) of the length its header
 *    gives, is whole. It must end exactly where a record ends: a client's
 *    first flight is the hello alone. The first byte tells TLS from an
 *    SSLv2-framed hello (high bit set) and from anything else. Once whole,
 *    the record bodies are copied into one buffer (tls_copy_step()); the
 *    datapath parses a hello that is exactly one record where it lies.
 *
 * 2. Parsing the ClientHello: version, random, session id (<= 32),
 *    cipher suites (even, >= 2 bytes), compression methods (>= 1), then the
 *    extensions, which must fill the message exactly. server_name may sit
 *    anywhere in the list; it may appear once, with exactly one host_name
 *    entry (RFC 6066 3). encrypted_client_hello (0xfe0d) and the draft
 *    ESNI extension (0xffce) are noted. The SNI comes out lower-cased in
 *    forward form (@sni) and reversed form (@rev, as host rules and DNS
 *    names are kept, abi.h), after checking it is a host name: labels of
 *    [a-z0-9-_], no empty label, no trailing dot. Digits and dots only, or
 *    a ':' or '[', is an IP literal (RFC 6066 forbids those as SNI). A name
 *    longer than TF_TLS_SNI_MAX is TLS_SNI_LONG whatever its bytes.
 *
 * 3. Following, once the first hello was judged (tls_follow_step()): the
 *    guest's records after it are read in order, up to the header of its
 *    first application_data record, and any ClientHello among them is read
 *    by stage 1 again, to be judged like the first.
 */
#ifndef TAPFENCE_TLS_H
#define TAPFENCE_TLS_H

#include "abi.h"
#include "dns.h" /* name limits: TF_DNS_FWD_MAX, TF_DNS_NAME_BUF */

#define TF_TLS_MASK    (TF_TLS_BUF - 1)
#define TF_TLS_REC_HDR 5
#define TF_TLS_REC_MAX 16384	      /* RFC 8446 5.1: 2^14 bytes of plaintext */
#define TF_TLS_COPY    64	      /* body bytes one de-framing step copies */
#define TF_TLS_SNI_MAX TF_DNS_FWD_MAX /* longer: no host rule can name it */

#define TLS_CT_CCS	    20 /* change_cipher_spec */
#define TLS_CT_ALERT	    21
#define TLS_CT_HANDSHAKE    22
#define TLS_CT_APPDATA	    23
#define TF_TLS_CIPHER_MAX   (TF_TLS_REC_MAX + 2048) /* RFC 5246 6.2.3: a TLS 1.2 ciphertext record */
#define TLS_HS_CLIENT_HELLO 1
#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH	    0xfe0d /* draft-ietf-tls-esni, encrypted_client_hello */
#define TLS_EXT_ESNI	    0xffce /* the older encrypted_server_name drafts */

/*
 * Steps that bound each stage for any input the limits accept. The walk
 * and the copy take a header step and at least one body step per record,
 * and records of 1 byte take 6 wire bytes: 2 steps per 6 bytes; the copy
 * adds a step per TF_TLS_COPY body bytes.
 */
#define TF_TLS_WALK_STEPS   (2 * (TF_TLS_BUF / (TF_TLS_REC_HDR + 1)) + 4)
#define TF_TLS_COPY_STEPS   (2 * (TF_TLS_BUF / (TF_TLS_REC_HDR + 1)) + TF_TLS_BUF / TF_TLS_COPY + 4)
#define TF_TLS_PARSE_STEPS  (8 + TF_TLS_BUF / 4 + 256 + TF_DNS_NAME_MAX)
#define TF_TLS_EXT_STEP	    4  /* extensions one parse step walks */
#define TF_TLS_SNI_STEP	    8  /* SNI bytes one parse step reads */
#define TF_TLS_REV_STEP	    16 /* reversed-form bytes one parse step writes */
/* Following: at most a step per wire byte, plus the walk of a later hello. */
#define TF_TLS_FOLLOW_STEPS (TF_TLS_BUF + TF_TLS_WALK_STEPS)

/* Outcome of a stage (tls_walk_step(), struct tls_parse.status). */
enum tls_status {
	TLS_MORE,      /* de-framing: the hello is not whole yet */
	TLS_OK,	       /* de-framing: whole; parsing: a valid SNI */
	TLS_NOT_TLS,   /* the first bytes are not a TLS handshake record */
	TLS_SSLV2,     /* an SSLv2-framed hello */
	TLS_MALFORMED, /* breaks the format or a rule above */
	TLS_TOO_BIG,   /* the hello does not fit TF_TLS_BUF */
	TLS_NO_SNI,    /* parsing: no server_name */
	TLS_SNI_IP,    /* parsing: the SNI is an IP literal */
	TLS_SNI_LONG,  /* parsing: the SNI is longer than TF_TLS_SNI_MAX */
	TLS_ECH,       /* parsing: encrypted_client_hello (or ESNI) present */
	TLS_HELLO,     /* following: a ClientHello is whole, records [h_start, rec_off) */
	TLS_APPDATA,   /* following: the first application_data header read, at open_at */
	TLS_SECOND,    /* following: a record that breaks the framing or may hide a hello */
};

static inline __u32 tls_u16(const __u8 *b, __u32 pos)
{
	return (__u32)b[pos & TF_TLS_MASK] << 8 | b[(pos + 1) & TF_TLS_MASK];
}

static inline __u32 tls_u24(const __u8 *b, __u32 pos)
{
	return (__u32)b[pos & TF_TLS_MASK] << 16 | tls_u16(b, pos + 1);
}

/*
 * One step of the walk over the records held: read a record header, or
 * account for the body bytes held of the current record. Returns TLS_MORE
 * to be called again (when *progress is set) or to wait for more bytes
 * (when it is not), else the stage's outcome; on TLS_OK the hello's
 * records end at b->rec_off.
 */
static inline int tls_walk_step(struct tf_tls_buf *b, int *progress)
{
	__u32 n, i, off;

	*progress = 0;
	if (b->have == 0)
		return TLS_MORE;
	if (b->wire[0] != TLS_CT_HANDSHAKE)
		return (b->wire[0] & 0x80) ? TLS_SSLV2 : TLS_NOT_TLS;
	if (b->rec_left == 0) {
		if (b->rec_off > TF_TLS_BUF - TF_TLS_REC_HDR)
			return TLS_TOO_BIG;
		if (b->have < b->rec_off + TF_TLS_REC_HDR)
			return b->have >= TF_TLS_BUF ? TLS_TOO_BIG : TLS_MORE;
		off = b->rec_off;
		if (b->wire[off & TF_TLS_MASK] != TLS_CT_HANDSHAKE ||
		    b->wire[(off + 1) & TF_TLS_MASK] != 3)
			return off ? TLS_MALFORMED : TLS_NOT_TLS;
		n = tls_u16(b->wire, off + 3);
		if (n == 0 || n > TF_TLS_REC_MAX)
			return TLS_MALFORMED;
		b->rec_left = n;
		b->rec_off = off + TF_TLS_REC_HDR;
		*progress = 1;
		return TLS_MORE;
	}
	n = b->have - b->rec_off;
	if (n > b->rec_left)
		n = b->rec_left;
	if (n == 0)
		return b->have >= TF_TLS_BUF ? TLS_TOO_BIG : TLS_MORE;
	/* The handshake header's bytes among them (hdr[i] is handshake byte i). */
	for (i = 0; i < 4; i++)
		if (i >= b->hs_len && i - b->hs_len < n)
			b->hdr[i] = b->wire[(b->rec_off + i - b->hs_len) & TF_TLS_MASK];
	b->hs_len += n;
	b->rec_off += n;
	b->rec_left -= n;
	*progress = 1;
	if (!b->hs_need && b->hs_len >= 4) {
		if (b->hdr[0] != TLS_HS_CLIENT_HELLO)
			return TLS_MALFORMED;
		b->hs_need = 4 + ((__u32)b->hdr[1] << 16 | (__u32)b->hdr[2] << 8 | b->hdr[3]);
		if (b->hs_need > TF_TLS_BUF)
			return TLS_TOO_BIG;
	}
	if (b->hs_need && b->hs_len >= b->hs_need)
		return b->hs_len == b->hs_need && b->rec_left == 0 ? TLS_OK : TLS_MALFORMED;
	return TLS_MORE;
}

/*
 * One step of following the guest's records after a judged hello: a record
 * header, a handshake message's header, or body bytes held. Returns as
 * tls_walk_step() does, or TLS_HELLO (a ClientHello is whole: judge it),
 * TLS_APPDATA (stop following) or TLS_SECOND (refuse).
 *
 * Handshake records are read as the server's TLS layer reads them: their
 * bodies are a stream of messages, each framed by its 4-byte header. A
 * message of type 1 (ClientHello) starting a record's body is read with
 * tls_walk_step() and judged; one starting inside a record, or a message
 * header split across records, is TLS_SECOND (no client frames a hello
 * that way, and whether a server would read it is not ours to guess).
 * After a ChangeCipherSpec a handshake record may be TLS 1.2's encrypted
 * Finished, whose framing is noise: each such record is skipped whole
 * unless its body starts like a ClientHello (type 1, then the version's
 * major byte 3), as TLS 1.3's second hello after a HelloRetryRequest does.
 */
static inline int tls_follow_step(struct tf_tls_buf *b, int *progress)
{
	__u32 off = b->f_off, n, len, t;
	int st;

	*progress = 0;
	if (!b->following || b->h2) {
		st = tls_walk_step(b, progress);
		return st == TLS_OK ? TLS_HELLO : st;
	}
	if (b->f_done)
		return TLS_APPDATA;
	if (off > b->have)
		return TLS_SECOND;
	if (b->f_left == 0) {
		if (off > TF_TLS_BUF - TF_TLS_REC_HDR)
			return TLS_TOO_BIG;
		if (b->have < off + TF_TLS_REC_HDR)
			return b->have >= TF_TLS_BUF ? TLS_TOO_BIG : TLS_MORE;
		t = b->wire[off & TF_TLS_MASK];
		len = tls_u16(b->wire, off + 3);
		if (b->wire[(off + 1) & TF_TLS_MASK] != 3 || len == 0 || len > TF_TLS_CIPHER_MAX)
			return TLS_SECOND;
		if (t == TLS_CT_APPDATA) {
			b->open_at = off + TF_TLS_REC_HDR;
			b->f_done = 1;
			return TLS_APPDATA;
		}
		if (t != TLS_CT_CCS && t != TLS_CT_ALERT && t != TLS_CT_HANDSHAKE)
			return TLS_SECOND;
		if (t == TLS_CT_CCS)
			b->f_ccs = 1;
		b->f_type = (__u8)t;
		b->f_rec = off;
		b->f_left = len;
		b->f_off = off + TF_TLS_REC_HDR;
		*progress = 1;
		return TLS_MORE;
	}
	n = b->have - off;
	if (n > b->f_left)
		n = b->f_left;
	if (b->f_type == TLS_CT_HANDSHAKE && b->f_msg == 0) {
		/* A message boundary: 4 header bytes (5 after a ChangeCipherSpec) decide. */
		len = b->f_ccs ? 5 : 4;
		if (n == 0)
			return b->have >= TF_TLS_BUF ? TLS_TOO_BIG : TLS_MORE;
		t = b->wire[off & TF_TLS_MASK];
		if (b->f_ccs && t != TLS_HS_CLIENT_HELLO) {
			b->f_msg = b->f_left; /* maybe ciphertext: the whole record */
			*progress = 1;
			return TLS_MORE;
		}
		if (b->f_left < len)
			return TLS_SECOND; /* a header split across records */
		if (n < len)
			return b->have >= TF_TLS_BUF ? TLS_TOO_BIG : TLS_MORE;
		if (t == TLS_HS_CLIENT_HELLO &&
		    (!b->f_ccs || b->wire[(off + 4) & TF_TLS_MASK] == 3)) {
			if (off != b->f_rec + TF_TLS_REC_HDR)
				return TLS_SECOND;
			b->h2 = 1;
			b->h_start = b->f_rec;
			b->rec_off = b->f_rec;
			b->rec_left = 0;
			b->hs_len = 0;
			b->hs_need = 0;
			b->f_left = 0;
			*progress = 1;
			return TLS_MORE;
		}
		b->f_msg = b->f_ccs ? b->f_left : 4 + tls_u24(b->wire, off + 1);
		*progress = 1;
		return TLS_MORE;
	}
	if (b->f_type == TLS_CT_HANDSHAKE && n > b->f_msg)
		n = b->f_msg;
	if (n == 0)
		return b->have >= TF_TLS_BUF ? TLS_TOO_BIG : TLS_MORE;
	if (b->f_type == TLS_CT_HANDSHAKE)
		b->f_msg -= n;
	b->f_off = off + n;
	b->f_left -= n;
	*progress = 1;
	return TLS_MORE;
}

/* A hello (at h_start, its records ending at rec_off) was judged allowed: follow the records after it. */
static inline void tls_follow_from(struct tf_tls_buf *b)
{
	b->following = 1;
	b->h2 = 0;
	b->f_off = b->rec_off;
	b->f_left = 0;
	b->f_msg = 0;
}

/* Where the copy of a whole hello's record bodies into one buffer is. */
struct tls_copy {
	__u32 off;  /* wire offset */
	__u32 left; /* body bytes left in the current record */
	__u32 out;  /* handshake bytes written */
	__u32 end;  /* wire offset where the hello's records end */
};

/*
 * One step of copying the record bodies of a walked (TLS_OK) hello into hs:
 * a record header, or up to TF_TLS_COPY body bytes. The copy always moves
 * TF_TLS_COPY bytes (both buffers have TF_TLS_SLACK to spare) and counts
 * the real ones: a fixed-size copy is what the verifier can check. Returns
 * 1 when done.
 */
static inline int tls_copy_step(struct tls_copy *c, const __u8 *wire, __u8 *hs)
{
	__u32 n, i, from, to;

	if (c->off >= c->end)
		return 1;
	if (c->left == 0) {
		c->left = tls_u16(wire, c->off + 3);
		c->off += TF_TLS_REC_HDR;
		return 0;
	}
	n = c->left < TF_TLS_COPY ? c->left : TF_TLS_COPY;
	from = c->off & TF_TLS_MASK;
	to = c->out & TF_TLS_MASK;
	for (i = 0; i < TF_TLS_COPY; i++)
		hs[to + i] = wire[from + i];
	c->out += n;
	c->off += n;
	c->left -= n;
	return 0;
}

enum tls_phase {
	TLS_PH_HELLO, /* version, random, session id */
	TLS_PH_SUITES,
	TLS_PH_COMP,
	TLS_PH_EXT, /* the next extension headers, TF_TLS_EXT_STEP a step */
	TLS_PH_SNI, /* TF_TLS_SNI_STEP bytes of the host name a step */
	TLS_PH_REV, /* TF_TLS_REV_STEP bytes of the reversed form a step */
	TLS_PH_DONE,
};

/**
 * struct tls_parse - the ClientHello parser's state and results. In BPF it
 * lives in a per-CPU scratch map. Results, valid once the phase is DONE:
 * @status:  enum tls_status (TLS_OK, TLS_MALFORMED, TLS_NO_SNI, ...)
 * @sni:     the host name, lower case, @sni_len bytes, zero padded (also
 *           filled, up to TF_TLS_SNI_MAX bytes, for TLS_SNI_IP/TLS_SNI_LONG)
 * @rev:     TLS_OK: its reversed form, @rev_len bytes, zero padded
 * @ech:     encrypted_client_hello or ESNI was present (then @status is
 *           TLS_ECH and @ech_status what the outer name alone gives)
 */
struct tls_parse {
	__u32 pos;
	__u32 end;     /* the handshake message's length (hs_need) */
	__u32 ext_end; /* end of the current extension / of the list in PH_EXT */
	__u32 list_end;
	__u32 sni_end;
	__u8 phase;
	__u8 status;
	__u8 ech;
	__u8 seen_sni;
	__u8 label;   /* bytes in the current label */
	__u8 ip_like; /* digits and dots only so far */
	__u8 literal; /* a ':' or '[' */
	__u8 bad;     /* a byte outside the host name alphabet, or an empty label */
	__u8 ech_status;
	__u16 sni_len;
	__u16 rev_len;
	__u8 pad[3];
	__u8 sni[TF_DNS_NAME_BUF];
	__u8 rev[TF_DNS_NAME_MAX];
};

static inline void tls_parse_start(struct tls_parse *p, __u32 end)
{
	__u32 i;

	p->pos = 0;
	p->end = end;
	p->ext_end = 0;
	p->list_end = 0;
	p->sni_end = 0;
	p->phase = TLS_PH_HELLO;
	p->status = TLS_MALFORMED; /* until a phase ends the parse: fail closed */
	p->ech = 0;
	p->seen_sni = 0;
	p->label = 0;
	p->ip_like = 1;
	p->literal = 0;
	p->bad = 0;
	p->ech_status = 0;
	p->sni_len = 0;
	p->rev_len = 0;
	p->pad[0] = p->pad[1] = p->pad[2] = 0;
	for (i = 0; i < TF_DNS_NAME_BUF; i++)
		p->sni[i] = 0;
	for (i = 0; i < TF_DNS_NAME_MAX; i++)
		p->rev[i] = 0;
}

static inline int tls_fail(struct tls_parse *p, int status)
{
	p->status = (__u8)status;
	p->phase = TLS_PH_DONE;
	return 1;
}

/*
 * The parse ends with the name's verdict: TLS_ECH if the hello carries
 * encrypted_client_hello, whatever the name (the verdict on the outer
 * name stays in @ech_status for a datapath that judges by it).
 */
static inline int tls_done(struct tls_parse *p, int status)
{
	p->ech_status = (__u8)status;
	p->status = p->ech ? TLS_ECH : (__u8)status;
	p->phase = TLS_PH_DONE;
	return 1;
}

/* The verdict on the name, once the extensions are walked. */
static inline int tls_name_done(struct tls_parse *p)
{
	if (!p->seen_sni)
		return tls_done(p, TLS_NO_SNI);
	if (p->sni_len > TF_TLS_SNI_MAX)
		return tls_done(p, TLS_SNI_LONG);
	if (p->literal || (p->ip_like && p->sni[0] >= '0' && p->sni[0] <= '9'))
		return tls_done(p, TLS_SNI_IP);
	if (p->bad || p->label == 0)
		return tls_done(p, TLS_MALFORMED);
	p->phase = TLS_PH_REV;
	p->pos = 0;
	return 0;
}

/* One byte of the host name: lower-cased, checked, kept. */
static inline void tls_sni_byte(struct tls_parse *p, __u8 c)
{
	if (c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	if (c == '.') {
		if (p->label == 0)
			p->bad = 1;
		p->label = 0;
	} else {
		if (c == ':' || c == '[' || c == ']')
			p->literal = 1;
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   c == '_'))
			p->bad = 1;
		if (c < '0' || c > '9')
			p->ip_like = 0;
		if (p->label < 255)
			p->label++;
		if (p->label > 63)
			p->bad = 1;
	}
	if (p->sni_len < TF_TLS_SNI_MAX)
		p->sni[p->sni_len & (TF_DNS_NAME_BUF - 1)] = c;
	p->sni_len++;
}

/* The extension at p->pos (its header read): note it, then skip or enter it. */
static inline int tls_extension(struct tls_parse *p, const __u8 *hs, __u32 type, __u32 len)
{
	__u32 start = p->pos + 4, n;

	p->ext_end = start + len;
	if (type == TLS_EXT_ECH || type == TLS_EXT_ESNI)
		p->ech = 1;
	if (type != TLS_EXT_SERVER_NAME) {
		p->pos = p->ext_end;
		return 0;
	}
	/* server_name: list length, then exactly one (type 0, length, name). */
	if (p->seen_sni || len < 5 || tls_u16(hs, start) != len - 2 ||
	    hs[(start + 2) & TF_TLS_MASK] != 0)
		return tls_fail(p, TLS_MALFORMED);
	n = tls_u16(hs, start + 3);
	if (n == 0 || n != len - 5)
		return tls_fail(p, TLS_MALFORMED);
	p->seen_sni = 1;
	p->pos = start + 5;
	p->sni_end = p->pos + n;
	p->phase = TLS_PH_SNI;
	return 0;
}

/* One parsing step; returns 1 when the parse is done (phase DONE). */
static inline int tls_parse_step(struct tls_parse *p, const __u8 *hs)
{
	__u32 n, type, i;

	switch (p->phase) {
	case TLS_PH_HELLO:
		/* type, length, version (3.x), 32 random bytes, session id length */
		if (p->end < 4 + 2 + 32 + 1 || p->end > TF_TLS_BUF ||
		    hs[0] != TLS_HS_CLIENT_HELLO || hs[4] != 3)
			return tls_fail(p, TLS_MALFORMED);
		n = hs[38];
		if (n > 32)
			return tls_fail(p, TLS_MALFORMED);
		p->pos = 39 + n;
		p->phase = TLS_PH_SUITES;
		return 0;
	case TLS_PH_SUITES:
		if (p->pos + 2 > p->end)
			return tls_fail(p, TLS_MALFORMED);
		n = tls_u16(hs, p->pos);
		if (n < 2 || (n & 1) || p->pos + 2 + n > p->end)
			return tls_fail(p, TLS_MALFORMED);
		p->pos += 2 + n;
		p->phase = TLS_PH_COMP;
		return 0;
	case TLS_PH_COMP:
		if (p->pos + 1 > p->end)
			return tls_fail(p, TLS_MALFORMED);
		n = hs[p->pos & TF_TLS_MASK];
		if (n < 1 || p->pos + 1 + n > p->end)
			return tls_fail(p, TLS_MALFORMED);
		p->pos += 1 + n;
		if (p->pos == p->end)
			return tls_name_done(p); /* no extensions (TLS 1.0-1.2 allow it) */
		if (p->pos + 2 > p->end || p->pos + 2 + tls_u16(hs, p->pos) != p->end)
			return tls_fail(p, TLS_MALFORMED);
		p->pos += 2;
		p->list_end = p->end;
		p->phase = TLS_PH_EXT;
		return 0;
	case TLS_PH_EXT:
		/* Up to TF_TLS_EXT_STEP extensions a step, until one is entered (server_name). */
		for (i = 0; i < TF_TLS_EXT_STEP; i++) {
			if (p->pos == p->list_end)
				return tls_name_done(p);
			if (p->pos + 4 > p->list_end)
				return tls_fail(p, TLS_MALFORMED);
			type = tls_u16(hs, p->pos);
			n = tls_u16(hs, p->pos + 2);
			if (p->pos + 4 + n > p->list_end)
				return tls_fail(p, TLS_MALFORMED);
			if (tls_extension(p, hs, type, n))
				return 1;
			if (p->phase != TLS_PH_EXT)
				return 0;
		}
		return 0;
	case TLS_PH_SNI:
		/*
		 * TF_TLS_SNI_STEP bytes a step up to one past TF_TLS_SNI_MAX,
		 * then the rest is skipped: a name of thousands of bytes would
		 * outrun TF_TLS_PARSE_STEPS, and it is too long whatever they are.
		 */
		for (i = 0; i < TF_TLS_SNI_STEP; i++) {
			if (p->pos == p->sni_end || p->sni_len > TF_TLS_SNI_MAX) {
				p->pos = p->sni_end;
				p->phase = TLS_PH_EXT;
				return 0;
			}
			tls_sni_byte(p, hs[p->pos & TF_TLS_MASK]);
			p->pos++;
		}
		return 0;
	case TLS_PH_REV:
		/* "www.github.com" -> "moc.buhtig.www." (sni_len <= TF_TLS_SNI_MAX here) */
		for (i = 0; i < TF_TLS_REV_STEP; i++) {
			n = p->pos;
			if (n > TF_DNS_NAME_MAX - 1)
				return tls_fail(p, TLS_MALFORMED);
			if (n == p->sni_len) {
				p->rev[n] = '.';
				p->rev_len = p->sni_len + 1;
				return tls_done(p, TLS_OK);
			}
			p->rev[n] = p->sni[(p->sni_len - 1 - n) & (TF_DNS_NAME_BUF - 1)];
			p->pos++;
		}
		return 0;
	}
	return 1;
}

#ifndef __BPF__
/* Userspace drivers (the BPF side drives the steps with bpf_loop()). */
static inline int tls_walk(struct tf_tls_buf *b)
{
	int st, progress;
	__u32 i;

	for (i = 0; i < TF_TLS_WALK_STEPS; i++) {
		st = tls_walk_step(b, &progress);
		if (st != TLS_MORE || !progress)
			return st;
	}
	return TLS_MALFORMED;
}

/* Follow the bytes held on (tls_follow_step()) as far as they go. */
static inline int tls_follow_run(struct tf_tls_buf *b)
{
	int st, progress;
	__u32 i;

	for (i = 0; i < TF_TLS_FOLLOW_STEPS; i++) {
		st = tls_follow_step(b, &progress);
		if (st != TLS_MORE || !progress)
			return st;
	}
	return TLS_MALFORMED;
}

/* hs: TF_TLS_BUF + TF_TLS_SLACK bytes; gets the b->hs_need bytes of a walked (TLS_OK) hello. */
static inline void tls_copy_hs(const struct tf_tls_buf *b, __u8 *hs)
{
	struct tls_copy c = { .end = b->rec_off };
	__u32 i;

	for (i = 0; i < TF_TLS_COPY_STEPS; i++)
		if (tls_copy_step(&c, b->wire, hs))
			return;
}

static inline int tls_parse_run(struct tls_parse *p, const __u8 *hs, __u32 len)
{
	__u32 i;

	tls_parse_start(p, len);
	for (i = 0; i < TF_TLS_PARSE_STEPS; i++)
		if (tls_parse_step(p, hs))
			return p->status;
	return tls_fail(p, TLS_MALFORMED), p->status;
}
#endif

#endif /* TAPFENCE_TLS_H */
