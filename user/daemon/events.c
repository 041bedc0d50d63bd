// SPDX-License-Identifier: GPL-2.0
/*
 * The event feed: drain the tf_events ringbuf into JSON lines, appended to
 * the event log and streamed to control-socket subscribers. Schema:
 * docs/events.md. Events the kernel could not queue are counted in
 * tf_stats; the next line carries how many were lost since the last one.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <netinet/in.h>
#include <bpf/libbpf.h>
#include <jansson.h>

#include "common/addr.h"
#include "common/log.h"
#include "common/reason.h"
#include "daemon.h"
#include "netns.h"

static __s64 mono_to_real_offset(void)
{
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return ((__s64)rt.tv_sec - mono.tv_sec) * 1000000000LL + (rt.tv_nsec - mono.tv_nsec);
}

/* RFC 3339 with nanoseconds, UTC. */
static void fmt_time(__u64 ns, char *buf, size_t len)
{
	time_t sec = ns / 1000000000ULL;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09lluZ", (unsigned long long)(ns % 1000000000ULL));
}

/*
 * Appends to a line buffer; once it overflows, every later append is dropped
 * and ok stays 0. The event line is on the drain path of every event, so its
 * pieces are written by hand (no printf): docs/performance.md.
 */
struct line {
	char *buf;
	size_t len, cap;
	int ok;
};

static inline void put_raw(struct line *l, const char *s, size_t n)
{
	if (!l->ok || n >= l->cap - l->len) {
		l->ok = 0;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

/* A string literal. */
#define put_lit(l, s) put_raw((l), (s), sizeof(s) - 1)

static inline void put_cstr(struct line *l, const char *s)
{
	put_raw(l, s, strlen(s));
}

static void put_u64(struct line *l, unsigned long long v)
{
	char d[20];
	int i = sizeof(d);

	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_raw(l, d + i, sizeof(d) - i);
}

/* v as exactly n digits, zero padded (nanoseconds). */
static void put_digits(struct line *l, unsigned long v, int n)
{
	char d[20];
	int i;

	for (i = n - 1; i >= 0; i--) {
		d[i] = (char)('0' + v % 10);
		v /= 10;
	}
	put_raw(l, d, n);
}

static void put_hex2(struct line *l, __u8 b)
{
	static const char hex[] = "0123456789abcdef";
	char d[2] = { hex[b >> 4], hex[b & 15] };

	put_raw(l, d, 2);
}

static void put_mac(struct line *l, const __u8 m[6])
{
	static const char hex[] = "0123456789abcdef";
	char d[17];
	int i;

	for (i = 0; i < 6; i++) {
		d[3 * i] = hex[m[i] >> 4];
		d[3 * i + 1] = hex[m[i] & 15];
		if (i < 5)
			d[3 * i + 2] = ':';
	}
	put_raw(l, d, sizeof(d));
}

/* IPv4 by hand; IPv6 through inet_ntop() (its "::" rules are not worth copying). */
static void put_ip(struct line *l, __u8 family, const __u8 a[16])
{
	char buf[TF_ADDRSTRLEN];
	size_t n = 0;
	int i;

	if (family != TF_FAM_IPV4) {
		put_cstr(l, tf_fmt_ip(family, a, buf));
		return;
	}
	for (i = 0; i < 4; i++) {
		if (i)
			buf[n++] = '.';
		if (a[i] >= 100)
			buf[n++] = (char)('0' + a[i] / 100);
		if (a[i] >= 10)
			buf[n++] = (char)('0' + a[i] / 10 % 10);
		buf[n++] = (char)('0' + a[i] % 10);
	}
	put_raw(l, buf, n);
}

/* A JSON string: quotes, backslashes, control and non-ASCII bytes escaped; plain runs copied whole. */
static void put_str(struct line *l, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	put_lit(l, "\"");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c != '"' && c != '\\' && c >= 0x20 && c < 0x7f)
			continue;
		put_raw(l, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			put_raw(l, e, 2);
		} else {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			put_raw(l, e, 6);
		}
	}
	put_raw(l, s + run, n - run);
	put_lit(l, "\"");
}

