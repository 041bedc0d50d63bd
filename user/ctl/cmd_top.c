// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence top [--interval SEC] [--once] [--log FILE]: the node at a glance,
 * refreshed (docs/top.md). Each refresh is one "top" request: every session's
 * packets allowed and denied so far, made rates against the last refresh, its
 * largest deny reasons, learnt addresses and lost events. The denied
 * destinations and names come from the event log's new lines (the feed
 * names them; the daemon's counters never do), counted since top started.
 *
 * On a terminal: redrawn in place to its size (80x24 is enough), keys d, a,
 * l and i sort by denied/s, allowed/s, learnt and id; j and k move the
 * selection, Enter shows only the selected session's destinations and
 * names (Enter again: all), q quits. Not on a terminal, or with --once: one
 * plain snapshot, then exit.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "ctl.h"

#define TOP_LOG	      "/var/log/tapfence/events.jsonl"
#define TOP_MAX_SESS  4096
#define TOP_MAX_DESTS 4096

struct row {
	char id[64];
	double allowed, denied, rate_a, rate_d;
	json_int_t learned, lost;
	char mode[8], top[64];
	int quarantined;
};

struct dest {
	char key[280];
	char session[64];
	unsigned long n;
};

struct top {
	struct row rows[TOP_MAX_SESS], prev[TOP_MAX_SESS];
	unsigned int nrows, nprev, sel;
	struct dest dests[TOP_MAX_DESTS], names[TOP_MAX_DESTS];
	unsigned int ndests, nnames;
	char sort; /* 'd' denied/s, 'a' allowed/s, 'l' learnt, 'i' id */
	int focus; /* the destination panels show only the selected session */
	FILE *log; /* the event log, read from where it ended at start */
	json_int_t lost;
	double t, tprev;
};

static volatile sig_atomic_t top_stop;
static struct termios tio_saved;
static int tio_raw;

static void on_stop(int sig)
{
	(void)sig;
	top_stop = 1;
}

static void tty_restore(void)
{
	if (tio_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &tio_saved);
	tio_raw = 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const struct row *prev_of(const struct top *t, const char *id)
{
	unsigned int i;

	for (i = 0; i < t->nprev; i++)
		if (!strcmp(t->prev[i].id, id))
			return &t->prev[i];
	return NULL;
}

static void take_rows(struct top *t, const json_t *resp)
{
	const json_t *arr = json_object_get(resp, "sessions"), *s, *tr;
	double dt = t->tprev > 0 ? t->t - t->tprev : 0;
	const struct row *p;
	struct row *r;
	size_t i;

	memcpy(t->prev, t->rows, sizeof(t->rows[0]) * t->nrows);
	t->nprev = t->nrows;
	t->nrows = 0;
	json_array_foreach(arr, i, s) {
		if (t->nrows == TOP_MAX_SESS)
			break;
		r = &t->rows[t->nrows++];
		memset(r, 0, sizeof(*r));
		snprintf(r->id, sizeof(r->id), "%s",
			 json_string_value(json_object_get(s, "id")) ?: "?");
		r->allowed = (double)json_integer_value(json_object_get(s, "allowed"));
		r->denied = (double)json_integer_value(json_object_get(s, "denied"));
		/* null: the daemon could not read the table (shown as -). */
		r->learned = json_is_integer(json_object_get(s, "learned")) ?
				     json_integer_value(json_object_get(s, "learned")) :
				     -1;
		r->lost = json_integer_value(json_object_get(s, "events_lost"));
		r->quarantined = json_is_true(json_object_get(s, "quarantined"));
		snprintf(r->mode, sizeof(r->mode), "%s",
			 r->quarantined				       ? "quarant" :
			 json_string_value(json_object_get(s, "mode")) ?:
									 "?");
		tr = json_array_get(json_object_get(s, "top_denied"), 0);
		if (tr)
			snprintf(r->top, sizeof(r->top), "%s %lld",
				 json_string_value(json_array_get(tr, 0)) ?: "?",
				 (long long)json_integer_value(json_array_get(tr, 1)));
		p = prev_of(t, r->id);
		if (p && dt > 0) {
			r->rate_a = (r->allowed - p->allowed) / dt;
			r->rate_d = (r->denied - p->denied) / dt;
		}
	}
	t->lost = json_integer_value(json_object_get(json_object_get(resp, "events"), "lost"));
}

static char sort_key;

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	switch (sort_key) {
	case 'a':
		return (y->rate_a > x->rate_a) - (y->rate_a < x->rate_a);
	case 'l':
		return (y->learned > x->learned) - (y->learned < x->learned);
	case 'i':
		return strcmp(x->id, y->id);
	}
	if (y->rate_d != x->rate_d)
		return (y->rate_d > x->rate_d) - (y->rate_d < x->rate_d);
	return (y->denied > x->denied) - (y->denied < x->denied);
}

