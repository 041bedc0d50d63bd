/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a test that loads the datapath runs: a private network namespace
 * with lo up (the host's loopback is never involved), and libbpf quiet but
 * for its warnings. Used by fixture.h and tools/bench/bench_dp.c.
 */
#ifndef TF_NETNS_H
#define TF_NETNS_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>

/* A network namespace of our own, with lo up, so the host's loopback is never involved. */
static inline int private_netns(void)
{
	struct ifreq ifr = {};
	int fd, ret = 0;

	if (unshare(CLONE_NEWNET))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ret = -errno;
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			ret = -errno;
	}
	close(fd);
	return ret;
}

static inline int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

#endif
