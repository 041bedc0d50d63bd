// SPDX-License-Identifier: GPL-2.0
/*
 * Control-plane latency: a client of tapfenced's control socket
 * (docs/control-protocol.md) that adds N sessions on interfaces d1..dN,
 * adds one rule to each, or deletes them, on one connection, timing each
 * request from its first byte written to its response line read. Every
 * response must say "ok": true. Prints JSON metrics (ms percentiles).
 *
 * Usage: bench_ctl SOCKET N OUT.json [prefix=P] [first=K] [present=M] [rules=R] [target=S] OP...
 *   OP: session_add, rule_add, session_del (on sessions K..K+N-1, in order), churn (each of
 *   them added then deleted in turn), rule_del; metric ids P.OP.p50|p99|max (P: ctl)
 *   rules=R: each session added has R more CIDR rules (hosts of 2001:db8:1::/48);
 *   target=S: rule_add and rule_del change session S, N rules in turn (hosts of 2001:db8:2::/48),
 *   rather than one rule of each of N sessions
 *   clients=C: the N requests of each OP from C connections at once (a process each, taking every
 *   C-th index), all started together; adds P.OP.rate, the requests a second over the OP's
 *   wall time
 * The interfaces must exist in tapfenced's network namespace
 * (tools/bench/ctl.sh makes them as tap devices).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <jansson.h>

#define REQ_MAX	 8192
#define RESP_MAX 65536
#define MAX_N	 4095
#define RULES_MAX 65536
#define RULE_LEN 80 /* the most one of the rules=R rules takes in a request */
#define CLIENTS_MAX 64

static unsigned int extra_rules; /* rules=R */
static unsigned int target;	 /* target=S (0: none) */
static unsigned int clients = 1; /* clients=C */
static const char *sock_path;

struct conn {
	int fd;
	char buf[RESP_MAX];
	size_t len; /* bytes in buf */
};

static int conn_open(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 }; /* no request may take longer */

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c->len = 0;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(c->fd);
		c->fd = -1;
		return -errno;
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Send one request line, read one response line into c->buf (NUL-terminated). */
static int roundtrip(struct conn *c, const char *req, size_t len)
{
	char *nl;
	ssize_t r;
	int err;

	err = write_all(c->fd, req, len);
	if (err)
		return err;
	c->len = 0;
	for (;;) {
		nl = memchr(c->buf, '\n', c->len);
		if (nl) {
			*nl = '\0';
			return 0;
		}
		if (c->len == sizeof(c->buf) - 1)
			return -E2BIG;
		r = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		c->len += (size_t)r;
	}
}

static int response_ok(const char *line)
{
	json_t *j = json_loads(line, 0, NULL);
	int ok = j && json_is_true(json_object_get(j, "ok"));

	json_decref(j);
	return ok;
}

/* The requests, as in tools/bench/bench_dp.c: slot i's addresses, 10 CIDR rules and a host rule. */
static int req_session_add(char *b, size_t n, unsigned int i)
{
	unsigned int k, v;
	int o;

	o = snprintf(
		b, n,
		"{\"op\":\"session.add\",\"spec\":{\"id\":\"s%u\",\"ifname\":\"d%u\","
		"\"guest\":{\"mac\":\"02:00:00:%02x:%02x:02\",\"ipv4\":\"10.%u.%u.2\"},"
		"\"gateway\":{\"mac\":\"02:00:00:%02x:%02x:01\",\"ipv4\":\"10.%u.%u.1\"},"
		"\"resolver\":{\"ipv4\":\"10.%u.%u.1\"},\"allow\":["
		"{\"cidr\":\"198.51.100.0/24\",\"proto\":\"tcp\",\"ports\":[80,443,\"8000-8100\"]},"
		"{\"host\":\"example.com\",\"proto\":\"tcp\",\"ports\":[443]}",
		i, i, (i >> 8) & 0xff, i & 0xff, 100 + (i >> 8), i & 0xff, (i >> 8) & 0xff,
		i & 0xff, 100 + (i >> 8), i & 0xff, 100 + (i >> 8), i & 0xff);
	for (k = 0; k < 9 && o > 0 && (size_t)o < n; k++) {
		v = (k * 40503u + 977u) & 0x1ffff; /* hosts of 198.18.0.0/15 */
		o += snprintf(b + o, n - (size_t)o,
			      ",{\"cidr\":\"198.%u.%u.%u/32\",\"proto\":\"tcp\",\"ports\":[443]}",
			      18 + (v >> 16), (v >> 8) & 0xff, v & 0xff);
	}
	/* rules=R: hosts of 2001:db8:1::/48. */
	for (k = 0; k < extra_rules && o > 0 && (size_t)o < n; k++)
		o += snprintf(b + o, n - (size_t)o,
			      ",{\"cidr\":\"2001:db8:1::%x/128\",\"proto\":\"tcp\",\"ports\":[443]}",
			      k + 1);
	if (o > 0 && (size_t)o < n)
		o += snprintf(b + o, n - (size_t)o, "]}}\n");
	return o > 0 && (size_t)o < n ? o : -ENOSPC;
}

