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
 * Directory path and every entry in it (not followed) now belong to
 * uid:gid: the slot tables pinned at start, by root, which the daemon
 * opens, replaces and removes from then on.
 */
static int give_all(const char *path, uid_t uid, gid_t gid)
{
	int err = give(path, uid, gid), dfd;
	struct dirent *e;
	DIR *d;

	if (err)
		return err;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		return err == -ENOENT ? 0 : err;
	}
	while (!err && (e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    fchownat(dfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW)) {
			err = -errno;
			pr_warn("cannot hand `%s/%s' to uid %u: %s\n", path, e->d_name, uid,
				strerror(-err));
		}
	closedir(d);
	return err;
}

/*
 * What the daemon writes after start-up: session files in the state dir,
 * link pins under pin_dir/links, slot table pins under pin_dir/slots, the
 * event log (reopened on SIGHUP). Both dirs are tapfence's own; the log's
 * directory is not touched (a rotation must create the new file for the
 * user, docs/operations.md).
 */
static int give_dirs(const struct tf_config *cfg, uid_t uid, gid_t gid)
{
	char path[PATH_MAX];
	int err;

	err = give(cfg->state_dir, uid, gid);
	snprintf(path, sizeof(path), "%s/sessions", cfg->state_dir);
	err = err ?: give(path, uid, gid);
	err = err ?: give(cfg->pin_dir, uid, gid);
	snprintf(path, sizeof(path), "%s/links", cfg->pin_dir);
	err = err ?: give(path, uid, gid);
	snprintf(path, sizeof(path), "%s/guard", cfg->pin_dir);
	err = err ?: give(path, uid, gid);
	snprintf(path, sizeof(path), "%s/slots", cfg->pin_dir);
	err = err ?: give_all(path, uid, gid);
	return err ?: give(cfg->event_log, uid, gid);
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