/* RFC 3339 with nanoseconds, UTC; the part down to the second is formatted once a second. */
static void put_time(struct tf_daemon *d, struct line *l, __u64 ns)
{
	time_t sec = ns / 1000000000ULL;
	struct tm tm;

	if (sec != d->time_sec || !d->time_prefix[0]) {
		gmtime_r(&sec, &tm);
		strftime(d->time_prefix, sizeof(d->time_prefix), "%Y-%m-%dT%H:%M:%S", &tm);
		d->time_sec = sec;
	}
	put_lit(l, "\"time\":\"");
	put_cstr(l, d->time_prefix);
	put_lit(l, ".");
	put_digits(l, (unsigned long)(ns % 1000000000ULL), 9);
	put_lit(l, "Z\"");
}

static void put_proto(struct line *l, __u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		put_lit(l, "\"tcp\"");
		return;
	case IPPROTO_UDP:
		put_lit(l, "\"udp\"");
		return;
	case IPPROTO_ICMP:
		put_lit(l, "\"icmp\"");
		return;
	case IPPROTO_ICMPV6:
		put_lit(l, "\"icmpv6\"");
		return;
	}
	put_lit(l, "\"");
	put_u64(l, proto);
	put_lit(l, "\"");
}

/*
 * The part of s's events' lines that names the session and its own device:
 * formatted when first needed and again only when its device or quarantine
 * changed. NULL if there is no memory for it.
 */
static const char *sess_head(struct tf_sess *s)
{
	char buf[2048]; /* a 255-byte namespace path, every byte escaped (6x) */
	struct line l = { .buf = buf, .cap = sizeof(buf), .ok = 1 };
	char *p;

	if (s->evh.buf && s->evh.dev.ifindex == s->dev.ifindex && s->evh.dev.netns == s->dev.netns &&
	    s->evh.q == !!s->q.on)
		return s->evh.buf;
	put_lit(&l, ",\"session\":");
	put_str(&l, s->spec.id, strlen(s->spec.id));
	if (s->q.on)
		put_lit(&l, ",\"quarantined\":true");
	s->evh.sess_len = l.len;
	put_lit(&l, ",\"ifname\":");
	put_str(&l, s->spec.ifname, strlen(s->spec.ifname));
	put_lit(&l, ",\"ifindex\":");
	put_u64(&l, s->dev.ifindex);
	if (s->dev.netns != tf_ns_self) {
		put_lit(&l, ",\"netns\":");
		put_str(&l, s->spec.netns, strlen(s->spec.netns));
	}
	if (!l.ok || !(p = realloc(s->evh.buf, l.len))) {
		free(s->evh.buf);
		s->evh.buf = NULL;
		return NULL;
	}
	memcpy(p, buf, l.len);
	s->evh.buf = p;
	s->evh.len = l.len;
	s->evh.dev = s->dev;
	s->evh.q = !!s->q.on;
	return p;
}

/*
 * One event as a JSON line (docs/events.md), formatted straight into buf:
 * the feed is on the drain path of every event. 0 if it does not fit.
 */