/* Rule i of session i, or with target=S rule i of session S. */
static int req_rule(char *b, size_t n, unsigned int i, const char *op)
{
	int o = target ? snprintf(b, n,
				  "{\"op\":\"%s\",\"id\":\"s%u\",\"rule\":{\"cidr\":"
				  "\"2001:db8:2::%x/128\",\"proto\":\"tcp\",\"ports\":[443]}}\n",
				  op, target, i) :
			 snprintf(b, n,
				  "{\"op\":\"%s\",\"id\":\"s%u\",\"rule\":{\"cidr\":"
				  "\"203.0.113.%u/32\",\"proto\":\"tcp\",\"ports\":[443]}}\n",
				  op, i, i & 0xff);

	return o > 0 && (size_t)o < n ? o : -ENOSPC;
}

static int req_rule_add(char *b, size_t n, unsigned int i)
{
	return req_rule(b, n, i, "rule.add");
}

static int req_rule_del(char *b, size_t n, unsigned int i)
{
	return req_rule(b, n, i, "rule.del");
}

static int req_session_del(char *b, size_t n, unsigned int i)
{
	int o = snprintf(b, n, "{\"op\":\"session.del\",\"id\":\"s%u\"}\n", i);

	return o > 0 && (size_t)o < n ? o : -ENOSPC;
}

static const struct op {
	const char *id;
	int (*req)(char *b, size_t n, unsigned int i);
	double p99_max_ms; /* target on p99 (0: none) */
} ops[] = {
	{ "session_add", req_session_add, 0 },
	{ "rule_add", req_rule_add, 1.0 },
	{ "session_del", req_session_del, 0 },
	/* churn: session i added then deleted, for each i in turn, with the others present */
	{ "churn_add", req_session_add, 5.0 },
	{ "churn_del", req_session_del, 5.0 },
	{ "rule_del", req_rule_del, 0 },
};

#define OP_CHURN_ADD 3
#define OP_CHURN_DEL 4

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v. */
static double pct(const double *v, unsigned int n, double p)
{
	unsigned int k = (unsigned int)(p / 100.0 * n + 0.999999);

	return v[(k ? k : 1) - 1];
}

/* Time one request of op on index i into *lat. */
static int timed(struct conn *c, const struct op *op, unsigned int i, double *lat)
{
	static char *req;
	size_t size = REQ_MAX + (size_t)extra_rules * RULE_LEN;
	double t0;
	int len, err;

	if (!req && !(req = malloc(size)))
		return -ENOMEM;
	len = op->req(req, size, i);
	if (len < 0)
		return len;
	t0 = now_ms();
	err = roundtrip(c, req, (size_t)len);
	*lat = now_ms() - t0;
	if (err)
		return err;
	if (!response_ok(c->buf)) {
		fprintf(stderr, "bench_ctl: %s %u: %s\n", op->id, i, c->buf);
		return -EPROTO;
	}
	return 0;
}

/* Sort lat and append op's percentiles to metrics, named prefix.op.p* */
static void report(const char *prefix, const struct op *op, double *lat, unsigned int n,
		   const char *what, json_t *metrics)
{
	static const struct {
		const char *name;
		double p;
	} ps[] = { { "p50", 50 }, { "p99", 99 }, { "max", 100 } };
	char id[96], desc[256];
	double sum = 0;
	unsigned int i, k;
	json_t *m;

	for (i = 0; i < n; i++)
		sum += lat[i];
	qsort(lat, n, sizeof(*lat), cmp_double);
	for (k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
		snprintf(id, sizeof(id), "%s.%s.%s", prefix, op->id, ps[k].name);
		snprintf(desc, sizeof(desc), "%s latency, %s over %u requests%s", op->id,
			 ps[k].name, n, what);
		m = json_pack("{s:s, s:s, s:s, s:s, s:f, s:i}", "id", id, "group", "control",
			      "desc", desc, "unit", "ms", "value", pct(lat, n, ps[k].p), "n", n);
		if (m && !strcmp(ps[k].name, "p99") && op->p99_max_ms > 0)
			json_object_set_new(m, "target",
					    json_pack("{s:s, s:f}", "on", "value", "max",
						      op->p99_max_ms));
		json_array_append_new(metrics, m);
	}
	fprintf(stderr,
		"  %-18s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  mean %6.2f ms (n = %u)\n", id,
		pct(lat, n, 50), pct(lat, n, 99), pct(lat, n, 100), sum / n, n);
}

