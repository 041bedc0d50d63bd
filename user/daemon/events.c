// SPDX-License-Identifier: GPL-2.0
/*
 * The event feed: drain the tf_events ringbuf into JSON lines, appended to
 * the event log and streamed to control-socket subscribers. Schema:
 * docs/events.md. Events the kernel could not queue are counted in
 * tf_stats; the next line carries how many were lost since the last one.
 */
#include <errno.h>
#include <stdarg.h>
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

static const char *proto_name(__u8 proto, char *buf, size_t len)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	}
	snprintf(buf, len, "%u", proto);
	return buf;
}

/* Appends to a line buffer; once it overflows, every later append is dropped and ok stays 0. */
struct line {
	char *buf;
	size_t len, cap;
	int ok;
};

__attribute__((format(printf, 2, 3)))
static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!l->ok)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, l->cap - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= l->cap - l->len)
		l->ok = 0;
	else
		l->len += n;
}

/* A JSON string: quotes, backslashes, control and non-ASCII bytes escaped. */
static void put_str(struct line *l, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	put(l, "\"");
	for (i = 0; i < n && l->ok; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			put(l, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			put(l, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
		else if (l->len + 1 < l->cap)
			l->buf[l->len++] = (char)c;
		else
			l->ok = 0;
	}
	put(l, "\"");
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
	put(l, "\"time\":\"%s.%09lluZ\"", d->time_prefix, (unsigned long long)(ns % 1000000000ULL));
}

/*
 * One event as a JSON line (docs/events.md), formatted straight into buf:
 * the feed is on the drain path of every event. 0 if it does not fit.
 */
static size_t event_line(struct tf_daemon *d, const struct tf_event *e, __u64 lost, char *buf,
			 size_t cap)
{
	struct tf_sess *s = e->sid < TF_MAX_SESSIONS ? d->by_sid[e->sid] : NULL;
	char abuf[TF_ADDRSTRLEN], pbuf[8], ifname[IF_NAMESIZE] = "";
	struct line l = { .buf = buf, .cap = cap, .ok = 1 };

	/* The session knows its device; ask the kernel only for a device without one. */
	if (s && s->ifindex == e->ifindex)
		snprintf(ifname, sizeof(ifname), "%s", s->spec.ifname);
	else if (!if_indextoname(e->ifindex, ifname))
		snprintf(ifname, sizeof(ifname), "%u", e->ifindex);
	put(&l, "{");
	put_time(d, &l, e->ts_ns + d->mono_off);
	put(&l, ",\"session\":");
	if (s)
		put_str(&l, s->spec.id, strlen(s->spec.id));
	else
		put(&l, "null");
	put(&l, ",\"ifname\":");
	put_str(&l, ifname, strlen(ifname));
	put(&l, ",\"ifindex\":%u,\"direction\":\"%s\",\"verdict\":\"%s\",\"reason\":\"%s\","
		"\"policy_version\":%u,\"suppressed\":%u,\"lost\":%llu,\"mac\":\"%s\"",
	    e->ifindex, e->dir == TF_DIR_FROM_GUEST ? "from_guest" : "to_guest",
	    e->verdict == TF_VERDICT_ALLOW ? "allow" : "deny", tf_reason_name(e->reason),
	    e->policy_ver, e->suppressed, (unsigned long long)lost, tf_fmt_mac(e->smac, abuf));
	if (e->family == TF_FAM_IPV4 || e->family == TF_FAM_IPV6) {
		put(&l, ",\"family\":\"%s\",\"proto\":\"%s\"", e->family == TF_FAM_IPV4 ? "ipv4" : "ipv6",
		    proto_name(e->proto, pbuf, sizeof(pbuf)));
		put(&l, ",\"src\":\"%s\"", tf_fmt_ip(e->family, e->saddr, abuf));
		put(&l, ",\"dst\":\"%s\"", tf_fmt_ip(e->family, e->daddr, abuf));
		if (e->proto == IPPROTO_TCP || e->proto == IPPROTO_UDP)
			put(&l, ",\"sport\":%u,\"dport\":%u", ntohs(e->sport), ntohs(e->dport));
	} else {
		put(&l, ",\"ethertype\":\"%04x\"", ntohs(e->ethertype));
	}
	if (e->name_len && e->name_len <= TF_NAME_MAX) {
		put(&l, ",\"name\":");
		put_str(&l, (const char *)e->name, e->name_len);
	}
	put(&l, "}");
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
	char line[2048];
	size_t n;

	if (len < sizeof(*e))
		return 0;
	/* Room for the seal's "prev" and the newline. */
	n = event_line(d, e, d->lost_pending, line, sizeof(line) - 64);
	if (!n)
		return 0;
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
	o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I}", "time", tbuf, "kind", "control",
		      "verdict", "deny", "reason", reason, "pid", (json_int_t)pid,
		      "uid", (json_int_t)uid, "gid", (json_int_t)gid);
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
	if (d->foreground)
		fflush(stdout);
	return n < 0 ? n : 0;
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
