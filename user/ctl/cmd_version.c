// SPDX-License-Identifier: GPL-2.0
/* tapfence version: the CLI's own version first, so it shows even without a daemon. */
#include "ctl.h"

#ifndef TF_VERSION
#define TF_VERSION "unknown"
#endif

int cmd_version(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	json_t *req, *resp = NULL;
	int err;

	(void)self;
	(void)argc;
	(void)argv;
	if (!o->json) {
		fputs(CTL_PROG " " TF_VERSION "\n", stdout);
		fflush(stdout);
	}
	req = ctl_req("version");
	if (!req)
		return -ENOMEM;
	err = ctl_request(o, req, &resp);
	json_decref(req);
	if (err)
		return err;
	if (o->json) {
		err = ctl_print_json(resp);
	} else {
		fputs("tapfenced ", stdout);
		ctl_print_value(stdout, json_object_get(resp, "version"));
		fputs(" (abi ", stdout);
		ctl_print_value(stdout, json_object_get(resp, "abi"));
		fputs(")\n", stdout);
	}
	json_decref(resp);
	return err;
}
