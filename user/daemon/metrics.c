// SPDX-License-Identifier: GPL-2.0
/*
 * The node's metrics in the Prometheus text exposition format
 * (docs/metrics.md): for `tapfence metrics' (op "metrics") and, with
 * metrics.textfile, a node_exporter textfile rewritten every interval_s
 * (a temporary file renamed over it: a reader never sees half of one). No
 * listening socket. Names follow Prometheus' conventions: a tapfence_
 * prefix, _total for counters, seconds and bytes. No label ever names a
 * destination, a host name or an SNI: only sessions (opt-in) and reasons.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "common/reason.h"
#include "daemon.h"
#include "tapfence.skel.h"

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Packets counted under reason r are passed (allow_*) or not. */
static const char *verdict_of(unsigned int r)
{
	return strncmp(tf_reason_name(r), "allow_", 6) ? "deny" : "allow";
}

static void program(FILE *f, const char *name, struct bpf_program *p, int runs)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (!p || bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) || !info.run_cnt)
		return;
	if (runs)
		fprintf(f, "tapfence_program_runs_total{program=\"%s\"} %llu\n", name,
			(unsigned long long)info.run_cnt);
	else
		fprintf(f, "tapfence_program_run_seconds_total{program=\"%s\"} %.9f\n", name,
			info.run_time_ns / 1e9);
}

/* Run counts and times, which the kernel keeps only with kernel.bpf_stats_enabled = 1. */
static void programs(FILE *f, struct tf_dp *dp)
{
	struct tapfence_bpf *k = dp->skel;
	int runs;

	for (runs = 1; runs >= 0; runs--) {
		head(f, runs ? "tapfence_program_runs_total" : "tapfence_program_run_seconds_total",
		     "counter",
		     runs ? "Runs of each datapath program (kernel.bpf_stats_enabled = 1 only)." :
			    "Time spent in each datapath program (kernel.bpf_stats_enabled = 1 only).");
		program(f, "tc_from_guest", k->progs.tc_from_guest, runs);
		program(f, "tc_to_guest", k->progs.tc_to_guest, runs);
		program(f, "tc_gso_guard", k->progs.tc_gso_guard, runs);
		program(f, "tc_guard_from_guest", k->progs.tc_guard_from_guest, runs);
		program(f, "tc_guard_to_guest", k->progs.tc_guard_to_guest, runs);
		program(f, "xdp_from_guest",
			dp->xdp_skel ? dp->xdp_skel->progs.xdp_from_guest : NULL, runs);
	}
}

