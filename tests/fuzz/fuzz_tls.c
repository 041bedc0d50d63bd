// SPDX-License-Identifier: GPL-2.0
/* Test that the ClientHello reader (include/tapfence/tls.h) gives one outcome however the wire bytes are cut into appends, stays within its step budgets, never reads past what it was given, and only ever hands out well-formed names, whatever the bytes. */
/*
 * libFuzzer harness (make fuzz), after wireguard-tools' src/fuzz. An input
 * is two bytes choosing a cut (big endian, modulo the rest's length plus
 * one), then the wire bytes a guest sends. The datapath keeps at most
 * TF_TLS_BUF of them; so does the harness. The bytes are walked three
 * ways: appended at once, in two appends at the cut, and one byte at a
 * time, each into a buffer whose unwritten bytes hold a different filler;
 * the three must agree. A whole hello is copied out of its records (checked
 * against the harness's own de-framing) and parsed from a buffer of exactly
 * its length, so ASan reports a read past it. Names handed out (on TLS_OK,
 * and on TLS_ECH as the outer name's verdict a datapath may judge by) are
 * host names found in the hello. Checked invariants trap. After a whole
 * hello the rest of the bytes is followed as the datapath follows it once
 * the hello is allowed (every later hello taken as allowed too), appended
 * the same three ways: the outcomes must agree, stay within the budgets
 * and point inside the bytes held.
 *
 * Also compiled into tests/unit/test_fuzz_corpus.c, which replays the
 * committed corpus (tests/fuzz/corpus/tls/) as part of make test.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include <tapfence/tls.h>

#define FUZZ_CHECK(cond) ((cond) ? (void)0 : __builtin_trap())

static struct tf_tls_buf ft_buf[3];
static __u8 ft_hs[TF_TLS_BUF + TF_TLS_SLACK], ft_ref[TF_TLS_BUF];
static struct tls_parse ft_p[3];

static void ft_append(struct tf_tls_buf *b, const __u8 *w, size_t n)
{
	if (n > TF_TLS_BUF - b->have)
		n = TF_TLS_BUF - b->have;
	if (n)
		memcpy(b->wire + b->have, w, n);
	b->have += (__u32)n;
}

/* Walk w[0..n): first @first bytes, then @step at a time (0: the rest). */
static int ft_walk(struct tf_tls_buf *b, const __u8 *w, size_t n, size_t first, size_t step,
		   __u8 fill)
{
	size_t pos = 0, part = first;
	int st;

	memset(b, 0, offsetof(struct tf_tls_buf, wire));
	memset(b->wire, fill, sizeof(b->wire));
	for (;;) {
		if (part > n - pos)
			part = n - pos;
		ft_append(b, w + pos, part);
		pos += part;
		st = tls_walk(b);
		if (st != TLS_MORE || pos >= n)
			break;
		part = step ? step : n - pos;
	}
	FUZZ_CHECK(st == TLS_MORE || st == TLS_OK || st == TLS_NOT_TLS || st == TLS_SSLV2 ||
		   st == TLS_MALFORMED || st == TLS_TOO_BIG);
	FUZZ_CHECK(b->have <= TF_TLS_BUF && b->rec_off <= b->have);
	FUZZ_CHECK(st != TLS_MORE || b->have < TF_TLS_BUF);
	if (st == TLS_OK)
		FUZZ_CHECK(b->hs_len == b->hs_need && b->hs_need >= 4 && b->hs_need <= TF_TLS_BUF &&
			   b->rec_left == 0);
	return st;
}

/* The record bodies in w[0..end), the plain way; their length. */
static size_t ft_deframe(const __u8 *w, size_t end)
{
	size_t off = 0, n = 0, l;

	while (off + TF_TLS_REC_HDR <= end) {
		l = (size_t)w[off + 3] << 8 | w[off + 4];
		off += TF_TLS_REC_HDR;
		FUZZ_CHECK(l >= 1 && l <= end - off && n + l <= sizeof(ft_ref));
		memcpy(ft_ref + n, w + off, l);
		n += l;
		off += l;
	}
	FUZZ_CHECK(off == end);
	return n;
}

