// SPDX-License-Identifier: GPL-2.0
/*
 * tapfenced: loads the datapath, re-adopts saved sessions, serves the
 * control socket and drains the event ringbuf. On SIGTERM/SIGINT it exits
 * and leaves enforcement pinned; only `tapfence session del' and
 * `tapfenced --cleanup' remove it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <jansson.h>

#include "common/log.h"
#include "daemon.h"
#include "netns.h"

#define BPF_FS_MAGIC 0xcafe4a11

static const char usage[] =
	"Usage: tapfenced [--config FILE] [--foreground] [--verbose] [--cleanup [--force]]\n"
	"       tapfenced --check-config FILE | --version\n"
	"  --config FILE   operator settings (JSON); defaults are built in\n"
	"  --foreground    also print events to stdout\n"
	"  --verbose       debug logging (libbpf included)\n"
	"  --cleanup       remove every session, pin and attachment, then exit;\n"
	"                  refused while a daemon runs on the same state or pin dir\n"
	"  --force         with --cleanup: even then (for a wedged daemon)\n"
	"  --check-config FILE  validate FILE as the daemon would, then exit 0 (valid) or 1\n"
	"  --version       print the version and the datapath ABI, then exit\n";

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "re");
	long n;
	int err = 0;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		err = -EIO;
		goto cleanup;
	}
	*buf = malloc(n + 1);
	if (!*buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	*len = fread(*buf, 1, n, f);
	(*buf)[*len] = 0;
cleanup:
	fclose(f);
	return err;
}

static int load_config(const char *path, struct tf_config *cfg)
{
	char err[TF_ERR_MAX] = "", *buf = NULL;
	size_t len = 0;
	int ret;

	tf_config_defaults(cfg);
	if (!path)
		return 0;
	ret = read_file(path, &buf, &len);
	if (ret) {
		pr_warn("cannot read config `%s': %s\n", path, strerror(-ret));
		return ret;
	}
	ret = tf_config_parse(buf, len, cfg, err, sizeof(err));
	if (ret)
		pr_warn("config `%s': %s\n", path, err);
	free(buf);
	return ret;
}

static int same_mount_ns(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/mnt", &self) || stat("/proc/1/ns/mnt", &init))
		return 0;
	return self.st_ino == init.st_ino && self.st_dev == init.st_dev;
}

/* The pin dir must be on a bpffs; /sys/fs/bpf is mounted if it is not yet. */
static int ensure_bpffs(const char *pin_dir)
{
	char dir[PATH_MAX], *slash;
	struct statfs st;

	snprintf(dir, sizeof(dir), "%s", pin_dir);
	while (statfs(dir, &st)) {
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return -ENOENT;
		*slash = 0;
	}
	if (st.f_type == BPF_FS_MAGIC) {
		/* libxdp (XDP mode) keeps its own pins on the same bpffs. */
		setenv("LIBXDP_BPFFS", dir, 0);
		return 0;
	}
	if (!strncmp(pin_dir, "/sys/fs/bpf/", 12) && !strcmp(dir, "/sys/fs/bpf")) {
		/*
		 * A bpffs mounted in a private mount namespace (`ip netns exec'
		 * makes one) dies with it, and with it the pins: enforcement would
		 * not outlive the daemon. Refuse rather than fail open later.
		 */
		if (!same_mount_ns()) {
			pr_warn("/sys/fs/bpf is not a bpffs and this is a private mount namespace: "
				"pins made here would vanish with the daemon. Mount bpffs outside "
				"(mount -t bpf bpf /sys/fs/bpf) or set pin_dir to a bpffs that is\n");
			return -EPERM;
		}
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
			pr_warn("cannot mount bpffs on /sys/fs/bpf: %s\n", strerror(errno));
			return -errno;
		}
		setenv("LIBXDP_BPFFS", "/sys/fs/bpf", 0);
		return 0;
	}
	pr_warn("pin_dir `%s' is not on a bpffs (mount one, or use /sys/fs/bpf/...)\n", pin_dir);
	return -ENOTSUP;
}

/*
 * chmod a directory, not what a symlink in its place points to: with a
 * dedicated user, the state and pin dirs belong to that user, who could
 * put a link there for root to follow at the next start.
 */
