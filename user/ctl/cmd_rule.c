// SPDX-License-Identifier: GPL-2.0
/* tapfence rule add|del ID RULE */
#include <string.h>

#include "ctl.h"

/* "rule added to session s1, policy version 3"; ctx is what was done ("added to"). */
static int print_change(const json_t *resp, const void *ctx)
{
	fprintf(stdout, "rule %s session ", (const char *)ctx);
	ctl_print_value(stdout, json_object_get(resp, "id"));
	fputs(", policy version ", stdout);
	ctl_print_value(stdout, json_object_get(resp, "policy_version"));
	fputc('\n', stdout);
	return 0;
}

/* {"op":op,"id":ID,"rule":RULE}; RULE is checked to be a JSON object, no more. */
static int rule_change(const struct ctl_opts *o, const struct ctl_cmd *self, const char *op,
		       char *argv[], const char *done)
{
	json_t *rule;

	if (ctl_parse_object(argv[2], strlen(argv[2]), "RULE", &rule))
		return ctl_usage(self);
	return ctl_call(o, ctl_req_set(ctl_req_id(ctl_req(op), "id", argv[1]), "rule", rule),
			print_change, done);
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
