/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The datapath fixture environment shared by test_datapath.c, test_dns.c and
 * test_tls.c (in the private network namespace of netns.h): fixture text
 * written with ' for ", sessions set up and removed through the daemon's own
 * parser, compiler and tf_dp_session_install()/remove() (what tapfenced
 * writes, minus attaching), frames run through the loaded object with
 * BPF_PROG_TEST_RUN, and the checks on what it decided: the verdict, the
 * per-reason counters that moved and the events it emitted.
 *
 * Skb test runs judge on ifindex 1 (net/bpf/test_run.c: ctx->ifindex 0 or 1
 * keeps net->loopback_dev) and XDP runs say ingress_ifindex 1: the judged
 * session sits there.
 */
#ifndef TF_FIXTURE_H
#define TF_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <tapfence/abi.h>
#include "tapfence.skel.h"
#include "common/reason.h"
#include "daemon/config.h"
#include "daemon/datapath.h"
#include "daemon/policy.h"
#include "daemon/netns.h"
#include "daemon/spec.h"
#include "check.h"
#include "netns.h"

#define IFINDEX_LO 1
#define MAX_EVENTS 32

/* The judged guest of the session fixtures and its gateway: MACs and addresses. */
#define GMAC "02:00:00:00:00:02"
#define HMAC "02:00:00:00:00:01"
#define G4   "10.10.0.2"
#define GW4  "10.10.0.1"
#define G6   "fd00:a::2"
#define GW6  "fd00:a::1"

/* A session spec's first members for that guest: session a on tap-a, its gateway the resolver. */
#define SPEC_A_HEAD                                                       \
	"{'id':'a','ifname':'tap-a',"                                     \
	"'guest':{'mac':'" GMAC "','ipv4':'" G4 "','ipv6':'" G6 "'},"     \
	"'gateway':{'mac':'" HMAC "','ipv4':'" GW4 "','ipv6':'" GW6 "'}," \
	"'resolver':{'ipv4':'" GW4 "'},"
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- sessions, as the daemon sets them up ---------------------------------------- */

struct sess {
	struct tf_spec spec;
	struct tf_policy pol;
	struct tf_sess_key dev; /* this test's namespace (test runs judge in it), the ifindex given */
	__u32 sid, ver, rver; /* slot, policy version, generation (struct tf_sess) */
};

/* Fixtures are written with ' for ", to stay readable: undo that. Returns the length. */
static inline size_t unquote(const char *text, char *buf, size_t len)
{
	size_t i;

	for (i = 0; text[i] && i < len - 1; i++)
		buf[i] = text[i] == '\'' ? '"' : text[i];
	buf[i] = '\0';
	return i;
}

static inline int spec_parse(const char *text, const struct tf_config *cfg, struct tf_spec *out)
{
	struct tf_spec_limits lim = { .max_rules = cfg->max_rules };
	char buf[4096], err[TF_ERR_MAX] = "";
	int ret;

	ret = tf_spec_parse(buf, unquote(text, buf, sizeof(buf)), &lim, out, err, sizeof(err));
	if (ret)
		fprintf(stderr, "spec: %s\n", err);
	return ret;
}

static inline int config_parse(struct tf_config *c, const char *text)
{
	char buf[1024], err[TF_ERR_MAX] = "";
	int ret;

	ret = tf_config_parse(buf, unquote(text, buf, sizeof(buf)), c, err, sizeof(err));
	if (ret)
		fprintf(stderr, "config: %s\n", err);
	return ret;
}

/* ---- the loaded datapath ------------------------------------------------------------ */

struct env {
	struct tf_config cfg;
	struct tf_dp dp;
	struct ring_buffer *rb;
	struct tf_event ev[MAX_EVENTS];
	int nev;
	int xdp; /* judge guest -> host frames with xdp_from_guest */
	/* the session frames are judged by: its slot, generation and MACs */
	__u32 sid, ver;
	const char *gmac, *hmac;
};

static inline int on_event(void *ctx, void *data, size_t len)
{
	struct env *e = ctx;

	if (e->nev < MAX_EVENTS && len >= sizeof(struct tf_event))
		memcpy(&e->ev[e->nev], data, sizeof(struct tf_event));
	e->nev++;
	return 0;
}

/*
 * Parse config (fixture text) over the defaults, load the datapath unpinned,
 * write the hard floor and open the event ring buffer, each a check.
 * 0 when all of it worked.
 */
