/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Session specs and rules: JSON in, validated structs out. Pure: a buffer
 * in, a struct or an error naming the field and the bad value out; no I/O,
 * so it can be fuzzed. Schema: docs/control-protocol.md.
 */
#ifndef TF_SPEC_H
#define TF_SPEC_H

#include <stddef.h>
#include <net/if.h>
#include <jansson.h>
#include <tapfence/abi.h>
#include "../common/addr.h"

#define TF_ID_MAX	   63 /* [A-Za-z0-9_.-], 1..63 chars */
#define TF_RULE_MAX_RANGES 64 /* port entries per rule */
#define TF_ERR_MAX	   256
#define TF_NETNS_MAX	   255 /* a namespace's path: absolute, printable */

struct tf_port_range {
	__u16 lo;
	__u16 hi;
};

enum tf_rule_kind { TF_RULE_CIDR = 1, TF_RULE_HOST = 2 };

/* struct tf_rule.tls: the "tls" field (docs/tls.md). */
enum tf_rule_tls {
	TF_TLS_DEFAULT, /* absent: host rules check SNI on port 443, CIDR rules nowhere */
	TF_TLS_ON,	/* true: every TCP port of the rule */
	TF_TLS_OFF,	/* false: none */
};

#define TF_HOST_MAX 247 /* reversed form (host + '.') fits TF_DNS_NAME_MAX */

/**
 * struct tf_rule - one allowlist entry.
 * @protos: TF_PB_* bits: "tcp", "udp", "icmp", or "any" (all four bits)
 * @nranges: 0 means every port (only allowed for "any" or when "ports" is
 *           omitted); ranges are sorted and merged.
 * @tls:     enum tf_rule_tls
 */
struct tf_rule {
	enum tf_rule_kind kind;
	struct tf_cidr cidr;	    /* TF_RULE_CIDR */
	char host[TF_HOST_MAX + 1]; /* TF_RULE_HOST: lower case, no trailing dot */
	int wildcard;		    /* host was "*.<host>": names strictly below it */
	__u8 protos;
	__u8 tls;
	__u8 deny; /* "action": "deny" (docs/deny.md): wins over every allow */
	unsigned int nranges;
	struct tf_port_range ranges[TF_RULE_MAX_RANGES];
};

/* struct tf_spec.on_deny: what a denied packet gets (docs/reject.md). */
enum tf_on_deny {
	TF_ON_DENY_DEFAULT, /* absent: the operator's on_deny */
	TF_ON_DENY_DROP,
	TF_ON_DENY_REJECT,
};

struct tf_spec {
	char id[TF_ID_MAX + 1];
	char ifname[IF_NAMESIZE];
	char netns[TF_NETNS_MAX + 1]; /* "" : the daemon's own namespace */
	__u8 guest_mac[6];
	__u8 gw_mac[6];
	int has_ip4, has_ip6; /* guest addresses present */
	struct tf_ip guest_ip4, guest_ip6;
	struct tf_ip gw_ip4, gw_ip6; /* family 0 if absent */
	struct tf_ip resolver;	     /* family 0 if absent */
	__u16 resolver_port;	     /* host order, default 53 */
	int audit;		     /* "mode": "audit" (docs/audit-mode.md); 0: "enforce" */
	enum tf_on_deny on_deny;
	unsigned int nrules;
	unsigned int cap_rules; /* room in rules, if more than nrules (tf_spec_add_rule()) */
	struct tf_rule *rules;
};

/*
 * 1 if s is a session id: 1-TF_ID_MAX of [A-Za-z0-9_.-], not "." or ".."
 * (ids end up in paths). NULL is not.
 */
int tf_id_valid(const char *s);

/* Limits that the operator config sets; passed in so parsing stays pure. */
struct tf_spec_limits {
	unsigned int max_rules; /* per session */
};

/*
 * Parse a session spec object. On error returns -EINVAL and writes to err a
 * message naming the field and quoting the value, e.g.
 * "allow[2].cidr: invalid CIDR `10.0.0.0/33'". Unknown fields are errors.
 */
int tf_spec_from_json(const json_t *j, const struct tf_spec_limits *lim, struct tf_spec *out,
		      char *err, size_t errlen) __attribute__((warn_unused_result));
/* Same, from a buffer holding JSON text (wraps json_loadb). */
int tf_spec_parse(const char *buf, size_t len, const struct tf_spec_limits *lim,
		  struct tf_spec *out, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* One rule object; where is the field prefix for messages ("allow[3]"). */
int tf_rule_from_json(const json_t *j, const char *where, struct tf_rule *out, char *err,
		      size_t errlen) __attribute__((warn_unused_result));

/*
 * Validate and canonicalise a host rule's name: lower case, one trailing dot
 * dropped, an optional leading "*." (wildcard, names strictly below) that
 * must cover at least two labels; labels of 1-63 [a-z0-9_-], not starting
 * or ending with '-'; not an IP literal. 0 or -EINVAL.
 */
int tf_host_parse(const char *s, char host[TF_HOST_MAX + 1], int *wildcard)
	__attribute__((warn_unused_result));
/* The reversed form of a canonical host ("github.com" -> "moc.buhtig."); returns its length. */
unsigned int tf_host_reverse(const char *host, __u8 out[TF_DNS_NAME_MAX]);

/* Sort and merge overlapping or adjacent port ranges in place (the tail is zeroed); the new count. */
unsigned int tf_ranges_merge(struct tf_port_range *r, unsigned int n);

/* Canonical JSON, the inverse of the parsers (new references). */
json_t *tf_spec_to_json(const struct tf_spec *s);
json_t *tf_rule_to_json(const struct tf_rule *r);
/* 1 if two rules are the same after canonicalisation. */
int tf_rule_equal(const struct tf_rule *a, const struct tf_rule *b);

/* Append or remove one rule (rule add/del). 0, -EEXIST, -ENOENT, -E2BIG, -ENOMEM. */
int tf_spec_add_rule(struct tf_spec *s, const struct tf_rule *r, unsigned int max_rules)
	__attribute__((warn_unused_result));
int tf_spec_del_rule(struct tf_spec *s, const struct tf_rule *r)
	__attribute__((warn_unused_result));
/*
 * Warnings about s (an array of strings, maybe empty): each wildcard rule
 * `*.x' with no rule for x itself, which it does not match. only: just the
 * wildcard equal to that rule (rule.add), or NULL for all.
 */
json_t *tf_spec_warnings(const struct tf_spec *s, const struct tf_rule *only);
/* Drop s's rules (nrules 0). */
void tf_spec_free_rules(struct tf_spec *s);
/* Deep copy; 0 or -ENOMEM. */
int tf_spec_copy(struct tf_spec *dst, const struct tf_spec *src)
	__attribute__((warn_unused_result));
void tf_spec_free(struct tf_spec *s); /* frees rules, NULL-safe */

#endif
