// SPDX-License-Identifier: GPL-2.0
/*
 * Test that the sealed event log's tree, whose nodes a thread of its own
 * makes (user/daemon/auditlog.c, struct folder), is the tree of the lines
 * written: drains whose batches end at their line limit and at their byte
 * limit, checkpoints while the thread folds, a rotation (the next file's
 * "continue" line carries the tree's edge) and the stop, each accepted by
 * `tapfence log verify'; the tree's size is the number of sealed lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "daemon/daemon.h"
#include "check.h"

static char root[] = "/tmp/tf-auditlog.XXXXXX";
static struct tf_daemon d;

/* One drain's worth: n lines of pad bytes of padding each, written and ticked as a drain does. */
static int drain(unsigned int n, size_t pad)
{
	static char padding[2048];
	char line[4096];
	unsigned int i;
	int len, sealed = 0;

	memset(padding, 'x', sizeof(padding) - 1);
	for (i = 0; i < n; i++) {
		len = snprintf(line, sizeof(line) - 64,
			       "{\"kind\":\"test\",\"i\":%u,\"pad\":\"%.*s\"}", i, (int)pad,
			       padding);
		sealed += tf_audit_line(&d, line, len, sizeof(line) - 1, 0) > 0;
	}
	tf_audit_flush(&d);
	tf_audit_tick(&d);
	return sealed;
}

/* Lines of the files that are leaves (all but the checkpoint lines). */
static long leaves(const char *a, const char *b)
{
	char cmd[3 * PATH_MAX], out[32] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "cat %s %s | grep -vc '\"kind\":\"checkpoint\"'", a, b);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(out, sizeof(out), p))
		out[0] = 0;
	pclose(p);
	return atol(out);
}

static int verify(const char *a, const char *b)
{
	const char *build = getenv("BUILD") ?: "build";
	char cmd[4 * PATH_MAX];
	int rc;

	snprintf(cmd, sizeof(cmd), "%s/tapfence log verify --key %s/log.key.pub %s %s", build, root,
		 a, b);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int main(void)
{
	char log[64], old[72], cmd[PATH_MAX];
	__u64 size, cps, unwritten;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	tf_config_defaults(&d.cfg);
	snprintf(d.cfg.state_dir, sizeof(d.cfg.state_dir), "%s", root);
	snprintf(log, sizeof(log), "%s/events.jsonl", root);
	snprintf(old, sizeof(old), "%s.1", log);
	snprintf(d.cfg.event_log, sizeof(d.cfg.event_log), "%s", log);
	d.cfg.log_checkpoint_lines = 5000;
	d.cfg.log_segment_bytes = 0;
	d.cfg.log_segment_age_s = 0;
	d.epoll_fd = -1;

	CHECK_EQ("the log opens", tf_audit_open(&d), 0);
	CHECK_EQ("its tree thread starts", tf_audit_start(&d), 0);
	/* 20,000 short lines in one drain: batches end at their line limit (8,192). */
	CHECK_EQ("20,000 short lines sealed in one drain", drain(20000, 8), 20000);
	/* Lines of about 1 KiB: batches end at their byte limit (1 MiB), about 1,000 lines. */
	CHECK_EQ("5,000 long lines sealed in one drain", drain(5000, 1000), 5000);
	CHECK_EQ("a checkpoint while the thread may still fold", tf_audit_seal(&d, "checkpoint"),
		 0);
	CHECK_EQ("the file moved away", rename(log, old), 0);
	CHECK_EQ("the log goes on in a new file (sealed, then a continue line)",
		 tf_audit_reopen(&d), 0);
	CHECK_EQ("3,000 lines sealed in the new file", drain(3000, 100), 3000);
	tf_audit_stats(&d, &size, &cps, &unwritten);
	CHECK_EQ("no line unwritten", unwritten, 0);
	tf_audit_close(&d);
	/* The stop's seal line is a leaf too. */
	CHECK_EQ("the tree's size was every sealed line but the stop's", leaves(old, log),
		 size + 1);
	CHECK_TRUE("checkpoints were written", cps >= 5);
	CHECK_EQ("tapfence log verify accepts both files", verify(old, log), 0);
	snprintf(cmd, sizeof(cmd), "sed -i '12000s/\"i\":/\"i\":1/' %s", old);
	CHECK_EQ("an edited line", system(cmd), 0);
	CHECK_EQ("... is caught", verify(old, log), 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		printf("# could not remove %s\n", root);
	return CHECK_EXIT();
}
