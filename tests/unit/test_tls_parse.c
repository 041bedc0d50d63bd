// SPDX-License-Identifier: GPL-2.0
/* Test that the ClientHello reader (include/tapfence/tls.h) finds the SNI of real and built hellos however their bytes are cut into segments and records, and gives every hello it cannot judge its documented status. */
/*
 * Userspace only, through the stages the datapath drives with bpf_loop():
 * each input is appended to a struct tf_tls_buf in parts (whole, in two
 * at every byte, one byte at a time, every truncation), walked after each
 * part, and once whole copied and parsed. The wire bytes past what was
 * appended are poisoned (zeros, 0xff, fake records, the input again) and
 * the handshake buffer holds a stale hello before the copy, so a stage
 * that reads what it was not given shows as a wrong result. The copy is
 * checked against the test's own de-framing, the copy and parse against
 * their step budgets, and the parser gets a buffer of exactly the hello's
 * length, so an over-read is an ASan error in the san tier.
 *
 * An outcome is one string: "walk:<status>" when the walk did not end in
 * TLS_OK, else the parse status, followed by the SNI on TLS_OK ("OK
 * www.example.com"), and for TLS_ECH by the verdict on the outer name
 * ("ECH (outer OK www.example.com)", @ech_status, which a datapath set to
 * judge by the outer name uses); "BROKEN: ..." when an invariant does not
 * hold.
 *
 * Fixtures: the .bin files of tests/tls/hellos/, real clients' first flights asking
 * for www.example.com (tools/tls/capture-hellos.sh), read relative to the
 * repository root, where tests/run.sh runs.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include <tapfence/tls.h>
#include "check.h"

#define FIXTURES "tests/tls/hellos"
#define SNI	 "www.example.com"
#define WANT_SNI "OK " SNI

static const char *const st_names[] = {
	[TLS_MORE] = "MORE",	       [TLS_OK] = "OK",
	[TLS_NOT_TLS] = "NOT_TLS",     [TLS_SSLV2] = "SSLV2",
	[TLS_MALFORMED] = "MALFORMED", [TLS_TOO_BIG] = "TOO_BIG",
	[TLS_NO_SNI] = "NO_SNI",       [TLS_SNI_IP] = "SNI_IP",
	[TLS_SNI_LONG] = "SNI_LONG",   [TLS_ECH] = "ECH",
};

static const char *st_name(int st)
{
	if (st < 0 || (size_t)st >= sizeof(st_names) / sizeof(st_names[0]))
		return NULL;
	return st_names[st];
}

/* xorshift32: the seeded inputs are the same on every run. */
static __u32 rnd_state;

static __u32 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

/* ---- Bytes -------------------------------------------------------------- */

struct msg {
	__u8 b[1 << 17]; /* a full buffer's hello in 1-byte records is 6 times its size */
	unsigned int len;
};

static void m_u8(struct msg *m, unsigned int v)
{
	if (m->len < sizeof(m->b))
		m->b[m->len++] = (__u8)v;
}

static void m_u16(struct msg *m, unsigned int v)
{
	m_u8(m, v >> 8);
	m_u8(m, v);
}

static void m_u24(struct msg *m, unsigned int v)
{
	m_u8(m, v >> 16);
	m_u16(m, v & 0xffff);
}

static void m_bytes(struct msg *m, const void *p, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		m_u8(m, ((const __u8 *)p)[i]);
}

static void m_set16(struct msg *m, unsigned int off, unsigned int v)
{
	m->b[off] = (__u8)(v >> 8);
	m->b[off + 1] = (__u8)v;
}

/* ---- Extensions (into X), hellos (into H), records (into W) ------------- */

static struct msg X, H, W, T;

/* One extension; returns where its header starts. */
static unsigned int x_ext(unsigned int type, const void *data, unsigned int len)
{
	unsigned int at = X.len;

	m_u16(&X, type);
	m_u16(&X, len);
	m_bytes(&X, data, len);
	return at;
}

/* An extension of len bytes of a pattern (padding, key shares). */
static unsigned int x_pad(unsigned int type, unsigned int len)
{
	unsigned int at = X.len, i;

	m_u16(&X, type);
	m_u16(&X, len);
	for (i = 0; i < len; i++)
		m_u8(&X, (i * 37 + 11) & 0xff);
	return at;
}

/* server_name with one host_name entry of n bytes (RFC 6066 3). */
static unsigned int x_sni_raw(const void *name, unsigned int n)
{
	unsigned int at = X.len;

	m_u16(&X, TLS_EXT_SERVER_NAME);
	m_u16(&X, 5 + n);
	m_u16(&X, 3 + n);
	m_u8(&X, 0);
	m_u16(&X, n);
	m_bytes(&X, name, n);
	return at;
}

static unsigned int x_sni(const char *name)
{
	return x_sni_raw(name, (unsigned int)strlen(name));
}

/* Extensions a real client sends around server_name. */
static void x_before(void)
{
	static const __u8 groups[] = { 0, 4, 0, 0x1d, 0, 0x17 }, points[] = { 1, 0 };

	x_ext(0x0a0a, NULL, 0); /* GREASE */
	x_ext(10, groups, sizeof(groups));
	x_ext(11, points, sizeof(points));
	x_ext(23, NULL, 0);
}

static void x_after(void)
{
	static const __u8 alpn[] = { 0, 3, 2, 'h', '2' }, versions[] = { 4, 3, 4, 3, 3 };

	x_ext(16, alpn, sizeof(alpn));
	x_ext(43, versions, sizeof(versions));
	x_pad(51, 38);		/* key_share */
	x_ext(0x1a1a, "\0", 1); /* GREASE */
}

/**
 * struct hello - how build_hello() lays out a ClientHello.
 * @type:       handshake message type (1)
 * @version:    legacy_version (0x0303)
 * @sid:        session id bytes
 * @suites:     cipher suite bytes (2 a suite)
 * @comp:       compression methods
 * @list:       0: no extension list at all, else X as the list
 * @list_delta: added to the extension list's length field
 * @len_delta:  added to the handshake header's length field
 */
struct hello {
	unsigned int type, version, sid, suites, comp, list;
	int list_delta, len_delta;
};

static struct hello hello_std(void)
{
	return (struct hello){ .type = TLS_HS_CLIENT_HELLO,
			       .version = 0x0303,
			       .sid = 32,
			       .suites = 6,
			       .comp = 1,
			       .list = 1 };
}