static int dest_cmp(const void *a, const void *b)
{
	const struct dest *x = a, *y = b;

	return (y->n > x->n) - (y->n < x->n);
}

static void bump(struct dest *d, unsigned int *n, const char *key, const char *session)
{
	unsigned int i;

	for (i = 0; i < *n; i++)
		if (!strcmp(d[i].key, key) && !strcmp(d[i].session, session)) {
			d[i].n++;
			return;
		}
	if (*n == TOP_MAX_DESTS)
		return;
	snprintf(d[*n].key, sizeof(d[*n].key), "%s", key);
	snprintf(d[*n].session, sizeof(d[*n].session), "%s", session);
	d[(*n)++].n = 1;
}

/* The log's lines since the last refresh: denied destinations and names, per session. */
static void take_log(struct top *t)
{
	char *line = NULL, key[280];
	size_t cap = 0;
	const char *sess, *dst, *name, *proto;
	json_int_t port;
	json_t *ev;

	if (!t->log)
		return;
	clearerr(t->log);
	while (getline(&line, &cap, t->log) > 0) {
		ev = json_loads(line, 0, NULL);
		if (ev &&
		    !strcmp(json_string_value(json_object_get(ev, "verdict")) ?: "", "deny")) {
			sess = json_string_value(json_object_get(ev, "session")) ?: "-";
			dst = json_string_value(json_object_get(ev, "dst"));
			name = json_string_value(json_object_get(ev, "name"));
			proto = json_string_value(json_object_get(ev, "proto")) ?: "";
			port = json_integer_value(json_object_get(ev, "dport"));
			if (dst &&
			    !strcmp(json_string_value(json_object_get(ev, "direction")) ?: "",
				    "from_guest")) {
				if (port)
					snprintf(key, sizeof(key), "%s %s %lld", dst, proto,
						 (long long)port);
				else
					snprintf(key, sizeof(key), "%s %s", dst, proto);
				bump(t->dests, &t->ndests, key, sess);
			}
			if (name)
				bump(t->names, &t->nnames, name, sess);
		}
		json_decref(ev);
	}
	free(line);
}

/* The n largest entries of d (for the selected session when focused). */
static void panel(const struct top *t, const char *title, struct dest *d, unsigned int n,
		  unsigned int lines, int cols)
{
	const char *only = t->focus && t->nrows ? t->rows[t->sel].id : NULL;
	unsigned int i, shown = 0;

	qsort(d, n, sizeof(*d), dest_cmp);
	printf("%s%s%s:\n", title, only ? " of " : "", only ? only : "");
	for (i = 0; i < n && shown < lines; i++) {
		if (only && strcmp(d[i].session, only))
			continue;
		printf("  %8lu  %-12.12s %.*s\n", d[i].n, d[i].session, cols > 28 ? cols - 28 : 10,
		       d[i].key);
		shown++;
	}
	if (!shown)
		printf("  (none)\n");
}

