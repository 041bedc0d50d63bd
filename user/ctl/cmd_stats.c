// SPDX-License-Identifier: GPL-2.0
/* tapfence stats, tapfence metrics */
#include "ctl.h"

static int print_stats(const json_t *resp, const void *ctx)
{
	const json_t *stats = json_object_get(resp, "stats");

	(void)ctx;
	if (!json_is_object(stats)) {
		ctl_err("malformed response from daemon");
		return -EPROTO;
	}
	ctl_print_kv(stdout, stats, 0);
	return 0;
}

int cmd_stats(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)self, (void)argc, (void)argv;
	return ctl_call(o, ctl_req("stats"), print_stats, NULL);
}

/* tapfence metrics: the Prometheus text, as the daemon formats it (docs/metrics.md). */
static int print_metrics(const json_t *resp, const void *ctx)
{
	const json_t *m = json_object_get(resp, "metrics");

	(void)ctx;
	if (!json_is_string(m)) {
		ctl_err("malformed response from daemon");
		return -EPROTO;
	}
	fwrite(json_string_value(m), 1, json_string_length(m), stdout);
	return 0;
}

int cmd_metrics(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	(void)self, (void)argc, (void)argv;
	return ctl_call(o, ctl_req("metrics"), print_metrics, NULL);
}
