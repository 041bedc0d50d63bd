// SPDX-License-Identifier: GPL-2.0
/*
 * The control operations: one handler per op of request.h, each given the
 * daemon, the client and the parsed request, returning the response object
 * (docs/control-protocol.md). The transport is control.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/addr.h"
#include "common/reason.h"
#include "control_int.h"

static json_t *counters_json(struct tf_daemon *d, __u32 sid, __u64 *lost, __u64 *suppressed)
{
	__u64 cnt[TF_CNT_SLOTS] = {};
	json_t *o = json_object();
	unsigned int r;

	if (!o)
		return NULL;
	if (!tf_dp_counters(&d->dp, sid, cnt)) {
		for (r = 0; r < TF_REASON_MAX; r++)
			if (cnt[r])
				json_object_set_new(o, tf_reason_name(r), json_integer(cnt[r]));
	}
	*lost = cnt[TF_CNT_EVENTS_LOST];
	*suppressed = cnt[TF_CNT_EVENTS_SUPPRESSED];
	if (cnt[TF_CNT_AUDITED])
		json_object_set_new(o, "audited", json_integer(cnt[TF_CNT_AUDITED]));
	if (cnt[TF_CNT_REJECTED])
		json_object_set_new(o, "rejected", json_integer(cnt[TF_CNT_REJECTED]));
	if (cnt[TF_CNT_REJECT_LIMITED])
		json_object_set_new(o, "reject_limited", json_integer(cnt[TF_CNT_REJECT_LIMITED]));
	return o;
}

/* resp with "warnings" when there are any (w is taken). */
static json_t *with_warnings(json_t *resp, json_t *w)
{
	if (resp && json_array_size(w))
		json_object_set(resp, "warnings", w);
	json_decref(w);
	return resp;
}

static json_t *sess_summary(const struct tf_sess *s)
{
	return json_pack("{s:s, s:s, s:s*, s:I, s:I, s:I, s:I, s:I, s:s}", "id", s->spec.id,
			 "ifname", s->spec.ifname, "netns", s->spec.netns[0] ? s->spec.netns : NULL,
			 "ifindex", (json_int_t)s->dev.ifindex, "slot", (json_int_t)s->sid,
			 "policy_version", (json_int_t)s->ver, "rules_generation",
			 (json_int_t)s->rver, "rules", (json_int_t)s->spec.nrules, "attach",
			 s->at.xdp   ? "xdp" :
			 s->at.guard ? "guard" :
				       "tcx");
}

static json_t *op_session_add(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			      char *err, size_t errlen)
{
	struct tf_sess *s;

	(void)c;
	if (!tf_host_floor_ok(d)) {
		snprintf(err, errlen,
			 "the hard floor lacks host addresses (see the daemon's log): "
			 "no new session until it is complete");
		return NULL;
	}
	if (tf_sess_add(d, &r->spec, 0, 0, NULL, err, errlen))
		return NULL;
	d->policy_changes++;
	s = tf_sess_find(d, r->spec.id);
	return with_warnings(json_pack("{s:b, s:s, s:I, s:I, s:I}", "ok", 1, "id", s->spec.id,
				       "ifindex", (json_int_t)s->dev.ifindex, "slot",
				       (json_int_t)s->sid, "policy_version", (json_int_t)s->ver),
			     tf_spec_warnings(&s->spec, NULL));
}

static json_t *op_session_del(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			      char *err, size_t errlen)
{
	struct tf_sess *s = tf_sess_find(d, r->id);
	char evidence[PATH_MAX] = "";
	int ev_err = 0;

	(void)c;
	/* Its counters are read before the slot goes; a statement that fails does not keep it. */
	if (s && tf_sess_del_check(d, s, r->release, err, errlen))
		return NULL;
	if (s)
		ev_err = tf_evidence_end(d, s, evidence, sizeof(evidence));
	if (tf_sess_del(d, r->id, r->release, err, errlen))
		return NULL;
	d->policy_changes++;
	return json_pack(
		"{s:b, s:s, s:s?, s:s?}", "ok", 1, "id", r->id, "evidence",
		evidence[0] ? evidence : NULL, "evidence_error",
		ev_err ? "the evidence statement could not be written (see the daemon's log)" :
			 NULL);
}

