// SPDX-License-Identifier: GPL-2.0
/*
 * The per-packet cost of each datapath path, and how it scales with rules,
 * sessions and flows: every program run through BPF_PROG_TEST_RUN with the
 * kernel's repeat loop and its reported duration (net/bpf/test_run.c,
 * bpf_test_timer: time spent in the loop divided by repeat, time away on
 * cond_resched() not counted), over several rounds, next to the no-op
 * programs of tools/bench/noop.bpf.c measured in the same rounds.
 *
 * The datapath is the real object, loaded by tf_dp_open() without pinning
 * inside a private network namespace, with sessions set up as the daemon
 * does (spec parser, policy compiler, tf_dp_session_install()). Skb test
 * runs judge on ifindex 1 (net/bpf/test_run.c keeps the loopback device
 * for ctx ifindex 0 or 1) and XDP runs say ingress_ifindex 1, so the
 * measured session is keyed on ifindex 1; other sessions sit on ifindexes
 * no device has.
 *
 * Every path is measured twice: with the daemon's defaults, where the
 * per-session event rate limit sends a repeated packet's first events and
 * suppresses the rest (what a flood costs), and with events_per_s = 0,
 * where every packet writes its event (what a new flow costs at ordinary
 * rates). Every timed run is checked: the expected reason counter must
 * have moved by exactly the repeat count, and every expected event must
 * have been either received from the ring buffer (sized to hold a whole
 * run, drained after each) or counted as suppressed, none lost, so a
 * result always belongs to the path it is named after.
 *
 * DNS answers consume the query they answer, so a repeated answer would
 * measure repeat - 1 unmatched ones: each is armed by a query and timed as
 * a single run (repeat 1), many times per round, beside single runs of the
 * no-op program; the round's sample is the median of its single runs.
 *
 * Part 5 times the daemon's event drain loop on a ring buffer full of
 * events (part_events()).
 *
 * Usage: bench_dp [--quick] [--only paths|scaling|events] [--out FILE]   (JSON to FILE)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <jansson.h>
#include <zlib.h>

#include <tapfence/abi.h>
#include <tapfence/dns.h>
#include "tapfence.skel.h"
#include "bench/noop.skel.h"
#include "common/log.h"
#include "daemon/control_int.h" /* struct tf_client: the drain's subscribers */
#include "daemon/daemon.h"
#include "daemon/datapath.h"
#include "daemon/netns.h"
#include "../../tests/unit/pkt.h"
#include "../../tests/unit/netns.h" /* private_netns() */

#define IFINDEX_LO   1	    /* what a test run judges on: the measured session */
#define IFINDEX_BASE 100000 /* other sessions: ifindex IFINDEX_BASE + slot, no such device */
#define MAIN_SID     1
#define REPEAT	     1000000 /* the kernel's repeat count per timed run */
#define SINGLES	     4000    /* single runs per round (DNS answers) */
#define MAX_ROUNDS   16
#define RINGBUF_SZ   (512u << 20) /* holds REPEAT events of 336 bytes */
#define DNS_ID	     0x1234
#define DNS_GPORT    40001
#define DNS_NAME     "example.com"
#define R(x)	     TF_REASON_##x
#define N(a)	     (sizeof(a) / sizeof((a)[0]))

/* Addresses of the measured session's far ends, all outside the hard floor. */
#define WEB	 "198.51.100.1"	   /* tcp 80, 443, 8000-8100 */
#define NORULE	 "203.0.113.50"	   /* no rule */
#define METADATA "169.254.169.254" /* hard floor */

/* ---- hooks: which program a frame is judged by ---------------------------- */

enum hook { TC_NOOP, XDP_NOOP, TC_FROM, XDP_FROM, TC_TO, NHOOKS };

static const struct {
	const char *name;
	int xdp;
	enum hook base; /* the no-op program of the same hook */
} hooks[NHOOKS] = {
	[TC_NOOP] = { "tc", 0, TC_NOOP }, [XDP_NOOP] = { "xdp", 1, XDP_NOOP },
	[TC_FROM] = { "tc", 0, TC_NOOP }, [XDP_FROM] = { "xdp", 1, XDP_NOOP },
	[TC_TO] = { "tc", 0, TC_NOOP },
};

#define H(h) (1u << (h))
#define FROM (H(TC_FROM) | H(XDP_FROM))
#define TO   H(TC_TO)
#define NOOP (H(TC_NOOP) | H(XDP_NOOP))

/* ---- what one packet is and what must come of it ---------------------------- */

#define DNS_QUERY (-1) /* struct pcase.dns: a query; n > 0: an answer with n A records */

struct pcase {
	const char *id; /* metric id: pkt.<id>.<hook> */
	const char *desc;
	unsigned int hooks; /* H(...) bits: measured once per hook */
	enum { D_FROM, D_TO } dir;
	struct pk p;	     /* addresses: "G" / "GW" stand for the session's */
	int dns;	     /* DNS_QUERY, or an answer with this many A records */
	__u16 reason;	     /* the counter every run must move */
	unsigned int events; /* events per packet */
	double max_ratio;    /* target: at most this many times the no-op (0: none) */
	double max_ev_ns;    /* target with every event written: at most this many ns (0: none) */
	double max_net_ns;   /* target: at most this many ns over the no-op (0: none) */
	int cname;	     /* a DNS answer: its A records owned by a CNAME of the asked name */
	int fresh; /* a DNS answer: its addresses unlearnt before each run (first learning) */
};

#define TCP(s, d, sp, dp, fl) \
	.src = s, .dst = d, .proto = IPPROTO_TCP, .sport = sp, .dport = dp, .flags = fl
#define UDP(s, d, sp, dp) .src = s, .dst = d, .proto = IPPROTO_UDP, .sport = sp, .dport = dp

/* Part 1: every path of the issue, on a session with 10 CIDR rules. */
static const struct pcase pcases[] = {
	{ "fast_path",
	  "established allowed TCP flow, second packet (ACK)",
	  FROM,
	  D_FROM,
	  { TCP("G", WEB, 40000, 443, PK_ACK) },
	  0,
	  R(ALLOW_FLOW),
	  0,
	  2.5,
	  0,
	  0,
	  0,
	  0 },
	{ "deny_floor",
	  "new flow denied by the hard floor (metadata address)",
	  FROM,
	  D_FROM,
	  { TCP("G", METADATA, 40002, 80, PK_SYN) },
	  0,
	  R(FLOOR_METADATA),
	  1,
	  4.0,
	  0,
	  0,
	  0,
	  0 },
	{ "deny_no_rule",
	  "new flow denied by no rule",
	  FROM,
	  D_FROM,
	  { TCP("G", NORULE, 40003, 80, PK_SYN) },
	  0,
	  R(NO_RULE),
	  1,
	  4.0,
	  0,
	  0,
	  0,
	  0 },
	{ "new_flow",
	  "new flow allowed by a CIDR rule (SYN: evaluated and inserted)",
	  FROM,
	  D_FROM,
	  { TCP("G", WEB, 40004, 443, PK_SYN) },
	  0,
	  R(ALLOW_RULE),
	  1,
	  4.0,
	  300,
	  0,
	  0,
	  0 },
	{ "reply",
	  "host->guest reply of a tracked flow",
	  TO,
	  D_TO,
	  { TCP(WEB, "G", 443, 40000, PK_ACK) },
	  0,
	  R(ALLOW_FLOW),
	  0,
	  2.5,
	  0,
	  0,
	  0,
	  0 },
	{ "dns_query",
	  "DNS query for an allowed name (recorded, flow opened)",
	  FROM,
	  D_FROM,
	  { UDP("G", "GW", DNS_GPORT, 53) },
	  DNS_QUERY,
	  R(ALLOW_DNS),
	  1,
	  0,
	  0,
	  0,
	  0,
	  0 },
	{ "dns_answer_1",
	  "DNS answer, 1 A record learnt (single runs)",
	  TO,
	  D_TO,
	  { UDP("GW", "G", 53, DNS_GPORT) },
	  1,
	  R(ALLOW_DNS_ANSWER),
	  1,
	  0,
	  0,
	  0,
	  0,
	  0 },
	{ "dns_answer_8",
	  "DNS answer, 8 A records learnt (single runs)",
	  TO,
	  D_TO,
	  { UDP("GW", "G", 53, DNS_GPORT) },
	  8,
	  R(ALLOW_DNS_ANSWER),
	  1,
	  0,
	  0,
	  0,
	  0,
	  0 },
	{ "dns_answer_16",
	  "DNS answer, 16 A records learnt (single runs)",
	  TO,
	  D_TO,
	  { UDP("GW", "G", 53, DNS_GPORT) },
	  16,
	  R(ALLOW_DNS_ANSWER),
	  1,
	  0,
	  0,
	  0,
	  0,
	  0 },
	{ "dns_answer_cname_4",
	  "DNS answer, a CNAME and 4 A records of its target learnt (single runs; "
	  "target on the time over the no-op's single run)",
	  TO,
	  D_TO,
	  { UDP("GW", "G", 53, DNS_GPORT) },
	  4,
	  R(ALLOW_DNS_ANSWER),
	  1,
	  0,
	  0,
	  1000,
	  1,
	  0 },
	{ "dns_answer_cname_4_fresh",
	  "DNS answer, a CNAME and 4 A records of its target, none learnt before (single runs; "
	  "the session's learnt addresses and bindings emptied before each)",
	  TO,
	  D_TO,
	  { UDP("GW", "G", 53, DNS_GPORT) },
	  4,
	  R(ALLOW_DNS_ANSWER),
	  1,
	  0,
	  0,
	  1000,
	  1,
	  1 },
};

/* Part 2: what is measured at each point of a scaling curve (TC, guest -> host). */
enum scase { S_NOOP, S_FAST, S_NEW, S_NORULE, NSCASES };

static const char *const scase_ids[NSCASES] = { "noop", "fast_path", "new_flow", "no_rule" };

struct dim {
	const char *id; /* rules, sessions, flows */
	const char *desc;
	unsigned int xs[6]; /* the points, 0-terminated */
	unsigned int quick_xs[6];
	double max_growth; /* target: cost at the last point / at the first (0: none) */
};

