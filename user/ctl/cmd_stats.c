// SPDX-License-Identifier: GPL-2.0
/* tapfence stats */
#include "ctl.h"

int cmd_stats(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	json_t *req, *resp = NULL, *stats;
	int err;

	(void)self;
	(void)argc;
	(void)argv;
	req = ctl_req("stats");
	if (!req)
		return -ENOMEM;
	err = ctl_request(o, req, &resp);
	json_decref(req);
	if (err)
		return err;
	if (o->json) {
		err = ctl_print_json(resp);
		goto cleanup;
	}
	stats = json_object_get(resp, "stats");
	if (!json_is_object(stats)) {
		ctl_err("malformed response from daemon");
		err = -EPROTO;
		goto cleanup;
	}
	ctl_print_kv(stdout, stats, 0);
cleanup:
	json_decref(resp);
	return err;
}
