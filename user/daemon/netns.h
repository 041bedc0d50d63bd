/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Devices in other network namespaces (docs/netns.md). The daemon names a
 * namespace by a path (/run/netns/NAME, /proc/PID/ns/net, a bind mount) and
 * knows it by its cookie; what must run inside it (finding a device,
 * creating a tcx link, listing a device's programs) is done by the netns
 * broker, a child forked before the daemon drops CAP_SYS_ADMIN, which
 * setns(2) needs. path NULL is the daemon's own namespace: done in-process,
 * no broker involved.
 *
 * Every call that names a cookie first checks that path still is that
 * namespace, and fails with -ESTALE when it is another one (the namespace
 * was deleted and a new one bind-mounted at its path): nothing is done in
 * a namespace the session does not belong to.
 */
#ifndef TF_DAEMON_NETNS_H
#define TF_DAEMON_NETNS_H

#include <linux/if_link.h>
#include <linux/types.h>
#include <tapfence/abi.h>

/* The cookie of the daemon's own namespace, read once (0 before tf_ns_init()). */
extern __u64 tf_ns_self;

/*
 * XDP on a device of the current namespace, from one RTM_GETLINK:
 * @attached an XDP_ATTACHED_* mode, @ids the IFLA_XDP_*_PROG_ID it named
 * (0 where none). An error if the kernel's answer does not say.
 */
struct tf_xdp_state {
	__u32 attached;
	__u32 ids[IFLA_XDP_MAX + 1];
};

int tf_xdp_state(__u32 ifindex, struct tf_xdp_state *st);

/* Read tf_ns_self; with broker = 1 also fork the broker. 0 or -errno. */
int tf_ns_init(int broker);
/* End the broker (daemon exit). */
void tf_ns_stop(void);

/*
 * Find device ifname in the namespace at path (which must still be cookie,
 * unless 0): *dev gets its cookie and ifindex.
 */
int tf_ns_resolve(const char *path, __u64 cookie, const char *ifname, struct tf_sess_key *dev);
/* The namespace at path's cookie (-ENOENT: no such path). */
int tf_ns_cookie(const char *path, __u64 *cookie);
/*
 * A tcx link of prog_fd on dev's attach_type chain, at its head (head = 1)
 * or its tail: the link fd or -errno.
 */
int tf_ns_tcx_link(const char *path, const struct tf_sess_key *dev, int prog_fd, __u32 attach_type,
		   int head);
/*
 * The ids of the programs on dev's attach_type chain, in order: up to max
 * in ids, their number in *n. 0 or -errno.
 */
int tf_ns_query(const char *path, const struct tf_sess_key *dev, __u32 attach_type, __u32 *ids,
		__u32 max, __u32 *n);

#define TF_NS_DEVS 4096 /* devices one tf_ns_list() reports: as many as sessions can be */
#define TF_NS_PATS 16  /* guard patterns (TF_GUARD_MAX) */

struct tf_ns_dev {
	__u32 ifindex;
	char name[16];
};

/* The devices of the namespace at path (still cookie, unless 0): up to TF_NS_DEVS. */
int tf_ns_list(const char *path, __u64 cookie, struct tf_ns_dev *devs, __u32 *n);
/*
 * The guard's nftables table in the namespace at path (guard_nft.c):
 * replaced with these patterns, or removed when npats is 0.
 */
int tf_ns_guard(const char *path, __u64 cookie, const char (*pats)[16], unsigned int npats,
		__u32 mark);

/*
 * The id the daemon's namespace knows the namespace at path by (assigned
 * if it has none), so that a socket listening to all namespaces can tell
 * their messages apart (guard.c).
 */
int tf_ns_nsid(const char *path, __u64 cookie, __u32 *nsid);

/* tf_ns_guard() only if a table is missing; *rewritten says whether it was. */
int tf_ns_guard_ensure(const char *path, __u64 cookie, const char (*pats)[16], unsigned int npats,
		       __u32 mark, int *rewritten);

#endif /* TF_DAEMON_NETNS_H */
