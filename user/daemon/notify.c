// SPDX-License-Identifier: GPL-2.0
/*
 * The service manager's readiness protocol (sd_notify(3)), in the few lines
 * it takes rather than a libsystemd dependency: one datagram of
 * newline-separated VAR=value assignments to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or '@' for an abstract name). Without the
 * variable, nothing is sent. A failed send is logged, never fatal: the
 * manager times the start out on its own.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/log.h"
#include "daemon.h"

void tf_notify(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[512];
	size_t n;
	va_list ap;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = strlen(path);
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		pr_warn("cannot notify the service manager at `%s': %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}
