// SPDX-License-Identifier: GPL-2.0
/*
 * The guard (docs/guard.md): devices whose names match guard.interfaces,
 * in the daemon's namespace and in those guard.netns names, deny
 * everything unless a session claims them.
 *
 * What makes that hold from a device's first frame is the kernel's: the
 * nftables chains of guard_nft.c, which match each packet's input device
 * by name and pass only what a session's program marked. What this file
 * adds, as RTM_NEWLINK says a device appeared (tf_guard_event()) and
 * once a second (tf_guard_tick()), is the device-level half: tcx
 * guard programs on each matching device no session claims (they drop,
 * count and report at the device, before a tc redirect could take a
 * frame past the nftables chains; bpf/lib/guard.bpf.h), pinned
 * at <pin_dir>/guard/<cookie>-<ifindex>-{in,out} so they outlive the
 * daemon; guarded namespaces that appear (the nftables table is written
 * into each); and the pins of devices that are gone.
 *
 * A session deleted leaves its device to the guard (tf_guard_keep()),
 * matching or not; only `session del --release` on a device no pattern
 * matches leaves it unfiltered.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include "common/log.h"
#include "daemon.h"
#include "netns.h"
#include "tapfence.skel.h"

#define TF_BPF_TCX_INGRESS 46
#define TF_BPF_TCX_EGRESS  47

struct tf_guard_ns {
	char path[TF_PATH_MAX];
	__u64 cookie;
	__s32 nsid; /* the daemon's namespace's id for it (-1: none; found by the once-a-second scan) */
	struct tf_guard_ns *next;
};

static char guard_tag;

void *tf_guard_tag(void)
{
	return &guard_tag;
}

int tf_guard_matches(const struct tf_config *cfg, const char *ifname)
{
	unsigned int i;
	size_t n;

	for (i = 0; i < cfg->nguard_if; i++) {
		n = strlen(cfg->guard_if[i]);
		if (cfg->guard_if[i][n - 1] == '*' ? !strncmp(ifname, cfg->guard_if[i], n - 1) :
						     !strcmp(ifname, cfg->guard_if[i]))
			return 1;
	}
	return 0;
}

static void pin_path(const struct tf_daemon *d, const struct tf_sess_key *dev, const char *dir,
		     char *buf, size_t len)
{
	snprintf(buf, len, "%s/guard/%llu-%u-%s", d->cfg.pin_dir, (unsigned long long)dev->netns,
		 dev->ifindex, dir);
}

static int claimed(const struct tf_daemon *d, const struct tf_sess_key *dev)
{
	const struct tf_sess *s;

	for (s = d->sessions; s; s = s->next)
		if (s->dev.netns == dev->netns && s->dev.ifindex == dev->ifindex)
			return 1;
	return 0;
}

static __u32 prog_id(int fd)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

static __u32 link_prog(int fd)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.prog_id;
}

static const char *const guard_dirs[] = { "out", "in" };