static const struct dim dims[] = {
	{ "rules",
	  "CIDR rules in the measured session",
	  { 10, 1000, 100000 },
	  { 10, 1000, 100000 },
	  1.2 },
	/* The slots are made by the pool, in batches (docs/performance.md#session-set-up). */
	{ "sessions", "sessions (10 rules each)", { 1, 100, 4095 }, { 1, 100, 250 }, 1.2 },
	{ "flows",
	  "flows in the measured session's table (1310720 slots)",
	  { 1, 1000, 100000, 1000000 },
	  { 1, 1000, 100000 },
	  0 },
	/* A noisy neighbour: its flows live in its own table, so the measured session's cost stays. */
	{ "neighbour_flows",
	  "flows in another session's table (1310720 slots)",
	  { 1, 1000, 100000, 1000000 },
	  { 1, 1000, 100000 },
	  1.2 },
};

#define FLOW_TABLE_BIG 1310720 /* flows dimension: 1M entries plus LRU slack */

/* ---- a loaded datapath and its baselines ------------------------------------ */

struct bench {
	struct tf_config cfg;
	struct tf_dp dp;
	struct noop_bpf *noop;
	struct ring_buffer *rb;
	__u64 nev;
	unsigned int rounds, repeat, singles;
};

/* A frame ready to run: its program and what the run must show. */
struct target {
	int fd, xdp;
	struct pk_frame f;
	__u16 reason; /* 0: not checked (no-op) */
	unsigned int events;
	unsigned int sid;
	int fresh; /* struct pcase.fresh */
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct bench *b = ctx;

	(void)data;
	(void)len;
	b->nev++;
	return 0;
}

static void bench_close(struct bench *b)
{
	ring_buffer__free(b->rb);
	b->rb = NULL;
	noop_bpf__destroy(b->noop);
	b->noop = NULL;
	tf_dp_close(&b->dp);
}

/* Load the datapath with b->cfg (already adjusted by the caller), the floor and the no-ops. */
static int bench_open(struct bench *b)
{
	int err;

	b->cfg.ringbuf_bytes = RINGBUF_SZ;
	err = tf_ns_init(0); /* sessions are keyed by this namespace's cookie */
	if (!err)
		err = tf_dp_open(&b->dp, &b->cfg, 0);
	if (err) {
		pr_warn("cannot load the datapath: %s\n", strerror(-err));
		return err;
	}
	err = tf_dp_write_floor(&b->dp);
	if (err)
		goto cleanup;
	b->noop = noop_bpf__open_and_load();
	if (!b->noop) {
		err = -errno;
		pr_warn("cannot load the no-op programs: %s\n", strerror(-err));
		goto cleanup;
	}
	b->rb = ring_buffer__new(tf_dp_ringbuf_fd(&b->dp), on_event, b, NULL);
	if (!b->rb) {
		err = -errno;
		goto cleanup;
	}
	return 0;
cleanup:
	bench_close(b);
	return err;
}

/* ---- sessions, the daemon's way --------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
};

static int sb_printf(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_printf(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	size_t need;
	char *np;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	need = s->len + (size_t)n + 1;
	if (need > s->cap) {
		s->cap = need > 2 * s->cap ? need : 2 * s->cap;
		np = realloc(s->p, s->cap);
		if (!np)
			return -ENOMEM;
		s->p = np;
	}
	va_start(ap, fmt);
	vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
	return 0;
}

/* Session slot i's addresses: guest 10.(100 + i / 256).(i % 256).2, gateway .1; MACs alike. */
struct addrs {
	char gmac[24], hmac[24], g4[24], gw4[24], g6[40], gw6[40];
};

static void session_addrs(unsigned int i, struct addrs *a)
{
	snprintf(a->gmac, sizeof(a->gmac), "02:00:00:%02x:%02x:02", (i >> 8) & 0xff, i & 0xff);
	snprintf(a->hmac, sizeof(a->hmac), "02:00:00:%02x:%02x:01", (i >> 8) & 0xff, i & 0xff);
	snprintf(a->g4, sizeof(a->g4), "10.%u.%u.2", 100 + (i >> 8), i & 0xff);
	snprintf(a->gw4, sizeof(a->gw4), "10.%u.%u.1", 100 + (i >> 8), i & 0xff);
	snprintf(a->g6, sizeof(a->g6), "fd00:%x::2", i);
	snprintf(a->gw6, sizeof(a->gw6), "fd00:%x::1", i);
}

/*
 * Host k of 198.18.0.0/15 (RFC 2544's benchmarking range): k -> k * 40503
 * + 977 mod 2^17 is a bijection (40503 is odd), so the first n are n
 * distinct /32s spread over the range, and any k >= n is none of them.
 */
static void bench_host(unsigned int k, char *buf, size_t len)
{
	unsigned int v = (k * 40503u + 977u) & 0x1ffff;

	snprintf(buf, len, "198.%u.%u.%u", 18 + (v >> 16), (v >> 8) & 0xff, v & 0xff);
}

/*
 * Slot i's spec: TCP 80, 443, 8000-8100 to 198.51.100.0/24, then nrules - 1
 * TCP 443 rules to hosts of 198.18.0.0/15, and a host rule for DNS_NAME.
 */
/* Part 6 (modes): what the measured session's spec gets besides its rules. */
static const char *main_extra_rules = "", *main_extra_fields = "";

static int spec_text(unsigned int i, unsigned int nrules, struct sbuf *s)
{
	struct addrs a;
	char host[16];
	unsigned int k;
	int err;

	session_addrs(i, &a);
	s->len = 0;
	err = sb_printf(
		s,
		"{\"id\":\"s%u\",\"ifname\":\"tap%u\","
		"\"guest\":{\"mac\":\"%s\",\"ipv4\":\"%s\",\"ipv6\":\"%s\"},"
		"\"gateway\":{\"mac\":\"%s\",\"ipv4\":\"%s\",\"ipv6\":\"%s\"},"
		"\"resolver\":{\"ipv4\":\"%s\"}%s,\"allow\":["
		"{\"cidr\":\"198.51.100.0/24\",\"proto\":\"tcp\",\"ports\":[80,443,\"8000-8100\"]},"
		"{\"host\":\"" DNS_NAME "\",\"proto\":\"tcp\",\"ports\":[443]}%s",
		i, i, a.gmac, a.g4, a.g6, a.hmac, a.gw4, a.gw6, a.gw4,
		i == MAIN_SID ? main_extra_fields : "", i == MAIN_SID ? main_extra_rules : "");
	for (k = 0; k + 1 < nrules && !err; k++) {
		bench_host(k, host, sizeof(host));
		err = sb_printf(s, ",{\"cidr\":\"%s/32\",\"proto\":\"tcp\",\"ports\":[443]}", host);
	}
	return err ? err : sb_printf(s, "]}");
}

/*
 * What the daemon's session add does, minus attaching to a device. The
 * spec goes to *keep if given (the caller frees it), else it is freed.
 */
static int session_write(struct tf_dp *dp, unsigned int max_rules, unsigned int sid, __u32 ifindex,
			 unsigned int nrules, struct sbuf *s, struct tf_spec *keep)
{
	struct tf_spec_limits lim = { .max_rules = max_rules };
	char err[TF_ERR_MAX] = "";
	struct tf_policy pol = {};
	struct tf_spec spec = {};
	int ret;

	ret = spec_text(sid, nrules, s);
	if (ret)
		return ret;
	ret = tf_spec_parse(s->p, s->len, &lim, &spec, err, sizeof(err));
	if (ret) {
		pr_warn("session %u: %s\n", sid, err);
		return ret;
	}
	ret = tf_policy_compile(spec.rules, spec.nrules, &pol);
	if (!ret)
		ret = tf_dp_session_install(
			dp, &spec, &pol, sid, 1,
			&(struct tf_sess_key){ .netns = tf_ns_self, .ifindex = ifindex }, 0);
	if (ret)
		pr_warn("session %u: cannot write it: %s\n", sid, strerror(-ret));
	tf_policy_free(&pol);
	if (keep && !ret)
		*keep = spec;
	else
		tf_spec_free(&spec);
	return ret;
}

static int session_add(struct bench *b, unsigned int sid, __u32 ifindex, unsigned int nrules,
		       struct sbuf *s)
{
	return session_write(&b->dp, b->cfg.max_rules, sid, ifindex, nrules, s, NULL);
}

/*
 * Many sessions' slots made as the daemon makes them: by the slot pool, a
 * batch of tables per grace period (datapath_slots.c), then taken in order
 * (1, 2, ...). One by one, 4095 slots took 153 s of grace periods.
 */
static int slots_warm(struct bench *b, unsigned int n)
{
	unsigned int ready = 0, dirty, i;
	int err;

	b->cfg.warm_slots = n;
	b->cfg.max_sessions = TF_MAX_SESSIONS - 1;
	err = tf_dp_pool_start(&b->dp);
	for (i = 0; !err && ready < n && i < 6000; i++) {
		usleep(10000);
		tf_dp_pool_count(&b->dp, &ready, &dirty);
	}
	if (!err && ready < n)
		err = -ETIMEDOUT;
	for (i = 1; !err && i <= n; i++)
		if (tf_dp_slot_take(&b->dp) != i)
			err = -EBUSY;
	return err;
}

/* The measured session on ifindex 1, then nsessions - 1 others. */
static int sessions_add(struct bench *b, unsigned int nsessions, unsigned int nrules)
{
	struct sbuf s = {};
	unsigned int i;
	int err = 0;

	if (nsessions > 2)
		err = slots_warm(b, nsessions);
	if (!err)
		err = session_add(b, MAIN_SID, IFINDEX_LO, nrules, &s);
	for (i = MAIN_SID + 1; i < MAIN_SID + nsessions && !err; i++)
		err = session_add(b, i, IFINDEX_BASE + i, 10, &s);
	free(s.p);
	return err;
}

static int prime_flow(struct bench *b);

/*
 * The datapath's flow clock now (bpf/lib/flow.bpf.h: jiffies, or ns): the
 * last-seen time of the measured flow, primed by its SYN just before.
 */
static int flow_clock_now(struct bench *b, __u64 *now)
{
	struct tf_flow_key k = { .family = TF_FAM_IPV4, .proto = IPPROTO_TCP };
	int outer = bpf_map__fd(b->dp.skel->maps.tf_flows), fd, err;
	__u32 sid = MAIN_SID, id;
	struct tf_flow v;

	err = prime_flow(b);
	if (err)
		return err;
	if (bpf_map_lookup_elem(outer, &sid, &id))
		return -errno;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, WEB, k.raddr);
	k.gport = htons(40000);
	k.rport = htons(443);
	err = bpf_map_lookup_elem(fd, &k, &v) ? -errno : 0;
	*now = v.seen;
	close(fd);
	return err;
}