/*
 * op on indexes first+j, first+j+step, ... below first+n, in turn, into
 * lat (and lat2: churn's deletes); the count done, or a negative error.
 */
static int run_part(struct conn *c, size_t k, unsigned int first, unsigned int n, unsigned int j,
		    unsigned int step, double *lat, double *lat2)
{
	unsigned int i, done = 0;
	int err = 0;

	for (i = j; i < n && !err; i += step, done++) {
		err = timed(c, &ops[k], first + i, &lat[done]);
		if (!err && k == OP_CHURN_ADD)
			err = timed(c, &ops[OP_CHURN_DEL], first + i, &lat2[done]);
	}
	return err ? err : (int)done;
}

static int read_all(int fd, void *p, size_t n)
{
	ssize_t r;

	while (n) {
		r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * The parts of run_part() in clients processes at once, each on its own
 * connection; their latencies into lat and lat2, in no order.
 */
static int run_clients(size_t k, unsigned int first, unsigned int n, double *lat, double *lat2)
{
	static double mine[MAX_N], mine2[MAX_N];
	int fds[CLIENTS_MAX][2], cnt, err = 0, status;
	pid_t pids[CLIENTS_MAX];
	unsigned int j, got = 0, started = 0;
	struct conn *c;

	/* A failed pipe or fork still waits for the clients already started. */
	for (j = 0; j < clients && !err; j++) {
		if (pipe(fds[j])) {
			err = -errno;
			break;
		}
		pids[j] = fork();
		if (pids[j] < 0) {
			err = -errno;
			close(fds[j][0]);
			close(fds[j][1]);
			break;
		}
		if (!pids[j]) {
			close(fds[j][0]);
			c = malloc(sizeof(*c));
			cnt = !c ? -ENOMEM : conn_open(c, sock_path);
			if (!cnt)
				cnt = run_part(c, k, first, n, j, clients, mine, mine2);
			if (cnt < 0)
				fprintf(stderr, "bench_ctl: client %u: %s\n", j, strerror(-cnt));
			if (write_all(fds[j][1], (const char *)&cnt, sizeof(cnt)) ||
			    (cnt > 0 &&
			     (write_all(fds[j][1], (const char *)mine, cnt * sizeof(double)) ||
			      write_all(fds[j][1], (const char *)mine2, cnt * sizeof(double)))))
				_exit(1);
			_exit(cnt < 0);
		}
		close(fds[j][1]);
		started++;
	}
	for (j = 0; j < started; j++) {
		if (!err && !(err = read_all(fds[j][0], &cnt, sizeof(cnt))) && cnt < 0)
			err = cnt;
		if (!err && cnt > 0 && got + (unsigned int)cnt <= n &&
		    !(err = read_all(fds[j][0], lat + got, cnt * sizeof(double))))
			err = read_all(fds[j][0], lat2 + got, cnt * sizeof(double));
		if (!err)
			got += (unsigned int)cnt;
		close(fds[j][0]);
		if (waitpid(pids[j], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			err = err ? err : -ECHILD;
	}
	return err ? err : got == n ? 0 : -EIO;
}

/*
 * op on indexes first..first+n-1, in turn or from clients connections at
 * once; churn (k = OP_CHURN_ADD): each added then deleted before the next.
 */
static int run_op(struct conn *c, const char *prefix, size_t k, unsigned int first, unsigned int n,
		  const char *what, json_t *metrics)
{
	static double lat[MAX_N], lat2[MAX_N];
	char id[96], desc[256];
	double t0 = now_ms(), wall;
	int err;

	err = clients > 1 ? run_clients(k, first, n, lat, lat2) :
			    run_part(c, k, first, n, 0, 1, lat, lat2);
	if (err < 0)
		return err;
	wall = now_ms() - t0;
	report(prefix, &ops[k], lat, n, what, metrics);
	if (k == OP_CHURN_ADD)
		report(prefix, &ops[OP_CHURN_DEL], lat2, n, what, metrics);
	if (clients > 1) {
		snprintf(id, sizeof(id), "%s.%s.rate", prefix, ops[k].id);
		snprintf(desc, sizeof(desc), "%s requests a second from %u clients at once%s",
			 ops[k].id, clients, what);
		json_array_append_new(metrics, json_pack("{s:s, s:s, s:s, s:s, s:f}", "id", id,
							 "group", "control", "desc", desc, "unit",
							 "req/s", "value", n * 1e3 / wall));
		fprintf(stderr, "  %-18s %.0f requests a second (%u clients)\n", id, n * 1e3 / wall,
			clients);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct conn c;
	const char *prefix = "ctl", *what = "";
	unsigned int n, first = 1;
	json_t *root, *metrics;
	char whatbuf[128];
	size_t k;
	int a, err = 0;

	if (argc < 5 || !(n = (unsigned int)strtoul(argv[2], NULL, 10)) || n > MAX_N) {
		fprintf(stderr,
			"Usage: bench_ctl SOCKET N OUT.json [prefix=P] [first=K] [present=M] [rules=R] "
			"[target=S] [clients=C] OP...\n"
			"  OP: session_add rule_add rule_del session_del churn (1 <= N <= %u)\n",
			MAX_N);
		return 2;
	}
	for (a = 4; a < argc && strchr(argv[a], '='); a++) {
		if (!strncmp(argv[a], "prefix=", 7)) {
			prefix = argv[a] + 7;
		} else if (!strncmp(argv[a], "first=", 6)) {
			first = (unsigned int)strtoul(argv[a] + 6, NULL, 10);
		} else if (!strncmp(argv[a], "rules=", 6)) {
			extra_rules = (unsigned int)strtoul(argv[a] + 6, NULL, 10);
			if (extra_rules > RULES_MAX - 256) {
				fprintf(stderr, "bench_ctl: rules=%u: at most %u\n", extra_rules,
					RULES_MAX - 256);
				return 2;
			}
		} else if (!strncmp(argv[a], "clients=", 8)) {
			clients = (unsigned int)strtoul(argv[a] + 8, NULL, 10);
			if (!clients || clients > CLIENTS_MAX) {
				fprintf(stderr, "bench_ctl: clients=%s: 1 to %u\n", argv[a] + 8,
					CLIENTS_MAX);
				return 2;
			}
		} else if (!strncmp(argv[a], "target=", 7)) {
			target = (unsigned int)strtoul(argv[a] + 7, NULL, 10);
		} else if (!strncmp(argv[a], "present=", 8)) {
			snprintf(whatbuf, sizeof(whatbuf), ", %s sessions present", argv[a] + 8);
			what = whatbuf;
		} else {
			fprintf(stderr, "bench_ctl: unknown option `%s'\n", argv[a]);
			return 2;
		}
	}
	metrics = json_array();
	root = json_pack("{s:s, s:i, s:o}", "tool", "bench_ctl", "sessions", n, "metrics", metrics);
	sock_path = argv[1];
	err = conn_open(&c, argv[1]);
	if (err) {
		fprintf(stderr, "bench_ctl: cannot connect to `%s': %s\n", argv[1], strerror(-err));
		json_decref(root);
		return 1;
	}
	for (; root && a < argc && !err; a++) {
		const char *op = !strcmp(argv[a], "churn") ? "churn_add" : argv[a];

		for (k = 0; k < sizeof(ops) / sizeof(ops[0]) && strcmp(op, ops[k].id); k++)
			;
		if (k == sizeof(ops) / sizeof(ops[0]) || k == OP_CHURN_DEL) {
			fprintf(stderr, "bench_ctl: unknown operation `%s'\n", argv[a]);
			err = -EINVAL;
			break;
		}
		err = run_op(&c, prefix, k, first, n, what, metrics);
	}
	close(c.fd);
	if (err)
		fprintf(stderr, "bench_ctl: %s\n", strerror(-err));
	else if (!root || json_dump_file(root, argv[3], JSON_INDENT(1)))
		err = -EIO;
	json_decref(root);
	return err ? 1 : 0;
}
