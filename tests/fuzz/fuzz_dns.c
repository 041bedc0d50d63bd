// SPDX-License-Identifier: GPL-2.0
/* Test that the DNS parser (include/tapfence/dns.h) never reads past a message, never loops, and only ever hands out well-formed names and records, whatever the bytes. */
/*
 * libFuzzer harness (make fuzz), after wireguard-tools' src/fuzz: each
 * input is parsed as a query, then as an answer twice: once against no
 * stored query (it must never match), once against the query its own
 * question stands for, so the answer walker is reached. The message sits
 * in a buffer of exactly its length, so ASan reports any read past it (and
 * dns_u8() traps on one in userspace). Checked invariants trap.
 *
 * Also compiled into tests/unit/test_dns_corpus.c, which replays the
 * committed corpus (tests/fuzz/corpus/dns/) as part of make test.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include <tapfence/dns.h>

#include "dns_walk.h"

static struct dns_parse fz_p, fz_ref;

static void fz_assert(int ok)
{
	if (!ok)
		__builtin_trap();
}

/* A name the parser handed out: host-name bytes, dots between non-empty labels. */
static void fz_check_name(const __u8 *n, unsigned int len)
{
	unsigned int i;

	fz_assert(len > 0 && len <= TF_DNS_FWD_MAX);
	fz_assert(n[0] != '.' && n[len - 1] != '.');
	for (i = 0; i < len; i++) {
		fz_assert(n[i] == '.' || dns_name_char(n[i]));
		fz_assert(!(n[i] == '.' && i + 1 < len && n[i + 1] == '.'));
	}
}

/* rev (a query's result, or an answer's stored query) is chain[0] reversed, plus the dot. */
static void fz_check_rev(const struct dns_parse *p, const __u8 *rev)
{
	unsigned int d = p->chain_len[0], i;

	fz_assert(p->rev_len == d + 1 && rev[d] == '.');
	for (i = 0; i < d; i++)
		fz_assert(rev[i] == p->chain[0][d - 1 - i]);
}

static void fz_check_common(const struct dns_parse *p, int st)
{
	unsigned int i;

	fz_assert(p->phase == DNS_PH_DONE && st == p->status && st <= DNS_TRUNCATED);
	fz_assert(p->nchain <= TF_DNS_CHAIN_MAX && p->nrec <= TF_DNS_LEARN_MAX);
	for (i = 0; i < p->nchain; i++)
		fz_check_name(p->chain[i], p->chain_len[i]);
}

static int fz_parse(const __u8 *msg, size_t len, __u8 answer, const __u8 *want, __u16 want_len,
		    __u16 want_qtype)
{
	dns_parse_start(&fz_p, answer, want, want_len, want_qtype);
	return dns_parse_run(&fz_p, msg, (__u32)len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	__u8 *msg, want[TF_DNS_NAME_MAX];
	__u16 want_len, qtype;
	unsigned int i;
	int st;

	if (size > TF_DNS_MSG_MAX + 64)
		return 0;
	msg = malloc(size ? size : 1);
	if (!msg)
		return 0;
	memcpy(msg, data, size);

	/* As a query */
	st = fz_parse(msg, size, 0, NULL, 0, 0);
	fz_check_common(&fz_p, st);
	fz_assert(fz_p.nrec == 0 && !fz_p.matched && st != DNS_MISMATCH && st != DNS_TRUNCATED);
	fz_assert(size <= TF_DNS_MSG_MAX || st == DNS_MALFORMED);
	if (st == DNS_OK) {
		fz_assert(fz_p.nchain == 1);
		fz_check_rev(&fz_p, fz_p.rev);
		fz_assert(fz_p.qtype == DNS_T_A || fz_p.qtype == DNS_T_AAAA ||
			  fz_p.qtype == DNS_T_CNAME);
	}

	/* As an answer to nothing: never matched */
	memset(want, 0, sizeof(want));
	st = fz_parse(msg, size, 1, want, 0, 0);
	fz_check_common(&fz_p, st);
	fz_assert(!fz_p.matched && st != DNS_OK && st != DNS_TRUNCATED);

	/* As an answer to the query its question stands for */
	if (fz_p.nchain) {
		want_len = (__u16)(fz_p.chain_len[0] + 1);
		for (i = 0; i < fz_p.chain_len[0]; i++)
			want[i] = fz_p.chain[0][fz_p.chain_len[0] - 1 - i];
		want[fz_p.chain_len[0]] = '.';
		qtype = fz_p.qtype;
		st = fz_parse(msg, size, 1, want, want_len, qtype);
		fz_check_common(&fz_p, st);
		/* Owners taken whole or walked: one outcome. */
		dns_parse_walk_all(&fz_ref, msg, (__u32)size, want, want_len, qtype);
		fz_assert(dns_same_outcome(&fz_p, &fz_ref));
		fz_assert(st != DNS_QTYPE);
		if (fz_p.matched)
			fz_check_rev(&fz_p, want);
		if (st == DNS_OK || st == DNS_TRUNCATED)
			fz_assert(fz_p.matched);
		for (i = 0; i < fz_p.nrec; i++) {
			fz_assert(fz_p.rec[i].family == TF_FAM_IPV4 ||
				  fz_p.rec[i].family == TF_FAM_IPV6);
			fz_assert(fz_p.rec[i].ttl < 0x80000000u);
			fz_assert(fz_p.rec[i].chain < fz_p.nchain);
		}
	}
	free(msg);
	return 0;
}
