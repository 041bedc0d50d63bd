// SPDX-License-Identifier: GPL-2.0
/*
 * The netns broker (netns.h). setns(2) into a network namespace needs
 * CAP_SYS_ADMIN, which the daemon drops once it has loaded; the broker is
 * forked before that and keeps only what its three operations need
 * (CAP_SYS_ADMIN for setns, CAP_NET_ADMIN and CAP_BPF for tcx links,
 * queries, nftables and namespace ids). It answers only its parent, over a
 * SOCK_SEQPACKET pair, one request at a time: a fixed struct in, a fixed
 * struct out, a program fd in and a link fd out as SCM_RIGHTS. It opens a
 * path only once it knows the object is on nsfs (opening anything else as
 * root could act on a device; enter() resolves the path once), checks the
 * open file is a network namespace, and dies with the daemon
 * (PR_SET_PDEATHSIG). The daemon waits TF_NS_TIMEOUT_S for an answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/nsfs.h>

#include "common/log.h"
#include "guard_nft.h"
#include "netns.h"
#include "nl.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif
#define TF_BPF_F_BEFORE (1U << 3)
#define NS_QUERY_MAX	64
#define TF_NS_TIMEOUT_S 5 /* the daemon waits this long for the broker's answer */

enum ns_op { NS_RESOLVE = 1, NS_COOKIE, NS_LINK, NS_QUERY, NS_LIST, NS_GUARD, NS_UNGUARD, NS_NSID };

struct ns_req {
	__u32 op;
	__u32 attach_type;
	__u64 cookie; /* the namespace path must be (0: resolve whatever it is) */
	__u32 ifindex;
	__u32 flags; /* NS_LINK: BPF_F_BEFORE or 0 (the chain's tail) */
	__u32 mark;  /* NS_GUARD */
	__u32 npats; /* NS_GUARD */
	char pats[TF_NS_PATS][IF_NAMESIZE];
	char ifname[IF_NAMESIZE];
	char path[PATH_MAX];
};

struct ns_resp {
	__s32 err;
	__u32 ifindex;
	__u64 cookie;
	__u32 n;
	__u32 ids[NS_QUERY_MAX];
	struct tf_ns_dev devs[TF_NS_DEVS]; /* NS_LIST */
};

__u64 tf_ns_self;
static int broker_fd = -1;
static pid_t broker_pid;

static int cookie_here(__u64 *cookie)
{
	socklen_t len = sizeof(*cookie);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len))
		err = -errno;
	close(fd);
	return err;
}

/* if_nametoindex() with a failed socket() kept apart from a missing device. */
static int ifindex_here(const char *name, __u32 *ifindex)
{
	struct ifreq ifr = {};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFINDEX, &ifr))
		err = -errno;
	else
		*ifindex = ifr.ifr_ifindex;
	close(fd);
	return err;
}

static int tcx_link_here(int prog_fd, __u32 ifindex, __u32 attach_type, __u32 flags)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = prog_fd;
	attr.link_create.target_ifindex = ifindex;
	attr.link_create.attach_type = attach_type;
	attr.link_create.flags = flags;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/*
 * What XDP runs on ifindex in the current namespace, from one RTM_GETLINK
 * of that device. Not libbpf's bpf_xdp_query(): libbpf 1.1 dumps every
 * device of the namespace for it (NLM_F_DUMP, filtered in user space),
 * about 8 us a device, and tf_attest_first() asks on every session add on
 * a guarded device: 10-14 ms with 1200 taps.
 */
