// SPDX-License-Identifier: GPL-2.0
/*
 * Logging to stderr, one line per message: "tapfenced: warn: ...". A
 * trailing newline in the message is optional (libbpf's have one), so each
 * message comes out as exactly one line written by one stdio call.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "log.h"

static enum tf_log_level tf_log_level = TF_LOG_INFO;

static const char *const tf_log_names[] = {
	[TF_LOG_WARN] = "warn",
	[TF_LOG_INFO] = "info",
	[TF_LOG_DEBUG] = "debug",
};

void tf_log_set_level(enum tf_log_level level)
{
	tf_log_level = level;
}

__attribute__((format(printf, 2, 0))) static void tf_vlog(enum tf_log_level level, const char *fmt,
							  va_list ap)
{
	int saved_errno = errno; /* callers log, then return -errno */
	char msg[1024];
	size_t len;

	if (level > tf_log_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	if (len && msg[len - 1] == '\n')
		msg[len - 1] = '\0';
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, tf_log_names[level], msg);
	errno = saved_errno;
}

void tf_log(enum tf_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tf_vlog(level, fmt, ap);
	va_end(ap);
}

int tf_log_libbpf(int level, const char *fmt, va_list ap)
{
	enum tf_log_level ours;

	switch (level) {
	case LIBBPF_WARN:
		ours = TF_LOG_WARN;
		break;
	case LIBBPF_INFO:
		ours = TF_LOG_INFO;
		break;
	default:
		ours = TF_LOG_DEBUG;
		break;
	}
	tf_vlog(ours, fmt, ap);
	return 0;
}
