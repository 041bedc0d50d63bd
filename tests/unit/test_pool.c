// SPDX-License-Identifier: GPL-2.0
/*
 * Test the warm pool's retry (user/daemon/datapath_slots.c, pool_run()):
 * a fill that fails (here for want of file descriptors, as under a low
 * RLIMIT_NOFILE) is tried again a second later, not each time a session
 * add or delete wakes the pool's thread meanwhile (each try that fails
 * logs every slot of its batch), and succeeds once the fds are there.
 * Needs root: it loads the datapath, unpinned, in a private namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "daemon/config.h"
#include "daemon/datapath.h"
#include "daemon/netns.h"
#include "check.h"
#include "netns.h"

#define WARM 2

/* Ready slots after waiting up to ms for want of them. */
static unsigned int ready_within(struct tf_dp *dp, unsigned int want, unsigned int ms)
{
	unsigned int ready = 0, dirty, t;

	for (t = 0; t <= ms; t += 10) {
		tf_dp_pool_count(dp, &ready, &dirty);
		if (ready == want)
			break;
		usleep(10000);
	}
	return ready;
}

/* Lines of the log (f, the daemon's stderr) that say a fill failed. */
static int fills_failed(FILE *f)
{
	char line[512];
	int n = 0;

	fflush(stderr);
	rewind(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "cannot create its tables") != NULL;
	return n;
}

int main(void)
{
	static struct tf_config cfg;
	static struct tf_dp dp;
	struct timespec t0, t1;
	struct rlimit old, low;
	__u32 a, b;
	int log_fd, err_fd, lowest, limited, before, after, most, i, ret;
	FILE *log;

	libbpf_set_print(quiet_libbpf);
	ret = private_netns();
	CHECK_EQ("a private network namespace with lo up", ret, 0);
	if (ret)
		return CHECK_EXIT();
	tf_config_defaults(&cfg);
	cfg.warm_slots = WARM;
	cfg.max_sessions = 8;
	ret = tf_ns_init(0);
	if (!ret)
		ret = tf_dp_open(&dp, &cfg, 0);
	CHECK_EQ("load the datapath, unpinned", ret, 0);
	if (ret)
		return CHECK_EXIT();
	CHECK_EQ("start the pool", tf_dp_pool_start(&dp), 0);
	CHECK_EQ("the pool fills its warm slots", ready_within(&dp, WARM, 5000), WARM);

	/* The log into a file; then no fd can be opened (fd numbers stop at the lowest free one). */
	log = tmpfile();
	err_fd = dup(STDERR_FILENO);
	if (!log || err_fd < 0)
		return 1;
	log_fd = fileno(log);
	/* Appended: fills_failed()'s rewind moves the offset fd 2 shares. */
	fcntl(log_fd, F_SETFL, O_APPEND);
	if (dup2(log_fd, STDERR_FILENO) < 0)
		return 1;
	setvbuf(stderr, NULL, _IONBF, 0);
	getrlimit(RLIMIT_NOFILE, &old);
	lowest = fcntl(STDERR_FILENO, F_DUPFD, 0);
	close(lowest);
	low = (struct rlimit){ .rlim_cur = (rlim_t)lowest, .rlim_max = old.rlim_max };
	limited = lowest >= 0 && !setrlimit(RLIMIT_NOFILE, &low);

	/* Both ready slots taken: the pool wants two more, and cannot make them. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	a = tf_dp_slot_take(&dp);
	b = tf_dp_slot_take(&dp);
	for (i = 0; i < 100 && fills_failed(log) < WARM; i++)
		usleep(10000);
	before = fills_failed(log);

	/* 40 wakes of the pool's thread within half a second: a take each. */
	for (i = 0; i < 40; i++) {
		tf_dp_slot_release(&dp, a);
		usleep(6000);
		a = tf_dp_slot_take(&dp);
		usleep(6000);
	}
	after = fills_failed(log);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* A try a second at most: on a loaded machine the loop may take longer than one. */
	most = before * (1 + (int)(t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9));

	setrlimit(RLIMIT_NOFILE, &old);
	dup2(err_fd, STDERR_FILENO);
	close(err_fd);
	CHECK_EQ("no fd to spare (RLIMIT_NOFILE at the lowest free one)", limited, 1);
	CHECK_TRUE("the two slots taken were ready ones", a && b && a != b);
	CHECK_TRUE("a fill without fds fails, logged for each slot", before >= WARM);
	printf("# %d fills failed, then %d after 40 wakes (at most %d: one try a second)\n", before,
	       after, most);
	CHECK_TRUE("40 wakes in half a second try it again no sooner than a second", after <= most);
	CHECK_EQ("a second on, with fds again, the fill is tried and succeeds",
		 ready_within(&dp, WARM, 3000), WARM);
	fclose(log);
	tf_dp_slot_release(&dp, a);
	tf_dp_slot_release(&dp, b);
	tf_dp_pool_stop(&dp);
	tf_dp_close(&dp);
	return CHECK_EXIT();
}
