// SPDX-License-Identifier: GPL-2.0
/* The userspace string table of reasons: generated, so it cannot drift from the enum. */
#include <string.h>
#include "reason.h"

static const char *const tf_reasons[TF_REASON_MAX] = {
#define TF_REASON_ROW_(num, name, str) [num] = str,
	TF_REASONS(TF_REASON_ROW_)
#undef TF_REASON_ROW_
};

const char *tf_reason_name(unsigned int r)
{
	return r < TF_REASON_MAX ? tf_reasons[r] : "unknown";
}

int tf_reason_from_name(const char *s)
{
	unsigned int r;

	for (r = 0; s && r < TF_REASON_MAX; r++)
		if (!strcmp(tf_reasons[r], s))
			return (int)r;
	return -1;
}
