// SPDX-License-Identifier: GPL-2.0
/*
 * One daemon per state dir, pin dir and control socket, and enough file
 * descriptors for the sessions it may hold (docs/operations.md).
 *
 * The locks are flock()s held for the daemon's life: the kernel drops them
 * when the process ends, however it ends, so there is no stale pid file to
 * reason about. flock works on a directory fd, also on bpffs (which holds
 * only pins and directories, no lock file), so the pin dir is locked
 * through its own fd. Every fd is O_CLOEXEC; the daemon never forks, so no
 * child holds a lock after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon.h"

/* The pid holding an flock on fd's file, from /proc/locks; 0 if not found. */
static int lock_holder(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], kind[16];
	struct stat st;
	FILE *f;
	int pid, found = 0;

	if (fstat(fd, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", kind, &pid, &maj, &min, &ino) ==
			    5 &&
		    !strcmp(kind, "FLOCK") && maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == st.st_ino)
			found = pid;
	}
	fclose(f);
	return found;
}

/* flock path (opened with flags) or say which daemon holds it. The fd or -errno. */
static int lock_one(const char *what, const char *path, int flags, int cleanup)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0600), pid, err;
	char buf[16] = "";

	if (fd < 0) {
		err = -errno;
		pr_warn("cannot open `%s' to lock %s: %s\n", path, what, strerror(-err));
		return err;
	}
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return fd;
	err = -errno;
	pid = err == -EWOULDBLOCK ? lock_holder(fd) : 0;
	/* Not in /proc/locks (another pid namespace's daemon): the pid it wrote, if any. */
	if (!pid && !(flags & O_DIRECTORY) && pread(fd, buf, sizeof(buf) - 1, 0) > 0)
		pid = atoi(buf);
	close(fd);
	if (err != -EWOULDBLOCK) {
		pr_warn("cannot lock `%s': %s\n", path, strerror(-err));
		return err;
	}
	if (cleanup)
		pr_warn("%s is in use by a running tapfenced (pid %d, lock `%s'): stop it first; "
			"--cleanup --force removes its enforcement anyway, for a daemon that is "
			"wedged\n",
			what, pid, path);
	else
		pr_warn("%s is in use by another tapfenced (pid %d, lock `%s'): one daemon per "
			"state dir, pin dir and control socket\n",
			what, pid, path);
	return -EBUSY;
}

void tf_lock_init(struct tf_lock *l)
{
	l->state_fd = l->pin_fd = l->sock_fd = -1;
}

int tf_lock_take(const struct tf_config *cfg, struct tf_lock *l, int cleanup)
{
	char path[PATH_MAX + 16], what[PATH_MAX + 32], *slash;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/" TF_LOCK_FILE, cfg->state_dir);
	snprintf(what, sizeof(what), "state_dir `%s'", cfg->state_dir);
	if (cleanup && stat(cfg->state_dir, &st))
		fd = -ENOENT; /* nothing to clean there, nobody to ask */
	else
		fd = lock_one(what, path, O_RDWR | O_CREAT, cleanup);
	if (fd < 0 && fd != -ENOENT)
		goto fail;
	l->state_fd = fd;

	snprintf(what, sizeof(what), "pin_dir `%s'", cfg->pin_dir);
	if (cleanup && stat(cfg->pin_dir, &st))
		fd = -ENOENT;
	else
		fd = lock_one(what, cfg->pin_dir, O_RDONLY | O_DIRECTORY, cleanup);
	if (fd < 0 && fd != -ENOENT)
		goto fail;
	l->pin_fd = fd;

	/* --cleanup never touches the socket: only the daemon that serves it needs its lock. */
	if (!cleanup) {
		snprintf(path, sizeof(path), "%s", cfg->control_socket);
		slash = strrchr(path, '/');
		if (slash && slash != path) {
			*slash = 0;
			if (mkdir(path, 0755) && errno != EEXIST) {
				fd = -errno;
				pr_warn("cannot create `%s': %s\n", path, strerror(-fd));
				goto fail;
			}
		}
		snprintf(path, sizeof(path), "%s.lock", cfg->control_socket);
		snprintf(what, sizeof(what), "control_socket `%s'", cfg->control_socket);
		fd = lock_one(what, path, O_RDWR | O_CREAT, 0);
		if (fd < 0)
			goto fail;
		l->sock_fd = fd;
	}
	/* The pid, for an operator reading the lock file (the lock itself is what counts). */
	if (l->state_fd >= 0 && !cleanup &&
	    (ftruncate(l->state_fd, 0) || dprintf(l->state_fd, "%d\n", (int)getpid()) < 0))
		pr_warn("cannot write the pid into `%s/" TF_LOCK_FILE "': %s\n", cfg->state_dir,
			strerror(errno));
	return 0;
fail:
	tf_lock_release(l);
	return fd;
}

void tf_lock_release(struct tf_lock *l)
{
	if (l->state_fd >= 0)
		close(l->state_fd);
	if (l->pin_fd >= 0)
		close(l->pin_fd);
	if (l->sock_fd >= 0)
		close(l->sock_fd);
	tf_lock_init(l);
}

unsigned long tf_fd_need(const struct tf_config *cfg)
{
	return (unsigned long)TF_FDS_PER_SESSION * cfg->max_sessions + cfg->max_clients +
	       TF_FDS_BASE;
}

int tf_fd_budget(const struct tf_config *cfg)
{
	unsigned long need = tf_fd_need(cfg), fit;
	struct rlimit rl, want;
	char lower[64] = "";
	int err;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= need)
		return 0;
	want.rlim_cur = need;
	want.rlim_max = rl.rlim_max >= need ? rl.rlim_max : need;
	/* Raising the hard limit needs CAP_SYS_RESOURCE, still held here (caps drop later). */
	if (!setrlimit(RLIMIT_NOFILE, &want)) {
		pr_info("file descriptor limit raised from %lu (hard %lu) to %lu (hard %lu) for "
			"limits.max_sessions %u\n",
			(unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max, need,
			(unsigned long)want.rlim_max, cfg->max_sessions);
		return 0;
	}
	err = errno;
	fit = rl.rlim_max > TF_FDS_BASE + cfg->max_clients ?
		      (rl.rlim_max - TF_FDS_BASE - cfg->max_clients) / TF_FDS_PER_SESSION :
		      0;
	if (fit)
		snprintf(lower, sizeof(lower), ", or lower limits.max_sessions to %lu", fit);
	pr_warn("limits.max_sessions %u needs %lu file descriptors (%u per session, %u for "
		"limits.max_clients %u, %u for the daemon) but the limit is %lu (hard %lu) and "
		"cannot be raised (%s): set LimitNOFILE=%lu in the unit or ulimit -n %lu%s\n",
		cfg->max_sessions, need, TF_FDS_PER_SESSION, cfg->max_clients, cfg->max_clients,
		TF_FDS_BASE, (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max, strerror(err),
		need, need, lower);
	return -EMFILE;
}