/* A name the parser handed out: 1..247 bytes of [a-z0-9-_.], labels of 1..63, not digits and dots only. */
static void ft_check_name(const struct tls_parse *p, const __u8 *hs, __u32 len)
{
	unsigned int i, j, label = 0, ip = 1, n = p->sni_len;
	__u8 c;

	FUZZ_CHECK(n >= 1 && n <= TF_TLS_SNI_MAX);
	for (i = 0; i < n; i++) {
		c = p->sni[i];
		if (c == '.') {
			FUZZ_CHECK(label > 0);
			label = 0;
			continue;
		}
		FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   c == '_');
		if (c < '0' || c > '9')
			ip = 0;
		FUZZ_CHECK(++label <= 63);
	}
	FUZZ_CHECK(label > 0 && !ip);
	for (i = n; i < sizeof(p->sni); i++)
		FUZZ_CHECK(p->sni[i] == 0);
	/* rev: the name reversed, then a dot, zero padded */
	FUZZ_CHECK(p->rev_len == n + 1 && p->rev[n] == '.');
	for (i = 0; i < n; i++)
		FUZZ_CHECK(p->rev[i] == p->sni[n - 1 - i]);
	for (i = n + 1; i < sizeof(p->rev); i++)
		FUZZ_CHECK(p->rev[i] == 0);
	/* and it is in the hello, in some case */
	for (i = 0; i + n <= len; i++) {
		for (j = 0; j < n; j++) {
			c = hs[i + j];
			if (c >= 'A' && c <= 'Z')
				c += 'a' - 'A';
			if (c != p->sni[j])
				break;
		}
		if (j == n)
			return;
	}
	FUZZ_CHECK(0);
}

/* Copy and parse the hello walked into b; its parse status. */
static int ft_parse(const struct tf_tls_buf *b, const __u8 *w, struct tls_parse *p)
{
	struct tls_copy c = { .end = b->rec_off };
	unsigned int steps;
	size_t ref;
	__u8 *hs;
	int st;

	/* The copy ends within its budget and holds the records' bodies */
	memset(ft_hs, 0xa5, sizeof(ft_hs));
	for (steps = 0; steps < TF_TLS_COPY_STEPS; steps++)
		if (tls_copy_step(&c, b->wire, ft_hs))
			break;
	FUZZ_CHECK(steps < TF_TLS_COPY_STEPS && c.out == b->hs_need);
	ref = ft_deframe(w, b->rec_off);
	FUZZ_CHECK(ref == b->hs_need && !memcmp(ft_hs, ft_ref, ref));

	/* The parse, on exactly the hello's bytes, ends within its budget */
	hs = malloc(b->hs_need);
	if (!hs)
		return -1;
	memcpy(hs, ft_hs, b->hs_need);
	tls_parse_start(p, b->hs_need);
	for (steps = 0; steps < TF_TLS_PARSE_STEPS; steps++)
		if (tls_parse_step(p, hs))
			break;
	FUZZ_CHECK(steps < TF_TLS_PARSE_STEPS && p->phase == TLS_PH_DONE);
	st = p->status;
	FUZZ_CHECK(st == TLS_OK || st == TLS_MALFORMED || st == TLS_NO_SNI || st == TLS_SNI_IP ||
		   st == TLS_SNI_LONG || st == TLS_ECH);
	FUZZ_CHECK(tls_parse_run(&ft_p[2], hs, b->hs_need) == st);
	FUZZ_CHECK(!p->ech || st == TLS_ECH || st == TLS_MALFORMED);
	if (st == TLS_ECH) {
		/* A datapath that judges by the outer name takes ech_status for status. */
		FUZZ_CHECK(p->ech);
		FUZZ_CHECK(p->ech_status == TLS_OK || p->ech_status == TLS_MALFORMED ||
			   p->ech_status == TLS_NO_SNI || p->ech_status == TLS_SNI_IP ||
			   p->ech_status == TLS_SNI_LONG);
		if (p->ech_status == TLS_OK)
			ft_check_name(p, hs, b->hs_need);
		if (p->ech_status == TLS_NO_SNI)
			FUZZ_CHECK(!p->seen_sni);
	}
	if (st == TLS_OK)
		ft_check_name(p, hs, b->hs_need);
	if (st == TLS_NO_SNI)
		FUZZ_CHECK(!p->seen_sni);
	free(hs);
	return st;
}

