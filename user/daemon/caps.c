// SPDX-License-Identifier: GPL-2.0
/*
 * Capabilities: once the programs are loaded, the sessions re-adopted and
 * the control socket bound, tapfenced keeps only what session add, rule
 * changes and detaching still need (docs/security.md):
 *   CAP_BPF        map updates, bpf_map_create for flow tables, link ops
 *   CAP_NET_ADMIN  attaching tcx links and XDP programs to new devices
 *   CAP_PERFMON    libxdp loads its dispatcher when XDP mode attaches
 * Everything else leaves the effective, permitted, inheritable and
 * bounding sets, and no_new_privs is set.
 */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/capability.h>

#include "common/log.h"
#include "daemon.h"

static const cap_value_t keep[] = { CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON };

int tf_caps_drop(void)
{
	cap_t caps = cap_init();
	cap_value_t c;
	int err = 0;

	if (!caps)
		return -errno;
	if (cap_set_flag(caps, CAP_EFFECTIVE, sizeof(keep) / sizeof(keep[0]), keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, sizeof(keep) / sizeof(keep[0]), keep, CAP_SET)) {
		err = -errno;
		goto cleanup;
	}
	/* The bounding set first: dropping from it needs CAP_SETPCAP, which goes next. */
	for (c = 0; c <= CAP_LAST_CAP; c++) {
		if (c == CAP_BPF || c == CAP_NET_ADMIN || c == CAP_PERFMON)
			continue;
		if (cap_drop_bound(c) && errno != EINVAL) {
			err = -errno;
			goto cleanup;
		}
	}
	if (cap_set_proc(caps) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		err = -errno;
		goto cleanup;
	}
	pr_info("capabilities reduced to cap_bpf, cap_net_admin, cap_perfmon\n");
cleanup:
	if (err)
		pr_warn("cannot drop capabilities: %s\n", strerror(-err));
	cap_free(caps);
	return err;
}