static void write_metrics(struct tf_daemon *d, FILE *f)
{
	__u64 tot[TF_CNT_SLOTS], cnt[TF_CNT_SLOTS], st[TF_STAT_MAX] = {}, fill[TF_SLOT_MAPS];
	__u64 evicted;
	const struct tf_config *c = &d->cfg;
	struct tf_sess *s;
	unsigned int r, ready, dirty;
	time_t cp = tf_audit_last_checkpoint(d);

	memcpy(tot, d->gone_cnt, sizeof(tot));
	/* Slot 0: packets on a device whose session was just deleted. */
	if (!tf_dp_counters(&d->dp, 0, cnt))
		for (r = 0; r < TF_CNT_SLOTS; r++)
			tot[r] += cnt[r];
	for (s = d->sessions; s; s = s->next)
		if (!tf_dp_counters(&d->dp, s->sid, cnt))
			for (r = 0; r < TF_CNT_SLOTS; r++)
				tot[r] += cnt[r];
	tf_dp_stats(&d->dp, st);

	head(f, "tapfence_build_info", "gauge", "The daemon's version and datapath ABI.");
	fprintf(f, "tapfence_build_info{version=\"%s\",abi=\"%d\"} 1\n", TF_VERSION,
		TF_ABI_VERSION);
	head(f, "tapfence_start_time_seconds", "gauge", "When the daemon started (unix time).");
	fprintf(f, "tapfence_start_time_seconds %lld\n", (long long)d->started);
	head(f, "tapfence_sessions", "gauge", "Sessions enforced.");
	fprintf(f, "tapfence_sessions %u\n", d->nsessions);
	head(f, "tapfence_sessions_max", "gauge",
	     "Sessions the config allows (limits.max_sessions).");
	fprintf(f, "tapfence_sessions_max %u\n", c->max_sessions);
	tf_dp_pool_count(&d->dp, &ready, &dirty);
	head(f, "tapfence_slots_ready", "gauge",
	     "Slots whose tables are made and empty, for the next session add (limits.warm_slots).");
	fprintf(f, "tapfence_slots_ready %u\n", ready);
	head(f, "tapfence_slots_dirty", "gauge",
	     "Slots of deleted sessions whose tables are being emptied for reuse.");
	fprintf(f, "tapfence_slots_dirty %u\n", dirty);

	head(f, "tapfence_packets_total", "counter",
	     "Packets judged, by reason and the verdict that reason gives, on every session, "
	     "deleted ones included since the daemon started.");
	for (r = 0; r < TF_REASON_MAX; r++)
		if (tot[r])
			fprintf(f, "tapfence_packets_total{reason=\"%s\",verdict=\"%s\"} %llu\n",
				tf_reason_name(r), verdict_of(r), (unsigned long long)tot[r]);
	head(f, "tapfence_audited_packets_total", "counter",
	     "Packets audit mode passed (also counted under their deny reason).");
	fprintf(f, "tapfence_audited_packets_total %llu\n",
		(unsigned long long)tot[TF_CNT_AUDITED]);
	head(f, "tapfence_rejected_packets_total", "counter",
	     "Denied packets answered (on_deny reject).");
	fprintf(f, "tapfence_rejected_packets_total %llu\n",
		(unsigned long long)tot[TF_CNT_REJECTED]);
	head(f, "tapfence_reject_limited_packets_total", "counter",
	     "Denied packets left unanswered: over the rejection rate.");
	fprintf(f, "tapfence_reject_limited_packets_total %llu\n",
		(unsigned long long)tot[TF_CNT_REJECT_LIMITED]);

	head(f, "tapfence_events_total", "counter",
	     "Events the datapath wrote to the ring buffer.");
	fprintf(f, "tapfence_events_total %llu\n", (unsigned long long)st[TF_STAT_EVENTS]);
	head(f, "tapfence_events_lost_total", "counter",
	     "Events a full ring buffer refused (their verdicts stood).");
	fprintf(f, "tapfence_events_lost_total %llu\n",
		(unsigned long long)st[TF_STAT_EVENTS_LOST]);
	head(f, "tapfence_events_suppressed_total", "counter",
	     "Events the per-session rate limit held back.");
	fprintf(f, "tapfence_events_suppressed_total %llu\n",
		(unsigned long long)tot[TF_CNT_EVENTS_SUPPRESSED]);
	head(f, "tapfence_events_written_total", "counter",
	     "Event lines the daemon wrote to the sealed log since it started.");
	fprintf(f, "tapfence_events_written_total %llu\n", (unsigned long long)d->events_written);
	if (cp) {
		head(f, "tapfence_log_last_checkpoint_timestamp_seconds", "gauge",
		     "When the sealed log's last signed checkpoint was written (unix time).");
		fprintf(f, "tapfence_log_last_checkpoint_timestamp_seconds %lld\n", (long long)cp);
	}

	head(f, "tapfence_table_capacity_entries", "gauge",
	     "Entries each session's table holds at most (the config's limits).");
	fprintf(f, "tapfence_table_capacity_entries{table=\"flows\"} %u\n", c->flows_per_session);
	fprintf(f, "tapfence_table_capacity_entries{table=\"learned\"} %u\n", c->learned_entries);
	fprintf(f, "tapfence_table_capacity_entries{table=\"dns_queries\"} %u\n", c->dns_queries);
	fprintf(f, "tapfence_table_capacity_entries{table=\"tls_buffers\"} %u\n", c->tls_pending);
	if (!tf_dp_fill(&d->dp, fill)) {
		head(f, "tapfence_table_entries", "gauge",
		     "Entries in each kind of per-session table, all sessions together.");
		fprintf(f, "tapfence_table_entries{table=\"flows\"} %llu\n",
			(unsigned long long)fill[TF_SLOT_FLOWS]);
		fprintf(f, "tapfence_table_entries{table=\"learned\"} %llu\n",
			(unsigned long long)fill[TF_SLOT_LEARNED]);
		fprintf(f, "tapfence_table_entries{table=\"dns_queries\"} %llu\n",
			(unsigned long long)fill[TF_SLOT_DNSQ]);
		fprintf(f, "tapfence_table_entries{table=\"tls_buffers\"} %llu\n",
			(unsigned long long)fill[TF_SLOT_TLSBUF]);
	}
	head(f, "tapfence_flows_opened_total", "counter",
	     "Flows that took an entry in their session's flow table.");
	fprintf(f, "tapfence_flows_opened_total %llu\n",
		(unsigned long long)tot[TF_CNT_FLOWS_OPENED]);
	head(f, "tapfence_flows_removed_total", "counter",
	     "Flows the datapath removed from their table: closed (last ACK), refused, revoked.");
	fprintf(f, "tapfence_flows_removed_total %llu\n",
		(unsigned long long)tot[TF_CNT_FLOWS_REMOVED]);
	if (!d->flows_unknown) {
		evicted = d->gone_evicted;
		for (s = d->sessions; s; s = s->next)
			evicted += s->flows_evicted;
		head(f, "tapfence_flows_evicted_total", "counter",
		     "Flows a full flow table evicted (limits.flows_per_session), as of the "
		     "daemon's last look (every 5 s).");
		fprintf(f, "tapfence_flows_evicted_total %llu\n", (unsigned long long)evicted);
	}
	head(f, "tapfence_table_full_packets_total", "counter",
	     "Packets denied because a table was full.");
	fprintf(f, "tapfence_table_full_packets_total{table=\"flows\"} %llu\n",
		(unsigned long long)tot[TF_REASON_FLOW_TABLE_FULL]);
	fprintf(f, "tapfence_table_full_packets_total{table=\"dns_queries\"} %llu\n",
		(unsigned long long)tot[TF_REASON_DNS_QUERY_TABLE]);
	fprintf(f, "tapfence_table_full_packets_total{table=\"tls_buffers\"} %llu\n",
		(unsigned long long)tot[TF_REASON_TLS_TABLE_FULL]);
	programs(f, &d->dp);

	if (!c->metrics_per_session)
		return;
	head(f, "tapfence_session_denied_packets_total", "counter",
	     "Packets each live session was denied, by reason (metrics.per_session).");
	for (s = d->sessions; s; s = s->next) {
		if (tf_dp_counters(&d->dp, s->sid, cnt))
			continue;
		for (r = 0; r < TF_REASON_MAX; r++)
			if (cnt[r] && !strcmp(verdict_of(r), "deny"))
				fprintf(f,
					"tapfence_session_denied_packets_total{session=\"%s\","
					"reason=\"%s\"} %llu\n",
					s->spec.id, tf_reason_name(r), (unsigned long long)cnt[r]);
	}
	if (d->flows_unknown)
		return;
	head(f, "tapfence_session_flows_evicted_total", "counter",
	     "Flows each live session's full flow table evicted, as of the last look "
	     "(metrics.per_session).");
	for (s = d->sessions; s; s = s->next)
		fprintf(f, "tapfence_session_flows_evicted_total{session=\"%s\"} %llu\n",
			s->spec.id, (unsigned long long)s->flows_evicted);
}

char *tf_metrics_text(struct tf_daemon *d, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	write_metrics(d, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

void tf_metrics_tick(struct tf_daemon *d)
{
	char tmp[TF_PATH_MAX + 16], *text;
	time_t now = time(NULL);
	size_t len = 0;
	int fd, ok;

	if (!d->cfg.metrics_textfile[0] || now - d->metrics_at < (time_t)d->cfg.metrics_interval_s)
		return;
	d->metrics_at = now;
	text = tf_metrics_text(d, &len);
	if (!text)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", d->cfg.metrics_textfile);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
	if (fd >= 0 && close(fd))
		ok = 0;
	if (!ok || rename(tmp, d->cfg.metrics_textfile)) {
		pr_warn("metrics: cannot write `%s': %s\n", d->cfg.metrics_textfile,
			strerror(errno));
		unlink(tmp);
	}
	free(text);
}
