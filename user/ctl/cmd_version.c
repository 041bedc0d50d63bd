// SPDX-License-Identifier: GPL-2.0
/* tapfence version: the CLI's own version first, so it shows even without a daemon. */
#include "ctl.h"

#ifndef TF_VERSION
#define TF_VERSION "unknown"
#endif

static int print_version(const json_t *resp, const void *ctx)
{
	(void)ctx;
	fputs("tapfenced ", stdout);
	ctl_print_value(stdout, json_object_get(resp, "version"));
	fputs(" (abi ", stdout);
	ctl_print_value(stdout, json_object_get(resp, "abi"));
	fputs(")\n", stdout);
	return 0;
}

int cmd_version(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)self, (void)argc, (void)argv;
	if (!o->json) {
		fputs(CTL_PROG " " TF_VERSION "\n", stdout);
		fflush(stdout);
	}
	return ctl_call(o, ctl_req("version"), print_version, NULL);
}