/* Handshake bytes before the extension list's length field. */
static unsigned int hello_fixed(const struct hello *h)
{
	return 4 + 2 + 32 + 1 + h->sid + 2 + h->suites + 1 + h->comp;
}

static void build_hello(struct msg *m, const struct hello *h)
{
	unsigned int i;

	m->len = 0;
	m_u8(m, h->type);
	m_u24(m, 0);
	m_u16(m, h->version);
	for (i = 0; i < 32; i++)
		m_u8(m, i * 7 + 1);
	m_u8(m, h->sid);
	for (i = 0; i < h->sid; i++)
		m_u8(m, 0xa0 + i);
	m_u16(m, h->suites);
	for (i = 0; i < h->suites; i++)
		m_u8(m, i & 1 ? 1 + i / 2 : 0x13);
	m_u8(m, h->comp);
	for (i = 0; i < h->comp; i++)
		m_u8(m, 0);
	if (h->list) {
		m_u16(m, (unsigned int)((int)X.len + h->list_delta));
		m_bytes(m, X.b, X.len);
	}
	i = (unsigned int)((int)m->len - 4 + h->len_delta);
	m->b[1] = (__u8)(i >> 16);
	m->b[2] = (__u8)(i >> 8);
	m->b[3] = (__u8)i;
}

static void rec_hdr(struct msg *w, unsigned int len)
{
	m_u8(w, TLS_CT_HANDSHAKE);
	m_u16(w, 0x0301);
	m_u16(w, len);
}

/*
 * hs[0..len) as TLS records into w: bodies of @size bytes (0: as few
 * records as 2^14 allows), or of random sizes 1..@size when @random.
 */
static void frame(struct msg *w, const __u8 *hs, unsigned int len, unsigned int size, int random)
{
	unsigned int off = 0, n;

	w->len = 0;
	while (off < len) {
		n = size ? size : TF_TLS_REC_MAX;
		if (random)
			n = 1 + rnd() % size;
		if (n > len - off)
			n = len - off;
		rec_hdr(w, n);
		m_bytes(w, hs + off, n);
		off += n;
	}
}

/* Records of @size bytes, the last one with a byte more after the hello. */
static void frame_extra(struct msg *w, const __u8 *hs, unsigned int len, unsigned int size)
{
	unsigned int last = (len - 1) % size + 1, at;

	frame(w, hs, len, size, 0);
	at = w->len - last - TF_TLS_REC_HDR;
	m_set16(w, at + 3, last + 1);
	m_u8(w, TLS_CT_HANDSHAKE);
}

/* The handshake bytes of the records in in[0..end), the plain way (the test's reference). */
static size_t ref_deframe(const __u8 *in, size_t end, __u8 *out, size_t cap)
{
	size_t off = 0, n = 0, l;

	while (off + TF_TLS_REC_HDR <= end) {
		l = (size_t)in[off + 3] << 8 | in[off + 4];
		off += TF_TLS_REC_HDR;
		if (l > end - off)
			l = end - off;
		if (n + l > cap)
			return (size_t)-1;
		memcpy(out + n, in + off, l);
		n += l;
		off += l;
	}
	return n;
}

/* ---- The stages, as the datapath runs them ------------------------------ */

static struct tf_tls_buf B;
static struct tls_parse P, P2;
static __u8 HS[TF_TLS_BUF + TF_TLS_SLACK], HS2[TF_TLS_BUF + TF_TLS_SLACK], REF[1 << 17];
static struct msg STALE; /* a de-framed hello for stale.example.net: the copy's old contents */

/* Append what fits in TF_TLS_BUF wire bytes, as the datapath does. */
static void append(const __u8 *p, size_t n)
{
	if (!n)
		return;
	if (n > TF_TLS_BUF - B.have)
		n = TF_TLS_BUF - B.have;
	memcpy(B.wire + B.have, p, n);
	B.have += (__u32)n;
}

static void poison(const __u8 *in, size_t len, unsigned int how)
{
	static const __u8 rec[] = { TLS_CT_HANDSHAKE, 3, 1, 0, 1, TLS_HS_CLIENT_HELLO };
	static __u8 recs[sizeof(B.wire)], stale[sizeof(HS)];
	size_t i, n;

	if (!recs[0]) {
		for (i = 0; i < sizeof(recs); i++)
			recs[i] = rec[i % sizeof(rec)];
		for (i = 0; i < sizeof(stale); i++)
			stale[i] = STALE.b[i % STALE.len];
	}
	memset(&B, 0, offsetof(struct tf_tls_buf, wire));
	switch (how % 4) {
	case 0:
		memset(B.wire, 0, sizeof(B.wire));
		break;
	case 1:
		memset(B.wire, 0xff, sizeof(B.wire));
		break;
	case 2:
		memcpy(B.wire, recs, sizeof(B.wire));
		break;
	default:
		for (i = 0; i < sizeof(B.wire); i += n) {
			n = len && len < sizeof(B.wire) - i ? len : sizeof(B.wire) - i;
			if (len)
				memcpy(B.wire + i, in, n);
			else
				memset(B.wire + i, TLS_CT_HANDSHAKE, n);
		}
		break;
	}
	memcpy(HS, stale, sizeof(HS));
	memcpy(HS2, stale, sizeof(HS2));
}

/* NULL if n[0..len) is a host name the parser may hand out, else what is wrong. */
static const char *bad_name(const __u8 *n, unsigned int len)
{
	unsigned int i, label = 0, ip = 1;

	if (len < 1 || len > TF_TLS_SNI_MAX)
		return "length";
	for (i = 0; i < len; i++) {
		if (n[i] == '.') {
			if (label == 0)
				return "empty label";
			label = 0;
			continue;
		}
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '-' ||
		      n[i] == '_'))
			return "byte outside [a-z0-9-_.]";
		if (n[i] < '0' || n[i] > '9')
			ip = 0;
		if (++label > 63)
			return "label over 63";
	}
	if (label == 0)
		return "trailing dot";
	if (ip)
		return "an IP literal";
	return NULL;
}

/* Does n[0..len) occur in hs[0..hslen), ignoring case? */
static int name_in(const __u8 *hs, unsigned int hslen, const __u8 *n, unsigned int len)
{
	unsigned int i, j;
	__u8 c;

	for (i = 0; i + len <= hslen; i++) {
		for (j = 0; j < len; j++) {
			c = hs[i + j];
			if (c >= 'A' && c <= 'Z')
				c += 'a' - 'A';
			if (c != n[j])
				break;
		}
		if (j == len)
			return 1;
	}
	return 0;
}

