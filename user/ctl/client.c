// SPDX-License-Identifier: GPL-2.0
/*
 * The CLI's side of the control protocol: one Unix stream connection,
 * newline-delimited JSON. The socket is non-blocking and every connect,
 * write and read waits in poll() against a deadline, so a stuck daemon
 * cannot hang the CLI (unless the caller asks for no timeout).
 */
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ctl.h"

#define READ_CHUNK (64u << 10)

volatile sig_atomic_t ctl_stop;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Deadline for a timeout in ms; -1 (none) stays -1. */
static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ns() + (int64_t)timeout_ms * 1000000;
}

/*
 * Wait for events on fd until deadline (-1: forever). 1 if ready, 0 on
 * timeout, -EINTR if ctl_stop is set, or -errno. c->waitmask, if set, is the
 * signal mask installed while waiting, so a handler that sets ctl_stop can
 * only run inside ppoll() and is never missed (signals blocked otherwise).
 */
static int wait_fd(struct ctl_conn *c, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };
	struct timespec ts, *tsp;
	int64_t left;
	int n;

	for (;;) {
		if (ctl_stop)
			return -EINTR;
		tsp = NULL;
		if (deadline >= 0) {
			left = deadline - now_ns();
			if (left <= 0)
				return 0;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		n = ppoll(&pfd, 1, tsp, c->waitmask);
		if (n > 0)
			return 1;
		if (n == 0)
			continue; /* re-check the clock */
		if (errno != EINTR)
			return ctl_syserr(errno);
	}
}

int ctl_connect(const struct ctl_opts *o, struct ctl_conn *c)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int64_t deadline = deadline_after(o->timeout_ms);
	socklen_t elen = sizeof(int);
	int err = 0, soerr, r;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->path = o->socket_path;
	c->timeout_ms = o->timeout_ms;

	if (!*c->path || strlen(c->path) >= sizeof(sun.sun_path)) {
		err = *c->path ? ENAMETOOLONG : ENOENT;
		goto fail;
	}
	memcpy(sun.sun_path, c->path, strlen(c->path) + 1);

	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		err = errno;
		goto fail;
	}
	for (;;) {
		if (!connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)))
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			/*
			 * The daemon's accept backlog is full. AF_UNIX does not
			 * complete such a connect later (no EINPROGRESS), so
			 * retry it until the deadline.
			 */
			if (deadline >= 0 && now_ns() >= deadline) {
				err = ETIMEDOUT;
				goto fail;
			}
			poll(NULL, 0, 10);
			continue;
		}
		if (errno != EINPROGRESS) {
			err = errno;
			goto fail;
		}
		r = wait_fd(c, POLLOUT, deadline);
		if (r <= 0) {
			err = r ? -r : ETIMEDOUT;
			goto fail;
		}
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &elen) < 0)
			soerr = errno;
		if (!soerr)
			return 0;
		err = soerr;
		goto fail;
	}
fail:
	ctl_err("cannot connect to %s: %s", c->path, strerror(err));
	ctl_close(c);
	return -CTL_ENOCONN;
}

void ctl_close(struct ctl_conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->off = c->scan = c->len = c->cap = 0;
}

static int send_all(struct ctl_conn *c, const char *p, size_t n)
{
	int64_t deadline = deadline_after(c->timeout_ms);
	ssize_t w;
	int r;

	while (n) {
		w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			r = wait_fd(c, POLLOUT, deadline);
			if (r == 0) {
				ctl_err("timed out sending the request to %s", c->path);
				return -ETIMEDOUT;
			}
			if (r < 0) {
				if (r != -EINTR)
					ctl_err("cannot send to %s: %s", c->path, strerror(-r));
				return r;
			}
			continue;
		}
		r = w < 0 ? errno : EPIPE;
		if (r == EPIPE || r == ECONNRESET)
			return -EPIPE; /* the caller looks for a parting message */
		ctl_err("cannot send to %s: %s", c->path, strerror(r));
		return ctl_syserr(r);
	}
	return 0;
}

