// SPDX-License-Identifier: GPL-2.0
/*
 * Capabilities: once the programs are loaded, the sessions re-adopted and
 * the control socket bound, tapfenced keeps only what session add, rule
 * changes and detaching still need (docs/security.md):
 *   CAP_BPF        map updates, bpf_map_create for flow tables, link ops
 *   CAP_NET_ADMIN  attaching tcx links and XDP programs to new devices
 *   CAP_PERFMON    libxdp loads its dispatcher when XDP mode attaches; the
 *                  TLS reader's programs were verified as a perfmon loader's
 * Everything else leaves the effective, permitted, inheritable and
 * bounding sets, and no_new_privs is set. With "user" in the config the
 * daemon also becomes that user (its primary group, no supplementary
 * groups), keeping those three capabilities across the switch; the
 * directories it still writes are handed to it first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/capability.h>

#include "common/log.h"
#include "daemon.h"

static const cap_value_t keep[] = { CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON };

/*
 * path now belongs to uid:gid, if it exists: the file or directory itself,
 * never what a symlink in its place points to (the user owns these dirs
 * between starts and could put one there for root to follow).
 */
static int give(const char *path, uid_t uid, gid_t gid)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), err = 0;
	struct stat st;

	if (fd < 0)
		return errno == ENOENT ?
			       0 :
			       (pr_warn("cannot open `%s': %s\n", path, strerror(errno)), -errno);
	/* A directory, or a file of its own: not a hard link to a file elsewhere. */
	if (fstat(fd, &st) || !(S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_nlink == 1))) {
		pr_warn("`%s' is not a directory or a file of its own: not handed to uid %u\n",
			path, uid);
		close(fd);
		return -EPERM;
	}
	if (fchown(fd, uid, gid)) {
		err = -errno;
		pr_warn("cannot hand `%s' to uid %u: %s\n", path, uid, strerror(-err));
	}
	close(fd);
	return err;
}

/*
 * Directory path and the files in it (not followed) now belong to
 * uid:gid: the pins and session files the start made as root, which the
 * daemon opens, replaces and removes from then on. Only regular files
 * with one link: a hard link the user made to a file elsewhere is not
 * handed over with them.
 */
static int give_all(const char *path, uid_t uid, gid_t gid)
{
	/* Opened while still root's: root without CAP_DAC_OVERRIDE cannot read the user's. */
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err = 0;
	struct dirent *e;
	struct stat st;
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);

	if (!d) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		if (err == -ENOENT)
			return 0;
		pr_warn("cannot open `%s': %s\n", path, strerror(-err));
		return err;
	}
	while (!err && (e = readdir(d))) {
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_nlink != 1)
			continue;
		if (fchownat(dfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW)) {
			err = -errno;
			pr_warn("cannot hand `%s/%s' to uid %u: %s\n", path, e->d_name, uid,
				strerror(-err));
		}
	}
	if (!err && fchown(dfd, uid, gid)) {
		err = -errno;
		pr_warn("cannot hand `%s' to uid %u: %s\n", path, uid, strerror(-err));
	}
	closedir(d);
	return err;
}

/*
 * What the daemon writes after start-up: session files and evidence
 * (evidence/) in the state dir, link pins under pin_dir/links and pin_dir/guard, slot table pins under
 * pin_dir/slots, the event log (reopened on SIGHUP). Both dirs are
 * tapfence's own; the log's directory is not touched (a rotation must
 * create the new file for the user, docs/operations.md).
 */
static int give_dirs(const struct tf_config *cfg, uid_t uid, gid_t gid)
{
	static const char *const pin_subdirs[] = { "links", "guard", "slots" };
	char path[PATH_MAX];
	size_t i;
	int err;

	/* Each directory after what is in it: root cannot get into the user's (no CAP_DAC_OVERRIDE). */
	snprintf(path, sizeof(path), "%s/sessions", cfg->state_dir);
	err = give_all(path, uid, gid);
	snprintf(path, sizeof(path), "%s/evidence", cfg->state_dir);
	err = err ?: give_all(path, uid, gid);
	err = err ?: give(cfg->state_dir, uid, gid);
	for (i = 0; i < sizeof(pin_subdirs) / sizeof(pin_subdirs[0]) && !err; i++) {
		snprintf(path, sizeof(path), "%s/%s", cfg->pin_dir, pin_subdirs[i]);
		err = give_all(path, uid, gid);
	}
	err = err ?: give(cfg->pin_dir, uid, gid);
	return err ?: give(cfg->event_log, uid, gid);
}

