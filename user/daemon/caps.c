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

	if (fd < 0)
		return errno == ENOENT ?
			       0 :
			       (pr_warn("cannot open `%s': %s\n", path, strerror(errno)), -errno);
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
 * What is under directory fd dfd (not followed), depth levels down, back to
 * root: the owner only, the group as it was (an operator's choice, or the
 * user's group, which could read it until now anyway).
 */
static int reclaim_at(int dfd, const char *path, int depth)
{
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
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (st.st_uid && fchownat(dfd, e->d_name, 0, (gid_t)-1, AT_SYMLINK_NOFOLLOW)) {
			err = -errno;
			pr_warn("cannot take `%s/%s' back from uid %u: %s\n", path, e->d_name,
				st.st_uid, strerror(-err));
			break;
		}
		if (!S_ISDIR(st.st_mode) || !depth)
			continue;
		sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			err = reclaim_at(sub, path, depth - 1);
	}
	closedir(d);
	return err;
}

/* path, and what is under it depth levels down, back to root, top down. */
static int reclaim(const char *path, int depth)
{
	struct stat st;
	int fd;

	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (st.st_uid && fchownat(AT_FDCWD, path, 0, (gid_t)-1, AT_SYMLINK_NOFOLLOW)) {
		pr_warn("cannot take `%s' back from uid %u: %s\n", path, st.st_uid,
			strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || !depth)
		return 0;
	/* Root's now, so root without CAP_DAC_OVERRIDE can read it. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : reclaim_at(fd, path, depth - 1);
}

int tf_caps_reclaim(const struct tf_config *cfg)
{
	int err;

	if (geteuid())
		return 0;
	err = reclaim(cfg->state_dir, 2);      /* sessions/ and its files */
	err = err ?: reclaim(cfg->pin_dir, 2); /* links/, guard/, slots/, maps/ and their pins */
	return err ?: reclaim(cfg->event_log, 0);
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