static int chmod_dir(const char *path, mode_t mode)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode))
		err = -errno;
	close(fd);
	return err;
}

/* path and its parents (0755); path itself mode (0: as it is, 0755 if made). */
static int mkdirs(const char *path, mode_t mode)
{
	char tmp[PATH_MAX], *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			if (mkdir(tmp, 0755) && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	}
	if (mkdir(tmp, mode ? mode : 0755) && errno != EEXIST)
		return -errno;
	return mode ? chmod_dir(tmp, mode) : 0;
}

/*
 * Call fn(dfd, name, path) for every entry of dir but the hidden ones: dfd
 * is dir, opened without following a symlink in its place (with a
 * dedicated user the pin and state dirs' entries are that user's, who
 * could point one at a directory of root's), and path names the entry
 * through dfd (/proc/self/fd/<dfd>/<name>), for calls that take a path.
 */
static void dir_each(const char *dir, void (*fn)(int dfd, const char *name, const char *path))
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char path[64 + NAME_MAX];
	struct dirent *de;
	DIR *dp = dfd < 0 ? NULL : fdopendir(dfd);

	if (!dp) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, de->d_name);
		fn(dfd, de->d_name, path);
	}
	closedir(dp);
}

static void rm_file(int dfd, const char *name, const char *path)
{
	(void)path;
	unlinkat(dfd, name, 0);
}

/*
 * A pinned link: detached, then its pin removed. A pin is a regular file of
 * bpffs, opened here (O_PATH, not followed) and got through that fd, so an
 * entry swapped meanwhile is never the one detached; anything else is only
 * unlinked.
 */
static void rm_link(int dfd, const char *name, const char *path)
{
	int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), fd = -1;
	char self[64];
	struct stat st;

	if (pfd >= 0 && !fstat(pfd, &st) && S_ISREG(st.st_mode)) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = bpf_obj_get(self);
	}
	if (pfd >= 0)
		close(pfd);
	if (fd >= 0) {
		bpf_link_detach(fd);
		close(fd);
	}
	rm_file(dfd, name, path);
}

/* dir's entries (not followed), then dir itself (a symlink in its place: only the link). */
static void rm_dir_entries(const char *dir, int detach_links)
{
	dir_each(dir, detach_links ? rm_link : rm_file);
	if (rmdir(dir) && errno == ENOTDIR)
		unlink(dir);
}

/* Detach our XDP program from the device of one saved session. */
static void xdp_detach_saved(int dfd, const char *name, const char *path)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	json_t *o = fd < 0 ? NULL : json_loadfd(fd, 0, NULL);
	const char *ifname =
		json_string_value(json_object_get(json_object_get(o, "spec"), "ifname"));
	unsigned int ifindex = ifname ? if_nametoindex(ifname) : 0;

	(void)path;
	if (fd >= 0)
		close(fd);
	if (ifindex)
		tf_dp_xdp_detach(ifindex);
	json_decref(o);
}

/* XDP attachments are not pinned: find their devices through the saved sessions. */
static void cleanup_xdp(const struct tf_config *cfg)
{
	char dir[PATH_MAX + 16];

	snprintf(dir, sizeof(dir), "%s/sessions", cfg->state_dir);
	dir_each(dir, xdp_detach_saved);
}

/* Detach every pinned link, drop every pinned map, forget every session. */
static int cleanup_all(const struct tf_config *cfg)
{
	char path[PATH_MAX + 16];

	cleanup_xdp(cfg);

	snprintf(path, sizeof(path), "%s/links", cfg->pin_dir);
	rm_dir_entries(path, 1);
	snprintf(path, sizeof(path), "%s/guard", cfg->pin_dir);
	rm_dir_entries(path, 1);
	tf_guard_cleanup(cfg);
	snprintf(path, sizeof(path), "%s/slots", cfg->pin_dir);
	rm_dir_entries(path, 0);
	snprintf(path, sizeof(path), "%s/maps", cfg->pin_dir);
	rm_dir_entries(path, 0);
	rmdir(cfg->pin_dir);
	snprintf(path, sizeof(path), "%s/sessions", cfg->state_dir);
	rm_dir_entries(path, 0);
	pr_info("removed all enforcement under %s\n", cfg->pin_dir);
	return 0;
}