/*
 * Fill session sid's flow table with n established flows to hosts of
 * 198.18.0.0/15 (guest ports from 1024 up), in batches of 4096, seen "now"
 * as the measured flow was (the datapath's flow clock, read from it).
 */
static int flows_fill(struct bench *b, __u32 sid, unsigned int n)
{
	enum { BATCH = 4096 };
	static struct tf_flow_key keys[BATCH];
	static struct tf_flow vals[BATCH];
	int outer = bpf_map__fd(b->dp.skel->maps.tf_flows), fd, err = 0;
	__u32 id, cnt, i, k, v;
	__u64 now = 0;

	if (!n)
		return 0;
	err = flow_clock_now(b, &now);
	if (err)
		return err;
	if (bpf_map_lookup_elem(outer, &sid, &id))
		return -errno;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	for (k = 0; k < n && !err; k += cnt) {
		cnt = n - k < BATCH ? n - k : BATCH;
		for (i = 0; i < cnt; i++) {
			v = k + i;
			memset(&keys[i], 0, sizeof(keys[i]));
			keys[i].raddr[0] = 198;
			keys[i].raddr[1] = (__u8)(18 + ((v >> 16) & 1));
			keys[i].raddr[2] = (__u8)(v >> 8);
			keys[i].raddr[3] = (__u8)v;
			keys[i].gport = htons((__u16)(1024 + (v >> 17)));
			keys[i].rport = htons(443);
			keys[i].family = TF_FAM_IPV4;
			keys[i].proto = IPPROTO_TCP;
			vals[i] = (struct tf_flow){
				.seen = now,
				.policy_ver = 1,
				.state = TF_FLOW_OPEN,
				.flags = TF_FF_REPLIED,
			};
		}
		if (bpf_map_update_batch(fd, keys, vals, &cnt, NULL))
			err = -errno;
	}
	close(fd);
	return err;
}

/* ---- frames ----------------------------------------------------------------- */

struct dnsmsg {
	__u8 b[PK_MAX];
	unsigned int len;
};

static void m_u16(struct dnsmsg *m, unsigned int v)
{
	pk_put16(m->b + m->len, v);
	m->len += 2;
}

/* The name DNS queries and answers are about: DNS_NAME but in part 7 (hellos). */
static const char *bench_qname = DNS_NAME;

/* Header, then one question for bench_qname, type A, class IN. */
static void m_head(struct dnsmsg *m, unsigned int flags, unsigned int ancount)
{
	const char *p = bench_qname, *dot;

	m->len = 0;
	m_u16(m, DNS_ID);
	m_u16(m, flags);
	m_u16(m, 1);
	m_u16(m, ancount);
	m_u16(m, 0);
	m_u16(m, 0);
	for (; *p; p = *dot ? dot + 1 : dot) {
		dot = strchrnul(p, '.');
		m->b[m->len++] = (__u8)(dot - p);
		memcpy(m->b + m->len, p, (size_t)(dot - p));
		m->len += (unsigned int)(dot - p);
	}
	m->b[m->len++] = 0;
	m_u16(m, DNS_T_A);
	m_u16(m, DNS_C_IN);
}

/* The CNAME target of a cname answer: "edge.example.net", uncompressed. */
static const __u8 cname_target[] = "\4edge\7example\3net";

/*
 * A query (RD), or an answer with n A records 203.0.113.1.., owned by the
 * question's name (a pointer to it), or with cname by a CNAME record's
 * target, the CNAME first.
 */
static void dns_msg(struct dnsmsg *m, int n, int cname)
{
	unsigned int owner = 0xc00c; /* the question's name, at offset 12 */
	int i;

	if (n == DNS_QUERY) {
		m_head(m, 0x0100, 0);
		return;
	}
	m_head(m, 0x8180, (unsigned int)n + !!cname);
	if (cname) {
		m_u16(m, 0xc00c);
		m_u16(m, DNS_T_CNAME);
		m_u16(m, DNS_C_IN);
		m_u16(m, 0);
		m_u16(m, 300);
		m_u16(m, sizeof(cname_target));
		owner = 0xc000 | m->len;
		memcpy(m->b + m->len, cname_target, sizeof(cname_target));
		m->len += sizeof(cname_target);
	}
	for (i = 0; i < n; i++) {
		m_u16(m, owner);
		m_u16(m, DNS_T_A);
		m_u16(m, DNS_C_IN);
		m_u16(m, 0);
		m_u16(m, 300); /* TTL */
		m_u16(m, 4);
		m->b[m->len++] = 203;
		m->b[m->len++] = 0;
		m->b[m->len++] = 113;
		m->b[m->len++] = (__u8)(1 + i);
	}
}

/* pk_build() with "G"/"GW" standing for slot sid's addresses, plus a DNS payload if dns. */
static int frame(const struct pcase *c, unsigned int sid, struct pk_frame *f)
{
	const unsigned int ip = 14, udp = ip + 20, payload = udp + 8;
	struct pk p = c->p;
	struct dnsmsg m;
	struct addrs a;

	session_addrs(sid, &a);
	if (p.src && !strcmp(p.src, "G"))
		p.src = a.g4;
	else if (p.src && !strcmp(p.src, "GW"))
		p.src = a.gw4;
	if (p.dst && !strcmp(p.dst, "G"))
		p.dst = a.g4;
	else if (p.dst && !strcmp(p.dst, "GW"))
		p.dst = a.gw4;
	if (c->dir == D_FROM ? pk_build(&p, a.gmac, a.hmac, f) : pk_build(&p, a.hmac, a.gmac, f))
		return -EINVAL;
	if (!c->dns)
		return 0;
	dns_msg(&m, c->dns, c->cname);
	if (f->family != TF_FAM_IPV4 || payload + m.len > PK_MAX)
		return -EINVAL;
	memcpy(f->data + payload, m.b, m.len);
	pk_put16(f->data + ip + 2, 20 + 8 + m.len);
	pk_put16(f->data + udp + 4, 8 + m.len);
	f->len = payload + m.len;
	return 0;
}

static int hook_fd(const struct bench *b, enum hook h)
{
	switch (h) {
	case TC_NOOP:
		return bpf_program__fd(b->noop->progs.tc_noop);
	case XDP_NOOP:
		return bpf_program__fd(b->noop->progs.xdp_noop);
	case TC_FROM:
		return bpf_program__fd(b->dp.skel->progs.tc_from_guest);
	case XDP_FROM:
		return bpf_program__fd(b->dp.skel->progs.xdp_from_guest);
	default:
		return bpf_program__fd(b->dp.skel->progs.tc_to_guest);
	}
}

static int target_make(const struct bench *b, const struct pcase *c, enum hook h, unsigned int sid,
		       struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->fd = hook_fd(b, h);
	t->xdp = hooks[h].xdp;
	t->reason = c->reason;
	t->events = c->events;
	t->sid = sid;
	t->fresh = c->fresh;
	if (H(h) & NOOP) {
		/* Any frame: the no-op never reads it. */
		struct pcase any = { .dir = D_FROM, .p = { TCP("G", WEB, 40000, 443, PK_ACK) } };

		return frame(&any, sid, &t->f);
	}
	return frame(c, sid, &t->f);
}

/* ---- running and checking --------------------------------------------------- */

/* repeat runs of program fd on the frame data[0, len); the kernel's time per run to *ns. */
static int run_frame(int fd, int xdp, const void *data, __u32 len, __u32 repeat, __u32 *ns)
{
	struct __sk_buff skb = { .ifindex = IFINDEX_LO };
	struct xdp_md xmd = { .ingress_ifindex = IFINDEX_LO, .data_end = len };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len, .repeat = repeat);

	if (xdp) {
		o.ctx_in = &xmd;
		o.ctx_size_in = sizeof(xmd);
	} else {
		o.ctx_in = &skb;
		o.ctx_size_in = sizeof(skb);
	}
	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	*ns = o.duration;
	return 0;
}

static int test_run(const struct target *t, __u32 repeat, __u32 *ns)
{
	return run_frame(t->fd, t->xdp, t->f.data, t->f.len, repeat, ns);
}

/*
 * n runs of t must have moved its reason counter by exactly n packets, and
 * each packet must have had its events either sent or held back by the
 * session's rate limit (suppressed), none lost to a full ring buffer.
 */
struct check {
	__u64 c0[TF_CNT_SLOTS];
	__u64 nev0;
	__u64 extra_events; /* expected besides the checked target's (arming queries) */
};

static int check_begin(struct bench *b, const struct target *t, struct check *ck)
{
	int err = ring_buffer__consume(b->rb);

	if (err < 0)
		return err;
	ck->nev0 = b->nev;
	ck->extra_events = 0;
	return t->reason ? tf_dp_counters(&b->dp, MAIN_SID, ck->c0) : 0;
}

static int check_end(struct bench *b, const struct target *t, const struct check *ck, __u64 packets,
		     const char *what)
{
	__u64 c[TF_CNT_SLOTS], moved, sent, held, lost;
	int err = ring_buffer__consume(b->rb);

	if (err < 0)
		return err;
	if (!t->reason)
		return 0;
	err = tf_dp_counters(&b->dp, MAIN_SID, c);
	if (err)
		return err;
	moved = c[t->reason] - ck->c0[t->reason];
	sent = b->nev - ck->nev0;
	held = c[TF_CNT_EVENTS_SUPPRESSED] - ck->c0[TF_CNT_EVENTS_SUPPRESSED];
	lost = c[TF_CNT_EVENTS_LOST] - ck->c0[TF_CNT_EVENTS_LOST];
	if (moved != packets || sent + held != packets * t->events + ck->extra_events || lost) {
		pr_warn("%s: %llu packets moved the expected counter by %llu, sent %llu events, "
			"suppressed %llu, lost %llu (expected %llu events): not the path it is named "
			"after\n",
			what, (unsigned long long)packets, (unsigned long long)moved,
			(unsigned long long)sent, (unsigned long long)held,
			(unsigned long long)lost,
			(unsigned long long)(packets * t->events + ck->extra_events));
		return -EPROTO;
	}
	return 0;
}