static size_t event_line(struct tf_daemon *d, const struct tf_event *e, __u64 lost, char *buf,
			 size_t cap)
{
	struct tf_sess *s = e->sid < TF_MAX_SESSIONS ? d->by_sid[e->sid] : NULL;
	struct line l = { .buf = buf, .cap = cap, .ok = 1 };
	char ifname[IF_NAMESIZE] = "";
	const char *ifn = ifname, *head;

	put_lit(&l, "{");
	put_time(d, &l, e->ts_ns + d->mono_off);
	/* The session's own device: its names come formatted (sess_head()). */
	if (s && s->dev.ifindex == e->ifindex && s->dev.netns == e->netns && (head = sess_head(s))) {
		put_raw(&l, head, s->evh.sess_len);
		if (e->rejected)
			put_lit(&l, ",\"rejected\":true");
		put_raw(&l, head + s->evh.sess_len, s->evh.len - s->evh.sess_len);
	} else {
		/*
		 * No session, another device, or no memory for the head: ask
		 * the kernel for the name only in the daemon's own namespace
		 * (another namespace's index means nothing here).
		 */
		if (s && s->dev.ifindex == e->ifindex && s->dev.netns == e->netns)
			ifn = s->spec.ifname;
		else if (e->netns != tf_ns_self || !if_indextoname(e->ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "%u", e->ifindex);
		put_lit(&l, ",\"session\":");
		if (s)
			put_str(&l, s->spec.id, strlen(s->spec.id));
		else
			put_lit(&l, "null");
		if (s && s->q.on)
			put_lit(&l, ",\"quarantined\":true");
		if (e->rejected)
			put_lit(&l, ",\"rejected\":true");
		put_lit(&l, ",\"ifname\":");
		put_str(&l, ifn, strlen(ifn));
		put_lit(&l, ",\"ifindex\":");
		put_u64(&l, e->ifindex);
		if (e->netns != tf_ns_self) {
			put_lit(&l, ",\"netns\":");
			if (s && s->dev.netns == e->netns) {
				put_str(&l, s->spec.netns, strlen(s->spec.netns));
			} else {
				put_lit(&l, "\"cookie:");
				put_u64(&l, e->netns);
				put_lit(&l, "\"");
			}
		}
	}
	if (e->dir == TF_DIR_FROM_GUEST)
		put_lit(&l, ",\"direction\":\"from_guest\"");
	else
		put_lit(&l, ",\"direction\":\"to_guest\"");
	if (e->verdict == TF_VERDICT_ALLOW)
		put_lit(&l, ",\"verdict\":\"allow\",\"reason\":\"");
	else if (e->verdict == TF_VERDICT_AUDIT)
		put_lit(&l, ",\"verdict\":\"audit\",\"reason\":\"");
	else
		put_lit(&l, ",\"verdict\":\"deny\",\"reason\":\"");
	put_cstr(&l, tf_reason_name(e->reason));
	put_lit(&l, "\",\"policy_version\":");
	put_u64(&l, e->policy_ver);
	put_lit(&l, ",\"suppressed\":");
	put_u64(&l, e->suppressed);
	put_lit(&l, ",\"lost\":");
	put_u64(&l, lost);
	put_lit(&l, ",\"mac\":\"");
	put_mac(&l, e->smac);
	put_lit(&l, "\"");
	if (e->family == TF_FAM_IPV4 || e->family == TF_FAM_IPV6) {
		if (e->family == TF_FAM_IPV4)
			put_lit(&l, ",\"family\":\"ipv4\",\"proto\":");
		else
			put_lit(&l, ",\"family\":\"ipv6\",\"proto\":");
		put_proto(&l, e->proto);
		put_lit(&l, ",\"src\":\"");
		put_ip(&l, e->family, e->saddr);
		put_lit(&l, "\",\"dst\":\"");
		put_ip(&l, e->family, e->daddr);
		put_lit(&l, "\"");
		if (e->proto == IPPROTO_TCP || e->proto == IPPROTO_UDP) {
			put_lit(&l, ",\"sport\":");
			put_u64(&l, ntohs(e->sport));
			put_lit(&l, ",\"dport\":");
			put_u64(&l, ntohs(e->dport));
		}
	} else {
		put_lit(&l, ",\"ethertype\":\"");
		put_hex2(&l, ntohs(e->ethertype) >> 8);
		put_hex2(&l, ntohs(e->ethertype) & 0xff);
		put_lit(&l, "\"");
	}
	if (e->name_len && e->name_len <= TF_NAME_MAX) {
		put_lit(&l, ",\"name\":");
		put_str(&l, (const char *)e->name, e->name_len);
	}
	put_lit(&l, "}");
	return l.ok ? l.len : 0;
}

static __u64 lost_total(struct tf_daemon *d)
{
	__u64 st[TF_STAT_MAX] = {};

	if (tf_dp_stats(&d->dp, st))
		return d->lost_reported;
	return st[TF_STAT_EVENTS_LOST];
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct tf_daemon *d = ctx;
	const struct tf_event *e = data;
	char line[4096]; /* the longest line: a 256-byte name, every byte escaped (6x) */
	size_t n;

	if (len < sizeof(*e))
		return 0;
	/* Room for the seal's "seq", "prev" and the newline. */
	n = event_line(d, e, d->lost_pending, line, sizeof(line) - 64);
	if (!n) {
		tf_audit_unwritten(d);
		return 0;
	}
	n = tf_audit_line(d, line, n, sizeof(line) - 1, e->suppressed);
	if (!n)
		return 0;
	d->lost_pending = 0;
	line[n] = '\n';
	if (d->foreground)
		fwrite(line, 1, n + 1, stdout);
	tf_ctl_broadcast(d, e->sid, line, n);
	d->events_written++;
	return 0;
}

static void emit_line(struct tf_daemon *d, __u32 sid, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT), line[4096];
	size_t n = s ? strlen(s) : 0;

	if (!s || n + 64 > sizeof(line)) {
		free(s);
		return;
	}
	memcpy(line, s, n);
	free(s);
	n = tf_audit_line(d, line, n, sizeof(line) - 1, 0);
	if (!n)
		return;
	tf_audit_flush(d);
	if (d->foreground)
		printf("%.*s\n", (int)n, line);
	tf_ctl_broadcast(d, sid, line, n);
	d->events_written++;
}