int ctl_send(struct ctl_conn *c, const json_t *req)
{
	char *s, *line;
	size_t n;
	int err;

	/*
	 * Compact encoding never contains a raw newline: strings are escaped.
	 * No size check here: the limit is the daemon's (max_request_bytes,
	 * 1 MiB unless the operator changed it), and it says so in its reply.
	 */
	s = json_dumps(req, JSON_COMPACT);
	if (!s) {
		ctl_err("cannot encode the request");
		return -ENOMEM;
	}
	n = strlen(s);
	line = realloc(s, n + 2);
	if (!line) {
		free(s);
		ctl_err("out of memory");
		return -ENOMEM;
	}
	line[n] = '\n';
	err = send_all(c, line, n + 1);
	free(line);
	return err;
}

int ctl_roundtrip(struct ctl_conn *c, const json_t *req, json_t **resp)
{
	char *line;
	size_t len;
	int err, sent;

	*resp = NULL;
	err = ctl_send(c, req);
	if (err && err != -EPIPE)
		return err;
	/*
	 * A daemon that refuses us (too many clients, request too large)
	 * replies and closes, possibly before it read all we sent: its reply
	 * is still queued for us, so read it either way.
	 */
	sent = !err;
	err = ctl_recv_line(c, c->timeout_ms, &line, &len);
	if (err == -ECONNRESET && !c->len)
		ctl_err("daemon closed the connection %s",
			sent ? "without a response" : "while the request was being sent");
	if (err)
		return err;
	return ctl_parse_response(line, len, resp);
}

int ctl_wait_readable(struct ctl_conn *c, int timeout_ms)
{
	int r;

	if (c->len > c->off)
		return 1;
	r = wait_fd(c, POLLIN, deadline_after(timeout_ms));
	if (r < 0 && r != -EINTR)
		ctl_err("cannot read from %s: %s", c->path, strerror(-r));
	return r;
}

int ctl_recv_line(struct ctl_conn *c, int timeout_ms, char **line, size_t *len)
{
	int64_t deadline = deadline_after(timeout_ms);
	char *nl, *nbuf;
	size_t ncap;
	ssize_t n;
	int r;

	for (;;) {
		nl = c->len > c->scan ? memchr(c->buf + c->scan, '\n', c->len - c->scan) : NULL;
		if (nl) {
			*nl = '\0';
			*line = c->buf + c->off;
			*len = (size_t)(nl - *line);
			c->off = c->scan = (size_t)(nl - c->buf) + 1;
			return 0;
		}
		c->scan = c->len;
		if (c->len - c->off > CTL_RESPONSE_MAX) {
			ctl_err("response from daemon longer than %u bytes", CTL_RESPONSE_MAX);
			return -EMSGSIZE;
		}
		/* Drop consumed lines, then make room for one more chunk. */
		if (c->off) {
			memmove(c->buf, c->buf + c->off, c->len - c->off);
			c->len -= c->off;
			c->scan -= c->off;
			c->off = 0;
		}
		if (c->cap - c->len < READ_CHUNK) {
			ncap = c->len + READ_CHUNK + 1; /* +1: room for the NUL */
			ncap = ncap < 2 * c->cap ? 2 * c->cap : ncap;
			nbuf = realloc(c->buf, ncap);
			if (!nbuf) {
				ctl_err("out of memory");
				return -ENOMEM;
			}
			c->buf = nbuf;
			c->cap = ncap;
		}
		n = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0) {
			if (c->len)
				ctl_err("daemon closed the connection in the middle of a response");
			return -ECONNRESET;
		}
		if (errno == EINTR) {
			if (ctl_stop)
				return -EINTR;
			continue;
		}
		if (errno == ECONNRESET) {
			if (c->len)
				ctl_err("daemon closed the connection in the middle of a response");
			return -ECONNRESET;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			r = errno;
			ctl_err("cannot read from %s: %s", c->path, strerror(r));
			return ctl_syserr(r);
		}
		r = wait_fd(c, POLLIN, deadline);
		if (r == 0) {
			ctl_err("timed out waiting for the daemon on %s", c->path);
			return -ETIMEDOUT;
		}
		if (r < 0) {
			if (r != -EINTR)
				ctl_err("cannot read from %s: %s", c->path, strerror(-r));
			return r;
		}
	}
}