/* getpwnam()/getgrnam() leave errno 0 or one of these for a name that is not there (POSIX). */
static const char *lookup_error(const char *missing)
{
	return (!errno || errno == ENOENT || errno == ESRCH || errno == EBADF || errno == EPERM) ?
		       missing :
		       strerror(errno);
}

/* What a child exits with when it could not become the user. */
#define NOT_USER 255

/*
 * With "user", the daemon rotates its event log as that user (link, create,
 * list and remove in the log's directory, then compress and remove old
 * segments). 0 if the user may, as the kernel decides it for the user
 * itself (mode bits, ACLs), in a child that becomes the user, or if the
 * directory is the state dir (the daemon gives it to the user, give_dirs());
 * -errno why not; 1 if this process cannot tell (it is not root).
 */
static int log_dir_usable(const struct tf_config *cfg, const struct passwd *pw, char *dir,
			  size_t len)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;
	char state[TF_PATH_MAX], *slash;
	struct stat ls, ss;
	int st, err = 0;
	pid_t pid, got;

	tf_audit_dir(cfg, dir, len);
	snprintf(state, sizeof(state), "%s", cfg->state_dir);
	for (slash = state + strlen(state); slash > state + 1 && slash[-1] == '/'; slash--)
		slash[-1] = 0;
	/* The same directory however it is spelt ("dir/.", a link to it), or by name before it exists. */
	if (!strcmp(dir, state) || (!stat(dir, &ls) && !stat(state, &ss) &&
				    ls.st_dev == ss.st_dev && ls.st_ino == ss.st_ino))
		return 0;
	if (geteuid())
		return 1;
	/* An ignored SIGCHLD, inherited, would reap the child before waitpid() sees it. */
	sigaction(SIGCHLD, &dfl, &old);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
	} else if (!pid) {
		if (setgroups(0, NULL) || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid))
			_exit(NOT_USER);
		_exit(access(dir, R_OK | W_OK | X_OK) ? errno : 0);
	} else {
		while ((got = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
			;
		if (got != pid)
			err = -errno;
		else if (!WIFEXITED(st) || WEXITSTATUS(st) == NOT_USER)
			err = -ECHILD; /* the check itself failed: refused all the same */
		else
			err = -WEXITSTATUS(st);
	}
	sigaction(SIGCHLD, &old, NULL);
	return err;
}

/*
 * The accounts the config names, resolved before anything is touched: a
 * typo must not be found only after every session was re-adopted.
 */
static int check_accounts(const struct tf_config *cfg)
{
	char dir[TF_PATH_MAX];
	struct passwd *pw;
	int err;

	if (cfg->user[0]) {
		errno = 0;
		pw = getpwnam(cfg->user);
		if (!pw) {
			pr_warn("config user: `%s': %s\n", cfg->user, lookup_error("no such user"));
			return -ENOENT;
		}
		if (pw->pw_uid == 0) {
			pr_warn("config user: `%s' is uid 0: name a dedicated user\n", cfg->user);
			return -EINVAL;
		}
		err = cfg->log_segment_bytes || cfg->log_segment_age_s ?
			      log_dir_usable(cfg, pw, dir, sizeof(dir)) :
			      0;
		if (err > 0)
			pr_info("config user: whether user `%s' may rotate the log in `%s' is "
				"checked only as root\n",
				cfg->user, dir);
		if (err < 0) {
			pr_warn("config user: the daemon rotates `%s' itself (log.segment_bytes, "
				"log.segment_age_s) and must create and list files in `%s' as user "
				"`%s', which it cannot: %s (make the directory the user's, or set "
				"both to 0 and rotate the log with logrotate: docs/operations.md)\n",
				cfg->event_log, dir, cfg->user, strerror(-err));
			return err;
		}
	}
	if (cfg->socket_group[0]) {
		errno = 0;
		if (!getgrnam(cfg->socket_group)) {
			pr_warn("config socket_group: `%s': %s\n", cfg->socket_group,
				lookup_error("no such group"));
			return -ENOENT;
		}
	}
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return tf_log_libbpf(level, fmt, ap);
}

static int signal_fd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* SIGHUP reopens the event log (after rotation); SIGTERM/SIGINT stop. Returns 1 to stop. */
static int on_signal(struct tf_daemon *d, int sfd)
{
	struct signalfd_siginfo si;

	if (read(sfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo != SIGHUP)
		return 1;
	tf_notify("RELOADING=1");
	if (tf_events_reopen(d))
		pr_warn("SIGHUP: cannot reopen the event log; still writing the old one\n");
	else
		pr_info("SIGHUP: event log reopened\n");
	tf_notify("READY=1\nSTATUS=serving %u sessions; event log reopened", d->nsessions);
	return 0;
}

static int run(struct tf_daemon *d)
{
	static char sig_tag, rb_tag, host_tag;
	struct epoll_event ev, evs[32];
	__u64 now, owed = 0; /* a drain is owed at this time (0: none) */
	int sfd, n, i, stop = 0, host, timeout;

	sfd = signal_fd();
	if (sfd < 0)
		return sfd;
	ev.events = EPOLLIN;
	ev.data.ptr = &sig_tag;
	epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.ptr = &rb_tag;
	epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(d->rb), &ev);
	ev.data.ptr = &host_tag;
	epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->host.fd, &ev);

	pr_info("ready: %u sessions, control socket %s\n", d->nsessions, d->cfg.control_socket);
	/* Only now: the socket serves and every saved session is re-adopted (or reported). */
	tf_notify("READY=1\nSTATUS=serving %u sessions on %s\nMAINPID=%d", d->nsessions,
		  d->cfg.control_socket, (int)getpid());
	while (!stop) {
		now = tf_now_ms();
		timeout = TF_TICK_MS;
		if (owed)
			timeout = owed > now ? (int)(owed - now) : 0;
		n = epoll_wait(d->epoll_fd, evs, 32, timeout);
		if (n < 0 && errno != EINTR)
			break;
		host = 0;
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &sig_tag)
				stop = on_signal(d, sfd);
			else if (evs[i].data.ptr == &host_tag)
				host = 1;
			else if (evs[i].data.ptr == tf_guard_tag())
				tf_guard_event(d);
			else if (evs[i].data.ptr != &rb_tag)
				tf_ctl_event(d, evs[i].data.ptr, evs[i].events);
		}
		tf_host_event(d, host);
		/* Owed from the drain's end: what it read may have come in while it ran. */
		now = tf_now_ms();
		if (tf_events_drain(d) > 0)
			owed = tf_now_ms() + TF_LINGER_MS;
		else if (tf_events_pending(d)) /* a record reserved, not committed: soon again */
			owed = tf_now_ms() + 1;
		else if (now >= owed)
			owed = 0;
		tf_attest_tick(d);
		tf_ctl_tick(d);
		tf_sess_tick(d);
		tf_guard_tick(d);
		tf_metrics_tick(d);
		tf_ctl_flush_events(d); /* what the ticks sealed (checkpoints, notes) */
		tf_ctl_reap(d);
	}
	pr_info("stopping; enforcement stays in place (pinned under %s)\n", d->cfg.pin_dir);
	tf_notify("STOPPING=1\nSTATUS=stopped; enforcement stays in place");
	close(sfd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = { { "config", required_argument, NULL, 'c' },
						  { "foreground", no_argument, NULL, 'f' },
						  { "verbose", no_argument, NULL, 'v' },
						  { "cleanup", no_argument, NULL, 'C' },
						  { "force", no_argument, NULL, 'F' },
						  { "help", no_argument, NULL, 'h' },
						  { "check-config", required_argument, NULL, 'K' },
						  { "version", no_argument, NULL, 'V' },
						  {} };
	static struct tf_daemon d;
	const char *config = NULL;
	char path[PATH_MAX + 16];
	int opt, cleanup = 0, force = 0, ret = 1;
	struct tf_lock lock;
	struct tf_reclaim reclaim;

	tf_lock_init(&lock);
	while ((opt = getopt_long(argc, argv, "c:fvCFh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'K':
			/* The same parser and messages as a start (and its account checks), nothing touched. */
			if (load_config(optarg, &d.cfg) || check_accounts(&d.cfg))
				return 1;
			printf("config `%s': valid\n", optarg);
			return 0;
		case 'V':
			printf("tapfenced %s (abi %d)\n", TF_VERSION, TF_ABI_VERSION);
			return 0;
		case 'c':
			config = optarg;
			break;
		case 'f':
			d.foreground = 1;
			break;
		case 'v':
			tf_log_set_level(TF_LOG_DEBUG);
			break;
		case 'C':
			cleanup = 1;
			break;
		case 'F':
			force = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 64;
		}
	}
	if (optind != argc || (force && !cleanup)) {
		fputs(usage, stderr);
		return 64;
	}
	libbpf_set_print(libbpf_print);
	if (load_config(config, &d.cfg))
		return 1;
	if (cleanup) {
		if (force)
			pr_warn("--force: not asking whether a daemon still runs\n");
		else if (tf_lock_take(&d.cfg, &lock, 1))
			return 1;
		ret = tf_ns_init(1) || cleanup_all(&d.cfg) ? 1 : 0;
		tf_ns_stop();
		tf_lock_release(&lock);
		return ret;
	}

	d.listen_fd = d.spare_fd = -1;
	d.epoll_fd = -1;
	d.host.fd = -1;
	d.guard_nl = -1;
	d.started = time(NULL);
	if (tf_kernel_check())
		return 1;
	if (check_accounts(&d.cfg))
		return 1;
	if (ensure_bpffs(d.cfg.pin_dir))
		return 1;
	/* Only what finds a running daemon's lock before the lock: the rest could be its. */
	if (tf_caps_reclaim_top(&d.cfg, &reclaim))
		return 1;
	if (mkdirs(d.cfg.state_dir, 0) || mkdirs(d.cfg.pin_dir, 0700)) {
		pr_warn("cannot create state dir `%s' or pin dir `%s': %s\n", d.cfg.state_dir,
			d.cfg.pin_dir, strerror(errno));
		return 1;
	}
	/* Before the socket, the pins or a session is touched: one daemon per set of them. */
	if (tf_lock_take(&d.cfg, &lock, 0)) {
		tf_caps_reclaim_undo(&d.cfg, &reclaim);
		return 1;
	}
	if (tf_caps_reclaim(&d.cfg))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/sessions", d.cfg.state_dir);
	if (mkdirs(path, 0700)) {
		pr_warn("cannot create state dir `%s': %s\n", path, strerror(errno));
		goto cleanup;
	}
	/* Before anything is restored (sessions in other namespaces need it) or dropped. */
	if (tf_ns_init(1))
		goto cleanup;
	if (tf_fd_budget(&d.cfg))
		goto cleanup;
	d.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d.epoll_fd < 0)
		goto cleanup;
	if (tf_dp_open(&d.dp, &d.cfg, 1))
		goto cleanup;
	if (tf_host_start(&d))
		goto cleanup;
	if (tf_events_open(&d))
		goto cleanup;
	if (tf_attest_init(&d, config))
		goto cleanup;
	tf_notify("STATUS=re-adopting saved sessions");
	tf_sess_restore(&d);
	tf_sess_reconcile(&d);
	if (tf_guard_start(&d))
		goto cleanup;
	tf_attest_restore(&d);
	if (tf_ctl_open(&d))
		goto cleanup;
	if (tf_caps_drop(&d.cfg))
		goto cleanup;
	/* After the drop: the threads have only what the daemon kept. */
	ret = tf_dp_pool_start(&d.dp);
	if (ret) {
		pr_warn("cannot start the slot pool's thread: %s\n", strerror(-ret));
		ret = 1;
		goto cleanup;
	}
	ret = tf_audit_start(&d);
	if (ret) {
		pr_warn("cannot start the event log's tree thread: %s\n", strerror(-ret));
		ret = 1;
		goto cleanup;
	}
	ret = tf_ctl_start(&d);
	if (ret) {
		pr_warn("cannot start the event feed's sender thread: %s\n", strerror(-ret));
		ret = 1;
		goto cleanup;
	}
	ret = run(&d) ? 1 : 0;
cleanup:
	tf_ctl_close(&d);
	tf_attest_close(&d);
	tf_events_close(&d);
	tf_sess_fold_all(&d);
	tf_sess_forget_all(&d);
	tf_guard_close(&d);
	tf_ns_stop();
	tf_host_close(&d.host);
	tf_dp_close(&d.dp);
	if (d.epoll_fd >= 0)
		close(d.epoll_fd);
	tf_lock_release(&lock);
	return ret;
}
