// SPDX-License-Identifier: GPL-2.0
/* tapfence guard: the guarded devices (docs/guard.md) */
#include "ctl.h"

static int print_guard(const json_t *resp, const void *ctx)
{
	const json_t *devs = json_object_get(resp, "devices");
	json_t *e;
	size_t i;

	(void)ctx;
	if (!json_is_array(devs)) {
		ctl_err("malformed response from daemon");
		return -EPROTO;
	}
	printf("%-15s %-8s %-16s %-9s %s  %s\n", "IFNAME", "IFINDEX", "SESSION", "PROGRAMS",
	       "DROPPED", "NETNS");
	json_array_foreach(devs, i, e) {
		const char *ns = json_string_value(json_object_get(e, "netns"));
		const char *sess = json_string_value(json_object_get(e, "session"));

		printf("%-15s %-8lld %-16s %-9s %-7lld  %s\n",
		       json_string_value(json_object_get(e, "ifname")) ?: "?",
		       (long long)json_integer_value(json_object_get(e, "ifindex")),
		       sess ? sess : "-",
		       json_is_true(json_object_get(e, "programs")) ? "yes" : "no",
		       (long long)json_integer_value(json_object_get(e, "dropped")),
		       ns ? ns : "(the daemon's)");
	}
	return 0;
}

int cmd_guard(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)self, (void)argc, (void)argv;
	return ctl_call(o, ctl_req("guard.list"), print_guard, NULL);
}