/* One timed run of repeat packets, checked. */
static int measure(struct bench *b, const struct target *t, const char *what, double *ns)
{
	struct check ck;
	__u32 d;
	int err;

	err = check_begin(b, t, &ck);
	if (!err)
		err = test_run(t, b->repeat, &d);
	if (!err)
		err = check_end(b, t, &ck, b->repeat, what);
	*ns = d;
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned int n)
{
	double s[SINGLES > MAX_ROUNDS ? SINGLES : MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/*
 * One round of single runs: each DNS answer target armed by its query and
 * run once, the no-op once beside it; the medians go to ans_ns / noop_ns.
 */
/* Delete every entry of session sid's table of kind which (untimed). */
static int slot_empty(struct bench *b, enum tf_slot_map which, unsigned int sid)
{
	int fd = tf_dp_slot_open(&b->dp, which, sid), err = 0;
	__u8 key[512];

	if (fd < 0)
		return fd;
	while (!err && !bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			err = -errno;
	if (!err && errno != ENOENT)
		err = -errno;
	close(fd);
	return err;
}

static int measure_singles(struct bench *b, const struct target *query, const struct target *ans,
			   const struct target *noop, const char *what, double *ans_ns,
			   double *noop_ns)
{
	static double a[SINGLES], z[SINGLES];
	struct check ck;
	unsigned int i;
	__u32 d;
	int err;

	err = check_begin(b, ans, &ck);
	for (i = 0; i < b->singles && !err; i++) {
		if (ans->fresh)
			err = slot_empty(b, TF_SLOT_LEARNED, ans->sid) ?:
				      slot_empty(b, TF_SLOT_TLSBIND, ans->sid);
		if (!err)
			err = test_run(query, 1, &d);
		if (!err)
			err = test_run(ans, 1, &d);
		a[i] = d;
		if (!err)
			err = test_run(noop, 1, &d);
		z[i] = d;
	}
	if (err)
		return err;
	/* Each arming query had its own event, besides the answer's. */
	ck.extra_events = (__u64)b->singles * query->events;
	err = check_end(b, ans, &ck, b->singles, what);
	*ans_ns = median(a, b->singles);
	*noop_ns = median(z, b->singles);
	return err;
}

/* ---- results ------------------------------------------------------------------ */

/* The samples of one measured thing, one per round. */
struct series {
	char id[64];
	const char *desc;
	double s[MAX_ROUNDS];
	unsigned int n;
	int base; /* index of its baseline series, or -1 */
	double max_ratio;
	double max_ns, max_net_ns; /* targets on the value, on the value less the baseline's */
	const char *mode;	   /* "repeat" or "single" */
};

static json_t *samples_json(const double *s, unsigned int n)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; a && i < n; i++)
		json_array_append_new(a, json_real(s[i]));
	return a;
}

static double vmin(const double *s, unsigned int n)
{
	double m = s[0];
	unsigned int i;

	for (i = 1; i < n; i++)
		m = s[i] < m ? s[i] : m;
	return m;
}

static double vmax(const double *s, unsigned int n)
{
	double m = s[0];
	unsigned int i;

	for (i = 1; i < n; i++)
		m = s[i] > m ? s[i] : m;
	return m;
}

/* A metric object: median, spread, samples; the ratio to its baseline and a target on it. */
static json_t *metric_json(const struct series *v, const struct series *base, const char *group,
			   unsigned int repeat)
{
	double med = median(v->s, v->n), bmed;
	json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:o, s:i, s:s}", "id", v->id,
			      "group", group, "desc", v->desc, "unit", "ns", "value", med, "min",
			      vmin(v->s, v->n), "max", vmax(v->s, v->n), "samples",
			      samples_json(v->s, v->n), "repeat",
			      v->mode[0] == 's' ? 1 : (int)repeat, "mode", v->mode);

	if (!m || !base)
		return m;
	bmed = median(base->s, base->n);
	json_object_set_new(m, "baseline", json_string(base->id));
	json_object_set_new(m, "ratio", json_real(bmed > 0 ? med / bmed : 0));
	json_object_set_new(m, "net_ns", json_real(med - bmed));
	if (v->max_net_ns > 0)
		json_object_set_new(m, "target",
				    json_pack("{s:s, s:f}", "on", "net_ns", "max", v->max_net_ns));
	else if (v->max_ns > 0)
		json_object_set_new(m, "target",
				    json_pack("{s:s, s:f}", "on", "value", "max", v->max_ns));
	else if (v->max_ratio > 0)
		json_object_set_new(m, "target",
				    json_pack("{s:s, s:f}", "on", "ratio", "max", v->max_ratio));
	return m;
}

static void progress(const struct series *v, const struct series *base)
{
	double med = median(v->s, v->n);

	fprintf(stderr, "  %-34s %8.1f ns  [%.0f..%.0f]", v->id, med, vmin(v->s, v->n),
		vmax(v->s, v->n));
	if (base)
		fprintf(stderr, "  %5.2fx %s", med / median(base->s, base->n), base->id);
	fprintf(stderr, "\n");
}

/* ---- part 1: every path --------------------------------------------------------- */

#define MAX_SERIES 32

static void series_init(struct series *v, const char *pfx, const char *id, const char *hook,
			const char *desc, int base, double max_ratio, const char *mode)
{
	snprintf(v->id, sizeof(v->id), "%s.%s.%s", pfx, id, hook);
	v->desc = desc;
	v->n = 0;
	v->base = base;
	v->max_ratio = max_ratio;
	v->max_ns = v->max_net_ns = 0;
	v->mode = mode;
}

/* The SYN of the flow fast_path and reply belong to (guest port 40000 to WEB:443). */
static int prime_flow(struct bench *b)
{
	static const struct pcase syn = { .dir = D_FROM,
					  .p = { TCP("G", WEB, 40000, 443, PK_SYN) } };
	struct target t;
	__u32 d;
	int err = target_make(b, &syn, TC_FROM, MAIN_SID, &t);

	return err ? err : test_run(&t, 1, &d);
}

/*
 * Every path of pcases. every = 0: the daemon's defaults, so a repeated
 * packet's events are rate limited per session (its burst goes out, the
 * rest is suppressed: what a flood costs); every = 1: events_per_s = 0,
 * each packet writes its event (what a new flow costs at ordinary rates);
 * then only the paths that have events are run.
 */
static int part_paths(struct bench *b, int every, json_t *out)
{
	const char *pfx = every ? "pkt_ev" : "pkt";
	enum { B_TC, B_XDP, B_SINGLE }; /* the baselines come first */
	static const struct pcase noop = { .hooks = NOOP };
	static struct series v[MAX_SERIES];
	static struct target t[MAX_SERIES];
	int base[NHOOKS] = { [TC_NOOP] = B_TC, [XDP_NOOP] = B_XDP }, query = -1, err;
	const struct pcase *c;
	unsigned int nv, i, r;
	double ns, zns;
	enum hook h;

	err = sessions_add(b, 1, 10);
	if (!err)
		err = prime_flow(b);
	if (!err)
		err = target_make(b, &noop, TC_NOOP, MAIN_SID, &t[B_TC]);
	if (!err)
		err = target_make(b, &noop, XDP_NOOP, MAIN_SID, &t[B_XDP]);
	if (err)
		return err;
	t[B_SINGLE] = t[B_TC];
	series_init(&v[B_TC], pfx, "noop", "tc", "no-op program (baseline)", -1, 0, "repeat");
	series_init(&v[B_XDP], pfx, "noop", "xdp", "no-op program (baseline)", -1, 0, "repeat");
	series_init(&v[B_SINGLE], pfx, "noop", "tc.single",
		    "no-op program, single runs (baseline of the DNS answers)", -1, 0, "single");
	nv = B_SINGLE + 1;
	for (c = pcases; c < pcases + N(pcases); c++) {
		for (h = 0; h < NHOOKS; h++) {
			if (!(c->hooks & H(h)) || (every && !c->events))
				continue;
			if (nv == MAX_SERIES)
				return -E2BIG;
			err = target_make(b, c, h, MAIN_SID, &t[nv]);
			if (err)
				return err;
			if (c->dns > 0)
				series_init(&v[nv], pfx, c->id, hooks[h].name, c->desc, B_SINGLE,
					    c->max_ratio, "single");
			else
				series_init(&v[nv], pfx, c->id, hooks[h].name, c->desc,
					    base[hooks[h].base], c->max_ratio, "repeat");
			/* Issue 17: a new flow with its event in ns, a DNS answer's parse and learning. */
			if (every && c->max_ev_ns > 0)
				v[nv].max_ns = c->max_ev_ns;
			v[nv].max_net_ns = c->max_net_ns;
			if (c->dns == DNS_QUERY && h == TC_FROM)
				query = (int)nv;
			nv++;
		}
	}
	if (query < 0)
		return -EINVAL;

	fprintf(stderr, "part 1%s: %u rounds of %u packets (DNS answers: %u single runs), %s\n",
		every ? "b" : "a", b->rounds, b->repeat, b->singles,
		every ? "every packet writes its event" : "daemon defaults (events rate limited)");
	for (r = 0; r < b->rounds; r++) {
		for (i = 0; i < nv; i++) {
			if (i == B_SINGLE)
				continue; /* measured beside the answers */
			if (v[i].mode[0] == 's') {
				err = measure_singles(b, &t[query], &t[i], &t[B_SINGLE], v[i].id,
						      &ns, &zns);
				/* One no-op sample per round: the one beside the first answer. */
				if (!err && v[B_SINGLE].n == r)
					v[B_SINGLE].s[v[B_SINGLE].n++] = zns;
			} else {
				err = measure(b, &t[i], v[i].id, &ns);
			}
			if (err)
				return err;
			v[i].s[v[i].n++] = ns;
		}
	}
	for (i = 0; i < nv; i++) {
		const struct series *bs = v[i].base >= 0 ? &v[v[i].base] : NULL;

		progress(&v[i], bs);
		json_array_append_new(
			out, metric_json(&v[i], bs, every ? "packet_events" : "packet", b->repeat));
	}
	return 0;
}

/* ---- part 7: the ClientHello check ------------------------------------------------- */

/*
 * What the SNI check of a TLS port costs the hello (bpf/lib/tls_hello.bpf.h):
 * the measured session gets a TLS rule for 203.0.113.0/24 TCP 443 and a host
 * rule for HELLO_SNI, and learns HELLO_SNI at 203.0.113.1 from a DNS answer
 * through tc_to_guest, as a guest's resolver would teach it. Each timed
 * hello is a new connection's first payload (its SYN and the server's
 * SYN-ACK run untimed before it, its RST after it: a hello is judged once
 * per connection, and holds one of the session's 16 hello buffers until
 * then), so it is a single run, beside a single run of the no-op, as the DNS answers
 * are. Two hellos of tests/tls/hellos: curl's (517 bytes, one segment) and
 * Chromium's (1987 bytes: two segments of at most 1448 payload bytes, the
 * sample their two runs' sum, beside two no-op runs), with "tls_ech":
 * "outer" since Chromium's hello carries a GREASE ECH extension. Every
 * hello must be allowed (allow_tls moves by exactly one per connection) and
 * each connection must send the same events.
 */
