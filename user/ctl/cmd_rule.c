// SPDX-License-Identifier: GPL-2.0
/* tapfence rule add|del ID RULE */
#include <string.h>

#include "ctl.h"

/* {"op":op,"id":ID,"rule":RULE}; RULE is checked to be a JSON object, no more. */
static int rule_change(const struct ctl_opts *o, const struct ctl_cmd *self,
		       const char *op, char *argv[], const char *done)
{
	json_t *req = NULL, *rule = NULL, *resp = NULL;
	int err;

	if (ctl_parse_object(argv[2], strlen(argv[2]), "RULE", &rule))
		return ctl_usage(self);
	req = ctl_req(op);
	if (!req) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (json_object_set_new(req, "id", json_string(argv[1]))) {
		ctl_err("session ID is not valid UTF-8");
		err = -EBADMSG;
		goto cleanup;
	}
	err = json_object_set_new(req, "rule", rule);	/* steals rule, even on failure */
	rule = NULL;
	if (err) {
		ctl_err("out of memory");
		err = -ENOMEM;
		goto cleanup;
	}
	err = ctl_request(o, req, &resp);
	if (err)
		goto cleanup;
	if (o->json) {
		err = ctl_print_json(resp);
		goto cleanup;
	}
	fprintf(stdout, "rule %s session ", done);
	ctl_print_value(stdout, json_object_get(resp, "id"));
	fputs(", policy version ", stdout);
	ctl_print_value(stdout, json_object_get(resp, "policy_version"));
	fputc('\n', stdout);
cleanup:
	json_decref(rule);
	json_decref(req);
	json_decref(resp);
	return err;
}

static int rule_add(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)argc;
	return rule_change(o, self, "rule.add", argv, "added to");
}

static int rule_del(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)argc;
	return rule_change(o, self, "rule.del", argv, "deleted from");
}

const struct ctl_cmd ctl_rule_cmds[] = {
	{ "add", rule_add, NULL, 2, 2, "rule add ID RULE",
	  "add RULE, a JSON object: '{\"cidr\":\"203.0.113.0/24\",\"ports\":[443]}'" },
	{ "del", rule_del, NULL, 2, 2, "rule del ID RULE", "remove a rule (same JSON as rule add)" },
	{ 0 }
};
