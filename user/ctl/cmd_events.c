// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence events [--follow] [--session ID] [--verdict V] [--reason R[,R...]]
 *                 [--proto P] [--since T] [--until T] [--last N] [--log FILE]
 *                 [-o compact|table|json]
 *
 * Live (the default): subscribes and prints one line per event that passes
 * the filters. Without --follow it stops once the stream has been idle for
 * CTL_EVENTS_IDLE_MS; with it, when the daemon closes the connection, on
 * SIGINT/SIGTERM, or when standard output goes away (piped into head).
 * Either way that is success. With --since, --until, --last or --log it
 * reads the event log instead (default /var/log/tapfence/events.jsonl),
 * offline: the daemon is not asked. Times are RFC 3339 UTC, any prefix
 * ("2026-12-02T07"), compared as text as the log writes them.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define EVENTS_LOG "/var/log/tapfence/events.jsonl"
#define LAST_MAX   100000

enum out { OUT_COMPACT, OUT_TABLE, OUT_JSON };

struct evfilter {
	const char *session, *verdict, *reasons, *proto, *since, *until;
	long last;
	enum out out;
	int header; /* table: the header is out */
};

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

/* 1 if word is one of the comma-separated list's. */
static int in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

static int str_is(const json_t *ev, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(ev, key));

	return v && !strcmp(v, want);
}

/* 1 if ev passes every filter f sets; lines without a verdict (the log's own) pass none. */
static int passes(const struct evfilter *f, const json_t *ev)
{
	const char *t = json_string_value(json_object_get(ev, "time"));
	const char *reason = json_string_value(json_object_get(ev, "reason"));

	if (f->session && !str_is(ev, "session", f->session))
		return 0;
	if ((f->verdict || f->reasons || f->proto) && !json_object_get(ev, "verdict"))
		return 0;
	if (f->verdict && !str_is(ev, "verdict", f->verdict))
		return 0;
	if (f->reasons && (!reason || !in_list(f->reasons, reason)))
		return 0;
	if (f->proto && !str_is(ev, "proto", f->proto))
		return 0;
	if (f->since && (!t || strcmp(t, f->since) < 0))
		return 0;
	if (f->until && (!t || strcmp(t, f->until) >= 0))
		return 0;
	return 1;
}

static void pad_value(const json_t *v, int width)
{
	const char *s = json_string_value(v);
	int n = s ? (int)strlen(s) : 0;

	if (v)
		ctl_print_value(stdout, v);
	else
		n = 0;
	fprintf(stdout, "%*s", width > n ? width - n : 1, "");
}

/* -o table: fixed columns, one event a row, wide enough for 80 columns but the addresses. */
static void print_row(struct evfilter *f, const json_t *ev)
{
	const json_t *v;

	if (!f->header) {
		printf("%-24s %-10s %-10s %-6s %-18s %-6s %s\n", "TIME", "SESSION", "DIRECTION",
		       "VERDICT", "REASON", "PROTO", "SOURCE -> DESTINATION  NAME");
		f->header = 1;
	}
	print_time(json_object_get(ev, "time"));
	fputc(' ', stdout);
	pad_value(json_object_get(ev, "session"), 11);
	pad_value(json_object_get(ev, "direction"), 11);
	pad_value(json_object_get(ev, "verdict"), 7);
	pad_value(json_object_get(ev, "reason"), 19);
	pad_value(json_object_get(ev, "proto"), 7);
	if (json_object_get(ev, "src") || json_object_get(ev, "dst")) {
		print_endpoint(json_object_get(ev, "src"), json_object_get(ev, "sport"));
		fputs(" -> ", stdout);
		print_endpoint(json_object_get(ev, "dst"), json_object_get(ev, "dport"));
	}
	if ((v = json_object_get(ev, "name"))) {
		fputs("  ", stdout);
		ctl_print_value(stdout, v);
	}
	fputc('\n', stdout);
}

/* Standard output went away (a pipe into head): not an error, the end. */
#define OUT_GONE 1

static int flush_out(void)
{
	int err;

	if (!fflush(stdout) && !ferror(stdout))
		return 0;
	err = errno;
	if (err == EPIPE) {
		/* What is left in the buffer has nowhere to go: nor has the exit's last flush. */
		if (!freopen("/dev/null", "w", stdout))
			return ctl_syserr(errno);
		return OUT_GONE;
	}
	ctl_err("cannot write to standard output: %s", strerror(err));
	return ctl_syserr(err);
}

static void emit(struct evfilter *f, const json_t *ev, const char *line, size_t len)
{
	if (f->out == OUT_JSON) {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
	} else if (f->out == OUT_TABLE && json_object_get(ev, "verdict")) {
		print_row(f, ev);
	} else {
		print_event(ev);
	}
}