int tf_xdp_state(__u32 ifindex, struct tf_xdp_state *st)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
		struct rtattr a;
		__u32 mask;
	} req = {
		.h = { .nlmsg_len = sizeof(req),
		       .nlmsg_type = RTM_GETLINK,
		       .nlmsg_flags = NLM_F_REQUEST,
		       .nlmsg_seq = 1 },
		.i = { .ifi_family = AF_UNSPEC, .ifi_index = (int)ifindex },
		.a = { .rta_len = RTA_LENGTH(4), .rta_type = IFLA_EXT_MASK },
		.mask = RTEXT_FILTER_SKIP_STATS,
	};
	struct timeval tmo = { .tv_sec = 2 };
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	int len, xlen, sock, err = -EPROTO;
	struct nlmsghdr *h;
	struct rtattr *a, *x;
	ssize_t n;

	memset(st, 0, sizeof(*st));
	st->attached = ~0U; /* not said */
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (sock < 0)
		return -errno;
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	/*
	 * Connected to the kernel: a message another socket sends this one is
	 * refused (net/netlink/af_netlink.c, netlink_getsockbyportid()), so no
	 * process of the namespace can answer for the kernel; the sender is
	 * checked all the same.
	 */
	if (connect(sock, (struct sockaddr *)&kernel, sizeof(kernel)) ||
	    send(sock, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		err = -errno;
	else if ((n = tf_nl_recv(sock, buf, sizeof(buf))) < 0)
		err = (int)n;
	else
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != req.h.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				err = tf_nl_error(h) ?: -EPROTO;
				break;
			}
			if (h->nlmsg_type != RTM_NEWLINK ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)) ||
			    ((struct ifinfomsg *)NLMSG_DATA(h))->ifi_index != (int)ifindex)
				break;
			len = (int)IFLA_PAYLOAD(h);
			for (a = IFLA_RTA(NLMSG_DATA(h)); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
				if ((a->rta_type & NLA_TYPE_MASK) != IFLA_XDP)
					continue;
				xlen = (int)RTA_PAYLOAD(a);
				for (x = RTA_DATA(a); RTA_OK(x, xlen); x = RTA_NEXT(x, xlen)) {
					if (x->rta_type == IFLA_XDP_ATTACHED && RTA_PAYLOAD(x) >= 1)
						st->attached = *(__u8 *)RTA_DATA(x);
					else if (x->rta_type <= IFLA_XDP_MAX && RTA_PAYLOAD(x) == 4)
						memcpy(&st->ids[x->rta_type], RTA_DATA(x), 4);
				}
			}
			err = 0;
			break;
		}
	close(sock);
	if (!err && st->attached == ~0U)
		err = -EPROTO; /* every device says it */
	return err;
}

/*
 * The XDP program that runs first on ifindex (0: none): offloaded, then
 * driver, then generic. Several attached at once (XDP_ATTACHED_MULTI, no
 * IFLA_XDP_PROG_ID) report the first to run (libbpf reported none);
 * attached but unnamed, or any doubt: ~0U, something ahead.
 */
static int xdp_id_here(__u32 ifindex, __u32 *id)
{
	static const int order[] = { IFLA_XDP_PROG_ID, IFLA_XDP_HW_PROG_ID, IFLA_XDP_DRV_PROG_ID,
				     IFLA_XDP_SKB_PROG_ID };
	struct tf_xdp_state st;
	unsigned int k;
	int err = tf_xdp_state(ifindex, &st);

	if (err)
		return err;
	*id = st.attached == XDP_ATTACHED_NONE ? 0 : ~0U;
	for (k = 0; *id && k < sizeof(order) / sizeof(order[0]); k++)
		if (st.ids[order[k]]) {
			*id = st.ids[order[k]];
			break;
		}
	return 0;
}

static int query_here(__u32 ifindex, __u32 attach_type, __u32 *ids, __u32 max, __u32 *n)
{
	LIBBPF_OPTS(bpf_prog_query_opts, q, .prog_ids = ids, .prog_cnt = max);
	__u32 id = 0;
	int err;

	*n = 0;
	if (attach_type == BPF_XDP) {
		err = xdp_id_here(ifindex, &id);
		if (err)
			return err;
		if (id && max)
			ids[(*n)++] = id;
		return 0;
	}
	if (bpf_prog_query_opts((int)ifindex, attach_type, &q))
		return -errno;
	*n = q.prog_cnt < max ? q.prog_cnt : max;
	return 0;
}

