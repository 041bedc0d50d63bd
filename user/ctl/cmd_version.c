// SPDX-License-Identifier: GPL-2.0
/* tapfence version: the CLI's own version first, so it shows even without a daemon. */
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
