// SPDX-License-Identifier: GPL-2.0
/*
 * Test that the sealed event log's tree, whose nodes a thread of its own
 * makes (user/daemon/auditlog.c, struct folder), is the tree of the lines
 * written: drains whose batches end at their line limit and at their byte
 * limit, checkpoints while the thread folds, a batch that cannot be
 * written (the file size limit), a rotation (the next file's "continue"
 * line carries the tree's edge) and the stop, each accepted by `tapfence
 * log verify'; the tree's size is the number of sealed lines, and every
 * line's "seq" is its index and its "prev" the previous line's hash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common/seal.h"
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

/*
 * Leaf lines of files a then b whose "seq" is not their index in the epoch
 * or whose "prev" is not the previous leaf's hash; -1 if a file cannot be read.
 */
static long chain_breaks(const char *a, const char *b)
{
	const char *files[] = { a, b };
	char line[8192], hex[2 * TF_HASH_LEN + 1] = "", want[64];
	__u8 h[TF_HASH_LEN];
	long idx = 0, bad = 0;
	size_t n;
	FILE *f;
	int i;

	for (i = 0; i < 2; i++) {
		f = fopen(files[i], "r");
		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f)) {
			n = strcspn(line, "\n");
			line[n] = 0;
			if (strstr(line, "\"kind\":\"checkpoint\""))
				continue;
			if (idx) {
				snprintf(want, sizeof(want), ",\"seq\":%ld,\"prev\":\"%.*s\"}", idx,
					 TF_CHAIN_HEX, hex);
				bad += n < strlen(want) || strcmp(line + n - strlen(want), want);
			}
			tf_leaf_hash(line, n, h);
			tf_hex(h, TF_HASH_LEN, hex);
			idx++;
		}
		fclose(f);
	}
	return bad;
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
	struct rlimit was, small;
	__u64 size, cps, unwritten;
	struct stat st;

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
	tf_audit_stats(&d, &size, &cps, &unwritten);
	CHECK_EQ("no line unwritten", unwritten, 0);
	/*
	 * Room for a few KiB more: a batch of 8,192 lines cannot be written
	 * (EFBIG), the one line after it can.
	 */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &was);
	small = was;
	small.rlim_cur = stat(log, &st) ? 0 : (rlim_t)st.st_size + 4096;
	CHECK_EQ("the file size limit lowered", setrlimit(RLIMIT_FSIZE, &small), 0);
	drain(8193, 8);
	CHECK_EQ("the file size limit back", setrlimit(RLIMIT_FSIZE, &was), 0);
	tf_audit_stats(&d, &size, &cps, &unwritten);
	CHECK_TRUE("the batch that could not be written is counted as unwritten",
		   unwritten >= 8192);
	CHECK_EQ("lines after it are sealed", drain(1000, 8), 1000);
	CHECK_EQ("the file moved away", rename(log, old), 0);
	CHECK_EQ("the log goes on in a new file (sealed, then a continue line)",
		 tf_audit_reopen(&d), 0);
	CHECK_EQ("3,000 lines sealed in the new file", drain(3000, 100), 3000);
	tf_audit_stats(&d, &size, &cps, &unwritten);
	tf_audit_close(&d);
	/* The stop's seal line is a leaf too. */
	CHECK_EQ("the tree's size was every sealed line but the stop's", leaves(old, log),
		 size + 1);
	CHECK_TRUE("checkpoints were written", cps >= 5);
	CHECK_EQ("tapfence log verify accepts both files", verify(old, log), 0);
	CHECK_EQ("every line's seq is its index, its prev the line before's",
		 chain_breaks(old, log), 0);
	snprintf(cmd, sizeof(cmd), "sed -i '12000s/\"i\":/\"i\":1/' %s", old);
	CHECK_EQ("an edited line", system(cmd), 0);
	CHECK_EQ("... is caught", verify(old, log), 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		printf("# could not remove %s\n", root);
	return CHECK_EXIT();
}
