// SPDX-License-Identifier: GPL-2.0
/*
 * tapfenced's control socket (docs/control-protocol.md): one request line on
 * its own connection, one response line back. Blocking, with every connect,
 * write and read bounded by the socket's timeouts and the whole exchange by
 * CNI_TIMEOUT_MS, so a stuck daemon fails the runtime's call instead of
 * hanging it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "cni.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int unreachable(struct cni_err *e, const char *path, const char *what, int err)
{
	cni_detail(e, "tapfenced's control socket %s: %s", path, strerror(err));
	return cni_fail(e, CNI_ERR_AGAIN, ENOTCONN, "tapfenced: %s %s: %s", what, path,
			strerror(err));
}

static int connect_to(const char *path, struct cni_err *e)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CNI_TIMEOUT_MS / 1000,
			      .tv_usec = CNI_TIMEOUT_MS % 1000 * 1000 };
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return unreachable(e, path, "cannot connect to", ENAMETOOLONG);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return unreachable(e, path, "cannot connect to", errno);
	/* For AF_UNIX the send timeout bounds connect() too (a full backlog). */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		err = errno;
		close(fd);
		return unreachable(e, path, "cannot connect to", err);
	}
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		if (errno == EINTR)
			continue;
		err = errno == EAGAIN ? ETIMEDOUT : errno;
		close(fd);
		return unreachable(e, path, "cannot connect to", err);
	}
	return fd;
}

static int send_line(int fd, const char *s, size_t n)
{
	ssize_t w;

	while (n) {
		w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The first line the daemon sends, NUL-terminated, in *out (malloc'd). */
static int recv_line(int fd, char **out, size_t *outlen)
{
	int64_t deadline = now_ms() + CNI_TIMEOUT_MS;
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb, *nl;
	ssize_t n;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || now_ms() > deadline) {
			free(buf);
			return n < 0 && errno != EAGAIN ? -errno : -ETIMEDOUT;
		}
		if (n == 0) {
			free(buf);
			return -ECONNRESET;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			*out = buf;
			*outlen = (size_t)(nl - buf);
			return 0;
		}
		if (len > CNI_RESPONSE_MAX) {
			free(buf);
			return -EMSGSIZE;
		}
	}
}

int tfd_call(const char *path, json_t *req, json_t **resp, struct cni_err *e)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	char *s = NULL, *line = NULL;
	json_error_t jerr;
	json_t *ok, *msg;
	size_t len;
	int fd = -1, err;

	*resp = NULL;
	op = op ? op : "?";
	s = json_dumps(req, JSON_COMPACT);
	if (!s) {
		err = cni_fail(e, CNI_ERR_IO, ENOMEM, "out of memory");
		goto cleanup;
	}
	fd = connect_to(path, e);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	len = strlen(s);
	s[len] = '\n'; /* json_dumps's NUL: the line needs no more room */
	err = send_line(fd, s, len + 1);
	if (!err)
		err = recv_line(fd, &line, &len);
	if (err) {
		err = unreachable(e, path, err == -ECONNRESET ? "no answer from" : "lost", -err);
		goto cleanup;
	}
	*resp = json_loadb(line, len, 0, &jerr);
	ok = json_object_get(*resp, "ok");
	if (!json_is_boolean(ok)) {
		err = cni_fail(e, CNI_ERR_AGAIN, ENOTCONN, "tapfenced: malformed response to %s",
			       op);
		goto cleanup;
	}
	if (json_is_false(ok)) {
		msg = json_object_get(*resp, "error");
		err = cni_fail(e, CNI_ERR_REFUSED, EREMOTEIO, "%s",
			       json_is_string(msg) ? json_string_value(msg) : "(no message)");
		cni_detail(e, "tapfenced refused %s", op);
		goto cleanup;
	}
	err = 0;
cleanup:
	if (err && err != -EREMOTEIO) {
		json_decref(*resp);
		*resp = NULL;
	}
	if (fd >= 0)
		close(fd);
	free(line);
	free(s);
	json_decref(req);
	return err;
}
