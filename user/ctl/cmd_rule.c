// SPDX-License-Identifier: GPL-2.0
/* tapfence rule add|del ID RULE */
#include <string.h>

#include "ctl.h"

/*
 * {"op":op,"id":ID,"rule":RULE}, its response printed by the template
 * printed (ctl_print_line()); RULE is checked to be a JSON object, no more.
 */
static int rule_change(const struct ctl_opts *o, const struct ctl_cmd *self, const char *op,
		       char *argv[], const char *printed)
{
	json_t *rule;

	if (ctl_parse_object(argv[2], strlen(argv[2]), "RULE", &rule))
		return ctl_usage(self);
	return ctl_call(o, ctl_req_set(ctl_req_id(ctl_req(op), "id", argv[1]), "rule", rule),
			ctl_print_line, printed);
}

static int rule_add(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)argc;
	return rule_change(o, self, "rule.add", argv,
			   "rule added to session {id}, policy version {policy_version}\n");
}

static int rule_del(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)argc;
	return rule_change(o, self, "rule.del", argv,
			   "rule deleted from session {id}, policy version {policy_version}\n");
}

const struct ctl_cmd ctl_rule_cmds[] = {
	{ "add", rule_add, NULL, 2, 2, "rule add ID RULE",
	  "add RULE, a JSON object: '{\"cidr\":\"203.0.113.0/24\",\"ports\":[443]}'" },
	{ "del", rule_del, NULL, 2, 2, "rule del ID RULE",
	  "remove a rule (same JSON as rule add)" },
	{ 0 }
};