#define FT_HELLOS 4

/*
 * Follow the rest of w[0..n) after the hello walked into b, appending
 * @step bytes at a time (0: the rest at once); every hello found is taken
 * as allowed. The outcomes, in order, into out (at most FT_HELLOS + 1).
 */
static int ft_follow(struct tf_tls_buf *b, const __u8 *w, size_t n, size_t step, int *out)
{
	size_t pos = b->have, part;
	int k = 0, st;

	tls_follow_from(b);
	for (;;) {
		st = tls_follow_run(b);
		FUZZ_CHECK(st == TLS_MORE || st == TLS_HELLO || st == TLS_APPDATA ||
			   st == TLS_SECOND || st == TLS_MALFORMED || st == TLS_TOO_BIG);
		FUZZ_CHECK(b->have <= TF_TLS_BUF && b->f_off <= b->have && b->rec_off <= b->have);
		FUZZ_CHECK(st != TLS_MORE || b->have < TF_TLS_BUF);
		if (st == TLS_HELLO) {
			FUZZ_CHECK(b->h2 && b->h_start < b->rec_off && b->hs_len == b->hs_need &&
				   b->hs_need >= 4 && b->wire[b->h_start] == TLS_CT_HANDSHAKE);
			out[k++] = st;
			if (k > FT_HELLOS)
				return k;
			tls_follow_from(b);
			continue;
		}
		if (st == TLS_APPDATA)
			FUZZ_CHECK(b->f_done && b->open_at <= b->have && b->open_at >= 5 &&
				   b->wire[b->open_at - 5] == TLS_CT_APPDATA);
		if (st != TLS_MORE || pos >= n) {
			out[k++] = st;
			return k;
		}
		part = step && step < n - pos ? step : n - pos;
		ft_append(b, w + pos, part);
		pos += part;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const __u8 *w = data;
	size_t n = size, cut = 0;
	int st[3], i;

	if (size >= 2) {
		w = data + 2;
		n = size - 2;
		cut = ((size_t)data[0] << 8 | data[1]) % (n + 1);
	}
	st[0] = ft_walk(&ft_buf[0], w, n, n, 0, 0x00);
	st[1] = ft_walk(&ft_buf[1], w, n, cut, 0, TLS_CT_HANDSHAKE);
	st[2] = ft_walk(&ft_buf[2], w, n, 1, 1, 0xff);
	for (i = 1; i < 3; i++) {
		FUZZ_CHECK(st[i] == st[0]);
		FUZZ_CHECK(st[0] != TLS_OK || (ft_buf[i].rec_off == ft_buf[0].rec_off &&
					       ft_buf[i].hs_need == ft_buf[0].hs_need));
	}
	if (st[0] != TLS_OK)
		return 0;

	st[0] = ft_parse(&ft_buf[0], w, &ft_p[0]);
	st[1] = ft_parse(&ft_buf[1], w, &ft_p[1]);
	if (st[0] < 0 || st[1] < 0)
		return 0;
	FUZZ_CHECK(st[0] == st[1] && ft_p[0].ech_status == ft_p[1].ech_status &&
		   ft_p[0].sni_len == ft_p[1].sni_len && ft_p[0].rev_len == ft_p[1].rev_len &&
		   !memcmp(ft_p[0].sni, ft_p[1].sni, sizeof(ft_p[0].sni)) &&
		   !memcmp(ft_p[0].rev, ft_p[1].rev, sizeof(ft_p[0].rev)));
	{
		int out[3][FT_HELLOS + 1], k[3];

		k[0] = ft_follow(&ft_buf[0], w, n, 0, out[0]);
		k[1] = ft_follow(&ft_buf[1], w, n, cut ? cut : 1, out[1]);
		k[2] = ft_follow(&ft_buf[2], w, n, 1, out[2]);
		for (i = 1; i < 3; i++)
			FUZZ_CHECK(k[i] == k[0] &&
				   !memcmp(out[i], out[0], sizeof(int) * (size_t)k[0]));
	}
	return 0;
}
