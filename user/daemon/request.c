// SPDX-License-Identifier: GPL-2.0
/* Control requests: parse and validate one line; see request.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "request.h"

struct op {
	const char *name;
	enum tf_op op;
	const char *const *fields;	/* allowed fields besides "op" */
};

static const char *const f_none[] = { NULL };
static const char *const f_spec[] = { "spec", NULL };
static const char *const f_id[] = { "id", NULL };
static const char *const f_rule[] = { "id", "rule", NULL };
static const char *const f_sub[] = { "session", NULL };

static const struct op ops[] = {
	{ "version", TF_OP_VERSION, f_none },
	{ "stats", TF_OP_STATS, f_none },
	{ "session.add", TF_OP_SESSION_ADD, f_spec },
	{ "session.del", TF_OP_SESSION_DEL, f_id },
	{ "session.list", TF_OP_SESSION_LIST, f_none },
	{ "session.show", TF_OP_SESSION_SHOW, f_id },
	{ "rule.add", TF_OP_RULE_ADD, f_rule },
	{ "rule.del", TF_OP_RULE_DEL, f_rule },
	{ "events.subscribe", TF_OP_SUBSCRIBE, f_sub },
	{ "attest", TF_OP_ATTEST, f_sub },
	{ "log.rotate_key", TF_OP_LOG_ROTATE_KEY, f_none },
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

/* A session id as the spec parser accepts it, so a lookup never sees junk. */
static const char *get_id(json_t *req, const char *field, char *err, size_t errlen)
{
	const char *id = json_string_value(json_object_get(req, field));
	size_t i, n = id ? strlen(id) : 0;

	for (i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", id[i]))
			break;
	if (!id || !n || n > TF_ID_MAX || i < n) {
		snprintf(err, errlen, "%s: expected a session id (1-%d of A-Z a-z 0-9 _ . -)", field,
			 TF_ID_MAX);
		return NULL;
	}
	return id;
}

int tf_request_parse(const char *line, size_t len, const struct tf_spec_limits *lim,
		     struct tf_request *out, char *err, size_t errlen)
{
	const char *opname;
	json_error_t jerr;
	size_t i;

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
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].name, opname))
			break;
	if (i == sizeof(ops) / sizeof(ops[0])) {
		snprintf(err, errlen, "op: unknown operation `%.64s'", opname);
		goto fail;
	}
	out->op = ops[i].op;
	if (check_fields(out->root, ops[i].fields, err, errlen))
		goto fail;
	switch (out->op) {
	case TF_OP_SESSION_ADD:
		if (tf_spec_from_json(json_object_get(out->root, "spec"), lim, &out->spec, err, errlen))
			goto fail;
		break;
	case TF_OP_SESSION_DEL:
	case TF_OP_SESSION_SHOW:
		if (!(out->id = get_id(out->root, "id", err, errlen)))
			goto fail;
		break;
	case TF_OP_RULE_ADD:
	case TF_OP_RULE_DEL:
		if (!(out->id = get_id(out->root, "id", err, errlen)) ||
		    tf_rule_from_json(json_object_get(out->root, "rule"), "rule", &out->rule, err, errlen))
			goto fail;
		break;
	case TF_OP_SUBSCRIBE:
	case TF_OP_ATTEST:
		if (json_object_get(out->root, "session") &&
		    !(out->session = get_id(out->root, "session", err, errlen)))
			goto fail;
		break;
	default:
		break;
	}
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