#define HELLO_SNI  "www.example.com"
#define HELLO_ADDR "203.0.113.1"
#define HELLO_MSS  1448
#define HELLO_MAX  4096

struct hello {
	const char *id, *desc, *file;
	__u8 b[HELLO_MAX];
	unsigned int len;
};

struct tframe {
	__u8 d[14 + 20 + 20 + HELLO_MSS];
	unsigned int len;
};

/* A TCP segment of the connection from guest port gport: from the guest, or to it (to_guest). */
static void tseg(struct tframe *f, unsigned int gport, int to_guest, __u8 flags, __u32 seq,
		 __u32 ack, const __u8 *pay, unsigned int n)
{
	struct addrs a;
	struct pk p = { .flags = flags };

	session_addrs(MAIN_SID, &a);
	p.smac = to_guest ? a.hmac : a.gmac;
	p.dmac = to_guest ? a.gmac : a.hmac;
	p.src = to_guest ? HELLO_ADDR : a.g4;
	p.dst = to_guest ? a.g4 : HELLO_ADDR;
	p.sport = (__u16)(to_guest ? 443 : gport);
	p.dport = (__u16)(to_guest ? gport : 443);
	f->len = pk_tcp_seg(f->d, &p, seq, ack, pay, n);
}

static int hello_load(struct hello *h)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "tests/tls/hellos/%s", h->file);
	f = fopen(path, "rb");
	if (!f)
		return -errno;
	h->len = (unsigned int)fread(h->b, 1, sizeof(h->b), f);
	fclose(f);
	return h->len > 5 ? 0 : -EINVAL;
}

/*
 * One connection: SYN and SYN-ACK untimed, then the hello in segments of
 * at most HELLO_MSS bytes, each a single run (their sum to *ns), then the
 * guest's RST, untimed.
 */
static int hello_conn(struct bench *b, const struct hello *h, unsigned int gport, double *ns)
{
	int from = bpf_program__fd(b->dp.skel->progs.tc_from_guest);
	int to = bpf_program__fd(b->dp.skel->progs.tc_to_guest);
	__u32 isn = 0x10000000u + gport * 7919u, risn = 0x70000000u, d;
	static struct tframe f;
	unsigned int off, n;
	int err;

	tseg(&f, gport, 0, PK_SYN, isn, 0, NULL, 0);
	err = run_frame(from, 0, f.d, f.len, 1, &d);
	tseg(&f, gport, 1, PK_SYN | PK_ACK, risn, isn + 1, NULL, 0);
	if (!err)
		err = run_frame(to, 0, f.d, f.len, 1, &d);
	*ns = 0;
	for (off = 0; off < h->len && !err; off += n) {
		n = h->len - off < HELLO_MSS ? h->len - off : HELLO_MSS;
		tseg(&f, gport, 0, PK_ACK | PK_PSH, isn + 1 + off, risn + 1, h->b + off, n);
		err = run_frame(from, 0, f.d, f.len, 1, &d);
		*ns += d;
	}
	/* The guest resets it: the flow's hello buffer goes (a session has 16). */
	tseg(&f, gport, 0, PK_RST | PK_ACK, isn + 1 + h->len, risn + 1, NULL, 0);
	return err ? err : run_frame(from, 0, f.d, f.len, 1, &d);
}

/* Counters and events of the measured session now: allow_tls, and events sent + suppressed. */
static int hello_count(struct bench *b, __u64 *allowed, __u64 *events)
{
	__u64 c[TF_CNT_SLOTS];
	int err = ring_buffer__consume(b->rb);

	if (err >= 0)
		err = tf_dp_counters(&b->dp, MAIN_SID, c);
	if (err < 0)
		return err;
	if (c[TF_CNT_EVENTS_LOST])
		return -ENOSPC;
	*allowed = c[R(ALLOW_TLS)];
	*events = b->nev + c[TF_CNT_EVENTS_SUPPRESSED];
	return 0;
}

static int part_hello(struct bench *b, json_t *out)
{
	static struct hello hellos[] = {
		{ .id = "hello_curl_1seg",
		  .desc = "curl's ClientHello, 517 bytes in one segment (single runs)",
		  .file = "curl.bin" },
		{ .id = "hello_chromium_2seg",
		  .desc = "Chromium's ClientHello, 1987 bytes in two segments (two single runs, "
			  "summed)",
		  .file = "chromium.bin" },
	};
	static double a[SINGLES], z[SINGLES];
	static struct series v[N(hellos)], base[N(hellos)];
	/* Issue 17: one segment <= 1.5 us, two <= 4 us, over the no-op. */
	static const double max_net[N(hellos)] = { 1500, 4000 };
	static const struct pcase noop = { .hooks = NOOP }, query = { .dir = D_FROM,
			.p = { UDP("G", "GW", DNS_GPORT, 53) }, .dns = DNS_QUERY },
		answer = { .dir = D_TO, .p = { UDP("GW", "G", 53, DNS_GPORT) }, .dns = 1 };
	struct target tn, tq, ta;
	unsigned int gport = 1024, i, k, r, segs, seg;
	__u64 al0, ev0, al1, ev1, per_conn = 0;
	__u32 d;
	int err;

	for (k = 0; k < N(hellos); k++) {
		err = hello_load(&hellos[k]);
		if (err)
			return err;
	}
	tf_config_defaults(&b->cfg);
	b->cfg.tls_ech_outer = 1;
	main_extra_rules = ",{\"cidr\":\"203.0.113.0/24\",\"proto\":\"tcp\",\"ports\":[443],"
			   "\"tls\":true},{\"host\":\"" HELLO_SNI "\",\"proto\":\"tcp\","
			   "\"ports\":[443]}";
	bench_qname = HELLO_SNI;
	err = bench_open(b);
	if (!err)
		err = sessions_add(b, 1, 10);
	if (!err)
		err = target_make(b, &noop, TC_NOOP, MAIN_SID, &tn);
	if (!err)
		err = target_make(b, &query, TC_FROM, MAIN_SID, &tq);
	if (!err)
		err = target_make(b, &answer, TC_TO, MAIN_SID, &ta);
	main_extra_rules = "";
	bench_qname = DNS_NAME;
	if (err)
		goto out;
	for (k = 0; k < N(hellos); k++) {
		segs = (hellos[k].len + HELLO_MSS - 1) / HELLO_MSS;
		snprintf(v[k].id, sizeof(v[k].id), "pkt.%s.tc", hellos[k].id);
		v[k].desc = hellos[k].desc;
		v[k].mode = "single";
		v[k].base = -1;
		v[k].max_net_ns = max_net[k];
		snprintf(base[k].id, sizeof(base[k].id), "pkt.noop.tc.single_x%u", segs);
		base[k].desc = "no-op program, as many single runs as the hello has segments, summed";
		base[k].mode = "single";
		base[k].base = -1;
	}
	fprintf(stderr, "part 7: ClientHellos, %u rounds of %u connections each\n", b->rounds,
		b->singles);
	for (r = 0; r < b->rounds && !err; r++) {
		/* The name learnt again each round: its TTL (300 s) outlives a round. */
		err = test_run(&tq, 1, &d);
		if (!err)
			err = test_run(&ta, 1, &d);
		for (k = 0; k < N(hellos) && !err; k++) {
			segs = (hellos[k].len + HELLO_MSS - 1) / HELLO_MSS;
			err = hello_count(b, &al0, &ev0);
			for (i = 0; i < b->singles && !err; i++) {
				err = hello_conn(b, &hellos[k], gport, &a[i]);
				gport = gport == 65535 ? 1024 : gport + 1;
				for (z[i] = 0, seg = 0; seg < segs && !err; seg++) {
					err = test_run(&tn, 1, &d);
					z[i] += d;
				}
				/* Every connection sends what the first one did. */
				if (!err && !per_conn && !(err = hello_count(b, &al1, &ev1)))
					per_conn = ev1 - ev0;
			}
			if (!err)
				err = hello_count(b, &al1, &ev1);
			if (!err && (al1 - al0 != b->singles || ev1 - ev0 != per_conn * b->singles)) {
				pr_warn("%s: %u connections, %llu hellos allowed, %llu events (%llu "
					"expected): not the path it is named after\n",
					v[k].id, b->singles, (unsigned long long)(al1 - al0),
					(unsigned long long)(ev1 - ev0),
					(unsigned long long)(per_conn * b->singles));
				err = -EPROTO;
			}
			v[k].s[v[k].n++] = median(a, b->singles);
			base[k].s[base[k].n++] = median(z, b->singles);
		}
	}
	for (k = 0; k < N(hellos) && !err; k++) {
		progress(&base[k], NULL);
		json_array_append_new(out, metric_json(&base[k], NULL, "packet", 1));
		progress(&v[k], &base[k]);
		json_array_append_new(out, metric_json(&v[k], &base[k], "packet", 1));
	}
out:
	bench_close(b);
	return err;
}

/* ---- part 6: modes and deny rules ------------------------------------------------ */

/*
 * The measured session again, as part 1 sets it up, then with what issue
 * 15 added in place: CIDR deny rules (one more LPM lookup per new flow),
 * audit mode, rejections. Each variant is measured on the same three
 * packets, with the same rounds; its ratio is to the no-op, and to the
 * plain session ("enforce") measured in the same run.
 */
static const struct variant {
	const char *id, *desc, *rules, *fields;
	__u16 denied; /* the reason the SYN to NORULE gets */
} variants[] = {
	{ "enforce", "10 rules, enforce mode, drop (as part 1)", "", "", R(NO_RULE) },
	{ "deny", "... and 3 CIDR deny rules, 203.0.113.0/24 among them",
	  ",{\"cidr\":\"203.0.113.0/24\",\"action\":\"deny\"}"
	  ",{\"cidr\":\"198.51.100.200\",\"proto\":\"tcp\",\"ports\":[22],\"action\":\"deny\"}"
	  ",{\"cidr\":\"192.0.2.0/24\",\"action\":\"deny\"}",
	  "", R(DENY_RULE) },
	{ "audit", "... in audit mode (the denied SYN passes, audited)", "", ",\"mode\":\"audit\"",
	  R(NO_RULE) },
	{ "reject", "... with on_deny reject (the denied SYN gets its RST: single runs)", "",
	  ",\"on_deny\":\"reject\"", R(NO_RULE) },
};