/* The parse of hs[0..len) (a buffer of exactly len bytes), its outcome into out. */
static void parse_name(const __u8 *hs, __u32 len, int st, char *out, size_t outlen);

static void parse_outcome(const __u8 *hs, __u32 len, char *out, size_t outlen)
{
	unsigned int steps;
	int st, n;

	/* The run function, then the steps by hand to see they end within the budget. */
	st = tls_parse_run(&P, hs, len);
	tls_parse_start(&P2, len);
	for (steps = 0; steps < TF_TLS_PARSE_STEPS; steps++)
		if (tls_parse_step(&P2, hs))
			break;
	if (steps == TF_TLS_PARSE_STEPS) {
		snprintf(out, outlen, "BROKEN: the parse did not end within %u steps", steps);
		return;
	}
	if (P.phase != TLS_PH_DONE || st != P.status || P2.status != P.status || !st_name(st) ||
	    st == TLS_MORE || st == TLS_NOT_TLS || st == TLS_SSLV2 || st == TLS_TOO_BIG) {
		snprintf(out, outlen, "BROKEN: parse status %d (phase %u)", st, P.phase);
		return;
	}
	/* ECH: the verdict on the outer name, which a datapath may judge by, follows */
	if (st == TLS_ECH) {
		if (!P.ech || P.ech_status == TLS_ECH || !st_name(P.ech_status) ||
		    P.ech_status == TLS_MORE || P.ech_status == TLS_NOT_TLS ||
		    P.ech_status == TLS_SSLV2 || P.ech_status == TLS_TOO_BIG) {
			snprintf(out, outlen, "BROKEN: ECH with ech %u, ech_status %u", P.ech,
				 P.ech_status);
			return;
		}
		n = snprintf(out, outlen, "ECH (outer ");
		parse_name(hs, len, P.ech_status, out + n, outlen - n - 1);
		strcat(out, ")");
		return;
	}
	if (P.ech && st != TLS_MALFORMED) { /* only a broken hello outranks ECH */
		snprintf(out, outlen, "BROKEN: ech set, status %s", st_name(st));
		return;
	}
	parse_name(hs, len, st, out, outlen);
}

/* The outcome of a parse whose verdict on the name is st. */
static void parse_name(const __u8 *hs, __u32 len, int st, char *out, size_t outlen)
{
	const char *why;
	unsigned int i;

	if (st != TLS_OK) {
		snprintf(out, outlen, "%s", st_name(st));
		return;
	}
	why = bad_name(P.sni, P.sni_len);
	if (!why && P.rev_len != P.sni_len + 1u)
		why = "rev_len";
	for (i = 0; !why && i < P.sni_len; i++)
		if (P.rev[i] != P.sni[P.sni_len - 1 - i])
			why = "rev is not the name reversed";
	if (!why && P.rev[P.sni_len] != '.')
		why = "rev does not end in a dot";
	for (i = P.sni_len; !why && i < sizeof(P.sni); i++)
		if (P.sni[i])
			why = "sni not zero padded";
	for (i = P.rev_len; !why && i < sizeof(P.rev); i++)
		if (P.rev[i])
			why = "rev not zero padded";
	if (!why && !name_in(hs, len, P.sni, P.sni_len))
		why = "the name is not in the hello";
	if (!why && (P2.sni_len != P.sni_len || memcmp(P2.sni, P.sni, sizeof(P.sni))))
		why = "the steps by hand found another name";
	if (why)
		snprintf(out, outlen, "BROKEN: SNI `%.*s': %s", (int)P.sni_len, P.sni, why);
	else
		snprintf(out, outlen, "OK %.*s", (int)P.sni_len, P.sni);
}

/*
 * Run in[0..len) through the stages: appended first @first bytes, then
 * @step bytes at a time (0: the rest at once), walked after each append.
 * @how chooses the poison. Returns out.
 */
static const char *run(const __u8 *in, size_t len, size_t first, size_t step, unsigned int how,
		       char *out, size_t outlen)
{
	struct tls_copy c;
	size_t pos = 0, part = first, ref;
	unsigned int steps;
	__u8 *exact;
	int st;

	poison(in, len, how);
	for (;;) {
		if (part > len - pos)
			part = len - pos;
		append(in + pos, part);
		pos += part;
		st = tls_walk(&B);
		if (st != TLS_MORE || pos >= len)
			break;
		part = step ? step : len - pos;
	}
	if (!st_name(st) || st == TLS_NO_SNI || st == TLS_SNI_IP || st == TLS_SNI_LONG ||
	    st == TLS_ECH) {
		snprintf(out, outlen, "BROKEN: walk status %d", st);
		return out;
	}
	if (st == TLS_MORE && B.have >= TF_TLS_BUF) {
		snprintf(out, outlen, "BROKEN: walk:MORE on a full buffer");
		return out;
	}
	if (st != TLS_OK) {
		snprintf(out, outlen, "walk:%s", st_name(st));
		return out;
	}
	if (B.hs_len != B.hs_need || B.hs_need < 4 || B.hs_need > TF_TLS_BUF ||
	    B.rec_off > B.have) {
		snprintf(out, outlen, "BROKEN: walked hs_len %u hs_need %u rec_off %u have %u",
			 B.hs_len, B.hs_need, B.rec_off, B.have);
		return out;
	}

	/* The copy: the run function, and the steps by hand within the budget. */
	tls_copy_hs(&B, HS);
	memset(&c, 0, sizeof(c));
	c.end = B.rec_off;
	for (steps = 0; steps < TF_TLS_COPY_STEPS; steps++)
		if (tls_copy_step(&c, B.wire, HS2))
			break;
	ref = ref_deframe(in, B.rec_off, REF, sizeof(REF));
	if (steps == TF_TLS_COPY_STEPS || c.out != B.hs_need) {
		snprintf(out, outlen, "BROKEN: copied %u of %u bytes in %u steps (budget %u)",
			 c.out, B.hs_need, steps, (unsigned int)TF_TLS_COPY_STEPS);
		return out;
	}
	if (ref != B.hs_need || memcmp(HS, REF, ref) || memcmp(HS2, REF, ref)) {
		snprintf(out, outlen, "BROKEN: the copy is not the records' bodies");
		return out;
	}

	exact = malloc(B.hs_need);
	if (!exact) {
		snprintf(out, outlen, "BROKEN: out of memory");
		return out;
	}
	memcpy(exact, HS, B.hs_need);
	parse_outcome(exact, B.hs_need, out, outlen);
	free(exact);
	return out;
}

/* ---- Checking an input every way ---------------------------------------- */