void tf_events_control(struct tf_daemon *d, const char *reason, int pid, unsigned int uid,
		       unsigned int gid)
{
	struct timespec ts;
	char tbuf[64];
	json_t *o;

	clock_gettime(CLOCK_REALTIME, &ts);
	fmt_time((__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec, tbuf, sizeof(tbuf));
	o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "time", tbuf, "kind", "control",
		      "verdict", "deny", "reason", reason, "pid", (json_int_t)pid, "uid",
		      (json_int_t)uid, "gid", (json_int_t)gid);
	if (o)
		emit_line(d, 0, o);
	json_decref(o);
}

int tf_events_open(struct tf_daemon *d)
{
	int err = tf_audit_open(d);

	if (err)
		return err;
	/* Events queued while no daemon ran are drained now; the lost count carries over. */
	d->lost_reported = 0;
	d->lost_pending = 0;
	d->rb = ring_buffer__new(tf_dp_ringbuf_fd(&d->dp), on_event, d, NULL);
	if (!d->rb) {
		pr_warn("cannot open the event ringbuf: %s\n", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Reopen the log file by name, after a rotation moved the old one away (sealed in both). */
int tf_events_reopen(struct tf_daemon *d)
{
	return tf_audit_reopen(d);
}

int tf_events_drain(struct tf_daemon *d)
{
	__u64 total = lost_total(d);
	int n;

	if (total > d->lost_reported) {
		d->lost_pending += total - d->lost_reported;
		d->lost_reported = total;
	}
	d->mono_off = mono_to_real_offset();
	n = ring_buffer__consume(d->rb);
	tf_audit_flush(d);
	tf_audit_tick(d);
	tf_ctl_flush_events(d); /* one write per subscriber for what this drain queued */
	if (d->foreground)
		fflush(stdout);
	return n;
}

int tf_events_pending(struct tf_daemon *d)
{
	struct pollfd p = { .fd = tf_dp_ringbuf_fd(&d->dp), .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

void tf_events_close(struct tf_daemon *d)
{
	if (d->rb) {
		ring_buffer__consume(d->rb);
		ring_buffer__free(d->rb);
		d->rb = NULL;
	}
	tf_audit_close(d);
}
