/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An answer's outcome both ways: owners that are a pointer to a chain name
 * taken whole (dns_owner_whole(), what the datapath runs) and every owner
 * walked, label by label (struct dns_parse.walk_all). The fuzzer
 * (fuzz_dns.c) and the unit tests (test_dns.c) require the same outcome.
 */
#ifndef TF_TESTS_DNS_WALK_H
#define TF_TESTS_DNS_WALK_H

#include <string.h>

#include <tapfence/dns.h>

/* 1 if b's results are a's: status, match, chain (names, TTLs), records, losses. */
static inline int dns_same_outcome(const struct dns_parse *a, const struct dns_parse *b)
{
	unsigned int i;

	if (a->status != b->status || a->matched != b->matched || a->lost != b->lost ||
	    a->nrec != b->nrec || a->nchain != b->nchain || a->nrec > TF_DNS_LEARN_MAX ||
	    a->nchain > TF_DNS_CHAIN_MAX)
		return 0;
	for (i = 0; i < a->nchain; i++)
		if (a->chain_len[i] != b->chain_len[i] || a->chain_ttl[i] != b->chain_ttl[i] ||
		    memcmp(a->chain[i], b->chain[i], a->chain_len[i]))
			return 0;
	return !memcmp(a->rec, b->rec, a->nrec * sizeof(a->rec[0]));
}

/* Parse msg as an answer to want walking every owner, into *ref; the status. */
static inline int dns_parse_walk_all(struct dns_parse *ref, const __u8 *msg, __u32 len,
				     const __u8 *want, __u16 want_len, __u16 want_qtype)
{
	dns_parse_start(ref, 1, want, want_len, want_qtype);
	ref->walk_all = 1;
	return dns_parse_run(ref, msg, len);
}

#endif /* TF_TESTS_DNS_WALK_H */
