// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence events [--follow] [--session ID]
 *
 * Subscribes and prints one line per event. Without --follow it stops once
 * the stream has been idle for CTL_EVENTS_IDLE_MS; with it, when the daemon
 * closes the connection or on SIGINT/SIGTERM. Either way that is success.
 */
#include <string.h>

#include "ctl.h"

static void on_signal(int sig)
{
	(void)sig;
	ctl_stop = 1;
}

/* "2026-11-29T17:00:00.123456789Z" -> "2026-11-29T17:00:00.123Z" */
static void print_time(const json_t *t)
{
	const char *s = json_string_value(t), *dot;
	size_t digits;

	if (!s) {
		ctl_print_value(stdout, t);
		return;
	}
	dot = strchr(s, '.');
	digits = dot ? strspn(dot + 1, "0123456789") : 0;
	if (digits <= 3) {
		ctl_print_str(stdout, s);
		return;
	}
	fwrite(s, 1, (size_t)(dot - s) + 4, stdout);
	ctl_print_str(stdout, dot + 1 + digits);
}

/* "10.10.0.2:40000", "[2001:db8::1]:443", or the bare address without a port. */
static void print_endpoint(const json_t *addr, const json_t *port)
{
	const char *s = json_string_value(addr);
	int v6 = s && strchr(s, ':');

	if (port && v6)
		fputc('[', stdout);
	ctl_print_value(stdout, addr);
	if (port) {
		fputs(v6 ? "]:" : ":", stdout);
		ctl_print_value(stdout, port);
	}
}

static void print_event(const json_t *ev)
{
	static const char *const words[] = { "session", "direction", "verdict", "reason" };
	const char *kind = json_string_value(json_object_get(ev, "kind"));
	const json_t *v;
	size_t i;

	print_time(json_object_get(ev, "time"));
	if (kind && !strcmp(kind, "checkpoint")) {
		/* The seal of the log (docs/audit.md): which epoch, how many lines. */
		fputs(" checkpoint ", stdout);
		ctl_print_value(stdout, json_object_get(ev, "origin"));
		fputs(" size ", stdout);
		ctl_print_value(stdout, json_object_get(ev, "size"));
		fputc('\n', stdout);
		return;
	}
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		fputc(' ', stdout);
		ctl_print_value(stdout, json_object_get(ev, words[i]));
	}
	/* "tcp", "icmpv6", "47" for other IP protocols, "ethertype 0806" for the rest. */
	if ((v = json_object_get(ev, "proto"))) {
		fputc(' ', stdout);
		ctl_print_value(stdout, v);
	} else if ((v = json_object_get(ev, "ethertype"))) {
		fputs(" ethertype ", stdout);
		ctl_print_value(stdout, v);
	}
	if (json_object_get(ev, "src") || json_object_get(ev, "dst")) {
		fputc(' ', stdout);
		print_endpoint(json_object_get(ev, "src"), json_object_get(ev, "sport"));
		fputs(" -> ", stdout);
		print_endpoint(json_object_get(ev, "dst"), json_object_get(ev, "dport"));
	} else if ((v = json_object_get(ev, "mac"))) {
		/* Not IP (ARP, odd ethertypes): who sent what. */
		fputs(" from ", stdout);
		ctl_print_value(stdout, v);
	}
	v = json_object_get(ev, "name");
	if (v) {
		fputs(" name ", stdout);
		ctl_print_value(stdout, v);
	}
	v = json_object_get(ev, "policy_version");
	if (v) {
		fputs(" (policy ", stdout);
		ctl_print_value(stdout, v);
		fputc(')', stdout);
	}
	v = json_object_get(ev, "suppressed");
	if (v && !(json_is_integer(v) && !json_integer_value(v))) {
		fputs(" [suppressed ", stdout);
		ctl_print_value(stdout, v);
		fputc(']', stdout);
	}
	v = json_object_get(ev, "lost");
	if (v && !(json_is_integer(v) && !json_integer_value(v))) {
		fputs(" [lost ", stdout);
		ctl_print_value(stdout, v);
		fputc(']', stdout);
	}
	fputc('\n', stdout);
}

/* One line of the stream: printed raw (--json) or formatted. */
static int handle_line(const struct ctl_opts *o, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *ev, *ok;
	int err = 0;

	ev = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
	if (!json_is_object(ev)) {
		ctl_err("malformed event from daemon%s%s", ev ? "" : ": ", ev ? "" : jerr.text);
		json_decref(ev);
		return -EPROTO;
	}
	/* An error in the stream (the daemon giving up on us) ends it. */
	ok = json_object_get(ev, "ok");
	if (json_is_false(ok)) {
		json_decref(ev);
		return ctl_parse_response(line, len, &ok); /* prints it, fails */
	}
	if (o->json) {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
	} else {
		print_event(ev);
	}
	json_decref(ev);
	if (fflush(stdout) || ferror(stdout)) {
		err = errno;
		ctl_err("cannot write to standard output: %s", strerror(err));
		return ctl_syserr(err);
	}
	return 0;
}

static int stream(const struct ctl_opts *o, struct ctl_conn *c, const json_t *req, int follow)
{
	json_t *resp;
	size_t len;
	char *line;
	int err;

	err = ctl_roundtrip(c, req, &resp); /* {"ok":true,"subscribed":true} */
	if (err)
		return err;
	json_decref(resp);

	for (;;) {
		if (!follow) {
			err = ctl_wait_readable(c, CTL_EVENTS_IDLE_MS);
			if (err <= 0)
				break;
		}
		err = ctl_recv_line(c, follow ? -1 : c->timeout_ms, &line, &len);
		if (err)
			break;
		if (!len)
			continue;
		err = handle_line(o, line, len);
		if (err)
			return err;
	}
	/* Idle, interrupted, or closed by the daemon between events: done. */
	if (!err || err == -EINTR || (err == -ECONNRESET && !c->len))
		return 0;
	return err;
}

int cmd_events(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	const char *session = NULL;
	json_t *req = NULL;
	sigset_t block, orig;
	struct ctl_conn c = { .fd = -1 };
	int follow = 0, i, r, err;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f")) {
			follow = 1;
			continue;
		}
		r = ctl_opt_value(argc, argv, &i, "--session", &session);
		if (r < 0)
			return ctl_usage(self);
		if (!r) {
			ctl_err("unknown argument `%s'", argv[i]);
			return ctl_usage(self);
		}
	}

	req = ctl_req("events.subscribe");
	if (session)
		req = ctl_req_id(req, "session", session);
	if (!req)
		return -ENOMEM;

	err = ctl_connect(o, &c);
	if (err) {
		json_decref(req);
		return err;
	}
	/*
	 * From here SIGINT/SIGTERM stay blocked except inside ppoll(), so the
	 * flag their handler sets is always seen: a clean exit 0 rather than a
	 * kill. (Before, while connecting, they simply kill us.)
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	c.waitmask = &orig;
	err = stream(o, &c, req, follow);
	if (err == -EINTR && ctl_stop)
		err = 0;
	ctl_close(&c);
	json_decref(req);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return err;
}
