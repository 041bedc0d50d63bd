/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Control requests: one line of JSON in, a validated request or an error
 * naming the field out. Pure (no daemon state, no I/O), so it is fuzzed
 * (tests/fuzz/fuzz_control.c). Protocol: docs/control-protocol.md.
 */
#ifndef TF_REQUEST_H
#define TF_REQUEST_H

#include <stddef.h>
#include "spec.h"

/* The control operations; request.c's table gives each its name and fields, control_ops.c its handler. */
enum tf_op {
	TF_OP_VERSION,
	TF_OP_STATS,
	TF_OP_SESSION_ADD,
	TF_OP_SESSION_DEL,
	TF_OP_SESSION_LIST,
	TF_OP_SESSION_SHOW,
	TF_OP_RULE_ADD,
	TF_OP_RULE_DEL,
	TF_OP_SUBSCRIBE,
	TF_OP_ATTEST,
	TF_OP_LOG_ROTATE_KEY,
	TF_OP_GUARD_LIST,
	TF_OP_SESSION_QUARANTINE,
	TF_OP_SESSION_RESUME,
	TF_OP_SESSION_MODE,
	TF_OP_METRICS,
	TF_OP_TOP,
	TF_OP_MAX
};

/**
 * struct tf_request - a validated request.
 * @id:      the session id (session.del/show, rule.*), a valid id
 * @session: the subscription's session (events.subscribe) or the attested
 *           one (attest), NULL for all
 * @spec:    session.add's spec; @rule: rule.add/del's rule
 * Strings point into @root, which the request owns.
 */
struct tf_request {
	enum tf_op op;
	json_t *root;
	const char *id;
	const char *session;
	struct tf_spec spec;
	struct tf_rule rule;
	int release;	    /* session.del: leave the device unfiltered (docs/guard.md) */
	const char *reason; /* session.quarantine: why, printable, or NULL ... */
	int reset;	    /* ... and whether its cut connections are reset */
	int audit;	    /* session.mode: "audit" (1) or "enforce" (0) */
};

int tf_request_parse(const char *line, size_t len, const struct tf_spec_limits *lim,
		     struct tf_request *out, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void tf_request_free(struct tf_request *r); /* NULL-safe */

#endif
