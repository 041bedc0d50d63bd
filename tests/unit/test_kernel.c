// SPDX-License-Identifier: GPL-2.0
/* Test that the kernel check refuses a release before 6.6 with a sentence naming it and the need. */
#include <stdio.h>
#include <string.h>
#include "daemon/daemon.h"
#include "check.h"

static void release(const char *rel, int want, const char *says)
{
	char why[160] = "", what[200];

	snprintf(what, sizeof(what), "release `%s': %s", rel, want ? "new enough" : "refused");
	CHECK_EQ(what, tf_kernel_release_ok(rel, why, sizeof(why)), want);
	if (says) {
		snprintf(what, sizeof(what), "release `%s': the refusal says `%s'", rel, says);
		CHECK_EQ(what, strstr(why, says) != NULL, 1);
	}
}

int main(void)
{
	release("6.18.44-fc-v1045", 1, NULL);
	release("6.6.0", 1, NULL);
	release("7.0.1", 1, NULL);
	release("6.5.13-amd64", 0,
		"kernel 6.5.13-amd64 is too old: tapfence needs tcx links (Linux 6.6");
	release("5.15.0-91-generic", 0, "Linux 6.6 or later");
	release("junk", 0, "cannot read the kernel release `junk'");
	CHECK_EQ("this machine's kernel has what tapfence needs", tf_kernel_check(), 0);
	return CHECK_EXIT();
}