#define CW_EXACT 1 /* the hello ends at the input's last byte: every truncation waits */
#define CW_SOME	 2 /* splits and truncations at about 400 places, not every byte */

static void check_wire(const char *desc, const __u8 *in, size_t len, const char *want,
		       unsigned int flags)
{
	char what[512], got[512], bad[600];
	size_t k, stride = 1;

	if ((flags & CW_SOME) && len > 400)
		stride = len / 400;

	snprintf(what, sizeof(what), "%s: whole", desc);
	CHECK_STR(what, run(in, len, len, 0, 0, got, sizeof(got)), want);

	snprintf(bad, sizeof(bad), "%s", want);
	for (k = 0; k <= len; k += (k < 8 || k + 8 > len) ? 1 : stride) {
		if (strcmp(run(in, len, k, 0, (unsigned int)k + 1, got, sizeof(got)), want)) {
			snprintf(bad, sizeof(bad), "%s (split at %zu)", got, k);
			break;
		}
	}
	snprintf(what, sizeof(what), "%s: in two appends at %s byte", desc,
		 stride == 1 ? "every" : "many a");
	CHECK_STR(what, bad, want);

	snprintf(what, sizeof(what), "%s: one byte at a time", desc);
	CHECK_STR(what, run(in, len, 1, 1, 2, got, sizeof(got)), want);

	/* Truncated: the walk waits for more, or (past the hello's end) gives the same outcome. */
	snprintf(bad, sizeof(bad), "walk:MORE");
	for (k = 0; k < len; k += (k < 8 || k + 8 > len) ? 1 : stride) {
		run(in, k, k, 0, (unsigned int)k, got, sizeof(got));
		if (strcmp(got, "walk:MORE") && ((flags & CW_EXACT) || strcmp(got, want))) {
			snprintf(bad, sizeof(bad), "%s (truncated to %zu)", got, k);
			break;
		}
	}
	snprintf(what, sizeof(what), "%s: truncated at %s length, walk:MORE%s", desc,
		 stride == 1 ? "every" : "many a", flags & CW_EXACT ? "" : " or the same");
	CHECK_STR(what, bad, "walk:MORE");
}

/* The hello from X framed in one record, checked every way. */
static void check_hello(const char *desc, const struct hello *h, const char *want)
{
	build_hello(&H, h);
	frame(&W, H.b, H.len, 0, 0);
	check_wire(desc, W.b, W.len, want, CW_EXACT);
}

static void check_x(const char *desc, const char *want)
{
	struct hello h = hello_std();

	check_hello(desc, &h, want);
}

/* ---- Real clients ------------------------------------------------------- */

static __u8 *read_file(const char *path, size_t *len)
{
	__u8 *buf = malloc(1 << 17);
	FILE *f = fopen(path, "rb");

	if (!buf || !f) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, 1 << 17, f);
	fclose(f);
	return buf;
}

/*
 * What a capture must give. Chromium sends a GREASE encrypted_client_hello
 * extension (0xfe0d) in every hello without an ECH config, which no one on
 * the path can tell from a real one: TLS_ECH, with the outer name's verdict.
 */
static const char *fixture_want(const char *file)
{
	if (strstr(file, "nosni"))
		return "NO_SNI";
	if (!strncmp(file, "chromium", 8))
		return "ECH (outer " WANT_SNI ")";
	return WANT_SNI;
}

/* The hello's records re-framed in many ways, checked every way. */
static void check_reframed(const char *name, const __u8 *wire, size_t len, const char *want)
{
	static __u8 hs[1 << 17];
	char what[512];
	size_t n = ref_deframe(wire, len, hs, sizeof(hs));
	unsigned int seed;

	frame(&T, hs, (unsigned int)n, 1, 0);
	snprintf(what, sizeof(what), "%.300s re-framed in 1-byte records", name);
	check_wire(what, T.b, T.len, want, CW_EXACT | CW_SOME);

	frame(&T, hs, (unsigned int)n, 3, 0);
	snprintf(what, sizeof(what),
		 "%.300s re-framed in 3-byte records (the handshake header across two)", name);
	check_wire(what, T.b, T.len, want, CW_EXACT | CW_SOME);

	for (seed = 1; seed <= 4; seed++) {
		rnd_state = seed * 7919;
		frame(&T, hs, (unsigned int)n, seed == 4 ? 2000 : 40 * seed, 1);
		snprintf(what, sizeof(what),
			 "%.300s re-framed in records of random sizes (seed %u)", name, seed);
		check_wire(what, T.b, T.len, want, CW_EXACT | CW_SOME);
	}

	frame_extra(&T, hs, (unsigned int)n, 200);
	snprintf(what, sizeof(what), "%.300s with a byte after the hello in its last record", name);
	check_wire(what, T.b, T.len, "walk:MALFORMED", 0);

	/* The first flight with 0-RTT data after the hello's records: whole at their end */
	memcpy(T.b, wire, len);
	T.len = (unsigned int)len;
	m_bytes(&T, "\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x04GET ", 15);
	snprintf(what, sizeof(what), "%.300s followed by change_cipher_spec and early data", name);
	check_wire(what, T.b, T.len, want, 0);
}

static void test_fixtures(void)
{
	char path[300], what[512];
	struct dirent **names;
	size_t len;
	int n, i, files = 0;
	__u8 *wire;

	n = scandir(FIXTURES, &names, NULL, alphasort);
	if (n < 0) {
		CHECK_EQ("read the fixture directory " FIXTURES, -errno, 0);
		return;
	}
	for (i = 0; i < n; i++) {
		len = strlen(names[i]->d_name);
		if (len > 4 && !strcmp(names[i]->d_name + len - 4, ".bin")) {
			snprintf(path, sizeof(path), "%s/%.200s", FIXTURES, names[i]->d_name);
			wire = read_file(path, &len);
			snprintf(what, sizeof(what), "read %s", path);
			CHECK_EQ(what, wire != NULL && len > 0, 1);
			if (wire && len) {
				check_wire(path, wire, len, fixture_want(names[i]->d_name),
					   CW_EXACT);
				check_reframed(path, wire, len, fixture_want(names[i]->d_name));
				files++;
			}
			free(wire);
		}
		free(names[i]);
	}
	free(names);
	CHECK_EQ(FIXTURES " holds hellos", files >= 5, 1);
}

/* ---- Built hellos ------------------------------------------------------- */