/*
 * Entry name of directory dfd, if another uid owns it, back to root: a
 * directory (mode 0700, its ACLs gone: no one else may add to it while
 * root works in it) or a regular file with one link by a change of owner
 * (the group as it was: an operator's choice, or the user's group, which
 * could read it until now anyway); anything else the user left there (a
 * symlink root would follow, a FIFO a read would block on, a hard link to
 * a file elsewhere) is removed. *st: what it is now. 0 or -errno.
 */
static int take(int dfd, const char *name, const char *path, struct stat *st)
{
	static const char *const acls[] = { "system.posix_acl_access", "system.posix_acl_default" };
	int fd, err = 0;
	size_t i;

	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? -ENOENT : -errno;
	if (!st->st_uid)
		return 0;
	if (!S_ISDIR(st->st_mode) && !(S_ISREG(st->st_mode) && st->st_nlink == 1)) {
		pr_warn("`%s': not a directory or a file of its own, owned by uid %u: removed\n",
			path, st->st_uid);
		st->st_mode = 0;
		return unlinkat(dfd, name, 0) ? -errno : 0;
	}
	if (fchownat(dfd, name, 0, (gid_t)-1, AT_SYMLINK_NOFOLLOW)) {
		err = -errno;
		pr_warn("cannot take `%s' back from uid %u: %s\n", path, st->st_uid,
			strerror(-err));
		return err;
	}
	if (!S_ISDIR(st->st_mode))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0700))
		err = -errno;
	for (i = 0; !err && i < sizeof(acls) / sizeof(acls[0]); i++)
		if (fremovexattr(fd, acls[i]) && errno != ENODATA && errno != EOPNOTSUPP)
			err = -errno;
	if (fd >= 0)
		close(fd);
	if (err)
		pr_warn("cannot close `%s' to others: %s\n", path, strerror(-err));
	return err;
}

/* What is in directory fd dfd, depth levels down, taken back (take()); dfd is closed. */
static int reclaim_at(int dfd, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	int err = 0, sub;
	DIR *d = fdopendir(dfd);

	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while (!err && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		err = take(dfd, e->d_name, path, &st);
		if (err == -ENOENT)
			err = 0;
		if (err || !S_ISDIR(st.st_mode) || !depth)
			continue;
		sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		err = sub < 0 ? -errno : reclaim_at(sub, path, depth - 1);
	}
	closedir(d);
	return err;
}

/* The three a running daemon's lock is found through (enum order): taken first. */
enum { TOP_STATE, TOP_LOCK, TOP_PIN, TOP_N };

static void top_path(const struct tf_config *cfg, int i, char *buf, size_t len)
{
	if (i == TOP_STATE)
		snprintf(buf, len, "%s", cfg->state_dir);
	else if (i == TOP_LOCK)
		snprintf(buf, len, "%s/" TF_LOCK_FILE, cfg->state_dir);
	else
		snprintf(buf, len, "%s", cfg->pin_dir);
}

int tf_caps_reclaim_top(const struct tf_config *cfg, struct tf_reclaim *r)
{
	char path[PATH_MAX];
	struct stat st;
	int i, err = 0;

	memset(r, 0, sizeof(*r));
	if (geteuid())
		return 0;
	for (i = 0; i < TOP_N && !err; i++) {
		top_path(cfg, i, path, sizeof(path));
		if (fstatat(AT_FDCWD, path, &r->was[i], AT_SYMLINK_NOFOLLOW))
			continue;
		r->taken[i] = r->was[i].st_uid != 0;
		err = take(AT_FDCWD, path, path, &st);
		if (err == -ENOENT)
			err = 0;
	}
	return err;
}