enum { M_FAST, M_NEW, M_DENIED, NMCASES };

static const struct pcase mcases[NMCASES] = {
	[M_FAST] = { "fast_path",
		     "established flow, ACK",
		     H(TC_FROM),
		     D_FROM,
		     { TCP("G", WEB, 40000, 443, PK_ACK) },
		     0,
		     R(ALLOW_FLOW),
		     0,
		     0 },
	[M_NEW] = { "new_flow",
		    "new flow allowed by a CIDR rule (SYN)",
		    H(TC_FROM),
		    D_FROM,
		    { TCP("G", WEB, 40004, 443, PK_SYN) },
		    0,
		    R(ALLOW_RULE),
		    1,
		    0 },
	[M_DENIED] = { "denied",
		       "new flow no allow rule covers (SYN)",
		       H(TC_FROM),
		       D_FROM,
		       { TCP("G", NORULE, 40003, 80, PK_SYN) },
		       0,
		       0,
		       1,
		       0 },
};

/*
 * Single runs of t (a rejection rewrites its packet, so a repeat would
 * judge the answer), the no-op once beside each; medians to *ns, *noop_ns.
 */
static int measure_rewritten(struct bench *b, const struct target *t, const struct target *noop,
			     const char *what, double *ns, double *noop_ns)
{
	static double a[SINGLES], z[SINGLES];
	struct check ck;
	unsigned int i;
	__u32 d;
	int err;

	err = check_begin(b, t, &ck);
	for (i = 0; i < b->singles && !err; i++) {
		err = test_run(t, 1, &d);
		a[i] = d;
		if (!err)
			err = test_run(noop, 1, &d);
		z[i] = d;
	}
	if (!err)
		err = check_end(b, t, &ck, b->singles, what);
	*ns = median(a, b->singles);
	*noop_ns = median(z, b->singles);
	return err;
}

static int part_modes(struct bench *b, json_t *out)
{
	static struct series v[N(variants)][NMCASES], base, sbase;
	static struct target t[N(variants)][NMCASES];
	struct target noop;
	static const struct pcase none = { .hooks = NOOP };
	const struct series *bs;
	unsigned int k, c, r;
	double ns, zns;
	json_t *m;
	int err = 0;

	series_init(&base, "modes", "noop", "tc", "no-op program (baseline)", -1, 0, "repeat");
	series_init(&sbase, "modes", "noop", "tc.single", "no-op program, single runs", -1, 0,
		    "single");
	for (k = 0; k < N(variants); k++)
		for (c = 0; c < NMCASES; c++) {
			char id[40];

			snprintf(id, sizeof(id), "%.15s.%.15s", variants[k].id, mcases[c].id);
			series_init(&v[k][c], "modes", id, "tc", variants[k].desc, -1, 0,
				    k == 3 && c == M_DENIED ? "single" : "repeat");
		}
	fprintf(stderr, "part 6: modes and deny rules, %u rounds\n", b->rounds);
	/* Variants in the inner loop: a round sees each of them under the same conditions. */
	for (r = 0; r < b->rounds && !err; r++) {
		for (k = 0; k < N(variants) && !err; k++) {
			main_extra_rules = variants[k].rules;
			main_extra_fields = variants[k].fields;
			err = bench_open(b);
			if (!err)
				err = sessions_add(b, 1, 10);
			if (!err)
				err = prime_flow(b);
			if (!err)
				err = target_make(b, &none, TC_NOOP, MAIN_SID, &noop);
			for (c = 0; c < NMCASES && !err; c++) {
				err = target_make(b, &mcases[c], TC_FROM, MAIN_SID, &t[k][c]);
				if (c == M_DENIED)
					t[k][c].reason = variants[k].denied;
			}
			if (!err && k == 0) {
				err = measure(b, &noop, base.id, &ns);
				base.s[base.n++] = ns;
			}
			for (c = 0; c < NMCASES && !err; c++) {
				if (v[k][c].mode[0] == 's') {
					err = measure_rewritten(b, &t[k][c], &noop, v[k][c].id, &ns,
								&zns);
					if (!err && sbase.n == r)
						sbase.s[sbase.n++] = zns;
				} else {
					err = measure(b, &t[k][c], v[k][c].id, &ns);
				}
				v[k][c].s[v[k][c].n++] = ns;
			}
			bench_close(b);
		}
	}
	main_extra_rules = main_extra_fields = "";
	if (err)
		return err;
	progress(&base, NULL);
	json_array_append_new(out, metric_json(&base, NULL, "modes", b->repeat));
	progress(&sbase, NULL);
	json_array_append_new(out, metric_json(&sbase, NULL, "modes", 1));
	for (k = 0; k < N(variants); k++) {
		for (c = 0; c < NMCASES; c++) {
			bs = v[k][c].mode[0] == 's' ? &sbase : &base;
			progress(&v[k][c], bs);
			m = metric_json(&v[k][c], bs, "modes", b->repeat);
			/* Beside the plain session's same packet (not for the single runs). */
			if (m && k && v[k][c].mode[0] == 'r')
				json_object_set_new(m, "vs_enforce",
						    json_real(median(v[k][c].s, v[k][c].n) /
							      median(v[0][c].s, v[0][c].n)));
			json_array_append_new(out, m);
		}
	}
	return 0;
}

/* ---- part 2: scaling -------------------------------------------------------------- */

/* The targets of one point: rule hosts k = nrules - 2 (the last one) and k = nrules (none). */
static int scale_targets(struct bench *b, unsigned int nrules, struct target t[NSCASES])
{
	char last[16], none[16];
	struct pcase c[NSCASES] = {
		[S_NOOP] = { .hooks = H(TC_NOOP) },
		[S_FAST] = { .dir = D_FROM,
			     .p = { TCP("G", WEB, 40000, 443, PK_ACK) },
			     .reason = R(ALLOW_FLOW) },
		[S_NEW] = { .dir = D_FROM,
			    .p = { TCP("G", last, 40004, 443, PK_SYN) },
			    .reason = R(ALLOW_RULE),
			    .events = 1 },
		[S_NORULE] = { .dir = D_FROM,
			       .p = { TCP("G", none, 40003, 443, PK_SYN) },
			       .reason = R(NO_RULE),
			       .events = 1 },
	};
	unsigned int i;
	int err;

	bench_host(nrules - 2, last, sizeof(last));
	bench_host(nrules, none, sizeof(none));
	for (i = 0; i < NSCASES; i++) {
		err = target_make(b, &c[i], i == S_NOOP ? TC_NOOP : TC_FROM, MAIN_SID, &t[i]);
		if (err)
			return err;
	}
	return prime_flow(b);
}

/*
 * The fast path on a flow picked at random among the n filled by
 * flows_fill() (issue 17: "random of 1M flows <= 2x the hot figure"), in
 * single runs, each beside a single run of the hot flow and one of the
 * no-op: a repeated run would keep the random flow's entry in cache. Each
 * run must count as allow_flow (check_end()). Emits both series (net of
 * the no-op's) and their ratio.
 */
static int random_flows(struct bench *b, const struct target t[NSCASES], unsigned int x,
			unsigned int n, json_t *out)
{
	static double a[SINGLES], h[SINGLES], z[SINGLES];
	static struct series rnd, hot, noop;
	struct target r = t[S_FAST];
	__u32 seed = 2463534242u, v, d;
	unsigned int i, k, runs = 0;
	struct check ck;
	double net_r, net_h;
	json_t *m;
	int err;

	snprintf(rnd.id, sizeof(rnd.id), "scale.flows.random.%u", x);
	snprintf(hot.id, sizeof(hot.id), "scale.flows.hot_single.%u", x);
	snprintf(noop.id, sizeof(noop.id), "scale.flows.noop_single.%u", x);
	rnd.desc = "fast path, a flow picked at random among the table's (single runs)";
	hot.desc = "fast path, the same flow each time (single runs)";
	noop.desc = "no-op program (single runs, the baseline)";
	rnd.mode = hot.mode = noop.mode = "single";
	rnd.n = hot.n = noop.n = 0;
	rnd.max_ratio = hot.max_ratio = 0;
	rnd.max_ns = rnd.max_net_ns = hot.max_ns = hot.max_net_ns = 0;
	/* flows_fill()'s keys: the frame's IPv4 destination (offset 30) and TCP source port (34). */
	if (r.f.family != TF_FAM_IPV4 || r.f.len < 38)
		return -EINVAL;
	err = check_begin(b, &t[S_FAST], &ck);
	for (k = 0; k < b->rounds && !err; k++) {
		for (i = 0; i < b->singles && !err; i++, runs++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			v = seed % n;
			r.f.data[30] = 198;
			r.f.data[31] = (__u8)(18 + ((v >> 16) & 1));
			r.f.data[32] = (__u8)(v >> 8);
			r.f.data[33] = (__u8)v;
			pk_put16(r.f.data + 34, 1024 + (v >> 17));
			err = test_run(&r, 1, &d);
			a[i] = d;
			if (!err)
				err = test_run(&t[S_FAST], 1, &d);
			h[i] = d;
			if (!err)
				err = test_run(&t[S_NOOP], 1, &d);
			z[i] = d;
		}
		rnd.s[rnd.n++] = median(a, b->singles);
		hot.s[hot.n++] = median(h, b->singles);
		noop.s[noop.n++] = median(z, b->singles);
	}
	if (!err)
		err = check_end(b, &t[S_FAST], &ck, 2ULL * runs, rnd.id);
	if (err)
		return err;
	json_array_append_new(out, metric_json(&noop, NULL, "scale_random", 1));
	json_array_append_new(out, metric_json(&hot, &noop, "scale_random", 1));
	json_array_append_new(out, metric_json(&rnd, &noop, "scale_random", 1));
	progress(&hot, &noop);
	progress(&rnd, &noop);
	net_r = median(rnd.s, rnd.n) - median(noop.s, noop.n);
	net_h = median(hot.s, hot.n) - median(noop.s, noop.n);
	snprintf(rnd.id, sizeof(rnd.id), "scale.flows.random_vs_hot.%u", x);
	m = json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:i}", "id", rnd.id, "group", "scale_random",
		      "desc",
		      "fast path: a random flow's cost over a hot one's (each net of the no-op)",
		      "unit", "x", "value", net_h > 0 ? net_r / net_h : 0, "dim", "flows", "x", x);
	/* Issue 17's target is on 1M flows. */
	if (m && x >= 1000000)
		json_object_set_new(m, "target",
				    json_pack("{s:s, s:f}", "on", "value", "max", 2.0));
	json_array_append_new(out, m);
	fprintf(stderr, "  %-34s %8.2f x  (net %.0f / %.0f ns)\n", rnd.id,
		net_h > 0 ? net_r / net_h : 0, net_r, net_h);
	return 0;
}