static void test_positions(void)
{
	struct hello h = hello_std();

	X.len = 0;
	x_sni(SNI);
	x_before();
	x_after();
	check_x("SNI first in the extensions", WANT_SNI);

	X.len = 0;
	x_before();
	x_sni(SNI);
	x_after();
	check_x("SNI in the middle of the extensions", WANT_SNI);
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 1, 0);
	check_wire("SNI in the middle, 1-byte records", W.b, W.len, WANT_SNI, CW_EXACT);
	rnd_state = 42;
	frame(&W, H.b, H.len, 30, 1);
	check_wire("SNI in the middle, records of random sizes", W.b, W.len, WANT_SNI, CW_EXACT);

	X.len = 0;
	x_before();
	x_after();
	x_sni(SNI);
	check_x("SNI last in the extensions", WANT_SNI);

	X.len = 0;
	x_sni(SNI);
	check_x("SNI the only extension", WANT_SNI);

	X.len = 0;
	h.list = 0;
	check_hello("no extension list at all", &h, "NO_SNI");
	h.list = 1;
	check_hello("an empty extension list", &h, "NO_SNI");

	x_before();
	x_after();
	check_x("extensions, none of them server_name", "NO_SNI");
}

static char n63[64], long247[248], long248[249], long64[80];

static void test_names(void)
{
	static const struct {
		const char *desc, *name, *want;
	} cases[] = {
		{ "upper case is lower-cased", "WWW.Example.COM", WANT_SNI },
		{ "a single label", "localhost", "OK localhost" },
		{ "hyphen, underscore and digits", "_a-1.my-host9.example",
		  "OK _a-1.my-host9.example" },
		{ "a name starting with a digit", "1password.com", "OK 1password.com" },
		{ "a digits-only label under a name", "123.example.com", "OK 123.example.com" },
		{ "a trailing dot", SNI ".", "MALFORMED" },
		{ "an empty label", "www..example.com", "MALFORMED" },
		{ "a leading dot", ".example.com", "MALFORMED" },
		{ "a lone dot", ".", "MALFORMED" },
		{ "IPv4 literal", "192.0.2.1", "SNI_IP" },
		{ "IPv4 literal with a trailing dot", "192.0.2.1.", "SNI_IP" },
		{ "digits only", "1234", "SNI_IP" },
		{ "bracketed IPv6 literal", "[2001:db8::1]", "SNI_IP" },
		{ "IPv6 literal", "2001:db8::1", "SNI_IP" },
		{ "IPv6 loopback", "::1", "SNI_IP" },
		{ "a space", "www.exa mple.com", "MALFORMED" },
		{ "a slash", SNI "/x", "MALFORMED" },
		{ "a star label", "*.example.com", "MALFORMED" },
		{ "a UTF-8 byte", "www.\xc3\xa9xample.com", "MALFORMED" },
		{ "a DEL byte",
		  "www.ex\x7f"
		  "ample.com",
		  "MALFORMED" },
		{ "a 63-byte label", n63, NULL },
		{ "a 64-byte label", long64, "MALFORMED" },
		{ "a 247-byte name", long247, NULL },
		{ "a 248-byte name", long248, "SNI_LONG" },
	};
	char desc[128], want[300];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		X.len = 0;
		x_before();
		x_sni(cases[i].name);
		x_after();
		snprintf(want, sizeof(want), "OK %s", cases[i].name);
		snprintf(desc, sizeof(desc), "SNI: %s", cases[i].desc);
		check_x(desc, cases[i].want ? cases[i].want : want);
	}

	X.len = 0;
	x_sni_raw("www.exa\0mple.com", 16);
	check_x("SNI: a NUL byte", "MALFORMED");
	X.len = 0;
	x_sni_raw(SNI "\0", 16);
	check_x("SNI: a NUL byte at the end", "MALFORMED");

	/* What the parser keeps of a refused name (abi: events quote it) */
	X.len = 0;
	x_sni("192.0.2.1");
	build_hello(&H, &(struct hello){
				.type = 1, .version = 0x0303, .suites = 2, .comp = 1, .list = 1 });
	CHECK_EQ("SNI: an IP literal's status", tls_parse_run(&P, H.b, H.len), TLS_SNI_IP);
	CHECK_STR("SNI: an IP literal is kept in sni", (const char *)P.sni, "192.0.2.1");
	X.len = 0;
	x_sni(long248);
	build_hello(&H, &(struct hello){
				.type = 1, .version = 0x0303, .suites = 2, .comp = 1, .list = 1 });
	CHECK_EQ("SNI: a 248-byte name's status", tls_parse_run(&P, H.b, H.len), TLS_SNI_LONG);
	CHECK_EQ("SNI: a 248-byte name keeps 247 bytes in sni",
		 strnlen((const char *)P.sni, sizeof(P.sni)) == TF_TLS_SNI_MAX &&
			 !memcmp(P.sni, long248, TF_TLS_SNI_MAX),
		 1);
}

static void test_sni_ext(void)
{
	unsigned int at;

	X.len = 0;
	x_sni(SNI);
	x_before();
	x_sni(SNI);
	check_x("two server_name extensions", "MALFORMED");

	/* One server_name with two host_name entries */
	X.len = 0;
	m_u16(&X, TLS_EXT_SERVER_NAME);
	m_u16(&X, 2 + 2 * (3 + 15));
	m_u16(&X, 2 * (3 + 15));
	m_u8(&X, 0);
	m_u16(&X, 15);
	m_bytes(&X, SNI, 15);
	m_u8(&X, 0);
	m_u16(&X, 15);
	m_bytes(&X, "evil.example.ne", 15);
	check_x("two host_name entries", "MALFORMED");

	X.len = 0;
	x_sni("");
	check_x("an empty host name", "MALFORMED");
	X.len = 0;
	x_ext(TLS_EXT_SERVER_NAME, NULL, 0);
	check_x("an empty server_name extension", "MALFORMED");
	X.len = 0;
	x_ext(TLS_EXT_SERVER_NAME, "\0\x02\0\0", 4);
	check_x("a server_name extension of 4 bytes", "MALFORMED");

	X.len = 0;
	at = x_sni(SNI);
	X.b[at + 6] = 1;
	check_x("a name type other than host_name", "MALFORMED");
	X.len = 0;
	at = x_sni(SNI);
	m_set16(&X, at + 4, 3 + 14);
	check_x("a server_name list length short of the extension", "MALFORMED");
	X.len = 0;
	at = x_sni(SNI);
	m_set16(&X, at + 7, 14);
	check_x("a host name length short of the list", "MALFORMED");
	X.len = 0;
	at = x_sni(SNI);
	m_set16(&X, at + 7, 16);
	check_x("a host name length past the list", "MALFORMED");
}

