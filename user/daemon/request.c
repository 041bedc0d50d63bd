// SPDX-License-Identifier: GPL-2.0
/* Control requests: parse and validate one line; see request.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "request.h"

/**
 * struct op_desc - what a request of one op may hold.
 * @name:   the "op" string
 * @fields: the fields allowed besides "op", NULL-terminated
 * @parse:  reads them into the request (NULL: the op takes none); 0 or -EINVAL with err set
 */
struct op_desc {
	const char *name;
	const char *const *fields;
	int (*parse)(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
		     size_t errlen);
};

/* A session id (tf_id_valid()) in field, so a lookup never sees junk. */
static const char *get_id(json_t *req, const char *field, char *err, size_t errlen)
{
	const char *id = json_string_value(json_object_get(req, field));

	if (!tf_id_valid(id)) {
		snprintf(err, errlen, "%s: expected a session id (1-%d of A-Z a-z 0-9 _ . -)",
			 field, TF_ID_MAX);
		return NULL;
	}
	return id;
}

static int parse_spec(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
		      size_t errlen)
{
	return tf_spec_from_json(json_object_get(r->root, "spec"), lim, &r->spec, err, errlen) ?
		       -EINVAL :
		       0;
}

static int parse_id(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
		    size_t errlen)
{
	(void)lim;
	r->id = get_id(r->root, "id", err, errlen);
	return r->id ? 0 : -EINVAL;
}

/* session.del: the id, and "release" (a boolean, false when absent). */
static int parse_del(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
		     size_t errlen)
{
	json_t *rel = json_object_get(r->root, "release");

	if (parse_id(r, lim, err, errlen))
		return -EINVAL;
	if (rel && !json_is_boolean(rel)) {
		snprintf(err, errlen, "release: expected true or false");
		return -EINVAL;
	}
	r->release = json_is_true(rel);
	return 0;
}

/* session.quarantine: the id, an optional "reason" (at most 200 printable characters), "reset". */
static int parse_quarantine(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
			    size_t errlen)
{
	json_t *v = json_object_get(r->root, "reason"), *reset = json_object_get(r->root, "reset");
	const char *p;

	if (parse_id(r, lim, err, errlen))
		return -EINVAL;
	if (reset && !json_is_boolean(reset)) {
		snprintf(err, errlen, "reset: expected true or false");
		return -EINVAL;
	}
	r->reset = json_is_true(reset);
	if (!v)
		return 0;
	r->reason = json_string_value(v);
	for (p = r->reason; p && *p && *p >= ' ' && *p <= '~' && *p != '"' && *p != '\\'; p++)
		;
	if (!r->reason || *p || strlen(r->reason) > 200) {
		snprintf(err, errlen,
			 "reason: expected at most 200 printable ASCII characters, no \" or \\");
		return -EINVAL;
	}
	return 0;
}

/* session.mode: the id and "mode": "enforce" or "audit". */
static int parse_mode(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
		      size_t errlen)
{
	const char *m = json_string_value(json_object_get(r->root, "mode"));

	if (parse_id(r, lim, err, errlen))
		return -EINVAL;
	if (!m || (strcmp(m, "enforce") && strcmp(m, "audit"))) {
		snprintf(err, errlen, "mode: expected \"enforce\" or \"audit\"");
		return -EINVAL;
	}
	r->audit = !strcmp(m, "audit");
	return 0;
}

static int parse_rule(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
		      size_t errlen)
{
	if (parse_id(r, lim, err, errlen) ||
	    tf_rule_from_json(json_object_get(r->root, "rule"), "rule", &r->rule, err, errlen))
		return -EINVAL;
	return 0;
}

/* An optional "session": NULL for all. */
static int parse_session(struct tf_request *r, const struct tf_spec_limits *lim, char *err,
			 size_t errlen)
{
	(void)lim;
	if (!json_object_get(r->root, "session"))
		return 0;
	r->session = get_id(r->root, "session", err, errlen);
	return r->session ? 0 : -EINVAL;
}

static const char *const f_none[] = { NULL };
static const char *const f_spec[] = { "spec", NULL };
static const char *const f_id[] = { "id", NULL };
static const char *const f_rule[] = { "id", "rule", NULL };
static const char *const f_del[] = { "id", "release", NULL };
static const char *const f_quarantine[] = { "id", "reason", "reset", NULL };
static const char *const f_sub[] = { "session", NULL };
static const char *const f_mode[] = { "id", "mode", NULL };

static const struct op_desc ops[TF_OP_MAX] = {
	[TF_OP_VERSION] = { "version", f_none, NULL },
	[TF_OP_STATS] = { "stats", f_none, NULL },
	[TF_OP_SESSION_ADD] = { "session.add", f_spec, parse_spec },
	[TF_OP_SESSION_DEL] = { "session.del", f_del, parse_del },
	[TF_OP_SESSION_LIST] = { "session.list", f_none, NULL },
	[TF_OP_SESSION_SHOW] = { "session.show", f_id, parse_id },
	[TF_OP_RULE_ADD] = { "rule.add", f_rule, parse_rule },
	[TF_OP_RULE_DEL] = { "rule.del", f_rule, parse_rule },
	[TF_OP_SUBSCRIBE] = { "events.subscribe", f_sub, parse_session },
	[TF_OP_ATTEST] = { "attest", f_sub, parse_session },
	[TF_OP_LOG_ROTATE_KEY] = { "log.rotate_key", f_none, NULL },
	[TF_OP_GUARD_LIST] = { "guard.list", f_none, NULL },
	[TF_OP_SESSION_QUARANTINE] = { "session.quarantine", f_quarantine, parse_quarantine },
	[TF_OP_SESSION_RESUME] = { "session.resume", f_id, parse_id },
	[TF_OP_SESSION_MODE] = { "session.mode", f_mode, parse_mode },
	[TF_OP_METRICS] = { "metrics", f_none, NULL },
	[TF_OP_TOP] = { "top", f_none, NULL },
};

static int check_fields(json_t *req, const char *const *fields, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(req, key, v) {
		if (!strcmp(key, "op"))
			continue;
		for (i = 0; fields[i] && strcmp(fields[i], key); i++)
			;
		if (!fields[i]) {
			snprintf(err, errlen, "unknown field `%.64s'", key);
			return -EINVAL;
		}
	}
	return 0;
}

int tf_request_parse(const char *line, size_t len, const struct tf_spec_limits *lim,
		     struct tf_request *out, char *err, size_t errlen)
{
	const struct op_desc *d;
	const char *opname;
	json_error_t jerr;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	out->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!out->root) {
		snprintf(err, errlen, "invalid JSON: %s", jerr.text);
		return -EINVAL;
	}
	opname = json_string_value(json_object_get(out->root, "op"));
	if (!json_is_object(out->root) || !opname) {
		snprintf(err, errlen, "op: expected a request object with an \"op\" string");
		goto fail;
	}
	for (i = 0; i < TF_OP_MAX && strcmp(ops[i].name, opname); i++)
		;
	if (i == TF_OP_MAX) {
		snprintf(err, errlen, "op: unknown operation `%.64s'", opname);
		goto fail;
	}
	d = &ops[i];
	out->op = (enum tf_op)i;
	if (check_fields(out->root, d->fields, err, errlen))
		goto fail;
	if (d->parse && d->parse(out, lim, err, errlen))
		goto fail;
	return 0;
fail:
	tf_request_free(out);
	return -EINVAL;
}

void tf_request_free(struct tf_request *r)
{
	if (!r)
		return;
	tf_spec_free(&r->spec);
	json_decref(r->root);
	memset(r, 0, sizeof(*r));
}