static json_t *op_quarantine(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			     char *err, size_t errlen)
{
	int on = r->op == TF_OP_SESSION_QUARANTINE;

	(void)c;
	if (tf_sess_quarantine(d, r->id, on, r->reason, r->reset, err, errlen))
		return NULL;
	d->policy_changes++;
	if (on)
		tf_audit_note(d, "session",
			      "\"session\":\"%s\",\"quarantined\":true,\"reason\":\"%s\"", r->id,
			      r->reason ? r->reason : "");
	else
		tf_audit_note(d, "session", "\"session\":\"%s\",\"resumed\":true", r->id);
	return json_pack("{s:b, s:s, s:I}", "ok", 1, "id", r->id, "policy_version",
			 (json_int_t)tf_sess_find(d, r->id)->ver);
}

static json_t *op_mode(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
		       size_t errlen)
{
	(void)c;
	if (tf_sess_mode(d, r->id, r->audit, err, errlen))
		return NULL;
	d->policy_changes++;
	tf_audit_note(d, "session", "\"session\":\"%s\",\"mode\":\"%s\"", r->id,
		      r->audit ? "audit" : "enforce");
	return json_pack("{s:b, s:s, s:s, s:I}", "ok", 1, "id", r->id, "mode",
			 r->audit ? "audit" : "enforce", "policy_version",
			 (json_int_t)tf_sess_find(d, r->id)->ver);
}

struct learned_ctx {
	const struct tf_sess *s;
	__u64 now; /* CLOCK_MONOTONIC ns: an entry that expired by then is not shown */
	json_t *arr;
	unsigned int n;
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Learnt addresses that have not expired, as `session show' lists them. */
static int learned_count(const struct tf_learn_key *k, const struct tf_learned *v, void *ctx)
{
	struct learned_ctx *lc = ctx;

	(void)k;
	lc->n += v->expires_ns > lc->now;
	return 0;
}

/*
 * "top": what `tapfence top' shows of each session, in one request: its
 * packets allowed and denied so far (the CLI makes rates of two polls), its
 * three largest deny reasons, learnt addresses, lost and held-back events.
 */
static json_t *op_top(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
		      size_t errlen)
{
	__u64 cnt[TF_CNT_SLOTS], st[TF_STAT_MAX] = {}, allowed, denied;
	json_t *arr = json_array(), *top;
	unsigned int i, k, best[3];
	struct learned_ctx lc;
	struct tf_sess *s;

	(void)c, (void)r, (void)err, (void)errlen;
	tf_dp_stats(&d->dp, st);
	for (s = d->sessions; arr && s; s = s->next) {
		if (tf_dp_counters(&d->dp, s->sid, cnt))
			continue;
		allowed = denied = 0;
		for (i = 0; i < TF_REASON_MAX; i++) {
			if (!strncmp(tf_reason_name(i), "allow_", 6))
				allowed += cnt[i];
			else
				denied += cnt[i];
		}
		/* The three largest deny reasons, by a pass each (there are 78). */
		top = json_array();
		for (k = 0; k < 3; k++) {
			best[k] = TF_REASON_MAX;
			for (i = 0; i < TF_REASON_MAX; i++)
				if (cnt[i] && strncmp(tf_reason_name(i), "allow_", 6) &&
				    (k < 1 || i != best[0]) && (k < 2 || i != best[1]) &&
				    (best[k] == TF_REASON_MAX || cnt[i] > cnt[best[k]]))
					best[k] = i;
			if (best[k] == TF_REASON_MAX)
				break;
			json_array_append_new(top, json_pack("[s, I]", tf_reason_name(best[k]),
							     (json_int_t)cnt[best[k]]));
		}
		lc = (struct learned_ctx){ .now = mono_ns() };
		json_array_append_new(
			arr,
			json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:s, s:b, s:o}", "id",
				  s->spec.id, "allowed", (json_int_t)allowed, "denied",
				  (json_int_t)denied, "audited", (json_int_t)cnt[TF_CNT_AUDITED],
				  "rejected", (json_int_t)cnt[TF_CNT_REJECTED], "events_lost",
				  (json_int_t)cnt[TF_CNT_EVENTS_LOST], "events_suppressed",
				  (json_int_t)cnt[TF_CNT_EVENTS_SUPPRESSED], "learned",
				  tf_dp_learned(&d->dp, s->sid, learned_count, &lc) ?
					  json_null() :
					  json_integer(lc.n),
				  "mode", s->spec.audit ? "audit" : "enforce", "quarantined",
				  s->q.on, "top_denied", top));
	}
	return json_pack("{s:b, s:o, s:{s:I, s:I, s:I}}", "ok", 1, "sessions", arr, "events",
			 "emitted", (json_int_t)st[TF_STAT_EVENTS], "lost",
			 (json_int_t)st[TF_STAT_EVENTS_LOST], "written",
			 (json_int_t)d->events_written);
}