static void test_ech(void)
{
	X.len = 0;
	x_before();
	x_sni(SNI);
	x_pad(TLS_EXT_ECH, 90);
	x_after();
	check_x("encrypted_client_hello with an allowed SNI", "ECH (outer " WANT_SNI ")");

	X.len = 0;
	x_pad(TLS_EXT_ECH, 90);
	x_sni(SNI);
	check_x("encrypted_client_hello before the SNI", "ECH (outer " WANT_SNI ")");

	X.len = 0;
	x_sni(SNI);
	x_pad(TLS_EXT_ESNI, 40);
	check_x("the draft ESNI extension with an allowed SNI", "ECH (outer " WANT_SNI ")");

	X.len = 0;
	x_before();
	x_pad(TLS_EXT_ECH, 90);
	check_x("encrypted_client_hello without an SNI", "ECH (outer NO_SNI)");

	X.len = 0;
	x_sni("WWW.EXAMPLE.COM");
	x_pad(TLS_EXT_ECH, 90);
	check_x("encrypted_client_hello, an upper-case outer name", "ECH (outer " WANT_SNI ")");
	X.len = 0;
	x_sni("192.0.2.1");
	x_pad(TLS_EXT_ECH, 90);
	check_x("encrypted_client_hello, an IP literal outer name", "ECH (outer SNI_IP)");
	X.len = 0;
	x_sni(SNI ".");
	x_pad(TLS_EXT_ECH, 90);
	check_x("encrypted_client_hello, an outer name with a trailing dot",
		"ECH (outer MALFORMED)");
	X.len = 0;
	x_sni(long248);
	x_pad(TLS_EXT_ECH, 90);
	check_x("encrypted_client_hello, a 248-byte outer name", "ECH (outer SNI_LONG)");
	X.len = 0;
	x_sni(SNI);
	x_pad(TLS_EXT_ECH, 90);
	x_sni(SNI);
	check_x("encrypted_client_hello and two server_name extensions", "MALFORMED");
	X.len = 0;
	x_pad(TLS_EXT_ECH, 90);
	x_sni(SNI);
	m_bytes(&X, "\0", 1);
	check_x("encrypted_client_hello, a stray byte after the extensions", "MALFORMED");

	X.len = 0;
	x_pad(0xfe0c, 10);
	x_pad(0xfd00, 10);
	x_sni(SNI);
	check_x("neighbours of the ECH code point are not ECH", WANT_SNI);
}

static void test_structure(void)
{
	struct hello h;
	unsigned int at;

	X.len = 0;
	x_before();
	x_sni(SNI);
	x_after();

	h = hello_std();
	h.sid = 0;
	check_hello("no session id", &h, WANT_SNI);
	h.sid = 33;
	check_hello("a 33-byte session id", &h, "MALFORMED");
	h = hello_std();
	h.suites = 2;
	check_hello("one cipher suite", &h, WANT_SNI);
	h.suites = 5;
	check_hello("an odd cipher-suite length", &h, "MALFORMED");
	h.suites = 0;
	check_hello("no cipher suites", &h, "MALFORMED");
	h = hello_std();
	h.comp = 0;
	check_hello("no compression method", &h, "MALFORMED");
	h.comp = 2;
	check_hello("two compression methods", &h, WANT_SNI);
	h = hello_std();
	h.version = 0x0301;
	check_hello("legacy_version TLS 1.0", &h, WANT_SNI);
	h.version = 0x0203;
	check_hello("legacy_version 2.x", &h, "MALFORMED");

	h = hello_std();
	h.list_delta = 1;
	check_hello("an extension list longer than the message", &h, "MALFORMED");
	h.list_delta = -1;
	check_hello("an extension list short of the message", &h, "MALFORMED");
	h.list_delta = 0;
	h.len_delta = -1;
	build_hello(&H, &h);
	frame(&W, H.b, H.len - 1, 0, 0);
	check_wire("a message one byte short of its extension list", W.b, W.len, "MALFORMED",
		   CW_EXACT);

	/* The last extension's length one past the list */
	X.len = 0;
	x_before();
	x_sni(SNI);
	at = x_pad(21, 10);
	m_set16(&X, at + 2, 11);
	h = hello_std();
	check_hello("an extension overrunning the list", &h, "MALFORMED");
	m_set16(&X, at + 2, 9);
	check_hello("an extension short of the list's end", &h, "MALFORMED");
	X.len = 0;
	x_sni(SNI);
	m_bytes(&X, "\0\x15\0", 3);
	check_hello("three stray bytes after the last extension", &h, "MALFORMED");
	X.len = 0;
	x_pad(21, 10);
	at = x_sni(SNI);
	m_set16(&X, at + 2, 0xffff);
	check_hello("server_name's length overrunning the list", &h, "MALFORMED");

	/* Too short to hold its random, its session id, its suites */
	X.len = 0;
	h = hello_std();
	h.list = 0;
	build_hello(&H, &h);
	for (at = 4; at < hello_fixed(&h); at++) {
		T.len = 0;
		m_bytes(&T, H.b, at);
		T.b[1] = 0;
		T.b[2] = (__u8)((at - 4) >> 8);
		T.b[3] = (__u8)(at - 4);
		if (tls_parse_run(&P, T.b, at) != TLS_MALFORMED)
			break;
	}
	CHECK_EQ("hellos cut before their compression methods end are MALFORMED", at,
		 hello_fixed(&h));
}

