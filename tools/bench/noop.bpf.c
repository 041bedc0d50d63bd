// SPDX-License-Identifier: GPL-2.0
/*
 * The baselines of the per-packet benchmark (tools/bench/bench_dp.c): one
 * program per hook that says "pass" and does nothing else, so that what a
 * BPF_PROG_TEST_RUN of it costs (the test-run loop, the program call, the
 * timer) can be taken out of, or divided into, what a datapath path costs.
 */
#include "vmlinux.h"
#include "lib/const.bpf.h" /* TC_ACT_UNSPEC; no maps */

char LICENSE[] SEC("license") = "GPL";

SEC("tc")
int tc_noop(struct __sk_buff *skb)
{
	(void)skb;
	return TC_ACT_UNSPEC; /* what tc_from_guest returns for an allowed packet */
}

SEC("xdp")
int xdp_noop(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}