static json_t *op_metrics(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
			  size_t errlen)
{
	size_t len = 0;
	char *text = tf_metrics_text(d, &len);
	json_t *resp;

	(void)c, (void)r;
	if (!text) {
		snprintf(err, errlen, "cannot format the metrics: out of memory");
		return NULL;
	}
	resp = json_pack("{s:b, s:s%}", "ok", 1, "metrics", text, len);
	free(text);
	return resp;
}

static json_t *op_guard_list(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			     char *err, size_t errlen)
{
	(void)c, (void)r, (void)err, (void)errlen;
	return json_pack("{s:b, s:o}", "ok", 1, "devices", tf_guard_list(d));
}

static json_t *op_session_list(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			       char *err, size_t errlen)
{
	json_t *arr = json_array();
	struct tf_sess *s;

	(void)c, (void)r, (void)err, (void)errlen;
	for (s = d->sessions; s; s = s->next)
		json_array_append_new(arr, sess_summary(s));
	return json_pack("{s:b, s:o}", "ok", 1, "sessions", arr);
}

/* The forward form of a reversed name: "moc.buhtig.www." -> "www.github.com". */
static void name_forward(const __u8 *rev, unsigned int len, char *out)
{
	unsigned int i, n = len && len <= TF_DNS_NAME_MAX ? len - 1 : 0;

	for (i = 0; i < n; i++)
		out[i] = (char)rev[n - 1 - i];
	out[n] = 0;
}

static int learned_one(const struct tf_learn_key *k, const struct tf_learned *v, void *ctx)
{
	struct learned_ctx *lc = ctx;
	char addr[TF_ADDRSTRLEN], name[TF_DNS_NAME_MAX + 1], via[TF_DNS_NAME_MAX + 3];
	const struct tf_policy *p = &lc->s->policy;

	if (v->expires_ns <= lc->now)
		return 0;
	name_forward(v->name, v->name_len, name);
	via[0] = 0;
	if (v->name_idx < p->nnames) {
		strcpy(via, v->sub ? "*." : "");
		name_forward(p->names[v->name_idx].name, p->names[v->name_idx].len,
			     via + strlen(via));
	}
	json_array_append_new(lc->arr,
			      json_pack("{s:s, s:s, s:s, s:I}", "addr",
					tf_fmt_ip(k->family, k->addr, addr), "name", name, "rule",
					via, "ttl_s",
					(json_int_t)((v->expires_ns - lc->now) / 1000000000ULL)));
	return 0;
}

/* The learnt addresses, or null and why ("learned_error") if they cannot be read. */
static void learned_json(struct tf_daemon *d, const struct tf_sess *s, json_t *o)
{
	struct learned_ctx lc = { .s = s, .arr = json_array(), .now = mono_ns() };
	int err = lc.arr ? tf_dp_learned(&d->dp, s->sid, learned_one, &lc) : -ENOMEM;

	if (!err) {
		json_object_set_new(o, "learned", lc.arr);
		return;
	}
	json_decref(lc.arr);
	json_object_set_new(o, "learned", json_null());
	json_object_set_new(o, "learned_error", json_string(strerror(-err)));
}

/*
 * Its flow table: capacity, entries, the flows that took an entry and that
 * the datapath removed, and those the full table evicted
 * (docs/operations.md); only why, if they cannot be read.
 */