int ctl_parse_response(const char *line, size_t len, json_t **resp)
{
	json_error_t jerr;
	json_t *j, *ok, *msg;

	*resp = NULL;
	j = json_loadb(line, len, 0, &jerr);
	if (!j) {
		ctl_err("malformed response from daemon: %s", jerr.text);
		return -EPROTO;
	}
	ok = json_object_get(j, "ok");
	if (!json_is_boolean(ok)) {
		ctl_err("malformed response from daemon");
		json_decref(j);
		return -EPROTO;
	}
	if (json_is_false(ok)) {
		msg = json_object_get(j, "error");
		if (json_is_string(msg)) {
			fputs(CTL_PROG ": ", stderr);
			ctl_print_str(stderr, json_string_value(msg));
			fputc('\n', stderr);
		} else {
			ctl_err("malformed response from daemon (failure without an error message)");
		}
		json_decref(j);
		return -CTL_EDAEMON;
	}
	*resp = j;
	return 0;
}

int ctl_request(const struct ctl_opts *o, const json_t *req, json_t **resp)
{
	struct ctl_conn c;
	int err;

	*resp = NULL;
	err = ctl_connect(o, &c);
	if (err)
		return err;
	err = ctl_roundtrip(&c, req, resp);
	ctl_close(&c);
	return err;
}

json_t *ctl_req(const char *op)
{
	json_t *req = json_object();

	if (!req || json_object_set_new(req, "op", json_string(op))) {
		json_decref(req);
		ctl_err("out of memory");
		return NULL;
	}
	return req;
}

json_t *ctl_req_set(json_t *req, const char *key, json_t *v)
{
	if (!req) {
		json_decref(v);
		return NULL;
	}
	if (json_object_set_new(req, key, v)) { /* steals v, even on failure */
		ctl_err("out of memory");
		json_decref(req);
		return NULL;
	}
	return req;
}

json_t *ctl_req_id(json_t *req, const char *key, const char *id)
{
	json_t *v;

	if (!req)
		return NULL;
	v = json_string(id);
	if (!v) {
		ctl_err("session ID is not valid UTF-8");
		json_decref(req);
		return NULL;
	}
	return ctl_req_set(req, key, v);
}

/* A response's "warnings", each a line on stderr (the request succeeded). */
static void print_warnings(const json_t *resp)
{
	const json_t *w;
	size_t i;

	json_array_foreach(json_object_get(resp, "warnings"), i, w)
		if (json_is_string(w))
			ctl_err("warning: %s", json_string_value(w));
}

int ctl_call(const struct ctl_opts *o, json_t *req, ctl_print_fn *print, const void *ctx)
{
	json_t *resp = NULL;
	int err;

	if (!req)
		return -ENOMEM;
	err = ctl_request(o, req, &resp);
	json_decref(req);
	if (!err)
		err = o->json ? ctl_print_json(resp) : print ? print(resp, ctx) : 0;
	if (!err && !o->json)
		print_warnings(resp);
	json_decref(resp);
	return err;
}

int ctl_parse_object(const char *buf, size_t len, const char *what, json_t **out)
{
	json_error_t jerr;
	json_t *j;

	/*
	 * Duplicate keys are refused rather than collapsed: the daemon
	 * validates, and it must see what the operator wrote.
	 */
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		ctl_err("%s: invalid JSON at line %d, column %d: %s", what, jerr.line, jerr.column,
			jerr.text);
		return -EBADMSG;
	}
	if (!json_is_object(j)) {
		ctl_err("%s: not a JSON object", what);
		json_decref(j);
		return -EBADMSG;
	}
	*out = j;
	return 0;
}