/* Records and the first bytes: what the walk refuses, as raw wire bytes. */
static void test_records(void)
{
	static const __u8 sslv2[] = { 0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00, 0x00,
				      0x10, 0x07, 0x00, 0xc0, 0x05, 0x00, 0x80, 0x03, 0x00, 0x80,
				      0x01, 0x00, 0x80, 0x06, 0x00, 0x40, 0x04, 0x00, 0x80, 0x02,
				      0x00, 0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
				      0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10 };
	static const char get[] = "GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n";
	struct hello h = hello_std();
	char got[512];
	unsigned int i;

	check_wire("an SSLv2-framed hello", sslv2, sizeof(sslv2), "walk:SSLV2", 0);
	check_wire("HTTP", (const __u8 *)get, sizeof(get) - 1, "walk:NOT_TLS", 0);
	CHECK_STR("no bytes at all", run(NULL, 0, 0, 0, 0, got, sizeof(got)), "walk:MORE");

	X.len = 0;
	x_before();
	x_sni(SNI);
	x_after();
	build_hello(&H, &h);

	frame(&W, H.b, H.len, 0, 0);
	W.b[0] = 23;
	check_wire("an application_data record first", W.b, W.len, "walk:NOT_TLS", 0);
	W.b[0] = 21;
	check_wire("an alert record first", W.b, W.len, "walk:NOT_TLS", 0);
	W.b[0] = TLS_CT_HANDSHAKE;
	W.b[1] = 2;
	check_wire("record version byte 2 in the first record", W.b, W.len, "walk:NOT_TLS", 0);
	W.b[1] = 4;
	check_wire("record version byte 4 in the first record", W.b, W.len, "walk:NOT_TLS", 0);
	W.b[1] = 3;
	W.b[2] = 0;
	check_wire("record version 3.0 (SSL 3.0 framing)", W.b, W.len, WANT_SNI, CW_EXACT);

	frame(&W, H.b, H.len, 50, 0);
	W.b[56] = 2;
	check_wire("record version byte 2 in the second record", W.b, W.len, "walk:MALFORMED", 0);
	W.b[56] = 3;
	W.b[110] = 23;
	check_wire("an application_data record third", W.b, W.len, "walk:MALFORMED", 0);

	W.len = 0;
	rec_hdr(&W, 0);
	frame(&T, H.b, H.len, 0, 0);
	m_bytes(&W, T.b, T.len);
	check_wire("a zero-length first record", W.b, W.len, "walk:MALFORMED", 0);
	frame(&T, H.b, H.len, 50, 0);
	memcpy(W.b, T.b, 55);
	W.len = 55;
	rec_hdr(&W, 0);
	m_bytes(&W, T.b + 55, T.len - 55);
	check_wire("a zero-length record between two", W.b, W.len, "walk:MALFORMED", 0);

	W.len = 0;
	rec_hdr(&W, TF_TLS_REC_MAX + 1);
	m_bytes(&W, H.b, H.len);
	check_wire("a record of 2^14 + 1 bytes", W.b, W.len, "walk:MALFORMED", 0);
	W.len = 0;
	rec_hdr(&W, TF_TLS_REC_MAX);
	m_u8(&W, TLS_HS_CLIENT_HELLO);
	m_u24(&W, TF_TLS_REC_MAX - 4);
	m_bytes(&W, H.b + 4, H.len - 4);
	check_wire("a record of 2^14 bytes waits for its body", W.b, W.len, "walk:MORE", 0);
	m_set16(&W, 3, TF_TLS_REC_MAX + 1);
	check_wire("a record of 2^14 + 1 bytes holding a hello of 2^14 - 4", W.b, W.len,
		   "walk:MALFORMED", 0);

	h.type = 2;
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 0, 0);
	check_wire("a ServerHello", W.b, W.len, "walk:MALFORMED", 0);
	frame(&W, H.b, H.len, 1, 0);
	check_wire("a ServerHello in 1-byte records", W.b, W.len, "walk:MALFORMED", 0);
	h.type = 1;

	/* The hello's last record (of several) holds one more byte */
	build_hello(&H, &h);
	frame_extra(&W, H.b, H.len, 64);
	check_wire("a byte after the hello in its last record", W.b, W.len, "walk:MALFORMED", 0);
	frame_extra(&W, H.b, H.len, 1);
	check_wire("a byte after the hello in its last record, 1-byte records", W.b, W.len,
		   "walk:MALFORMED", 0);
	/* ... and in a record of its own: the hello ended with the one before */
	frame(&W, H.b, H.len, 1, 0);
	m_bytes(&W, "\x16\x03\x01\x00\x01\x16", 6);
	check_wire("a record after the hello's, 1-byte records", W.b, W.len, WANT_SNI, 0);
	/* Another handshake message after the hello in the same record */
	build_hello(&H, &h);
	m_bytes(&H, "\x0b\0\0\0", 4);
	frame(&W, H.b, H.len, 0, 0);
	check_wire("a second handshake message in the hello's record", W.b, W.len, "walk:MALFORMED",
		   0);
	/* The handshake header announces more than the records hold: the walk waits */
	h.len_delta = 10;
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 0, 0);
	check_wire("a hello longer than its records", W.b, W.len, "walk:MORE", 0);
	h.len_delta = 0;

	/* Every first byte: 22 goes on, the high bit is SSLv2, the rest is not TLS */
	for (i = 0; i < 256; i++) {
		W.b[0] = (__u8)i;
		W.b[1] = 3;
		run(W.b, 2, 2, 0, 0, got, sizeof(got));
		if (strcmp(got, i == TLS_CT_HANDSHAKE ? "walk:MORE" :
				i & 0x80	      ? "walk:SSLV2" :
							"walk:NOT_TLS"))
			break;
	}
	CHECK_EQ("every first byte is told apart (22, high bit, the rest)", i, 256);
}