static int scale_point(const struct dim *d, unsigned int x, struct bench *b, json_t *out,
		       double med[NSCASES])
{
	static struct series v[NSCASES];
	unsigned int nrules = 10, nsessions = 1, nflows = 0, i, r;
	__u32 fill_sid = MAIN_SID;
	struct target t[NSCASES];
	struct timespec t0, t1;
	double ns;
	int err;

	tf_config_defaults(&b->cfg);
	b->cfg.max_rules = 200000;
	if (!strcmp(d->id, "rules"))
		nrules = x;
	else if (!strcmp(d->id, "sessions"))
		nsessions = x;
	else
		nflows = x - 1; /* and the measured flow */
	if (!strcmp(d->id, "neighbour_flows")) {
		nsessions = 2;
		fill_sid = MAIN_SID + 1;
	}
	if (nflows || !strcmp(d->id, "flows") || !strcmp(d->id, "neighbour_flows"))
		b->cfg.flows_per_session = FLOW_TABLE_BIG;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = bench_open(b);
	if (err)
		return err;
	err = sessions_add(b, nsessions, nrules);
	if (!err)
		err = flows_fill(b, fill_sid, nflows);
	if (!err)
		err = scale_targets(b, nrules, t);
	if (err)
		goto cleanup;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "part 2: %s = %u (set up in %.1f s)\n", d->id, x,
		(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (i = 0; i < NSCASES; i++) {
		snprintf(v[i].id, sizeof(v[i].id), "scale.%s.%s.%u", d->id, scase_ids[i], x);
		v[i].desc = d->desc;
		v[i].n = 0;
		v[i].base = i == S_NOOP ? -1 : S_NOOP;
		v[i].mode = "repeat";
		v[i].max_ratio = 0;
	}
	for (r = 0; r < b->rounds && !err; r++) {
		for (i = 0; i < NSCASES && !err; i++) {
			err = measure(b, &t[i], v[i].id, &ns);
			v[i].s[v[i].n++] = ns;
		}
	}
	for (i = 0; i < NSCASES && !err; i++) {
		json_t *m = metric_json(&v[i], i == S_NOOP ? NULL : &v[S_NOOP], "scale", b->repeat);

		json_object_set_new(m, "dim", json_string(d->id));
		json_object_set_new(m, "series", json_string(scase_ids[i]));
		json_object_set_new(m, "x", json_integer(x));
		json_array_append_new(out, m);
		progress(&v[i], i == S_NOOP ? NULL : &v[S_NOOP]);
		med[i] = median(v[i].s, v[i].n);
	}
	if (!err && nflows && !strcmp(d->id, "flows"))
		err = random_flows(b, t, x, nflows, out);
cleanup:
	bench_close(b);
	return err;
}

/* The growth of each series from the first point to the last, against the target. */
static void growth_json(const struct dim *d, const unsigned int *xs, unsigned int n,
			double med[][NSCASES], json_t *out)
{
	char id[96], desc[160];
	unsigned int i;
	json_t *m;

	for (i = S_FAST; i < NSCASES; i++) {
		snprintf(id, sizeof(id), "scale.%s.%s.growth", d->id, scase_ids[i]);
		snprintf(desc, sizeof(desc), "%s: cost at %u %s / at %u", scase_ids[i], xs[n - 1],
			 d->id, xs[0]);
		m = json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:i, s:i}", "id", id, "group",
			      "scale_growth", "desc", desc, "unit", "x", "value",
			      med[0][i] > 0 ? med[n - 1][i] / med[0][i] : 0, "dim", d->id, "from",
			      xs[0], "to", xs[n - 1]);
		if (m && d->max_growth > 0)
			json_object_set_new(m, "target",
					    json_pack("{s:s, s:f}", "on", "value", "max",
						      d->max_growth));
		json_array_append_new(out, m);
	}
}

/* Sessions whose tables fit in the fd limit, 512 fds kept for the rest. */
static unsigned int sessions_fit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < 512 + TF_SLOT_MAPS)
		return 1;
	return (unsigned int)((rl.rlim_cur - 512) / TF_SLOT_MAPS);
}

static int part_scaling(struct bench *b, int quick, json_t *out)
{
	double med[6][NSCASES];
	unsigned int xs[6], n, k, fit = sessions_fit();
	size_t i;
	int err;

	for (i = 0; i < N(dims); i++) {
		for (n = 0; n < 6 && (quick ? dims[i].quick_xs : dims[i].xs)[n]; n++) {
			xs[n] = (quick ? dims[i].quick_xs : dims[i].xs)[n];
			/* A point the fd limit cannot hold is measured where it can, and named so. */
			if (!strcmp(dims[i].id, "sessions") && xs[n] > fit) {
				pr_warn("scaling: %u sessions need %u fds; measured at %u, what the fd "
					"limit holds\n",
					xs[n], xs[n] * TF_SLOT_MAPS + 512, fit);
				xs[n] = fit;
			}
		}
		for (k = 0; k < n; k++) {
			err = scale_point(&dims[i], xs[k], b, out, med[k]);
			if (err)
				return err;
		}
		growth_json(&dims[i], xs, n, med, out);
	}
	return 0;
}

/* ---- part 5: the event feed ------------------------------------------------------ */

/*
 * The daemon's drain loop alone (user/daemon/events.c: tf_events_drain(),
 * every event formatted as a JSON line, sealed into the log's tree and
 * written to the log file; auditlog.c): a flood of denied packets with
 * every event written (events_per_s = 0) fills the ring buffer, then one
 * drain of all of it is timed, with checkpoints at the daemon's default
 * cadence. The log is a file in a scratch directory under /tmp, rotated
 * away (SIGHUP's path) and removed after each round.
 */
/* Bytes per event of the log file, and gzipped at the daemon's level (6). */
static int log_bytes(const char *path, unsigned int n, double *raw, double *gz)
{
	FILE *f = fopen(path, "re");
	long len = -1;
	char *buf = NULL;
	uLongf zlen = 0;
	Bytef *z = NULL;
	int err = -EIO;

	if (f && !fseek(f, 0, SEEK_END) && (len = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc(len)) && fread(buf, 1, len, f) == (size_t)len &&
	    (z = malloc(zlen = compressBound(len))) &&
	    compress2(z, &zlen, (const Bytef *)buf, len, 6) == Z_OK) {
		*raw = (double)len / n;
		*gz = (double)zlen / n;
		err = 0;
	}
	if (f)
		fclose(f);
	free(z);
	free(buf);
	return err;
}

#define SUBS 4 /* subscribers of the second event-feed measurement */

/* One subscriber's far end: reads until EOF, counting lines. */
struct sub_reader {
	pthread_t thread;
	int fd, started;
	atomic_ullong lines;
};

static void *sub_read(void *arg)
{
	struct sub_reader *r = arg;
	static __thread char buf[1 << 16];
	unsigned long long k;
	char *p, *end;
	ssize_t n;

	while ((n = read(r->fd, buf, sizeof(buf))) > 0) {
		for (k = 0, p = buf, end = buf + n; (p = memchr(p, '\n', (size_t)(end - p))); p++)
			k++;
		atomic_fetch_add(&r->lines, k);
	}
	return NULL;
}

/*
 * nsubs subscribers of every session on d, each a socket pair whose far end
 * a thread reads, as a `tapfence events --follow' would. 0 or -errno.
 */
static int subs_open(struct tf_daemon *d, struct sub_reader *rd, unsigned int nsubs)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct tf_client *c;
	unsigned int i;
	int sv[2];

	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0)
		return -errno;
	for (i = 0; i < nsubs; i++) {
		c = calloc(1, sizeof(*c));
		if (!c || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
			free(c);
			return -ENOMEM;
		}
		fcntl(sv[0], F_SETFL, O_NONBLOCK);
		c->fd = sv[0];
		c->subscriber = 1;
		ev.data.ptr = c;
		epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, c->fd, &ev);
		c->next = d->clients;
		d->clients = c;
		d->nclients++;
		d->nsubscribers++;
		rd[i].fd = sv[1];
		atomic_store(&rd[i].lines, 0);
		if (pthread_create(&rd[i].thread, NULL, sub_read, &rd[i]))
			return -EAGAIN;
		rd[i].started = 1;
	}
	return 0;
}

/*
 * Until every reader has read want lines: what the drain queued for a
 * subscriber whose socket was full is sent as it becomes writable, as the
 * daemon's event loop does on EPOLLOUT. 0, or -ETIMEDOUT.
 */
static int subs_wait(struct tf_daemon *d, struct sub_reader *rd, unsigned int nsubs,
		     unsigned long long want)
{
	struct epoll_event evs[SUBS];
	unsigned int i, behind, spins;
	int n, k;

	for (spins = 0; spins < 100000; spins++) {
		for (behind = 0, i = 0; i < nsubs; i++)
			behind += atomic_load(&rd[i].lines) < want;
		if (!behind)
			return 0;
		n = epoll_wait(d->epoll_fd, evs, SUBS, 1);
		for (k = 0; k < n; k++)
			if (evs[k].events & EPOLLOUT)
				tf_ctl_event(d, evs[k].data.ptr, evs[k].events);
	}
	return -ETIMEDOUT;
}

static void subs_close(struct tf_daemon *d, struct sub_reader *rd, unsigned int nsubs)
{
	struct tf_client *c;
	unsigned int i;

	tf_ctl_stop(d); /* the sender thread, and the feed's buffers */
	for (c = d->clients; c; c = c->next)
		if (!c->dead)
			close(c->fd);
	for (i = 0; i < nsubs && rd[i].started; i++) {
		pthread_join(rd[i].thread, NULL);
		close(rd[i].fd);
		rd[i].started = 0;
	}
	while ((c = d->clients)) {
		d->clients = c->next;
		free(c->out);
		free(c->in);
		free(c);
	}
	if (d->epoll_fd >= 0)
		close(d->epoll_fd);
}