int tf_guard_holds(struct tf_daemon *d, const struct tf_sess_key *dev, int fds[2])
{
	const char *const *dirs = guard_dirs;
	char path[PATH_MAX];
	int i, fd, prog, ok = 1;

	if (fds)
		fds[0] = fds[1] = -1;
	for (i = 0; i < 2 && ok; i++) {
		pin_path(d, dev, dirs[i], path, sizeof(path));
		prog = bpf_program__fd(i ? d->dp.skel->progs.tc_guard_from_guest :
					   d->dp.skel->progs.tc_guard_to_guest);
		fd = bpf_obj_get(path);
		ok = fd >= 0 && tf_dp_link_ifindex(fd) == dev->ifindex;
		/*
		 * A link an earlier run pinned runs that run's program: this
		 * run's from here, as a re-adopted session's links are (one
		 * update, after a restart only), so the chain's head is ours.
		 */
		if (ok && link_prog(fd) != prog_id(prog) && bpf_link_update(fd, prog, NULL)) {
			pr_warn("guard: cannot update `%s' to this run's program: %s\n", path,
				strerror(errno));
			ok = 0;
		}
		if (ok && fds)
			fds[i] = fd;
		else if (fd >= 0)
			close(fd);
	}
	if (!ok && fds) {
		for (i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		fds[0] = fds[1] = -1;
	}
	return ok;
}

void tf_guard_repin(struct tf_daemon *d, const struct tf_sess_key *dev, const int fds[2])
{
	char path[PATH_MAX];
	int i;

	for (i = 0; i < 2; i++) {
		pin_path(d, dev, guard_dirs[i], path, sizeof(path));
		if (fds[i] < 0 || !access(path, F_OK) || !tf_dp_link_ifindex(fds[i]))
			continue;
		if (bpf_obj_pin(fds[i], path))
			pr_warn("guard: cannot pin `%s' again: %s\n", path, strerror(errno));
		else
			pr_warn("guard: `%s' was gone; pinned again from the session's link\n",
				path);
	}
}

/* One guard link, pinned; 0 if it was pinned already. */
static int guard_link(struct tf_daemon *d, const char *netns, const struct tf_sess_key *dev,
		      const char *dir, int prog_fd, __u32 type)
{
	char path[PATH_MAX];
	int fd, err = 0;

	pin_path(d, dev, dir, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		if (tf_dp_link_ifindex(fd) == dev->ifindex) {
			close(fd);
			return 0;
		}
		close(fd);
		unlink(path); /* a device that was at this index once */
	}
	fd = tf_ns_tcx_link(netns, dev, prog_fd, type, 1);
	if (fd < 0)
		return fd;
	if (bpf_obj_pin(fd, path))
		err = -errno;
	if (err) {
		bpf_link_detach(fd);
		pr_warn("guard: cannot pin `%s': %s\n", path, strerror(-err));
	}
	close(fd);
	return err;
}

int tf_guard_keep(struct tf_daemon *d, const char *netns, const struct tf_sess_key *dev)
{
	int err;

	/* Egress first: once ingress denies, nothing new can be answered either. */
	err = guard_link(d, netns, dev, "out", bpf_program__fd(d->dp.skel->progs.tc_guard_to_guest),
			 TF_BPF_TCX_EGRESS);
	if (!err)
		err = guard_link(d, netns, dev, "in",
				 bpf_program__fd(d->dp.skel->progs.tc_guard_from_guest),
				 TF_BPF_TCX_INGRESS);
	return err;
}

static void unpin(struct tf_daemon *d, const struct tf_sess_key *dev)
{
	char path[PATH_MAX];
	int fd;

	pin_path(d, dev, "in", path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		bpf_link_detach(fd);
		close(fd);
	}
	unlink(path);
	pin_path(d, dev, "out", path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		bpf_link_detach(fd);
		close(fd);
	}
	unlink(path);
	bpf_map_delete_elem(bpf_map__fd(d->dp.skel->maps.tf_guard_drops), dev);
}

void tf_guard_release(struct tf_daemon *d, const struct tf_sess_key *dev)
{
	unpin(d, dev);
}

/* The guard programs on every matching device of one namespace that no session claims. */
static void guard_devices(struct tf_daemon *d, const char *netns, __u64 cookie)
{
	static struct tf_ns_dev devs[TF_NS_DEVS];
	struct tf_sess_key dev = { .netns = cookie };
	__u32 n, i;
	int err;

	if (tf_ns_list(netns, netns ? cookie : 0, devs, &n))
		return;
	if (n == TF_NS_DEVS)
		pr_warn("guard: %s has %u devices or more: those past them get no guard programs "
			"(the nftables guard still drops what they bring in)\n",
			netns ? netns : "the daemon's namespace", TF_NS_DEVS);
	for (i = 0; i < n; i++) {
		if (!tf_guard_matches(&d->cfg, devs[i].name))
			continue;
		dev.ifindex = devs[i].ifindex;
		if (claimed(d, &dev))
			continue;
		err = tf_guard_keep(d, netns, &dev);
		if (err && err != -ENODEV)
			pr_warn("guard: cannot attach to `%s'%s%s: %s\n", devs[i].name,
				netns ? " in " : "", netns ? netns : "", strerror(-err));
	}
}

/* Pins of devices that are gone (their links say ifindex 0). */
static void reap(struct tf_daemon *d)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	unsigned long long cookie;
	struct tf_sess_key dev;
	struct dirent *de;
	unsigned int ifindex;
	DIR *dp;
	int fd;

	snprintf(dir, sizeof(dir), "%s/guard", d->cfg.pin_dir);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((de = readdir(dp))) {
		if (sscanf(de->d_name, "%llu-%u-in", &cookie, &ifindex) != 2)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(path);
		/*
		 * Only a link that says its device is gone: a pin that cannot be
		 * opened now (no fd free, no memory) may hold a live device's guard,
		 * and a session judged through it.
		 */
		if (fd < 0)
			continue;
		if (tf_dp_link_ifindex(fd)) {
			close(fd);
			continue;
		}
		close(fd);
		dev = (struct tf_sess_key){ .netns = cookie, .ifindex = ifindex };
		unpin(d, &dev);
	}
	closedir(dp);
}

