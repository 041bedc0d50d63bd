// SPDX-License-Identifier: GPL-2.0
/* Test that each datapath program, loaded as tapfenced loads it, verifies within its recorded instruction budget. */
/*
 * The budget is what the verifier walked (bpf_prog_info.verified_insns,
 * kernel 5.16) on the kernel and clang this tree was last measured with
 * (KERNEL_MEASURED, clang 14), plus 10%. A change that passes it fails
 * here, not in a review: measure again (the test prints each count) and
 * raise the figure in the same commit, saying why the program grew. A
 * program without a row fails too.
 *
 * Another kernel's verifier walks the same code differently (-fc-v1252
 * walked the three large programs 2.2 times as far as -fc-v1098 did): on
 * one, the rows are not compared, and each program must stay under half
 * the verifier's limit (BPF_COMPLEXITY_LIMIT_INSNS) instead, which is the
 * margin a program needs to load on the next kernel at all; the counts
 * printed are the new rows.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tapfence.skel.h"
#include "check.h"
#include "fixture.h"

static const struct {
	const char *prog;
	__u32 measured; /* verified_insns when this row was last set */
} budget[] = {
	{ "tc_from_guest", 421179 },   { "tc_to_guest", 290809 }, { "xdp_from_guest", 412852 },
	{ "tf_map_fill", 35 },	       { "tc_gso_guard", 3356 },  { "tc_guard_from_guest", 1055 },
	{ "tc_guard_to_guest", 1133 },
};

#define MARGIN_PCT 10
#define KERNEL_MEASURED "6.18.44-fc-v1252"
#define INSNS_LIMIT	1000000 /* BPF_COMPLEXITY_LIMIT_INSNS, include/linux/bpf.h */

static int other_kernel; /* not KERNEL_MEASURED: the half-limit check only */

static const char *w(const char *fmt, const char *name)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), fmt, name);
	return buf;
}

static void check_prog(const struct bpf_program *prog)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), limit;
	const char *name = bpf_program__name(prog);
	size_t i;

	if (!bpf_program__autoload(prog))
		return;
	CHECK_EQ(w("read %s's program info", name),
		 bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len), 0);
	printf("# %s: %u verified instructions\n", name, info.verified_insns);
	if (other_kernel) {
		CHECK_EQ(w("%s verifies within half the verifier's limit", name),
			 info.verified_insns <= INSNS_LIMIT / 2, 1);
		return;
	}
	for (i = 0; i < sizeof(budget) / sizeof(budget[0]); i++)
		if (!strcmp(budget[i].prog, name))
			break;
	if (i == sizeof(budget) / sizeof(budget[0])) {
		CHECK_EQ(w("%s has a budget row", name), 0, 1);
		return;
	}
	limit = budget[i].measured + budget[i].measured * MARGIN_PCT / 100;
	CHECK_EQ(w("%s verifies within its budget", name), info.verified_insns <= limit, 1);
	if (info.verified_insns > limit)
		printf("# %s: %u over a budget of %u (measured %u + %d%%)\n", name,
		       info.verified_insns, limit, budget[i].measured, MARGIN_PCT);
}

int main(void)
{
	struct bpf_program *prog;
	struct tf_config cfg;
	struct tf_dp dp = {};
	struct utsname u;
	int ret;

	libbpf_set_print(quiet_libbpf);
	CHECK_EQ("uname", uname(&u), 0);
	other_kernel = strcmp(u.release, KERNEL_MEASURED) != 0;
	if (other_kernel)
		printf("# budgets were measured on %s, this is %s: each program is held to half "
		       "the verifier's limit instead\n",
		       KERNEL_MEASURED, u.release);
	CHECK_EQ("a private network namespace with lo up", private_netns(), 0);
	tf_config_defaults(&cfg);
	ret = tf_dp_open(&dp, &cfg, 0);
	CHECK_EQ("load the datapath, unpinned", ret, 0);
	if (ret)
		return CHECK_EXIT();
	bpf_object__for_each_program(prog, dp.skel->obj)
		check_prog(prog);
	tf_dp_close(&dp);
	return CHECK_EXIT();
}
