// SPDX-License-Identifier: GPL-2.0
/* tapfence version: the CLI's own version first, so it shows even without a daemon. */
#include <string.h>

#include "common/reason.h"
#include "ctl.h"

#ifndef TF_VERSION
#define TF_VERSION "unknown"
#endif

int cmd_version(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)self, (void)argc, (void)argv;
	if (!o->json) {
		fputs(CTL_PROG " " TF_VERSION "\n", stdout);
		fflush(stdout);
	}
	return ctl_call(o, ctl_req("version"), ctl_print_line, "tapfenced {version} (abi {abi})\n");
}

/* tapfence reasons: every verdict reason the datapath reports, one a line (docs/events.md). */
int cmd_reasons(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	unsigned int r;

	(void)o, (void)self, (void)argc, (void)argv;
	for (r = 0; r < TF_REASON_MAX; r++)
		if (strncmp(tf_reason_name(r), "unused", 6))
			printf("%s\n", tf_reason_name(r));
	return 0;
}
