// SPDX-License-Identifier: GPL-2.0
/* Test that every committed fuzz input for the DNS parser passes the fuzz harness's checks (a replay of tests/fuzz/corpus/dns/, without libFuzzer). */
/*
 * make fuzz runs the harness under libFuzzer for a bounded time; this runs
 * the same harness over the committed corpus in every make test (and, in
 * the san tier, under ASan and UBSan). A failed check traps, which
 * tests/run.sh reports as a binary that exited without naming a case; the
 * input being replayed is printed first. The corpus directory is
 * tests/fuzz/corpus/dns relative to the repository root (where run.sh
 * runs), or $TF_DNS_CORPUS.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../fuzz/fuzz_dns.c"

static int replay(const char *path)
{
	static __u8 buf[TF_DNS_MSG_MAX + 64];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fprintf(stderr, "replaying %s (%zu bytes)\n", path, n);
	return LLVMFuzzerTestOneInput(buf, n);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(void)
{
	const char *dir = getenv("TF_DNS_CORPUS") ? getenv("TF_DNS_CORPUS") : "tests/fuzz/corpus/dns";
	struct dirent **names;
	char path[4096], what[4200];
	int n, i, files = 0;

	n = scandir(dir, &names, NULL, by_name);
	if (n < 0) {
		snprintf(what, sizeof(what), "read the corpus directory %s", dir);
		CHECK_EQ(what, -errno, 0);
		return CHECK_EXIT();
	}
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			snprintf(what, sizeof(what), "fuzz corpus: %s", names[i]->d_name);
			CHECK_EQ(what, replay(path), 0);
			files++;
		}
		free(names[i]);
	}
	free(names);
	snprintf(what, sizeof(what), "the corpus %s holds inputs", dir);
	CHECK_EQ(what, files > 0, 1);
	return CHECK_EXIT();
}
