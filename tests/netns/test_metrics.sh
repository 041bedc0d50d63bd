#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Metrics (docs/metrics.md) with the real tools: tapfenced keeps a node_exporter textfile; Debian's
# prometheus-node-exporter serves it, Debian's prometheus scrapes it (both in a test namespace, on
# its loopback), and a query over Prometheus' HTTP API returns the counters the guest's traffic
# moved. `tapfence metrics' and the textfile pass `promtool check metrics'; no label names a
# destination; per-session series (opt-in) go with their session.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need prometheus prometheus-node-exporter promtool curl
host=tf-mth-$TF_SFX guest=tf-mtg-$TF_SFX inet=tf-mti-$TF_SFX mon=tf-mtm-$TF_SFX
one_guest "$host" "$guest" "$inet"
setup ns_add "$mon"
mkdir -p "$T/prom"
PROM=$T/prom/tapfence.prom

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json" "\"metrics\":{\"textfile\":\"$PROM\",\"interval_s\":1,\"per_session\":true}"
tfd_start "$host"
one_guest_spec "$T/a.json"
sessions_add a
guest_probe "allowed: 198.51.100.10:80" 198.51.100.10 reached
guest_probe "denied: 203.0.113.10:80" 203.0.113.10 blocked

note "tapfence metrics"
check "tapfence metrics" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' metrics >'$T/m.txt'"
check "promtool check metrics: clean" sh -c "promtool check metrics <'$T/m.txt' >'$T/lint.out' 2>&1"
sed 's/^/#   promtool: /' "$T/lint.out" | head -n 5
check "the no_rule denial is counted" grep -qE '^tapfence_packets_total\{reason="no_rule",verdict="deny"\} [1-9]' "$T/m.txt"
check "the allowed flow too" grep -qE '^tapfence_packets_total\{reason="allow_rule",verdict="allow"\} [1-9]' "$T/m.txt"
check "per session (opt-in)" grep -qE '^tapfence_session_denied_packets_total\{session="a",reason="no_rule"\} [1-9]' "$T/m.txt"
check "build info and sessions" sh -c "grep -q '^tapfence_build_info{version=' '$T/m.txt' && grep -qx 'tapfence_sessions 1' '$T/m.txt'"
check_not "no label names an address" grep -qE '198\.51\.100|203\.0\.113|10\.10\.1' "$T/m.txt"
check "the flow table's fill is reported" \
	grep -qE '^tapfence_table_entries\{table="flows"\} [0-9]+$' "$T/m.txt"
check "the allowed GET's flow was opened, and removed at its last ACK" sh -c \
	"grep -qE '^tapfence_flows_opened_total [1-9]' '$T/m.txt' &&
	 grep -qE '^tapfence_flows_removed_total [1-9]' '$T/m.txt'"
check "no flow evicted" grep -qx 'tapfence_flows_evicted_total 0' "$T/m.txt"
check "the other tables' fill, with their capacity" sh -c \
	"grep -qE '^tapfence_table_entries\{table=\"learned\"\} [0-9]+' '$T/m.txt' &&
	 grep -qE '^tapfence_table_capacity_entries\{table=\"flows\"\} 8192' '$T/m.txt'"

note "the textfile, node_exporter, prometheus"
check "the textfile is written" wait_for 3 test -s "$PROM"
check "promtool check metrics on the textfile: clean" sh -c "promtool check metrics <'$PROM' >/dev/null 2>&1"
setup ip -n "$mon" link set lo up
ip netns exec "$mon" prometheus-node-exporter --web.listen-address=127.0.0.1:9100 \
	--collector.disable-defaults --collector.textfile --collector.textfile.directory="$T/prom" \
	>"$T/node_exporter.out" 2>&1 &
defer kill_pid $!
printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ["127.0.0.1:9100"]\n' \
	>"$T/prometheus.yml"
ip netns exec "$mon" prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address=127.0.0.1:9090 >"$T/prometheus.out" 2>&1 &
defer kill_pid $!
q() { n "$mon" curl -sS --noproxy '*' -G --data-urlencode "query=$1" http://127.0.0.1:9090/api/v1/query; }
# value QUERY: the query's first sample value, once Prometheus has one.
value() { q "$1" | "$PY" -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
has_value() { [ -n "$(value "$1" 2>/dev/null)" ]; }
check "prometheus scraped the no_rule counter through node_exporter" wait_for 30 has_value \
	'tapfence_packets_total{reason="no_rule",verdict="deny"}'
before=$(value 'tapfence_packets_total{reason="no_rule",verdict="deny"}')
guest_probe "denied again: 203.0.113.10:80" 203.0.113.10 blocked
more() { awk -v a="$(value 'tapfence_packets_total{reason="no_rule",verdict="deny"}')" -v b="$before" 'BEGIN { exit !(a > b) }'; }
check "the query shows the counter moved by the traffic (from $before)" wait_for 15 more
check "the per-session series is there" wait_for 5 has_value 'tapfence_session_denied_packets_total{session="a"}'

note "program run times, with kernel.bpf_stats_enabled"
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
defer sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
setup sysctl -qw kernel.bpf_stats_enabled=1
guest_probe "with stats: 203.0.113.10:80" 203.0.113.10 blocked
check "tapfence metrics (stats on)" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' metrics >'$T/m2.txt'"
check "tc_from_guest's runs are counted" grep -qE '^tapfence_program_runs_total\{program="tc_from_guest"\} [1-9]' "$T/m2.txt"
check "... and its run time" grep -qE '^tapfence_program_run_seconds_total\{program="tc_from_guest"\} [0-9.]+' "$T/m2.txt"
setup sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
check "the sealed log's last checkpoint time" grep -qE '^tapfence_log_last_checkpoint_timestamp_seconds [1-9][0-9]{9}$' "$T/m2.txt"

note "per-session series go with their session"
check "session del a" tfc session del a
sleep 2
check_not "the textfile no longer names session a" grep -q 'session="a"' "$PROM"
check "the node total keeps what a counted" grep -qE '^tapfence_packets_total\{reason="no_rule",verdict="deny"\} [1-9]' "$PROM"

tf_done
