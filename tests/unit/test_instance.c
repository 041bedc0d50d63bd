// SPDX-License-Identifier: GPL-2.0
/* Test that the instance locks keep a second holder out until released, and that the fd budget raises the soft limit or refuses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "daemon/daemon.h"
#include "check.h"

static char root[] = "/tmp/tf-instance.XXXXXX";

static void dirs(struct tf_config *cfg, const char *tag, int make)
{
	tf_config_defaults(cfg);
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s/%s-state", root, tag);
	snprintf(cfg->pin_dir, sizeof(cfg->pin_dir), "%s/%s-pins", root, tag);
	snprintf(cfg->control_socket, sizeof(cfg->control_socket), "%s/%s-run/control.sock", root,
		 tag);
	if (make) {
		mkdir(cfg->state_dir, 0700);
		mkdir(cfg->pin_dir, 0700);
	}
}

static void test_locks(void)
{
	char path[PATH_MAX + 32], buf[32] = "", want[32];
	struct tf_lock a, b;
	struct tf_config cfg, other;
	int fd;

	dirs(&cfg, "a", 1);
	tf_lock_init(&a);
	tf_lock_init(&b);
	CHECK_EQ("the first daemon takes the locks", tf_lock_take(&cfg, &a, 0), 0);
	snprintf(path, sizeof(path), "%s/" TF_LOCK_FILE, cfg.state_dir);
	fd = open(path, O_RDONLY);
	CHECK_EQ("the state lock file exists", fd >= 0, 1);
	if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	if (fd >= 0)
		close(fd);
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	CHECK_STR("it holds the daemon's pid", buf, want);
	CHECK_EQ("its fds are close-on-exec",
		 (fcntl(a.state_fd, F_GETFD) & FD_CLOEXEC) &&
			 (fcntl(a.pin_fd, F_GETFD) & FD_CLOEXEC) &&
			 (fcntl(a.sock_fd, F_GETFD) & FD_CLOEXEC),
		 1);
	/* flock belongs to the open file: a second open in this process conflicts like another daemon. */
	CHECK_EQ("a second daemon is refused", tf_lock_take(&cfg, &b, 0), -EBUSY);
	CHECK_EQ("and holds nothing", b.state_fd == -1 && b.pin_fd == -1 && b.sock_fd == -1, 1);
	CHECK_EQ("--cleanup is refused", tf_lock_take(&cfg, &b, 1), -EBUSY);

	dirs(&other, "b", 1);
	snprintf(other.pin_dir, sizeof(other.pin_dir), "%s", cfg.pin_dir);
	CHECK_EQ("another state dir over the same pins is refused", tf_lock_take(&other, &b, 0),
		 -EBUSY);
	dirs(&other, "c", 1);
	snprintf(other.control_socket, sizeof(other.control_socket), "%s", cfg.control_socket);
	CHECK_EQ("other dirs on the same socket are refused", tf_lock_take(&other, &b, 0), -EBUSY);
	CHECK_EQ("--cleanup of other dirs does not care about the socket",
		 tf_lock_take(&other, &b, 1), 0);
	tf_lock_release(&b);

	tf_lock_release(&a);
	CHECK_EQ("once released, --cleanup takes them", tf_lock_take(&cfg, &b, 1), 0);
	CHECK_EQ("--cleanup does not lock the socket", b.sock_fd, -1);
	tf_lock_release(&b);
	CHECK_EQ("and a new daemon too", tf_lock_take(&cfg, &a, 0), 0);
	tf_lock_release(&a);

	dirs(&other, "missing", 0);
	CHECK_EQ("--cleanup with no state or pin dir has nothing to lock",
		 tf_lock_take(&other, &b, 1), 0);
	tf_lock_release(&b);
}

static int has_sys_resource(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	return (eff >> 24) & 1; /* CAP_SYS_RESOURCE */
}

static void test_budget(void)
{
	struct tf_config cfg;
	struct rlimit rl, low;
	int status = 0;
	pid_t pid;

	tf_config_defaults(&cfg);
	CHECK_EQ("the defaults need 2 x 1024 + 64 + 128 fds", tf_fd_need(&cfg), 2240);
	cfg.max_sessions = 10;
	cfg.max_clients = 4;
	CHECK_EQ("10 sessions and 4 clients need 152", tf_fd_need(&cfg), 152);

	getrlimit(RLIMIT_NOFILE, &rl);
	low.rlim_cur = 64;
	low.rlim_max = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &low);
	CHECK_EQ("a low soft limit under a high hard one is raised", tf_fd_budget(&cfg), 0);
	getrlimit(RLIMIT_NOFILE, &low);
	CHECK_EQ("to what is needed", low.rlim_cur, 152);
	CHECK_EQ("the hard limit unchanged", low.rlim_max == rl.rlim_max, 1);
	CHECK_EQ("a limit that suffices is left alone", tf_fd_budget(&cfg), 0);

	/* A hard limit cannot be raised again by this process: lower it in a child. */
	pid = fork();
	if (pid == 0) {
		low.rlim_cur = low.rlim_max = 64;
		setrlimit(RLIMIT_NOFILE, &low);
		_exit(tf_fd_budget(&cfg) == (has_sys_resource() ? 0 : -EMFILE) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK_EQ(has_sys_resource() ? "a low hard limit is raised (CAP_SYS_RESOURCE)" :
				      "a low hard limit without CAP_SYS_RESOURCE refuses the start",
		 WIFEXITED(status) && WEXITSTATUS(status) == 0, 1);
	setrlimit(RLIMIT_NOFILE, &rl);
}

int main(void)
{
	char cmd[64];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_locks();
	test_budget();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		printf("# could not remove %s\n", root);
	return CHECK_EXIT();
}