static json_t *flows_json(struct tf_daemon *d, const struct tf_sess *s)
{
	struct tf_flowcount fc;
	int err = tf_dp_flows(&d->dp, &s->sid, 1, &fc);

	if (err)
		return json_pack("{s:s}", "error", tf_dp_flows_strerror(err));
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "capacity", (json_int_t)fc.capacity,
			 "entries", (json_int_t)fc.entries, "opened", (json_int_t)fc.opened,
			 "removed", (json_int_t)fc.removed, "evicted", (json_int_t)fc.evicted);
}

static json_t *op_session_show(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			       char *err, size_t errlen)
{
	struct tf_sess *s = tf_sess_find(d, r->id);
	json_t *o;
	__u64 lost = 0, suppressed = 0;

	(void)c;
	if (!s) {
		snprintf(err, errlen, "id: no session `%s'", r->id);
		return NULL;
	}
	o = sess_summary(s);
	json_object_set_new(o, "mode", json_string(s->spec.audit ? "audit" : "enforce"));
	json_object_set_new(o, "on_deny", json_string(tf_sess_rejects(d, s) ? "reject" : "drop"));
	/* The order the datapath decides in, whatever the order of the rules (docs/deny.md). */
	json_object_set_new(o, "precedence",
			    json_string("the floor, then deny rules, then allow rules"));
	json_object_set_new(o, "spec", tf_spec_to_json(&s->spec));
	json_object_set_new(o, "counters", counters_json(d, s->sid, &lost, &suppressed));
	json_object_set_new(o, "events_lost", json_integer(lost));
	json_object_set_new(o, "events_suppressed", json_integer(suppressed));
	learned_json(d, s, o);
	json_object_set_new(o, "flows", flows_json(d, s));
	json_object_set_new(o, "first", json_boolean(tf_attest_first(d, s)));
	if (s->q.on)
		json_object_set_new(o, "quarantined",
				    json_pack("{s:s, s:I, s:b}", "reason", s->q.reason, "since",
					      (json_int_t)s->q.since, "reset", s->q.reset));
	return json_pack("{s:b, s:o}", "ok", 1, "session", o);
}

static json_t *op_rule(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
		       size_t errlen)
{
	struct tf_sess *s;

	(void)c;
	if (tf_sess_rule(d, r->id, &r->rule, r->op == TF_OP_RULE_ADD, err, errlen))
		return NULL;
	d->policy_changes++;
	s = tf_sess_find(d, r->id);
	return with_warnings(json_pack("{s:b, s:s, s:I}", "ok", 1, "id", r->id, "policy_version",
				       (json_int_t)s->ver),
			     r->op == TF_OP_RULE_ADD ? tf_spec_warnings(&s->spec, &r->rule) :
						       json_array());
}

static json_t *op_stats(struct tf_daemon *d, struct tf_client *c, struct tf_request *req, char *err,
			size_t errlen)
{
	__u64 st[TF_STAT_MAX] = {}, cnt[TF_CNT_SLOTS], tot[TF_REASON_MAX] = {};
	__u64 log_size, log_cps, log_unwritten;
	json_t *counters = json_object();
	struct tf_sess *s;
	unsigned int r;

	(void)c, (void)req, (void)err, (void)errlen;
	tf_dp_stats(&d->dp, st);
	/* Slot 0 holds packets on devices with no session (a session just deleted). */
	for (r = 0; r < TF_CNT_SLOTS; r++)
		cnt[r] = 0;
	if (!tf_dp_counters(&d->dp, 0, cnt))
		for (r = 0; r < TF_REASON_MAX; r++)
			tot[r] += cnt[r];
	for (s = d->sessions; s; s = s->next)
		if (!tf_dp_counters(&d->dp, s->sid, cnt))
			for (r = 0; r < TF_REASON_MAX; r++)
				tot[r] += cnt[r];
	for (r = 0; r < TF_REASON_MAX; r++)
		if (tot[r])
			json_object_set_new(counters, tf_reason_name(r), json_integer(tot[r]));
	tf_audit_stats(d, &log_size, &log_cps, &log_unwritten);
	return json_pack("{s:b, s:{s:I, s:I, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:b}, "
			 "s:{s:I, s:I, s:I}, s:o, s:o}}",
			 "ok", 1, "stats", "sessions", (json_int_t)d->nsessions, "uptime_s",
			 (json_int_t)(time(NULL) - d->started), "events", "emitted",
			 (json_int_t)st[TF_STAT_EVENTS], "lost",
			 (json_int_t)st[TF_STAT_EVENTS_LOST], "written",
			 (json_int_t)d->events_written, "floor", "host_entries",
			 (json_int_t)d->dp.floor_host, "host_missing",
			 (json_int_t)(d->dp.floor_failed + d->host.over), "host_errors",
			 (json_int_t)d->dp.floor_errors, "complete", tf_host_floor_ok(d), "log",
			 "size", (json_int_t)log_size, "checkpoints", (json_int_t)log_cps,
			 "unwritten", (json_int_t)log_unwritten, "counters", counters,
			 "attestation", tf_attest_stats(d));
}