/* The devices of the current namespace, up to TF_NS_DEVS. */
static int list_here(struct tf_ns_dev *devs, __u32 *n)
{
	struct if_nameindex *ifs = if_nameindex(), *i;

	*n = 0;
	if (!ifs)
		return -errno;
	for (i = ifs; i->if_index && *n < TF_NS_DEVS; i++) {
		devs[*n].ifindex = i->if_index;
		snprintf(devs[*n].name, sizeof(devs[*n].name), "%s", i->if_name);
		(*n)++;
	}
	if_freenameindex(ifs);
	return 0;
}

/* One RTM_{NEW,GET}NSID request about the namespace fd ns; the reply's NETNSA_NSID to *nsid. */
static int nsid_msg(int sock, __u16 type, int ns, __s32 *nsid)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
		char pad[3];
		struct rtattr a1;
		__u32 fd;
		struct rtattr a2;
		__s32 id;
	} req = {
		.h = { .nlmsg_len = sizeof(req),
		       .nlmsg_type = type,
		       .nlmsg_flags = NLM_F_REQUEST | (type == RTM_NEWNSID ? NLM_F_ACK : 0) },
		.g = { .rtgen_family = AF_UNSPEC },
		.a1 = { .rta_len = RTA_LENGTH(4), .rta_type = NETNSA_FD },
		.fd = (__u32)ns,
		.a2 = { .rta_len = RTA_LENGTH(4), .rta_type = NETNSA_NSID },
		.id = NETNSA_NSID_NOT_ASSIGNED,
	};
	char buf[512] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *h;
	struct rtattr *a;
	ssize_t n;
	int len;

	if (type == RTM_GETNSID)
		req.h.nlmsg_len -= sizeof(req.a2) + sizeof(req.id);
	if (send(sock, &req, req.h.nlmsg_len, 0) != (ssize_t)req.h.nlmsg_len)
		return -errno;
	n = tf_nl_recv(sock, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR)
			return tf_nl_error(h);
		if (h->nlmsg_type != RTM_NEWNSID)
			continue;
		len = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct rtgenmsg)));
		for (a = (struct rtattr *)((char *)NLMSG_DATA(h) +
					   NLMSG_ALIGN(sizeof(struct rtgenmsg)));
		     RTA_OK(a, len); a = RTA_NEXT(a, len))
			if (a->rta_type == NETNSA_NSID && RTA_PAYLOAD(a) == 4)
				memcpy(nsid, RTA_DATA(a), 4);
		return 0;
	}
	return -EPROTO;
}

/*
 * The id the current namespace (home) knows the namespace ns by, assigned
 * if it has none: netlink messages from ns then reach a home socket that
 * listens to all namespaces, tagged with it. An id holds nothing alive.
 */
static int nsid_here(int ns, __u32 *out)
{
	struct timeval tmo = { .tv_sec = 2 };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	__s32 nsid = NETNSA_NSID_NOT_ASSIGNED;
	int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), err;

	if (sock < 0)
		return -errno;
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	/* Connected to the kernel, as tf_xdp_state(): no other sender's message is taken. */
	if (connect(sock, (struct sockaddr *)&kernel, sizeof(kernel))) {
		err = -errno;
		close(sock);
		return err;
	}
	err = nsid_msg(sock, RTM_NEWNSID, ns, &nsid);
	if (!err || err == -EEXIST)
		err = nsid_msg(sock, RTM_GETNSID, ns, &nsid);
	close(sock);
	if (!err && nsid < 0)
		err = -ENOENT;
	if (!err)
		*out = (__u32)nsid;
	return err;
}

/*
 * Broker side: open path if it is a network namespace, and enter it. The
 * path is resolved once, to an O_PATH fd (which opens nothing: no device
 * or FIFO is touched); only once that object is known to be on nsfs is it
 * opened, through /proc/self/fd, the same inode whatever the path now
 * names (a symlink swapped between a check and an open cannot redirect
 * it).
 */
