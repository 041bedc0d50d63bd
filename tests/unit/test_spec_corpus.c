// SPDX-License-Identifier: GPL-2.0
/* Test that every committed fuzz input for specs and configs passes the fuzz harness's checks (a replay of tests/fuzz/corpus/spec/, without libFuzzer). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../fuzz/fuzz_spec.c"

static int replay(const char *path)
{
	static __u8 buf[1 << 16];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fprintf(stderr, "replaying %s (%zu bytes)\n", path, n);
	return LLVMFuzzerTestOneInput(buf, n);
}

int main(void)
{
	const char *dir = "tests/fuzz/corpus/spec";
	struct dirent **names;
	char path[4096], what[4200];
	int n, i;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		CHECK_EQ("read the corpus directory tests/fuzz/corpus/spec", -errno, 0);
		return CHECK_EXIT();
	}
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			snprintf(what, sizeof(what), "spec fuzz corpus: %s", names[i]->d_name);
			CHECK_EQ(what, replay(path), 0);
		}
		free(names[i]);
	}
	free(names);
	return CHECK_EXIT();
}