/* One line of the stream: printed raw (-o json) or formatted, if it passes the filters. */
static int handle_line(struct evfilter *f, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *ev, *ok;

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
	if (passes(f, ev))
		emit(f, ev, line, len);
	json_decref(ev);
	return flush_out();
}

static int stream(struct evfilter *f, struct ctl_conn *c, const json_t *req, int follow)
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
		err = handle_line(f, line, len);
		if (err == OUT_GONE)
			return 0;
		if (err)
			return err;
	}
	/* Idle, interrupted, or closed by the daemon between events: done. */
	if (!err || err == -EINTR || (err == -ECONNRESET && !c->len))
		return 0;
	return err;
}

/*
 * Offline: the log's lines that pass the filters; with --last, only the last
 * N of them (kept as they come, so a log of gigabytes costs N lines).
 */
static int from_log(struct evfilter *f, const char *path)
{
	char *line = NULL, **ring = NULL;
	size_t cap = 0, n = 0, i;
	ssize_t len;
	json_t *ev;
	FILE *in = fopen(path, "r");
	int err = 0;

	if (!in) {
		err = errno;
		ctl_err("--log: cannot read `%s': %s", path, strerror(err));
		return ctl_syserr(err);
	}
	if (f->last && !(ring = calloc((size_t)f->last, sizeof(*ring)))) {
		fclose(in);
		return -ENOMEM;
	}
	while (!err && (len = getline(&line, &cap, in)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		ev = json_loadb(line, (size_t)len, 0, NULL);
		if (json_is_object(ev) && passes(f, ev)) {
			if (ring) {
				free(ring[n % (size_t)f->last]);
				ring[n % (size_t)f->last] = strdup(line);
				n++;
			} else {
				emit(f, ev, line, (size_t)len);
				err = flush_out();
			}
		}
		json_decref(ev);
	}
	for (i = n > (size_t)f->last ? n - (size_t)f->last : 0; ring && !err && i < n; i++) {
		char *l = ring[i % (size_t)f->last];

		ev = l ? json_loads(l, 0, NULL) : NULL;
		if (ev)
			emit(f, ev, l, strlen(l));
		json_decref(ev);
		err = flush_out();
	}
	for (i = 0; ring && i < (size_t)f->last; i++)
		free(ring[i]);
	free(ring);
	free(line);
	fclose(in);
	return err == OUT_GONE ? 0 : err;
}

static int parse_out(const char *v, enum out *out)
{
	if (!strcmp(v, "compact"))
		*out = OUT_COMPACT;
	else if (!strcmp(v, "table"))
		*out = OUT_TABLE;
	else if (!strcmp(v, "json"))
		*out = OUT_JSON;
	else {
		ctl_err("-o: `%s' is not compact, table or json", v);
		return -CTL_EUSAGE;
	}
	return 0;
}

int cmd_events(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	struct evfilter f = { .out = o->json ? OUT_JSON : OUT_COMPACT };
	const char *log = NULL, *last = NULL, *out = NULL;
	json_t *req = NULL;
	sigset_t block, orig;
	struct ctl_conn c = { .fd = -1 };
	int follow = 0, i, r, err;
	char *end;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f")) {
			follow = 1;
			continue;
		}
		r = ctl_opt_value(argc, argv, &i, "--session", &f.session);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--verdict", &f.verdict);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--reason", &f.reasons);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--proto", &f.proto);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--since", &f.since);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--until", &f.until);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--last", &last);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--log", &log);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "-o", &out);
		if (r < 0)
			return ctl_usage(self);
		if (!r) {
			ctl_err("unknown argument `%s'", argv[i]);
			return ctl_usage(self);
		}
	}
	if (f.verdict && strcmp(f.verdict, "allow") && strcmp(f.verdict, "deny") &&
	    strcmp(f.verdict, "audit")) {
		ctl_err("--verdict: `%s' is not allow, deny or audit", f.verdict);
		return ctl_usage(self);
	}
	if (out && parse_out(out, &f.out))
		return ctl_usage(self);
	if (last) {
		f.last = strtol(last, &end, 10);
		if (*end || f.last < 1 || f.last > LAST_MAX) {
			ctl_err("--last: `%s' is not a count of 1 to %d", last, LAST_MAX);
			return ctl_usage(self);
		}
	}
	/* Standard output closing under us (head) is a write error to see, not a signal to die of. */
	signal(SIGPIPE, SIG_IGN);
	if (log || f.since || f.until || f.last) {
		if (follow) {
			ctl_err("--follow reads the daemon's stream, not the log: not with --since, "
				"--until, --last or --log");
			return ctl_usage(self);
		}
		return from_log(&f, log ? log : EVENTS_LOG);
	}

	req = ctl_req("events.subscribe");
	if (f.session)
		req = ctl_req_id(req, "session", f.session);
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
	err = stream(&f, &c, req, follow);
	if (err == -EINTR && ctl_stop)
		err = 0;
	ctl_close(&c);
	json_decref(req);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return err;
}
