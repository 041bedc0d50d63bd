// SPDX-License-Identifier: GPL-2.0
/*
 * What tapfence needs of the kernel, checked before anything is loaded,
 * so that an old kernel gets a sentence naming it and the requirement
 * rather than a libbpf verifier dump: tcx links (Linux 6.6; they also
 * bring bpf_cast_to_kern_ctx(), 6.2, which sessions keyed by namespace
 * read the device's namespace with).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/bpf.h>

#include "common/log.h"
#include "daemon.h"

#define TF_BPF_TCX_INGRESS 46

int tf_kernel_release_ok(const char *release, char *why, size_t len)
{
	unsigned int major = 0, minor = 0;

	if (sscanf(release, "%u.%u", &major, &minor) != 2) {
		snprintf(why, len, "cannot read the kernel release `%.64s'", release);
		return 0;
	}
	if (major < 6 || (major == 6 && minor < 6)) {
		snprintf(why, len,
			 "kernel %.64s is too old: tapfence needs tcx links (Linux 6.6 or later)",
			 release);
		return 0;
	}
	return 1;
}

int tf_kernel_check(void)
{
	struct utsname u;
	union bpf_attr attr;
	char why[160];

	if (uname(&u) || !tf_kernel_release_ok(u.release, why, sizeof(why))) {
		pr_warn("%s\n", why);
		return -ENOSYS;
	}
	/* A backport's version says nothing: ask for tcx itself (a query of lo's chain). */
	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = 1;
	attr.query.attach_type = TF_BPF_TCX_INGRESS;
	if (syscall(__NR_bpf, BPF_PROG_QUERY, &attr, sizeof(attr)) && errno == EINVAL) {
		pr_warn("kernel %s has no tcx (BPF_PROG_QUERY of tcx_ingress: %s): tapfence needs "
			"Linux 6.6 or later\n",
			u.release, strerror(errno));
		return -ENOSYS;
	}
	return 0;
}