static struct tf_guard_ns *ns_find(struct tf_daemon *d, const char *path)
{
	struct tf_guard_ns *g;

	for (g = d->guard_ns; g; g = g->next)
		if (!strcmp(g->path, path))
			return g;
	return NULL;
}

/* A namespace file at path: guarded from now on (its nftables table written), if it is one. */
static void ns_consider(struct tf_daemon *d, const char *path)
{
	struct tf_guard_ns *g = ns_find(d, path);
	__u64 cookie;
	int err;

	if (tf_ns_cookie(path, &cookie))
		return; /* not a namespace (yet: `ip netns add' mounts it after creating the file) */
	if (g && g->cookie == cookie)
		return;
	if (cookie == tf_ns_self)
		return; /* the daemon's own: guarded already */
	err = tf_ns_guard(path, cookie, d->cfg.guard_if, d->cfg.nguard_if, d->cfg.guard_mark);
	if (err) {
		pr_warn("guard: cannot write the nftables guard into `%s': %s\n", path,
			strerror(-err));
		return;
	}
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g)
			return;
		snprintf(g->path, sizeof(g->path), "%s", path);
		g->next = d->guard_ns;
		d->guard_ns = g;
	}
	g->cookie = cookie;
	if (tf_ns_nsid(path, cookie, (__u32 *)&g->nsid))
		g->nsid = -1;
	pr_info("guard: namespace `%s' guarded\n", path);
	guard_devices(d, path, cookie);
}

/* Call fn on every namespace path guard.netns names, now. */
static void ns_each(const struct tf_config *cfg, void (*fn)(void *ctx, const char *path), void *ctx)
{
	char dir[TF_PATH_MAX], path[TF_PATH_MAX * 2];
	struct dirent *de;
	unsigned int i;
	size_t n;
	DIR *dp;

	for (i = 0; i < cfg->nguard_netns; i++) {
		n = strlen(cfg->guard_netns[i]);
		if (cfg->guard_netns[i][n - 1] != '*') {
			fn(ctx, cfg->guard_netns[i]);
			continue;
		}
		snprintf(dir, sizeof(dir), "%.*s", (int)(n - 2), cfg->guard_netns[i]);
		dp = opendir(dir);
		if (!dp)
			continue;
		while ((de = readdir(dp))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			fn(ctx, path);
		}
		closedir(dp);
	}
}

static void consider(void *ctx, const char *path)
{
	ns_consider(ctx, path);
}

static void ns_scan(struct tf_daemon *d)
{
	ns_each(&d->cfg, consider, d);
}

static void unguard(void *ctx, const char *path)
{
	(void)ctx;
	tf_ns_guard(path, 0, NULL, 0, 0);
}

void tf_guard_cleanup(const struct tf_config *cfg)
{
	tf_ns_guard(NULL, 0, NULL, 0, 0);
	ns_each(cfg, unguard, NULL);
}

/*
 * RTM_NEWLINK from the daemon's namespace and, through NETLINK_LISTEN_ALL_NSID
 * (set now, while the daemon still has CAP_NET_BROADCAST), from every
 * namespace it has an id for: a new matching device gets its guard
 * programs as soon as the kernel says it exists, not at the next scan.
 */
static int listen_links(struct tf_daemon *d)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &guard_tag };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE),
	    one = 1;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_LISTEN_ALL_NSID, &one, sizeof(one)) ||
	    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		pr_warn("guard: cannot listen for new devices: %s\n", strerror(errno));
		close(fd);
		return -errno;
	}
	d->guard_nl = fd;
	return 0;
}