static int enter(const char *path)
{
	char self[32];
	struct statfs sf;
	int pfd, fd, err = 0;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstatfs(pfd, &sf) || sf.f_type != NSFS_MAGIC) {
		close(pfd);
		return -ENOTNAM; /* "not a namespace file" to the daemon */
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sf) || sf.f_type != NSFS_MAGIC || ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
		err = -ENOTNAM;
	else if (setns(fd, CLONE_NEWNET))
		err = -errno;
	close(fd);
	return err;
}

static void serve_one(const struct ns_req *q, int prog_fd, int home, struct ns_resp *r,
		      int *link_fd)
{
	__u64 cookie = 0;
	int ns_fd = -1;

	r->err = enter(q->path);
	if (r->err)
		return;
	r->err = cookie_here(&cookie);
	if (!r->err && q->cookie && cookie != q->cookie)
		r->err = -ESTALE;
	r->cookie = cookie;
	if (r->err)
		goto back;
	switch (q->op) {
	case NS_COOKIE:
		break;
	case NS_RESOLVE:
		r->err = ifindex_here(q->ifname, &r->ifindex);
		break;
	case NS_LINK:
		if (prog_fd < 0) {
			r->err = -EBADF;
			break;
		}
		*link_fd = tcx_link_here(prog_fd, q->ifindex, q->attach_type, q->flags);
		if (*link_fd < 0)
			r->err = *link_fd;
		break;
	case NS_QUERY:
		r->err = query_here(q->ifindex, q->attach_type, r->ids, NS_QUERY_MAX, &r->n);
		break;
	case NS_LIST:
		r->err = list_here(r->devs, &r->n);
		break;
	case NS_GUARD:
		if (q->npats > TF_NS_PATS || !q->npats)
			r->err = -EINVAL;
		else if (q->flags)
			r->err = tf_guard_nft_ensure_here(q->pats, q->npats, q->mark, (int *)&r->n);
		else
			r->err = tf_guard_nft_here(q->pats, q->npats, q->mark);
		break;
	case NS_UNGUARD:
		r->err = tf_guard_nft_remove_here();
		break;
	case NS_NSID:
		/* The namespace as an fd, for home to name (below, once back there). */
		ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (ns_fd < 0)
			r->err = -errno;
		break;
	default:
		r->err = -EOPNOTSUPP;
	}
back:
	if (setns(home, CLONE_NEWNET)) {
		/* Stranded in another namespace: every later answer would lie. */
		pr_warn("netns broker: cannot return to its namespace: %s\n", strerror(errno));
		_exit(1);
	}
	if (ns_fd >= 0) {
		r->err = nsid_here(ns_fd, &r->n);
		close(ns_fd);
	}
}

static int send_fd(int sock, const void *buf, size_t len, int fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.b;
		m.msg_controllen = sizeof(u.b);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EPIPE;
}

/* One message of exactly len bytes, and the fd it carried (or -1). */
static int recv_fd(int sock, void *buf, size_t len, int *fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)
	};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (c = CMSG_FIRSTHDR(&m); n >= 0 && c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)len || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		return n == 0 ? -EPIPE : -EPROTO;
	}
	return 0;
}

static int broker_caps(void)
{
	static const cap_value_t keep[] = { CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_BPF };
	cap_t caps = cap_init();
	cap_value_t c;
	int err = 0;

	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_SYS_ADMIN && c != CAP_NET_ADMIN && c != CAP_BPF && cap_drop_bound(c) &&
		    errno != EINVAL)
			err = -errno;
	if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 3, keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, 3, keep, CAP_SET) || cap_set_proc(caps) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
	cap_free(caps);
	return err;
}

