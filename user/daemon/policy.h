/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Policy compiler: a session's rules -> the entries of tf_rules (LPM) and
 * tf_ports (port-class bitmaps), computed once at set-up so the datapath
 * does one LPM lookup and at most one hash lookup per new flow, whatever
 * the number of rules. Pure: no I/O, no maps.
 *
 * Flattening: every distinct rule prefix P gets the union of the
 * permissions of all rules whose CIDR contains P. The longest-prefix match
 * for an address a is then the union of all rules containing a (any rule
 * containing a either contains P or is contained in it, and P is longest).
 * Port sets are interned as classes so equal unions share one class.
 *
 * Deny rules (docs/deny.md) are flattened apart. CIDR ones become entries
 * of their own (family | TF_FAM_DENY), which the datapath looks up before
 * any allowance. Host ones are taken out of the name entries here: a name's
 * entry holds what its allow rules give minus what its deny rules take.
 */
#ifndef TF_POLICY_H
#define TF_POLICY_H

#include <tapfence/abi.h>
#include "spec.h"

struct tf_policy_entry {
	__u8 family;	/* TF_FAM_* */
	__u8 prefixlen; /* address bits, 0..32 / 0..128 */
	__u8 addr[16];
	struct tf_rule_val val;
};
/* No padding: tf_dp_policy_apply() compares entries whole. */
_Static_assert(sizeof(struct tf_policy_entry) == 22, "tf_policy_entry layout");

struct tf_policy_chunk {
	__u16 cls;		  /* 1..max_cls */
	__u8 proto;		  /* IPPROTO_TCP / IPPROTO_UDP */
	__u8 hi;		  /* port >> 8 */
	struct tf_port_bits bits; /* bit (port & 0xff) set = allowed */
};

/*
 * Host rules, flattened the same way over reversed names (every parent
 * domain is a byte prefix): @exact is what a query for exactly this name
 * gets, @sub what names strictly below it get (wildcards, inherited).
 */
struct tf_policy_name {
	__u8 name[TF_DNS_NAME_MAX]; /* reversed form, zero padded */
	__u16 len;
	struct tf_rule_val exact;
	struct tf_rule_val sub;
};

struct tf_policy {
	unsigned int nentries;
	struct tf_policy_entry *entries; /* CIDR rules */
	unsigned int nnames;
	struct tf_policy_name *names; /* host rules, sorted by name */
	unsigned int nchunks;	      /* only non-empty chunks are listed, a class's together */
	struct tf_policy_chunk *chunks;
	unsigned int nclasses;
	unsigned int max_cls; /* the highest class number in use (nclasses, or more once rebased) */
};

/* 0, -ENOMEM, or -E2BIG if more than 65535 port classes would be needed. */
int tf_policy_compile(const struct tf_rule *rules, unsigned int nrules, struct tf_policy *out)
	__attribute__((warn_unused_result));
void tf_policy_free(struct tf_policy *p); /* NULL-safe */

/*
 * Number p's port classes as old numbers them, so that p can be written
 * over old in place (a rule change applied, not the whole set): a class
 * whose chunks are exactly one of old's takes its number, any other a
 * number above old->max_cls, never one old used. 0, or -E2BIG (past
 * 65535: p is left as it was, to be written whole), -ENOMEM likewise.
 */
int tf_policy_rebase(struct tf_policy *p, const struct tf_policy *old)
	__attribute__((warn_unused_result));
/*
 * out: old with one more CIDR rule r, computed from old alone (the rules
 * it was compiled from are not needed) and numbered as old, as
 * tf_policy_compile() and tf_policy_rebase() would make it. 0, -E2BIG
 * (more than 65535 classes: compile the rules whole), -ENOMEM, -EINVAL
 * (r is not a CIDR rule).
 */
int tf_policy_add_cidr(const struct tf_policy *old, const struct tf_rule *r, struct tf_policy *out)
	__attribute__((warn_unused_result));
/* 1 if a and b have the same name entries (the same names, allowing the same). */
int tf_policy_names_equal(const struct tf_policy *a, const struct tf_policy *b);
/*
 * The order entries come in, allow entries before deny ones, each by
 * family, address, length: <0, 0 (the same tf_rules key), >0.
 */
int tf_policy_entry_cmp(const struct tf_policy_entry *a, const struct tf_policy_entry *b);

/*
 * Reference check used by tests: does the compiled policy allow (family,
 * addr, proto, port)? Walks entries for the longest match exactly as the
 * datapath does with its maps. proto is IPPROTO_TCP/UDP/ICMP/ICMPV6/other.
 */
int tf_policy_allows(const struct tf_policy *p, __u8 family, const __u8 addr[16], __u8 proto,
		     __u16 port);
/* Does a deny rule of p cover (family, addr, proto, port)? What the datapath checks first. */
int tf_policy_denies(const struct tf_policy *p, __u8 family, const __u8 addr[16], __u8 proto,
		     __u16 port);

/*
 * Does permission v (an entry's, a name's) of p allow (family, proto,
 * port)? The datapath's evaluation (tapfence/perm.h) over p's chunks.
 */
int tf_policy_perm_allows(const struct tf_policy *p, const struct tf_rule_val *v, __u8 family,
			  __u8 proto, __u16 port);

/*
 * What the policy allows a query for name (reversed form, len bytes), as
 * the datapath decides it with tf_names: the longest entry that is a
 * prefix; its exact half if it is the whole name, else its sub half.
 * With below = 1, for some name strictly below name (a learnt address
 * whose query is known only by the entry that allowed it).
 * Returns the entry index, or -1 (nothing allowed). *sub tells the half.
 */
int tf_policy_name_perm(const struct tf_policy *p, const __u8 *name, unsigned int len, int below,
			struct tf_rule_val *perm, int *sub);

#endif