static int part_events(struct bench *b, int quick, unsigned int nsubs, json_t *out)
{
	static const struct pcase flood = { .dir = D_FROM,
					    .p = { TCP("G", NORULE, 40003, 80, PK_SYN) },
					    .reason = R(NO_RULE),
					    .events = 1 };
	static struct tf_daemon d;
	static struct tf_sess sess;
	static struct series v;
	static struct sub_reader rd[SUBS];
	char dir[] = "/tmp/tapfence-bench.XXXXXX", log[64], old[80];
	unsigned int n = quick ? 100000 : 500000, rounds = quick ? 3 : 5, r;
	double raw_b = 0, gz_b = 0;
	struct timespec t0, t1;
	struct sbuf sb = {};
	struct target t;
	double secs;
	__u64 w0;
	__u32 ns;
	int err;

	tf_config_defaults(&b->cfg);
	b->cfg.events_per_s = 0;
	err = bench_open(b);
	if (err)
		return err;
	if (!mkdtemp(dir)) {
		err = -errno;
		goto cleanup_dp;
	}
	snprintf(log, sizeof(log), "%s/events.jsonl", dir);
	memset(&d, 0, sizeof(d));
	d.epoll_fd = -1;
	d.cfg = b->cfg;
	snprintf(d.cfg.event_log, sizeof(d.cfg.event_log), "%s", log);
	snprintf(d.cfg.state_dir, sizeof(d.cfg.state_dir), "%s", dir);
	snprintf(old, sizeof(old), "%s.old", log);
	d.cfg.log_segment_bytes = 0; /* the bench rotates the log itself, after each round */
	d.cfg.log_segment_age_s = 0;
	d.dp = b->dp; /* borrowed: closed by bench_close() */
	memset(&sess, 0, sizeof(sess));
	err = session_write(&b->dp, b->cfg.max_rules, MAIN_SID, IFINDEX_LO, 10, &sb, &sess.spec);
	if (err)
		goto cleanup_dir;
	sess.sid = MAIN_SID;
	sess.dev = (struct tf_sess_key){ .netns = tf_ns_self, .ifindex = IFINDEX_LO };
	sess.ver = 1;
	d.by_sid[MAIN_SID] = &sess;
	err = tf_events_open(&d);
	if (!err)
		err = tf_audit_start(&d); /* as the daemon runs it */
	if (!err)
		err = tf_ctl_start(&d);
	if (!err)
		err = subs_open(&d, rd, nsubs);
	if (!err)
		err = target_make(b, &flood, TC_FROM, MAIN_SID, &t);
	if (nsubs) {
		snprintf(v.id, sizeof(v.id), "events.drain_%usubs", nsubs);
		v.desc = "events drained, written to the JSON log and read whole by each of the "
			 "subscribers, per second";
	} else {
		snprintf(v.id, sizeof(v.id), "events.drain");
		v.desc = "events drained from the ring buffer and written to the JSON log, per "
			 "second";
	}
	v.n = 0;
	v.base = -1;
	v.mode = "repeat";
	fprintf(stderr, "part 5: the event feed, %u subscribers, %u rounds of %u events\n", nsubs,
		rounds, n);
	for (r = 0; r < rounds && !err; r++) {
		err = test_run(&t, n, &ns);
		if (err)
			break;
		w0 = d.events_written;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		err = tf_events_drain(&d); /* the events read */
		err = err < 0 ? err : 0;
		if (!err && nsubs)
			err = subs_wait(&d, rd, nsubs, (unsigned long long)(r + 1) * n);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (!err && d.events_written - w0 != n) {
			pr_warn("events: drained %llu events of %u\n",
				(unsigned long long)(d.events_written - w0), n);
			err = -EPROTO;
		}
		secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		v.s[v.n++] = n / secs;
		if (!r && !err && !nsubs)
			err = log_bytes(log, n, &raw_b, &gz_b);
		if (rename(log, old) || tf_events_reopen(&d) || unlink(old))
			err = err ? err : -EIO;
	}
	if (!err) {
		json_t *m = metric_json(&v, NULL, "events", n);

		json_object_set_new(m, "unit", json_string("events/s"));
		/* Issue 17: the sealed drain at 1.5M events/s, and 1M/s with 4 subscribers. */
		json_object_set_new(m, "target",
				    json_pack("{s:s, s:f}", "on", "value", "min",
					      nsubs ? 1e6 : 1.5e6));
		json_array_append_new(out, m);
		fprintf(stderr, "  %-34s %8.0f events/s  [%.0f..%.0f]\n", v.id, median(v.s, v.n),
			vmin(v.s, v.n), vmax(v.s, v.n));
	}
	if (!err && !nsubs) {
		json_array_append_new(out,
				      json_pack("{s:s, s:s, s:s, s:s, s:f}", "id",
						"events.bytes_raw", "group", "events", "desc",
						"bytes per event in the sealed log, as written",
						"unit", "B/event", "value", raw_b));
		json_array_append_new(
			out, json_pack("{s:s, s:s, s:s, s:s, s:f}", "id", "events.bytes_gzip",
				       "group", "events", "desc",
				       "bytes per event in a closed segment, gzipped as the "
				       "daemon does (level 6)",
				       "unit", "B/event", "value", gz_b));
		fprintf(stderr, "  %-34s %8.1f bytes/event, %.1f gzipped\n", "events.bytes", raw_b,
			gz_b);
	}
	subs_close(&d, rd, nsubs);
	tf_events_close(&d);
	tf_spec_free(&sess.spec);
cleanup_dir:
	unlink(log);
	snprintf(log, sizeof(log), "%s/log.key", dir);
	unlink(log);
	snprintf(log, sizeof(log), "%s/log.key.pub", dir);
	unlink(log);
	snprintf(log, sizeof(log), "%s/log.checkpoint", dir);
	unlink(log);
	rmdir(dir);
cleanup_dp:
	free(sb.p);
	bench_close(b);
	return err;
}

/* ---- main ----------------------------------------------------------------------- */

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return tf_log_libbpf(level, fmt, ap);
}

static int write_json(json_t *root, const char *path)
{
	char tmp[PATH_MAX];

	if (!path)
		return json_dumpf(root, stdout, JSON_INDENT(1)) ? -EIO : 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (json_dump_file(root, tmp, JSON_INDENT(1)))
		return -EIO;
	return rename(tmp, path) ? -errno : 0;
}

/*
 * Every session holds its tables' fds (TF_SLOT_MAPS each), so the
 * 4095-session point needs 20,475 and the rest: the hard limit is raised to
 * FD_NEED too where root may (CAP_SYS_RESOURCE), else the soft limit to the
 * hard one (sessions_fit() then says how many sessions fit).
 */
#define FD_NEED 32768

static int fd_limit_raise(void)
{
	struct rlimit rl, need = { FD_NEED, FD_NEED };

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_max < FD_NEED && !setrlimit(RLIMIT_NOFILE, &need))
		return 0;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
}

/* After a part: note a failure, write what there is so far. 0, or 1 if anything failed. */
static int part_done(json_t *root, json_t *failed, const char *part, int err, const char *out)
{
	if (err) {
		pr_warn("bench_dp: part %s: %s\n", part, strerror(-err));
		json_array_append_new(failed, json_pack("{s:s, s:s}", "part", part, "error",
							strerror(-err)));
	}
	if (out && write_json(root, out))
		return 1;
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "out", required_argument, NULL, 'o' },
		{ "only", required_argument, NULL, 'O' },
		{},
	};
	static struct bench b;
	const char *out = NULL, *only = NULL;
	json_t *root, *metrics, *failed;
	int quick = 0, every, opt, err, rc = 0;

	while ((opt = getopt_long(argc, argv, "qo:O:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quick = 1;
			break;
		case 'o':
			out = optarg;
			break;
		case 'O':
			only = optarg; /* "paths", "scaling", "events", "modes" or "hello" */
			break;
		default:
			fprintf(stderr,
				"Usage: bench_dp [--quick] [--only paths|scaling|events|modes|hello] "
				"[--out FILE]\n");
			return 2;
		}
	}
	libbpf_set_print(libbpf_print);
	err = fd_limit_raise();
	if (err)
		pr_warn("bench_dp: cannot raise the fd limit: %s (the 4095-session point may fail)\n",
			strerror(-err));
	err = private_netns();
	if (err) {
		pr_warn("cannot make a private network namespace: %s\n", strerror(-err));
		return 1;
	}
	b.rounds = quick ? 3 : 7;
	b.repeat = quick ? REPEAT / 4 : REPEAT; /* QUICK: a smoke run, noisier */
	b.singles = quick ? 1000 : SINGLES;
	metrics = json_array();
	root = json_pack("{s:s, s:b, s:i, s:i, s:i, s:o}", "tool", "bench_dp", "quick", quick,
			 "rounds", b.rounds, "repeat", b.repeat, "singles", b.singles, "metrics",
			 metrics);
	if (!root)
		return 1;

	/*
	 * Each part runs whatever an earlier one did; the file is rewritten
	 * after each, so a part that fails loses only its own metrics (the
	 * failures are listed in it).
	 */
	failed = json_array();
	json_object_set_new(root, "failed", failed);
	for (every = 0; every < 2 && (!only || !strcmp(only, "paths")); every++) {
		tf_config_defaults(&b.cfg);
		if (every)
			b.cfg.events_per_s = 0;
		err = bench_open(&b);
		if (!err) {
			err = part_paths(&b, every, metrics);
			bench_close(&b);
		}
		rc |= part_done(root, failed, every ? "paths (every event)" : "paths", err, out);
	}
	if (!only || !strcmp(only, "scaling"))
		rc |= part_done(root, failed, "scaling", part_scaling(&b, quick, metrics), out);
	if (!only || !strcmp(only, "events"))
		rc |= part_done(root, failed, "events", part_events(&b, quick, 0, metrics), out);
	if (!only || !strcmp(only, "events"))
		rc |= part_done(root, failed, "events (subscribers)",
				part_events(&b, quick, SUBS, metrics), out);
	if (!only || !strcmp(only, "modes")) {
		tf_config_defaults(&b.cfg);
		b.cfg.reject_per_s = b.cfg.reject_burst = 10000000; /* every denial answered */
		rc |= part_done(root, failed, "modes", part_modes(&b, metrics), out);
	}
	if (!only || !strcmp(only, "hello"))
		rc |= part_done(root, failed, "hello", part_hello(&b, metrics), out);
	if (!out && write_json(root, NULL))
		rc = 1;
	json_decref(root);
	return rc;
}
