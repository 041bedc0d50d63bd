// SPDX-License-Identifier: GPL-2.0
/* The userspace string table of reasons: generated, so it cannot drift from the enum. */
#include <string.h>
#include "reason.h"

#define TF_VERDICT_IS_ALLOW_ALLOW 1
#define TF_VERDICT_IS_ALLOW_DENY  0

static const struct {
	const char *name;
	int allow;
} tf_reasons[TF_REASON_MAX] = {
#define TF_REASON_ROW_(name, str, verdict) \
	[TF_REASON_##name] = { str, TF_VERDICT_IS_ALLOW_##verdict },
	TF_REASONS(TF_REASON_ROW_)
#undef TF_REASON_ROW_
};

const char *tf_reason_name(unsigned int r)
{
	return r < TF_REASON_MAX ? tf_reasons[r].name : "unknown";
}

int tf_reason_is_allow(unsigned int r)
{
	return r < TF_REASON_MAX && tf_reasons[r].allow;
}

int tf_reason_from_name(const char *s)
{
	unsigned int r;

	for (r = 0; s && r < TF_REASON_MAX; r++)
		if (!strcmp(tf_reasons[r].name, s))
			return (int)r;
	return -1;
}
