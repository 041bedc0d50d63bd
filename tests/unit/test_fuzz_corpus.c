// SPDX-License-Identifier: GPL-2.0
/* Test that every committed fuzz input passes its harness's checks (tests/fuzz/corpus/<name>/ replayed without libFuzzer). */
/*
 * make fuzz runs the harnesses under libFuzzer for a bounded time; this
 * runs them over the committed corpora in every make test (and, in the san
 * tier, under ASan and UBSan). A failed check traps, which tests/run.sh
 * reports as a binary that exited without naming a case; the input being
 * replayed is printed first. Corpora are relative to the repository root,
 * where tests/run.sh runs.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Each harness under its own name: they all define LLVMFuzzerTestOneInput. */
#define LLVMFuzzerTestOneInput fuzz_dns_one
#include "../fuzz/fuzz_dns.c"
#undef LLVMFuzzerTestOneInput
#undef FUZZ_CHECK
#define LLVMFuzzerTestOneInput fuzz_spec_one
#include "../fuzz/fuzz_spec.c"
#undef LLVMFuzzerTestOneInput
#undef FUZZ_CHECK
#define LLVMFuzzerTestOneInput fuzz_control_one
#include "../fuzz/fuzz_control.c"
#undef LLVMFuzzerTestOneInput
#undef FUZZ_CHECK
#define LLVMFuzzerTestOneInput fuzz_tls_one
#include "../fuzz/fuzz_tls.c"
#undef LLVMFuzzerTestOneInput

static const struct {
	const char *name;
	int (*one)(const uint8_t *data, size_t size);
} harnesses[] = {
	{ "dns", fuzz_dns_one },
	{ "spec", fuzz_spec_one },
	{ "control", fuzz_control_one },
	{ "tls", fuzz_tls_one },
};

static int replay(int (*one)(const uint8_t *, size_t), const char *path)
{
	static __u8 buf[1 << 16];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fprintf(stderr, "replaying %s (%zu bytes)\n", path, n);
	return one(buf, n);
}

int main(void)
{
	char dir[256], path[4096], what[4200];
	struct dirent **names;
	size_t h;
	int n, i, files;

	for (h = 0; h < sizeof(harnesses) / sizeof(harnesses[0]); h++) {
		snprintf(dir, sizeof(dir), "tests/fuzz/corpus/%s", harnesses[h].name);
		n = scandir(dir, &names, NULL, alphasort);
		if (n < 0) {
			snprintf(what, sizeof(what), "read the corpus directory %s", dir);
			CHECK_EQ(what, -errno, 0);
			continue;
		}
		for (i = 0, files = 0; i < n; i++) {
			if (names[i]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
				snprintf(what, sizeof(what), "%s fuzz corpus: %s",
					 harnesses[h].name, names[i]->d_name);
				CHECK_EQ(what, replay(harnesses[h].one, path), 0);
				files++;
			}
			free(names[i]);
		}
		free(names);
		snprintf(what, sizeof(what), "the %s corpus holds inputs", harnesses[h].name);
		CHECK_EQ(what, files > 0, 1);
	}
	return CHECK_EXIT();
}