/* One RTM_NEWLINK: the device it names, if a pattern matches it, gets its guard programs. */
static void new_link(struct tf_daemon *d, const struct nlmsghdr *h, __s32 nsid)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	const struct tf_guard_ns *g = NULL;
	struct tf_sess_key dev = {};
	char name[IF_NAMESIZE] = "";
	const struct rtattr *a;
	int err;

	if (len < 0)
		return;
	for (a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_IFNAME && RTA_PAYLOAD(a) <= sizeof(name))
			snprintf(name, sizeof(name), "%.*s", (int)RTA_PAYLOAD(a),
				 (const char *)RTA_DATA(a));
	if (!name[0] || !tf_guard_matches(&d->cfg, name))
		return;
	if (nsid >= 0) {
		for (g = d->guard_ns; g && g->nsid != nsid; g = g->next)
			;
		if (!g)
			return; /* a namespace the config does not name */
	}
	dev.netns = g ? g->cookie : tf_ns_self;
	dev.ifindex = (__u32)ifi->ifi_index;
	if (claimed(d, &dev))
		return;
	err = tf_guard_keep(d, g ? g->path : NULL, &dev);
	if (err && err != -ENODEV && err != -ESTALE)
		pr_warn("guard: cannot attach to new device `%s'%s%s: %s\n", name, g ? " in " : "",
			g ? g->path : "", strerror(-err));
}

void tf_guard_event(struct tf_daemon *d)
{
	char buf[16384], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct sockaddr_nl from;
	struct msghdr m = { .msg_name = &from, .msg_iov = &iov, .msg_iovlen = 1 };
	struct tf_guard_ns *g;
	struct nlmsghdr *h;
	struct cmsghdr *c;
	int all = 0;
	__s32 nsid;
	ssize_t n;

	for (;;) {
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		m.msg_namelen = sizeof(from);
		n = recvmsg(d->guard_nl, &m, 0);
		if (n < 0 && errno == ENOBUFS) {
			all = 1; /* messages lost: look at everything */
			continue;
		}
		if (n <= 0)
			break;
		/* The kernel's only: a process's message would name any ifindex under a matching name. */
		if (m.msg_namelen != sizeof(from) || from.nl_pid)
			continue;
		nsid = -1;
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_NETLINK && c->cmsg_type == NETLINK_LISTEN_ALL_NSID)
				memcpy(&nsid, CMSG_DATA(c), sizeof(nsid));
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n))
			if (h->nlmsg_type == RTM_NEWLINK)
				new_link(d, h, nsid);
	}
	if (!all)
		return;
	guard_devices(d, NULL, tf_ns_self);
	for (g = d->guard_ns; g; g = g->next)
		guard_devices(d, g->path, g->cookie);
}

int tf_guard_start(struct tf_daemon *d)
{
	char path[PATH_MAX];
	int err;

	/* Every deleted session's device is guarded, with patterns or without. */
	snprintf(path, sizeof(path), "%s/guard", d->cfg.pin_dir);
	if (mkdir(path, 0700) && errno != EEXIST) {
		pr_warn("guard: cannot create `%s': %s\n", path, strerror(errno));
		return -errno;
	}
	if (!d->cfg.nguard_if) {
		/* No patterns now: tables an earlier run wrote here would drop forever. */
		tf_ns_guard(NULL, 0, NULL, 0, 0);
		return 0;
	}
	err = tf_ns_guard(NULL, 0, d->cfg.guard_if, d->cfg.nguard_if, d->cfg.guard_mark);
	if (err) {
		pr_warn("guard: cannot write the nftables guard (a netdev ingress chain with "
			"prefix hooks: kernel 6.16 or later, nf_tables): %s\n",
			strerror(-err));
		return err;
	}
	err = listen_links(d);
	if (err)
		return err;
	/*
	 * The devices and the other namespaces at the first tick, once the
	 * control socket serves: attaching costs two RCU grace periods a
	 * device, and a namespace of hundreds would hold the start for
	 * seconds (the nftables tables cover them meanwhile).
	 */
	pr_info("guard: %u pattern(s), %u namespace path(s) watched\n", d->cfg.nguard_if,
		d->cfg.nguard_netns);
	return 0;
}

/*
 * The tables are checked every second: `nft flush ruleset' (the first line
 * of Debian's /etc/nftables.conf, so any reload of nftables.service)
 * removes them, and the guarantee with them. Missing, they are written
 * again, with a warning and a sealed line.
 */