static inline int env_open(struct env *e, const char *config)
{
	char what[256];
	int ret;

	tf_config_defaults(&e->cfg);
	snprintf(what, sizeof(what), "parse the operator config %s", config);
	CHECK_EQ(what, config_parse(&e->cfg, config), 0);
	ret = tf_ns_init(0); /* sessions are keyed by this namespace's cookie */
	if (!ret)
		ret = tf_dp_open(&e->dp, &e->cfg, 0);
	CHECK_EQ("load the datapath, unpinned", ret, 0);
	if (ret)
		return ret;
	CHECK_EQ("write the hard floor", tf_dp_write_floor(&e->dp), 0);
	e->rb = ring_buffer__new(tf_dp_ringbuf_fd(&e->dp), on_event, e, NULL);
	CHECK_TRUE("open the event ring buffer", e->rb != NULL);
	return e->rb ? 0 : -1;
}

/* Undo env_open(), however far it got. */
static inline void env_close(struct env *e)
{
	if (!e->dp.skel)
		return;
	ring_buffer__free(e->rb);
	e->rb = NULL;
	tf_dp_close(&e->dp);
}

/* What the daemon's session add does, minus attaching to a device. */
static inline int session_add(struct env *e, struct sess *s, const char *text, __u32 sid,
			      __u32 ifindex)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->sid = sid;
	s->dev = (struct tf_sess_key){ .netns = tf_ns_self, .ifindex = ifindex };
	s->ver = s->rver = 1;
	ret = spec_parse(text, &e->cfg, &s->spec);
	if (!ret)
		ret = tf_policy_compile(s->spec.rules, s->spec.nrules, &s->pol);
	if (!ret)
		ret = tf_dp_session_install(&e->dp, &s->spec, &s->pol, sid, s->ver, &s->dev, 0);
	return ret;
}

/* What the daemon's session del does, minus detaching. */
static inline void session_del(struct env *e, struct sess *s)
{
	tf_dp_session_remove(&e->dp, &s->spec, &s->pol, s->sid, s->rver, &s->dev);
	tf_policy_free(&s->pol);
	tf_spec_free(&s->spec);
}

/* ---- running frames ----------------------------------------------------------------- */

struct frame {
	__u8 d[4200];
	unsigned int len;
};

struct result {
	int ok; /* the test run ran */
	int allow;
	int retval; /* the program's return value */
	__u64 moved[TF_CNT_SLOTS];
};

enum dir { FROM, TO };

static inline int judged_by_xdp(const struct env *e, enum dir dir)
{
	return dir == FROM && e->xdp;
}

static inline const char *prog_name(const struct env *e, enum dir dir)
{
	return dir == TO ? "tc_to_guest" : e->xdp ? "xdp_from_guest" : "tc_from_guest";
}

/* One test run of the program judging dir on len bytes of data; 0 or -errno, *retval its verdict. */
static inline int run_raw(struct env *e, enum dir dir, const void *data, unsigned int len,
			  int *retval)
{
	struct tapfence_bpf *skel = e->dp.skel;
	struct __sk_buff skb = { .ifindex = IFINDEX_LO };
	struct xdp_md xmd = { .ingress_ifindex = IFINDEX_LO, .data_end = len };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len, .repeat = 1);
	int fd, ret;

	if (judged_by_xdp(e, dir)) {
		fd = bpf_program__fd(skel->progs.xdp_from_guest);
		o.ctx_in = &xmd;
		o.ctx_size_in = sizeof(xmd);
	} else {
		fd = bpf_program__fd(dir == FROM ? skel->progs.tc_from_guest :
						   skel->progs.tc_to_guest);
		o.ctx_in = &skb;
		o.ctx_size_in = sizeof(skb);
	}
	ret = bpf_prog_test_run_opts(fd, &o);
	*retval = (int)o.retval;
	return ret ? -errno : 0;
}

/* Run data and note what came of it in r: the verdict, the counters that moved, the events in e. */
static inline int run_data(struct env *e, enum dir dir, const void *data, unsigned int len,
			   struct result *r)
{
	__u64 before[TF_CNT_SLOTS] = {}, after[TF_CNT_SLOTS] = {};
	int ret, retval = 0, i;

	ring_buffer__consume(e->rb);
	e->nev = 0;
	if (tf_dp_counters(&e->dp, e->sid, before))
		fprintf(stderr, "cannot read the counters of slot %u\n", e->sid);
	ret = run_raw(e, dir, data, len, &retval);
	ring_buffer__consume(e->rb);
	if (tf_dp_counters(&e->dp, e->sid, after))
		fprintf(stderr, "cannot read the counters of slot %u\n", e->sid);
	r->ok = !ret;
	r->retval = retval;
	r->allow = judged_by_xdp(e, dir) ? retval == XDP_PASS : retval == TC_ACT_UNSPEC;
	for (i = 0; i < TF_CNT_SLOTS; i++)
		r->moved[i] = after[i] - before[i];
	return ret;
}