static void broker_main(int sock, pid_t parent)
{
	struct ns_req q;
	struct ns_resp r;
	int home, prog_fd, link_fd;

	prctl(PR_SET_NAME, "tapfenced-netns", 0, 0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_IGN); /* a terminal's ^C is the daemon's to handle */
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0 || broker_caps()) {
		pr_warn("netns broker: cannot set up: %s\n", strerror(errno));
		_exit(1);
	}
	for (;;) {
		if (recv_fd(sock, &q, sizeof(q), &prog_fd))
			_exit(0); /* the daemon is gone, or spoke nonsense */
		memset(&r, 0, sizeof(r));
		link_fd = -1;
		q.path[sizeof(q.path) - 1] = 0;
		q.ifname[sizeof(q.ifname) - 1] = 0;
		serve_one(&q, prog_fd, home, &r, &link_fd);
		if (prog_fd >= 0)
			close(prog_fd);
		if (send_fd(sock, &r, sizeof(r), link_fd))
			_exit(0);
		if (link_fd >= 0)
			close(link_fd);
	}
}

int tf_ns_init(int broker)
{
	struct timeval tmo = { .tv_sec = TF_NS_TIMEOUT_S };
	int sv[2], err = cookie_here(&tf_ns_self);
	pid_t parent = getpid();

	if (err) {
		pr_warn("cannot read the daemon's network namespace cookie: %s\n", strerror(-err));
		return err;
	}
	if (!broker)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	fflush(NULL);
	broker_pid = fork();
	if (broker_pid < 0) {
		err = -errno;
		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (!broker_pid) {
		/* Nothing of the daemon's but the pair and the log. */
		close(sv[0]);
		if (dup2(sv[1], 3) != 3)
			_exit(1);
		syscall(__NR_close_range, 4, ~0U, 0);
		broker_main(3, parent);
	}
	close(sv[1]);
	broker_fd = sv[0];
	/* Every operation is a few syscalls: an answer later than this will not come. */
	setsockopt(broker_fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	return 0;
}

void tf_ns_stop(void)
{
	if (broker_fd < 0)
		return;
	close(broker_fd); /* the broker reads EOF and exits */
	broker_fd = -1;
	waitpid(broker_pid, NULL, 0);
}

static int ask(struct ns_req *q, int prog_fd, struct ns_resp *r, int *link_fd)
{
	int fd = -1, err;

	if (broker_fd < 0)
		return -ENOTCONN; /* no broker: this daemon serves only its own namespace */
	err = send_fd(broker_fd, q, sizeof(*q), prog_fd);
	if (!err)
		err = recv_fd(broker_fd, r, sizeof(*r), &fd);
	if (err) {
		/*
		 * Dead, or stuck (a path on a hung FUSE mount blocks statfs):
		 * never again; the single-threaded daemon must not wait on it.
		 */
		pr_warn("netns broker: no answer (%s): sessions in other namespaces fail until "
			"tapfenced restarts\n",
			strerror(-err));
		close(broker_fd);
		broker_fd = -1;
		kill(broker_pid, SIGKILL);
		return -ENOTCONN;
	}
	if (link_fd)
		*link_fd = fd;
	else if (fd >= 0)
		close(fd);
	return r->err;
}

static int req_init(struct ns_req *q, __u32 op, const char *path, __u64 cookie)
{
	memset(q, 0, sizeof(*q));
	q->op = op;
	q->cookie = cookie;
	if (snprintf(q->path, sizeof(q->path), "%s", path) >= (int)sizeof(q->path))
		return -ENAMETOOLONG;
	return 0;
}

int tf_ns_cookie(const char *path, __u64 *cookie)
{
	struct ns_req q;
	struct ns_resp r;
	int err;

	if (!path) {
		*cookie = tf_ns_self;
		return 0;
	}
	err = req_init(&q, NS_COOKIE, path, 0) ?: ask(&q, -1, &r, NULL);
	if (!err)
		*cookie = r.cookie;
	return err;
}

int tf_ns_resolve(const char *path, __u64 cookie, const char *ifname, struct tf_sess_key *dev)
{
	struct ns_req q;
	struct ns_resp r;
	int err;

	memset(dev, 0, sizeof(*dev));
	if (!path) {
		dev->netns = tf_ns_self;
		return ifindex_here(ifname, &dev->ifindex);
	}
	err = req_init(&q, NS_RESOLVE, path, cookie);
	if (err)
		return err;
	snprintf(q.ifname, sizeof(q.ifname), "%s", ifname);
	err = ask(&q, -1, &r, NULL);
	if (!err) {
		dev->netns = r.cookie;
		dev->ifindex = r.ifindex;
	}
	return err;
}

int tf_ns_tcx_link(const char *path, const struct tf_sess_key *dev, int prog_fd, __u32 attach_type,
		   int head)
{
	__u32 flags = head ? TF_BPF_F_BEFORE : 0;
	struct ns_req q;
	struct ns_resp r;
	int err, fd = -1;

	if (!path)
		return tcx_link_here(prog_fd, dev->ifindex, attach_type, flags);
	err = req_init(&q, NS_LINK, path, dev->netns);
	if (err)
		return err;
	q.ifindex = dev->ifindex;
	q.attach_type = attach_type;
	q.flags = flags;
	err = ask(&q, prog_fd, &r, &fd);
	if (!err && fd < 0)
		err = -EPROTO;
	return err ? err : fd;
}

int tf_ns_query(const char *path, const struct tf_sess_key *dev, __u32 attach_type, __u32 *ids,
		__u32 max, __u32 *n)
{
	struct ns_req q;
	struct ns_resp r;
	int err;

	if (!path)
		return query_here(dev->ifindex, attach_type, ids, max, n);
	err = req_init(&q, NS_QUERY, path, dev->netns);
	if (err)
		return err;
	q.ifindex = dev->ifindex;
	q.attach_type = attach_type;
	err = ask(&q, -1, &r, NULL);
	*n = 0;
	if (!err) {
		*n = r.n < max ? r.n : max;
		memcpy(ids, r.ids, *n * sizeof(*ids));
	}
	return err;
}

int tf_ns_list(const char *path, __u64 cookie, struct tf_ns_dev *devs, __u32 *n)
{
	static struct ns_resp r; /* 80 KB: not on the stack */
	struct ns_req q;
	int err;

	*n = 0;
	if (!path)
		return list_here(devs, n);
	err = req_init(&q, NS_LIST, path, cookie) ?: ask(&q, -1, &r, NULL);
	if (!err) {
		*n = r.n < TF_NS_DEVS ? r.n : TF_NS_DEVS;
		memcpy(devs, r.devs, *n * sizeof(*devs));
	}
	return err;
}

int tf_ns_guard(const char *path, __u64 cookie, const char (*pats)[16], unsigned int npats,
		__u32 mark)
{
	static struct ns_req q;
	struct ns_resp r;
	int err;

	if (npats > TF_NS_PATS)
		return -EINVAL;
	if (!path)
		return npats ? tf_guard_nft_here(pats, npats, mark) : tf_guard_nft_remove_here();
	err = req_init(&q, npats ? NS_GUARD : NS_UNGUARD, path, cookie);
	if (err)
		return err;
	q.npats = npats;
	q.mark = mark;
	memcpy(q.pats, pats, npats * sizeof(q.pats[0]));
	return ask(&q, -1, &r, NULL);
}

int tf_ns_nsid(const char *path, __u64 cookie, __u32 *nsid)
{
	struct ns_req q;
	struct ns_resp r;
	int err = req_init(&q, NS_NSID, path, cookie) ?: ask(&q, -1, &r, NULL);

	if (!err)
		*nsid = r.n;
	return err;
}

int tf_ns_guard_ensure(const char *path, __u64 cookie, const char (*pats)[16], unsigned int npats,
		       __u32 mark, int *rewritten)
{
	static struct ns_req q;
	struct ns_resp r;
	int err;

	*rewritten = 0;
	if (!npats || npats > TF_NS_PATS)
		return -EINVAL;
	if (!path)
		return tf_guard_nft_ensure_here(pats, npats, mark, rewritten);
	err = req_init(&q, NS_GUARD, path, cookie);
	if (err)
		return err;
	q.npats = npats;
	q.mark = mark;
	q.flags = 1;
	memcpy(q.pats, pats, npats * sizeof(q.pats[0]));
	err = ask(&q, -1, &r, NULL);
	if (!err)
		*rewritten = r.n != 0;
	return err;
}