static void ensure(struct tf_daemon *d, const char *netns, __u64 cookie)
{
	int rewritten, err;

	err = tf_ns_guard_ensure(netns, cookie, d->cfg.guard_if, d->cfg.nguard_if,
				 d->cfg.guard_mark, &rewritten);
	if (err)
		pr_warn("guard: cannot check the nftables guard%s%s: %s\n", netns ? " in " : "",
			netns ? netns : "", strerror(-err));
	else if (rewritten) {
		pr_warn("guard: the nftables guard%s%s was gone (nft flush ruleset?): written again\n",
			netns ? " in " : "", netns ? netns : "");
		tf_audit_note(d, "guard", "\"rewritten\":\"%s\"",
			      !netns		     ? "" :
			      strpbrk(netns, "\"\\") ? "(a path JSON would need escaped)" :
						       netns);
	}
}

void tf_guard_tick(struct tf_daemon *d)
{
	struct tf_guard_ns **pp, *g;
	time_t now = time(NULL);
	__u64 cookie;
	int err;

	if (now == d->guard_ticked)
		return;
	d->guard_ticked = now;
	reap(d);
	if (!d->cfg.nguard_if)
		return;
	for (pp = &d->guard_ns; (g = *pp);) {
		err = tf_ns_cookie(g->path, &cookie);
		/* Gone, or another namespace now; not a broker that is gone (it reports no more). */
		if (err == -ENOENT || err == -ENOTNAM || (!err && cookie != g->cookie)) {
			pr_info("guard: namespace `%s' is gone\n", g->path);
			*pp = g->next;
			free(g);
			continue;
		}
		pp = &g->next;
	}
	ns_scan(d);
	ensure(d, NULL, tf_ns_self);
	guard_devices(d, NULL, tf_ns_self);
	for (g = d->guard_ns; g; g = g->next) {
		ensure(d, g->path, g->cookie);
		guard_devices(d, g->path, g->cookie);
	}
}

void tf_guard_close(struct tf_daemon *d)
{
	struct tf_guard_ns *g;

	if (d->guard_nl >= 0)
		close(d->guard_nl);
	d->guard_nl = -1;
	while ((g = d->guard_ns)) {
		d->guard_ns = g->next;
		free(g);
	}
}

static __u64 drops_of(struct tf_daemon *d, const struct tf_sess_key *dev)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 v[512] = {}, sum = 0;

	if (ncpu <= 0 || ncpu > 512 ||
	    bpf_map_lookup_elem(bpf_map__fd(d->dp.skel->maps.tf_guard_drops), dev, v))
		return 0;
	for (i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

static void list_ns(struct tf_daemon *d, const char *netns, __u64 cookie, json_t *arr)
{
	static struct tf_ns_dev devs[TF_NS_DEVS];
	struct tf_sess_key dev = { .netns = cookie };
	const struct tf_sess *s;
	char path[PATH_MAX];
	__u32 n, i;

	if (tf_ns_list(netns, netns ? cookie : 0, devs, &n))
		return;
	for (i = 0; i < n; i++) {
		if (!tf_guard_matches(&d->cfg, devs[i].name))
			continue;
		dev.ifindex = devs[i].ifindex;
		for (s = d->sessions; s; s = s->next)
			if (s->dev.netns == dev.netns && s->dev.ifindex == dev.ifindex)
				break;
		pin_path(d, &dev, "in", path, sizeof(path));
		json_array_append_new(arr, json_pack("{s:s, s:s*, s:I, s:s*, s:b, s:I}", "ifname",
						     devs[i].name, "netns", netns, "ifindex",
						     (json_int_t)dev.ifindex, "session",
						     s ? s->spec.id : NULL, "programs",
						     !access(path, F_OK), "dropped",
						     (json_int_t)drops_of(d, &dev)));
	}
}

json_t *tf_guard_list(struct tf_daemon *d)
{
	json_t *arr = json_array();
	struct tf_guard_ns *g;

	if (!d->cfg.nguard_if)
		return arr;
	list_ns(d, NULL, tf_ns_self, arr);
	for (g = d->guard_ns; g; g = g->next)
		list_ns(d, g->path, g->cookie, arr);
	return arr;
}