void tf_caps_reclaim_undo(const struct tf_config *cfg, const struct tf_reclaim *r)
{
	char path[PATH_MAX];
	int i;

	for (i = TOP_N - 1; i >= 0; i--) {
		if (!r->taken[i])
			continue;
		top_path(cfg, i, path, sizeof(path));
		if (fchownat(AT_FDCWD, path, r->was[i].st_uid, r->was[i].st_gid,
			     AT_SYMLINK_NOFOLLOW) ||
		    (S_ISDIR(r->was[i].st_mode) &&
		     fchmodat(AT_FDCWD, path, r->was[i].st_mode & 07777, 0)))
			pr_warn("cannot give `%s' back to uid %u: %s\n", path, r->was[i].st_uid,
				strerror(errno));
	}
}

int tf_caps_reclaim(const struct tf_config *cfg)
{
	struct stat st;
	int err = 0, fd;
	const char *dirs[] = { cfg->state_dir, cfg->pin_dir };
	size_t i;

	if (geteuid())
		return 0;
	/* sessions/, evidence/ and their files; links/, guard/, slots/, maps/ and their pins */
	for (i = 0; i < 2 && !err; i++) {
		fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			err = errno == ENOENT ? 0 : -errno;
		else
			err = reclaim_at(fd, dirs[i], 1);
	}
	if (err)
		return err;
	/*
	 * The event log is the operator's file in the operator's directory:
	 * taken back only from the user it was handed to, and never removed.
	 */
	if (cfg->user[0] && !fstatat(AT_FDCWD, cfg->event_log, &st, AT_SYMLINK_NOFOLLOW) &&
	    st.st_uid && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
	    fchownat(AT_FDCWD, cfg->event_log, 0, (gid_t)-1, AT_SYMLINK_NOFOLLOW)) {
		err = -errno;
		pr_warn("cannot take `%s' back from uid %u: %s\n", cfg->event_log, st.st_uid,
			strerror(-err));
	}
	return err;
}

/* Become cfg->user with the permitted set kept (PR_SET_KEEPCAPS); 0 or -errno. */
static int become_user(const struct tf_config *cfg)
{
	struct passwd *pw = getpwnam(cfg->user);
	int err;

	if (!pw) {
		pr_warn("user `%s': no such user\n", cfg->user);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		pr_warn("user `%s' is uid 0: name a dedicated user\n", cfg->user);
		return -EINVAL;
	}
	err = give_dirs(cfg, pw->pw_uid, pw->pw_gid);
	if (err)
		return err;
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups(0, NULL) ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0))
		return -errno;
	pr_info("running as user %s (uid %u, gid %u)\n", cfg->user, pw->pw_uid, pw->pw_gid);
	return 0;
}

int tf_caps_drop(const struct tf_config *cfg)
{
	cap_t caps = cap_init();
	cap_value_t c;
	int err = 0;

	if (!caps)
		return -errno;
	if (cap_set_flag(caps, CAP_EFFECTIVE, sizeof(keep) / sizeof(keep[0]), keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, sizeof(keep) / sizeof(keep[0]), keep, CAP_SET)) {
		err = -errno;
		goto cleanup;
	}
	/* The bounding set first: dropping from it needs CAP_SETPCAP, which goes next. */
	for (c = 0; c <= CAP_LAST_CAP; c++) {
		if (c == CAP_BPF || c == CAP_NET_ADMIN || c == CAP_PERFMON)
			continue;
		if (cap_drop_bound(c) && errno != EINVAL) {
			err = -errno;
			goto cleanup;
		}
	}
	if (cfg->user[0]) {
		err = become_user(cfg);
		if (err)
			goto cleanup;
	}
	/* After a uid switch the effective set is empty: this raises the three again. */
	if (cap_set_proc(caps) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		err = -errno;
		goto cleanup;
	}
	pr_info("capabilities reduced to cap_bpf, cap_net_admin, cap_perfmon\n");
cleanup:
	if (err)
		pr_warn("cannot drop capabilities: %s\n", strerror(-err));
	cap_free(caps);
	return err;
}
