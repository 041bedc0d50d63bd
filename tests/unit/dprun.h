/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Running frames through the loaded datapath with BPF_PROG_TEST_RUN and
 * checking what it decided: the verdict, the per-reason counters that
 * moved and the events it emitted. Shared by the datapath unit tests that
 * drive sessions set up as the daemon does (dpenv.h). Skb test runs judge
 * on ifindex 1 (net/bpf/test_run.c keeps the loopback device): the judged
 * session sits there.
 */
#ifndef TF_DPRUN_H
#define TF_DPRUN_H

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
#include "daemon/datapath.h"
#include "check.h"
#include "dpenv.h"

#define IFINDEX_LO 1

#define MAX_EVENTS 32

struct env {
	struct tf_config cfg;
	struct tf_dp dp;
	struct ring_buffer *rb;
	struct tf_event ev[MAX_EVENTS];
	int nev;
	int xdp;		/* judge guest -> host frames with xdp_from_guest */
	__u32 sid;
};

static inline int on_event(void *ctx, void *data, size_t len)
{
	struct env *e = ctx;

	if (e->nev < MAX_EVENTS && len >= sizeof(struct tf_event))
		memcpy(&e->ev[e->nev], data, sizeof(struct tf_event));
	e->nev++;
	return 0;
}

static inline int session_add(struct env *e, struct sess *s, const char *text, __u32 sid, __u32 ifindex)
{
	return dp_session_add(&e->dp, &e->cfg, s, text, sid, ifindex);
}

static inline void session_del(struct env *e, struct sess *s)
{
	dp_session_del(&e->dp, s);
}

struct frame {
	__u8 d[4200];
	unsigned int len;
};

struct result {
	int ok;			/* the test run ran */
	int allow;
	__u64 moved[TF_CNT_SLOTS];
};

enum dir { FROM, TO };

static inline int run(struct env *e, enum dir dir, const struct frame *f, struct result *r)
{
	struct tapfence_bpf *skel = e->dp.skel;
	struct __sk_buff skb = { .ifindex = IFINDEX_LO };
	struct xdp_md xmd = { .ingress_ifindex = IFINDEX_LO, .data_end = f->len };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->d, .data_size_in = f->len, .repeat = 1);
	__u64 before[TF_CNT_SLOTS] = {}, after[TF_CNT_SLOTS] = {};
	int xdp = dir == FROM && e->xdp, fd, ret, i;

	if (xdp) {
		fd = bpf_program__fd(skel->progs.xdp_from_guest);
		o.ctx_in = &xmd;
		o.ctx_size_in = sizeof(xmd);
	} else {
		fd = bpf_program__fd(dir == FROM ? skel->progs.tc_from_guest : skel->progs.tc_to_guest);
		o.ctx_in = &skb;
		o.ctx_size_in = sizeof(skb);
	}
	ring_buffer__consume(e->rb);
	e->nev = 0;
	tf_dp_counters(&e->dp, e->sid, before);
	ret = bpf_prog_test_run_opts(fd, &o);
	ring_buffer__consume(e->rb);
	tf_dp_counters(&e->dp, e->sid, after);
	r->ok = !ret;
	if (ret)
		fprintf(stderr, "test run: %s\n", strerror(errno));
	r->allow = xdp ? o.retval == XDP_PASS : (int)o.retval == TC_ACT_UNSPEC;
	for (i = 0; i < TF_CNT_SLOTS; i++)
		r->moved[i] = after[i] - before[i];
	return ret;
}

static const char *prog_name(const struct env *e, enum dir dir)
{
	return dir == TO ? "tc_to_guest" : e->xdp ? "xdp_from_guest" : "tc_from_guest";
}

/* The reasons whose counters moved, "a+1,b+2"; "-" if none. */
static const char *moved_str(const struct result *r, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < TF_CNT_SLOTS && o < len; i++)
		if (r->moved[i])
			o += (size_t)snprintf(buf + o, len - o, "%s%s+%llu", o ? "," : "",
					      i < TF_REASON_MAX ? tf_reason_name((unsigned int)i) : "slot",
					      (unsigned long long)r->moved[i]);
	return o ? buf : "-";
}

/* The events of the last run, "reason[name]" each, comma-separated; "-" if none. */
static const char *events_str(const struct env *e, char *buf, size_t len)
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

/*
 * Run f and check the verdict, the counters that moved ("reason+n,...")
 * and the events ("reason[name],..."); NULL skips a check.
 */
static inline void judge(struct env *e, enum dir dir, const struct frame *f, const char *desc,
		  int allow, const char *counters, const char *events)
{
	char what[256], buf[1024];
	struct result r;

	run(e, dir, f, &r);
	snprintf(what, sizeof(what), "%s: %s: verdict", prog_name(e, dir), desc);
	CHECK_STR(what, !r.ok ? "test run failed" : r.allow ? "allow" : "deny",
		  allow ? "allow" : "deny");
	if (counters) {
		snprintf(what, sizeof(what), "%s: %s: counters", prog_name(e, dir), desc);
		CHECK_STR(what, moved_str(&r, buf, sizeof(buf)), counters);
	}
	if (events) {
		snprintf(what, sizeof(what), "%s: %s: events", prog_name(e, dir), desc);
		CHECK_STR(what, events_str(e, buf, sizeof(buf)), events);
	}
}

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
static inline int slot_op(struct env *e, enum tf_slot_map which, __u32 sid, int op, const void *k, void *v)
{
	int fd = tf_dp_slot_map(&e->dp, which, sid), ret;

	if (fd < 0)
		return fd;
	if (op == BPF_MAP_LOOKUP_ELEM)
		ret = bpf_map_lookup_elem(fd, k, v);
	else if (op == BPF_MAP_UPDATE_ELEM)
		ret = bpf_map_update_elem(fd, k, v, BPF_EXIST);
	else
		ret = bpf_map_delete_elem(fd, k);
	return ret ? -errno : 0;
}

/* How many entries session sid's table of kind which holds. */
static inline unsigned int slot_count(struct env *e, enum tf_slot_map which, __u32 sid)
{
	int fd = tf_dp_slot_map(&e->dp, which, sid);
	__u8 key[64], next[64];
	unsigned int n = 0;

	if (fd < 0)
		return 0;
	if (bpf_map_get_next_key(fd, NULL, next))
		return 0;
	do {
		memcpy(key, next, sizeof(key));
		n++;
	} while (!bpf_map_get_next_key(fd, key, next));
	return n;
}

#endif