static void draw(struct top *t, int tty)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	unsigned int i, room;
	char clock[16];
	time_t now = time(NULL);

	if (tty)
		ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	if (ws.ws_row < 12)
		ws.ws_row = 12;
	sort_key = t->sort;
	qsort(t->rows, t->nrows, sizeof(t->rows[0]), row_cmp);
	if (t->sel >= t->nrows)
		t->sel = t->nrows ? t->nrows - 1 : 0;
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&now));
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("tapfence top  %s  sessions %u  events lost %lld  sort %s\n", clock, t->nrows,
	       (long long)t->lost,
	       t->sort == 'a' ? "allowed/s" :
	       t->sort == 'l' ? "learnt" :
	       t->sort == 'i' ? "id" :
				"denied/s");
	if (tty)
		printf("keys: d a l i sort, j k select, enter focus, q quit\n");
	printf("  %-14s %-7s %9s %9s %10s %6s  %s\n", "SESSION", "MODE", "ALLOW/s", "DENY/s",
	       "DENIED", "LEARNT", "TOP DENY REASON");
	room = ws.ws_row - 16;
	for (i = 0; i < t->nrows && i < room; i++) {
		const struct row *r = &t->rows[i];
		char learned[24] = "-";

		if (r->learned >= 0)
			snprintf(learned, sizeof(learned), "%lld", (long long)r->learned);
		printf("%c %-14.14s %-7.7s %9.1f %9.1f %10.0f %6s  %.*s\n",
		       tty && i == t->sel ? '>' : ' ', r->id, r->mode, r->rate_a, r->rate_d,
		       r->denied, learned, ws.ws_col > 66 ? ws.ws_col - 66 : 10, r->top);
	}
	if (t->nrows > room)
		printf("  ... %u more\n", t->nrows - room);
	if (t->log) {
		panel(t, "denied destinations", t->dests, t->ndests, 4, ws.ws_col);
		panel(t, "denied names", t->names, t->nnames, 4, ws.ws_col);
	} else {
		printf("(no event log to read: denied destinations and names not shown)\n");
	}
	fflush(stdout);
}

/* A key pressed within ms, or 0. */
static int key_wait(int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
		return 0;
	return c;
}

static void on_key(struct top *t, int c)
{
	switch (c) {
	case 'q':
		top_stop = 1;
		break;
	case 'd':
	case 'a':
	case 'l':
	case 'i':
		t->sort = (char)c;
		break;
	case 'j':
		if (t->sel + 1 < t->nrows)
			t->sel++;
		break;
	case 'k':
		if (t->sel)
			t->sel--;
		break;
	case '\n':
	case '\r':
		t->focus = !t->focus;
		break;
	}
}

int cmd_top(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	static struct top t = { .sort = 'd' };
	const char *iv = NULL, *log = TOP_LOG;
	struct ctl_conn c = { .fd = -1 };
	struct termios raw;
	double interval = 2, next;
	int once = 0, tty, i, r, err, k;
	json_t *req, *resp;
	char *end;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--once")) {
			once = 1;
			continue;
		}
		r = ctl_opt_value(argc, argv, &i, "--interval", &iv);
		if (!r)
			r = ctl_opt_value(argc, argv, &i, "--log", &log);
		if (r <= 0) {
			if (!r)
				ctl_err("unknown argument `%s'", argv[i]);
			return ctl_usage(self);
		}
	}
	if (iv) {
		interval = strtod(iv, &end);
		if (*end || interval < 0.2 || interval > 3600) {
			ctl_err("--interval: `%s' is not a number of seconds from 0.2 to 3600", iv);
			return ctl_usage(self);
		}
	}
	tty = !once && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	t.log = fopen(log, "r");
	if (t.log && tty)
		fseek(t.log, 0, SEEK_END); /* live: what happens from now on */
	err = ctl_connect(o, &c);
	if (err) {
		if (t.log)
			fclose(t.log);
		return err;
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	if (tty && !tcgetattr(STDIN_FILENO, &tio_saved)) {
		raw = tio_saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (!tcsetattr(STDIN_FILENO, TCSANOW, &raw)) {
			tio_raw = 1;
			atexit(tty_restore);
		}
	}
	req = ctl_req("top");
	while (!err && !top_stop) {
		err = ctl_roundtrip(&c, req, &resp);
		if (err)
			break;
		t.tprev = t.t;
		t.t = now_s();
		take_rows(&t, resp);
		json_decref(resp);
		take_log(&t);
		draw(&t, tty);
		if (!tty)
			break;
		for (next = now_s() + interval; !top_stop && now_s() < next;) {
			k = key_wait((int)((next - now_s()) * 1000) + 1);
			if (k) {
				on_key(&t, k);
				draw(&t, tty);
			}
		}
	}
	tty_restore();
	json_decref(req);
	ctl_close(&c);
	if (t.log)
		fclose(t.log);
	return err;
}
