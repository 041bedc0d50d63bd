// SPDX-License-Identifier: GPL-2.0
/*
 * tcx_ahead IFNAME PIN: attach a program that passes every packet at the
 * head of IFNAME's tcx ingress chain (BPF_F_BEFORE), ahead of whatever is
 * there, and pin its link at PIN (a bpffs path); removing the pin detaches
 * it. tcx_ahead IFNAME --xdp: attach one as IFNAME's XDP program (generic
 * mode), which runs before any tcx program; `ip link set dev IFNAME
 * xdpgeneric off' removes it. What a root process could do to run before tapfence
 * (tests/netns/test_attest.sh shows that an attestation then fails).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define TCX_INGRESS 46 /* uapi values newer than Debian 12's headers */
#define F_BEFORE    (1U << 3)

int main(int argc, char **argv)
{
	/* r0 = TC_ACT_UNSPEC (-1: the next program decides) or XDP_PASS (2); exit */
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = -1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int xdp = argc == 3 && !strcmp(argv[2], "--xdp");
	union bpf_attr attr;
	unsigned int ifindex;
	int prog, link;

	if (argc != 3 || !(ifindex = if_nametoindex(argv[1]))) {
		fprintf(stderr, "usage: tcx_ahead IFNAME PIN | tcx_ahead IFNAME --xdp\n");
		return 2;
	}
	if (xdp)
		insns[0].imm = XDP_PASS;
	prog = bpf_prog_load(xdp ? BPF_PROG_TYPE_XDP : BPF_PROG_TYPE_SCHED_CLS, "tf_test_ahead",
			     "GPL", insns, 2, NULL);
	if (prog < 0) {
		fprintf(stderr, "tcx_ahead: cannot load: %s\n", strerror(errno));
		return 1;
	}
	if (xdp) {
		if (bpf_xdp_attach((int)ifindex, prog, XDP_FLAGS_SKB_MODE, NULL)) {
			fprintf(stderr, "tcx_ahead: cannot attach XDP to %s: %s\n", argv[1],
				strerror(errno));
			return 1;
		}
		return 0;
	}
	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = prog;
	attr.link_create.target_ifindex = ifindex;
	attr.link_create.attach_type = TCX_INGRESS;
	attr.link_create.flags = F_BEFORE;
	link = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (link < 0 || bpf_obj_pin(link, argv[2])) {
		fprintf(stderr, "tcx_ahead: cannot attach to %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return 0;
}