static inline int run(struct env *e, enum dir dir, const struct frame *f, struct result *r)
{
	int ret = run_data(e, dir, f->d, f->len, r);

	if (ret)
		fprintf(stderr, "test run: %s\n", strerror(-ret));
	return ret;
}

/*
 * The reasons whose counters moved, "a+1,b+2"; "-" if none. The flow
 * counters (flows opened and removed, not packets) are left out: the
 * tests that mean them read them (test_datapath.c, test_close()).
 */
static inline const char *moved_str(const struct result *r, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < TF_CNT_SLOTS && o < len; i++)
		if (r->moved[i] && i != TF_CNT_FLOWS_OPENED && i != TF_CNT_FLOWS_REMOVED)
			o += (size_t)snprintf(buf + o, len - o, "%s%s+%llu", o ? "," : "",
					      i < TF_REASON_MAX ? tf_reason_name((unsigned int)i) :
								  "slot",
					      (unsigned long long)r->moved[i]);
	return o ? buf : "-";
}

/* The events of the last run, "reason[name]" each, comma-separated; "-" if none. */
static inline const char *events_str(const struct env *e, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < e->nev && i < MAX_EVENTS && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s[%.*s]", i ? "," : "",
				      tf_reason_name(e->ev[i].reason), (int)e->ev[i].name_len,
				      (const char *)e->ev[i].name);
	return o ? buf : "-";
}

/* What a step expects of one frame; NULL counters or events skip that check. */
struct expect {
	int allow;
	const char *counters; /* "reason+n,...", "-" for none */
	const char *events;   /* "reason[name],...", "-" for none */
};

/* Run f and check the verdict, the counters that moved and the events, each a check named desc. */
static inline void judge_expect(struct env *e, enum dir dir, const struct frame *f,
				const char *desc, const struct expect *x)
{
	char what[256], buf[1024];
	struct result r;

	run(e, dir, f, &r);
	snprintf(what, sizeof(what), "%s: %s: verdict", prog_name(e, dir), desc);
	CHECK_STR(what,
		  !r.ok	  ? "test run failed" :
		  r.allow ? "allow" :
			    "deny",
		  x->allow ? "allow" : "deny");
	if (x->counters) {
		snprintf(what, sizeof(what), "%s: %s: counters", prog_name(e, dir), desc);
		CHECK_STR(what, moved_str(&r, buf, sizeof(buf)), x->counters);
	}
	if (x->events) {
		snprintf(what, sizeof(what), "%s: %s: events", prog_name(e, dir), desc);
		CHECK_STR(what, events_str(e, buf, sizeof(buf)), x->events);
	}
}

static inline void judge(struct env *e, enum dir dir, const struct frame *f, const char *desc,
			 int allow, const char *counters, const char *events)
{
	const struct expect x = { allow, counters, events };

	judge_expect(e, dir, f, desc, &x);
}

/* ---- per-session tables ------------------------------------------------------------- */

static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/*
 * One op on session sid's own table of kind which (learnt addresses or
 * outstanding queries: one map per session): BPF_MAP_LOOKUP_ELEM,
 * BPF_MAP_UPDATE_ELEM (existing entry) or BPF_MAP_DELETE_ELEM.
 */
static inline int slot_op(struct env *e, enum tf_slot_map which, __u32 sid, int op, const void *k,
			  void *v)
{
	int fd = tf_dp_slot_open(&e->dp, which, sid), ret;

	if (fd < 0)
		return fd;
	if (op == BPF_MAP_LOOKUP_ELEM)
		ret = bpf_map_lookup_elem(fd, k, v);
	else if (op == BPF_MAP_UPDATE_ELEM)
		ret = bpf_map_update_elem(fd, k, v, BPF_EXIST);
	else
		ret = bpf_map_delete_elem(fd, k);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

/* How many entries session sid's table of kind which holds. */
static inline unsigned int slot_count(struct env *e, enum tf_slot_map which, __u32 sid)
{
	int fd = tf_dp_slot_open(&e->dp, which, sid);
	__u8 key[64], next[64];
	unsigned int n = 0;

	if (fd < 0)
		return 0;
	if (!bpf_map_get_next_key(fd, NULL, next))
		do {
			memcpy(key, next, sizeof(key));
			n++;
		} while (!bpf_map_get_next_key(fd, key, next));
	close(fd);
	return n;
}

#endif
