/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host's own addresses, from netlink: every local, broadcast and
 * anycast route of the kernel's local table (RT_TABLE_LOCAL) of the
 * daemon's network namespace, IPv4 and IPv6, kept current so that the
 * hard floor denies them (floor_host). docs/security.md says why and how.
 */
#ifndef TF_HOSTADDR_H
#define TF_HOSTADDR_H

#include "../common/addr.h"

struct tf_daemon;

struct tf_hostaddr {
	int fd;		       /* subscribed to route and address changes; -1 if closed */
	struct tf_cidr *addrs; /* the last dump */
	unsigned int n;
	unsigned int over;	  /* local routes past the n the floor can hold, not kept */
	unsigned long long dumps; /* dumps done since start */
	int stale;		  /* the last dump failed: retried at every turn of the loop */
};

/*
 * At start, before sessions are re-adopted: subscribe, dump, write the
 * floor with the host's addresses. Any failure is fatal to the start.
 */
int tf_host_start(struct tf_daemon *d) __attribute__((warn_unused_result));
/*
 * Once per turn of the event loop (readable: the netlink fd is): drain the
 * notifications and, if a local route or an address changed, some were
 * lost, or the last dump failed, dump and rewrite the floor.
 */
void tf_host_event(struct tf_daemon *d, int readable);
/* 0 while the floor may lack a host address (a failed dump or write): new sessions are refused. */
int tf_host_floor_ok(const struct tf_daemon *d);
void tf_host_close(struct tf_hostaddr *h);

/*
 * Pure: parse one buffer of RTM_NEWROUTE messages from a dump of the local
 * table into out (at most max, *n counts them; *over counts those past
 * max). Returns 1 at NLMSG_DONE, 0 if more is to come, -EAGAIN if the dump
 * was interrupted by a change (NLM_F_DUMP_INTR), or the negative error of
 * an NLMSG_ERROR.
 */
int tf_hostaddr_parse(const void *buf, size_t len, __u32 seq, struct tf_cidr *out, unsigned int max,
		      unsigned int *n, unsigned int *over) __attribute__((warn_unused_result));

#endif