/* Sizes at TF_TLS_BUF, and the stages' step budgets. */
static void test_sizes(void)
{
	struct hello h = hello_std();
	unsigned int fixed, need, i;
	char want[300];

	h.sid = 0;
	h.suites = 2;
	fixed = hello_fixed(&h) + 2;

	/* The header announces more than TF_TLS_BUF: refused from its 4 bytes on */
	X.len = 0;
	x_sni(SNI);
	h.len_delta = 0x10000;
	build_hello(&H, &h);
	W.len = 0;
	rec_hdr(&W, H.len);
	m_bytes(&W, H.b, H.len);
	check_wire("a hello announcing 64 KiB", W.b, W.len, "walk:TOO_BIG", 0);
	h.len_delta = TF_TLS_BUF + 1 - (int)H.len; /* hs_need = TF_TLS_BUF + 1 */
	build_hello(&H, &h);
	W.len = 0;
	rec_hdr(&W, H.len);
	m_bytes(&W, H.b, H.len);
	check_wire("a hello of TF_TLS_BUF + 1 bytes with its header", W.b, W.len, "walk:TOO_BIG",
		   0);
	h.len_delta = 0;

	/* The largest hello one record can bring within TF_TLS_BUF wire bytes, SNI last */
	for (need = TF_TLS_BUF - TF_TLS_REC_HDR; need <= TF_TLS_BUF - TF_TLS_REC_HDR + 1; need++) {
		X.len = 0;
		x_pad(21, need - fixed - 4 - 24);
		x_sni(SNI);
		build_hello(&H, &h);
		frame(&W, H.b, H.len, 0, 0);
		snprintf(want, sizeof(want), "a %u-byte hello in %u wire bytes", H.len, W.len);
		check_wire(want, W.b, W.len,
			   need == H.len && W.len <= TF_TLS_BUF ? WANT_SNI : "walk:TOO_BIG",
			   CW_SOME | (W.len <= TF_TLS_BUF ? CW_EXACT : 0));
	}

	/* The same size in 4-byte extensions: the parse's budget */
	X.len = 0;
	for (i = 0; X.len + 4 <= TF_TLS_BUF - TF_TLS_REC_HDR - fixed - 24; i++)
		x_ext(0x3000 + (i & 0xfff), NULL, 0);
	x_sni(SNI);
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 0, 0);
	check_wire("4000 empty extensions, then the SNI, in TF_TLS_BUF", W.b, W.len, WANT_SNI,
		   CW_EXACT | CW_SOME);
	X.len = 0;
	for (i = 0; X.len + 4 <= TF_TLS_BUF - TF_TLS_REC_HDR - fixed - 256; i++)
		x_ext(0x3000 + (i & 0xfff), NULL, 0);
	x_sni(long247);
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 0, 0);
	snprintf(want, sizeof(want), "OK %s", long247);
	check_wire("empty extensions, then a 247-byte SNI, in TF_TLS_BUF", W.b, W.len, want,
		   CW_EXACT | CW_SOME);

	/* A long name: SNI_LONG however long, within the budget */
	for (need = 300; need <= 12000; need = need * 2 + 1000) {
		X.len = 0;
		for (i = 0; X.len + 4 <= TF_TLS_BUF - TF_TLS_REC_HDR - fixed - need - 9; i++)
			x_ext(0x3000 + (i & 0xfff), NULL, 0);
		T.len = 0;
		for (i = 0; i < need; i++)
			m_u8(&T, i && i % 50 == 0 ? '.' : 'a' + i % 26);
		x_sni_raw(T.b, need);
		build_hello(&H, &h);
		frame(&W, H.b, H.len, 0, 0);
		snprintf(want, sizeof(want), "empty extensions, then a %u-byte SNI, in TF_TLS_BUF",
			 need);
		check_wire(want, W.b, W.len, "SNI_LONG", CW_EXACT | CW_SOME);
	}

	/* 1-byte records up to TF_TLS_BUF wire bytes: the walk's and the copy's budgets */
	X.len = 0;
	x_sni(SNI);
	x_pad(21, TF_TLS_BUF / 6 - fixed - 24 - 4 - 2);
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 1, 0);
	snprintf(want, sizeof(want), "a %u-byte hello in 1-byte records (%u wire bytes)", H.len,
		 W.len);
	check_wire(want, W.b, W.len, W.len <= TF_TLS_BUF ? WANT_SNI : "walk:TOO_BIG",
		   CW_EXACT | CW_SOME);
	X.len = 0;
	x_sni(SNI);
	x_pad(21, 3000);
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 1, 0);
	check_wire("a 3000-byte hello in 1-byte records (past TF_TLS_BUF)", W.b, W.len,
		   "walk:TOO_BIG", CW_SOME);
	frame(&W, H.b, H.len, 2, 0);
	check_wire("a 3000-byte hello in 2-byte records", W.b, W.len, WANT_SNI, CW_EXACT | CW_SOME);
}

/* ---- Garbage ------------------------------------------------------------ */

static void test_garbage(void)
{
	static __u8 in[2048];
	char a[512], b[512], what[256];
	unsigned int i, j, len, k, fails = 0, kinds, ok = 0, malformed = 0, other = 0;
	struct hello h = hello_std();

	X.len = 0;
	x_before();
	x_sni(SNI);
	x_after();
	build_hello(&H, &h);
	frame(&W, H.b, H.len, 0, 0);

	rnd_state = 20240601;
	for (i = 0; i < 6000; i++) {
		kinds = i % 3;
		if (kinds == 0) { /* random bytes, half of them behind a record header */
			len = rnd() % 600;
			for (j = 0; j < len; j++)
				in[j] = (__u8)rnd();
			if (len > 9 && (i & 1)) {
				memcpy(in, "\x16\x03\x01", 3);
				in[3] = (__u8)((len - 5) >> 8);
				in[4] = (__u8)(len - 5);
				in[5] = 1;
				in[6] = 0;
				in[7] = (__u8)((len - 9) >> 8);
				in[8] = (__u8)(len - 9);
			}
		} else { /* the built hello, a few bytes changed, maybe cut or grown */
			len = W.len;
			memcpy(in, W.b, len);
			for (j = 1 + rnd() % 4; j > 0; j--)
				in[TF_TLS_REC_HDR + rnd() % (len - TF_TLS_REC_HDR)] = (__u8)rnd();
			if (kinds == 2 && rnd() % 2)
				len = len - 1 - rnd() % 20;
			else if (kinds == 2)
				for (j = rnd() % 8; j > 0; j--)
					in[len++] = (__u8)rnd();
		}
		run(in, len, len, 0, i, a, sizeof(a));
		k = len ? rnd() % (len + 1) : 0;
		run(in, len, k, 0, i + 1, b, sizeof(b));
		if (strcmp(a, b) || strstr(a, "BROKEN")) {
			if (!fails++)
				printf("# garbage input %u (%u bytes, split at %u): `%s' / `%s'\n",
				       i, len, k, a, b);
		}
		if (kinds) {
			if (!strncmp(a, "OK ", 3))
				ok++;
			else if (!strcmp(a, "MALFORMED") || !strcmp(a, "walk:MALFORMED"))
				malformed++;
			else
				other++;
		}
	}
	CHECK_EQ("6000 seeded inputs: valid names only, the same outcome split in two", fails, 0);
	snprintf(what, sizeof(what),
		 "changed hellos reach the parser (%u OK, %u MALFORMED, %u other)", ok, malformed,
		 other);
	CHECK_EQ(what, ok > 100 && malformed > 100 && other > 10, 1);
}

int main(void)
{
	struct hello h = hello_std();

	memset(n63, 'a', 63);
	snprintf(long247, sizeof(long247), "%s.%s.%s.%.55s", n63, n63, n63, n63);
	snprintf(long248, sizeof(long248), "%s.%s.%s.%.56s", n63, n63, n63, n63);
	snprintf(long64, sizeof(long64), "www.%sb.com", n63);

	X.len = 0;
	x_before();
	x_sni("stale.example.net");
	x_after();
	build_hello(&STALE, &h);

	test_fixtures();
	test_positions();
	test_names();
	test_sni_ext();
	test_ech();
	test_structure();
	test_records();
	test_sizes();
	test_garbage();
	return CHECK_EXIT();
}