static json_t *op_version(struct tf_daemon *d, struct tf_client *c, struct tf_request *req,
			  char *err, size_t errlen)
{
	(void)d, (void)c, (void)req, (void)err, (void)errlen;
	return json_pack("{s:b, s:s, s:i}", "ok", 1, "version", TF_VERSION, "abi", TF_ABI_VERSION);
}

static json_t *op_subscribe(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
			    char *err, size_t errlen)
{
	struct tf_sess *s = NULL;

	if (c->subscriber) {
		snprintf(err, errlen, "already subscribed");
		return NULL;
	}
	if (d->nsubscribers >= d->cfg.max_subscribers) {
		snprintf(err, errlen, "too many subscribers (limit %u)", d->cfg.max_subscribers);
		return NULL;
	}
	if (r->session) {
		s = tf_sess_find(d, r->session);
		if (!s) {
			snprintf(err, errlen, "session: no session `%s'", r->session);
			return NULL;
		}
		c->sub_sid = s->sid;
	}
	c->subscriber = 1;
	d->nsubscribers++;
	return json_pack("{s:b, s:b}", "ok", 1, "subscribed", 1);
}

static json_t *op_attest(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
			 size_t errlen)
{
	json_t *env = tf_attest_make(d, r->session, err, errlen);

	(void)c;
	return env ? json_pack("{s:b, s:o}", "ok", 1, "attestation", env) : NULL;
}

/* Replacing the node's signing keys is the host operator's (uid 0), not a session creator's. */
static json_t *op_log_rotate_key(struct tf_daemon *d, struct tf_client *c, struct tf_request *r,
				 char *err, size_t errlen)
{
	(void)r;
	if (c->uid != 0) {
		snprintf(err, errlen, "permission denied: log.rotate_key needs uid 0, not uid %u",
			 (unsigned int)c->uid);
		return NULL;
	}
	if (tf_audit_rotate_key(d, err, errlen))
		return NULL;
	return json_pack("{s:b, s:s, s:s?}", "ok", 1, "key", tf_audit_vkey(d, 0), "ecdsa_key",
			 tf_audit_vkey(d, 1));
}

typedef json_t *tf_op_fn(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
			 size_t errlen);

/* The handler of each op (request.c's table names and parses them). */
static tf_op_fn *const handlers[TF_OP_MAX] = {
	[TF_OP_VERSION] = op_version,
	[TF_OP_STATS] = op_stats,
	[TF_OP_SESSION_ADD] = op_session_add,
	[TF_OP_SESSION_DEL] = op_session_del,
	[TF_OP_SESSION_LIST] = op_session_list,
	[TF_OP_SESSION_SHOW] = op_session_show,
	[TF_OP_RULE_ADD] = op_rule,
	[TF_OP_RULE_DEL] = op_rule,
	[TF_OP_SUBSCRIBE] = op_subscribe,
	[TF_OP_ATTEST] = op_attest,
	[TF_OP_LOG_ROTATE_KEY] = op_log_rotate_key,
	[TF_OP_GUARD_LIST] = op_guard_list,
	[TF_OP_SESSION_QUARANTINE] = op_quarantine,
	[TF_OP_SESSION_RESUME] = op_quarantine,
	[TF_OP_SESSION_MODE] = op_mode,
	[TF_OP_METRICS] = op_metrics,
	[TF_OP_TOP] = op_top,
};

json_t *tf_ctl_dispatch(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
			size_t errlen)
{
	if (r->op >= TF_OP_MAX || !handlers[r->op]) {
		snprintf(err, errlen, "op: not handled");
		return NULL;
	}
	return handlers[r->op](d, c, r, err, errlen);
}
