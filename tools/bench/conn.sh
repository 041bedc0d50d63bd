#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Connection rate through a session's host-side veth: new TCP connections per second, each a full
# handshake, one small HTTP request and its close, and the requests' latency under that load; with
# nothing enforcing, with tapfence in TC and in XDP mode, and with the same policy as an nftables
# ruleset (sets, forward chain, conntrack).
#
#  ┌──────────────────────┐      ┌────────────────────────────────┐      ┌──────────────────────┐
#  │ $guest               │ veth │ $host (router)                 │ veth │ $server              │
#  │ g0 10.77.0.2/24      ├──────┤ t0 10.77.0.1/24  <- tapfenced  ├──────┤ s0 203.0.113.2/24    │
#  │    fd00:77::2/64     │      │    fd00:77::1/64    attaches   │      │ nginx :80            │
#  │ wrk -c 16            │      │ h1 203.0.113.1/24 (forwarding, │      │ 10.77.0.0/24 via     │
#  │ default via .1       │      │    nftables in nft)            │      │   203.0.113.1        │
#  └──────────────────────┘      └────────────────────────────────┘      └──────────────────────┘
#
# Every address lives in a namespace made here (private and documentation ranges only); the root
# namespace gets no link and no route. Configurations (tools/bench/enforce.sh) alternate within
# each repetition:
#   none  nothing enforces            tc   tapfenced, attach_mode tc (tcx on t0)
#   xdp   tapfenced, attach_mode xdp  nft  the session's policy as an nftables ruleset on $host
# Each run is `wrk -t 1 -c 16 -d SECONDS' with `Connection: close' against nginx (one worker, a
# 200 with a 20-byte body), so each request is a connection of its own; tools/bench/conn.lua
# prints wrk's summary as JSON. After each enforcing run, the enforcer's own counters must show
# that it judged at least one new flow per completed request (tapfence: allow_rule; nftables: the
# counter of its rule accepting new TCP flows), or the run is an error. Each run also records the
# TIME_WAIT sockets left in the guest and the server namespaces and the flows the enforcer tracks
# at its end (tapfence's flow tables, from its metrics textfile; the router's conntrack entries).
#
# Usage: conn.sh OUT.json [SECONDS] [REPS]   (raw runs as JSON; report.py sums up)

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/enforce.sh"

OUT=${1:?usage: conn.sh OUT.json [SECONDS] [REPS]}
SECS=${2:-5}
REPS=${3:-5}
CONFIGS=(none tc xdp nft)
THREADS=1 CONNS=16
LUA=$TF_ROOT/tools/bench/conn.lua

tf_init
guest=tfb-guest-$TF_SFX
host=tfb-host-$TF_SFX
server=tfb-server-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

setup() { "$@" || die "setup: $*"; }

tf_need wrk nginx

G_MAC=02:00:00:00:77:02 GW_MAC=02:00:00:00:77:01
SERVER=203.0.113.2 PORT=80

bench_topology
# connect() takes even ports first: the default range gives the guest about 14k, which it goes
# through in under 1.5 s at 10k connections a second. The whole range (in the guest only) makes a
# port come back only after tapfence's flow table (8192 entries, LRU) has long dropped its last
# flow, so each connection is judged as a new flow, as the check below wants.
setup n "$guest" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"

session_spec "$T/session.json" bench t0 $G_MAC 10.77.0.2 fd00:77::2 $GW_MAC 10.77.0.1 fd00:77::1 "$BENCH_ALLOW"
nft_ruleset "$T/nft.conf" t0 10.77.0.2

# nginx by hand: one worker, no daemon, every file it writes under $T/nginx, on the server's
# address only. Debian's build opens its compiled-in error log before reading this (-e moves it).
mkdir -p "$T/nginx"
cat >"$T/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log warn;
events {
	worker_connections 1024;
}
http {
	access_log off;
	client_body_temp_path $T/nginx/body;
	proxy_temp_path $T/nginx/proxy;
	fastcgi_temp_path $T/nginx/fastcgi;
	uwsgi_temp_path $T/nginx/uwsgi;
	scgi_temp_path $T/nginx/scgi;
	server {
		listen $SERVER:$PORT backlog=4096;
		location / {
			return 200 "tapfence conn bench\n";
		}
	}
}
EOF

bpffs_mount "$T/bpffs"
ip netns exec "$server" nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" -e "$T/nginx/error.log" \
	-g 'daemon off;' >"$T/nginx/out.log" 2>&1 &
NGINX_PID=$!
# nginx_stop: the master by PID, then its workers, read before: a master that needed SIGKILL
# leaves them running.
nginx_stop() {
	local workers w
	workers=$(pgrep -P "$NGINX_PID")
	kill_pid "$NGINX_PID"
	for w in $workers; do
		kill_pid "$w"
	done
}
defer nginx_stop
wait_for 5 n "$server" bash -c "exec 3<>/dev/tcp/$SERVER/$PORT" 2>/dev/null ||
	die "nginx did not start: $(tail -n 3 "$T/nginx/out.log" "$T/nginx/error.log")"

# tracked CONFIG: the flows the enforcer holds at the end of the run (tapfence's flow tables, as its
# metrics textfile last said, at most a second ago; conntrack's entries in $host).
tracked() {
	case $1 in
	tc | xdp)
		awk '/^tapfence_table_entries\{table="flows"\}/ { print $2 }' "$T/metrics.prom" 2>/dev/null ;;
	nft)
		n "$host" cat /proc/sys/net/netfilter/nf_conntrack_count ;;
	*) echo 0 ;;
	esac
}

# time_wait NS: TCP sockets in TIME_WAIT in NS.
time_wait() { n "$1" ss -Htan state time-wait | wc -l; }

: >"$T/runs.txt"
for ((rep = 1; rep <= REPS; rep++)); do
	for cfg in "${CONFIGS[@]}"; do
		rm -f "$T/metrics.prom"
		enforce_on "$cfg" "\"metrics\":{\"textfile\":\"$T/metrics.prom\",\"interval_s\":1}"
		n "$guest" timeout $((SECS + 20)) wrk -t $THREADS -c $CONNS -d "${SECS}s" -H 'Connection: close' \
			-s "$LUA" "http://$SERVER:$PORT/" >"$T/wrk.out" 2>&1
		rc=$?
		seen=$(enforcer_judged "$cfg" new)
		flows=$(tracked "$cfg")
		enforce_off "$cfg"
		[ $rc -eq 0 ] || die "wrk ($cfg, repetition $rep) exited $rc: $(head -c 300 "$T/wrk.out")"
		res=$("$PY" -c '
import json, sys
r = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
print(r["requests"], r["duration_us"], r["p50_us"], r["p99_us"], sum(r["errors"].values()))' "$T/wrk.out") ||
			die "no summary from wrk in $T/wrk.out: $(head -c 300 "$T/wrk.out")"
		read -r reqs us p50 p99 errs <<<"$res"
		[ "$reqs" -gt 0 ] || die "$cfg, repetition $rep: no request completed"
		[ "$errs" -le $((reqs / 100)) ] || die "$cfg, repetition $rep: $errs errors for $reqs requests"
		if [ "$cfg" != none ] && [ "${seen:-0}" -lt "$reqs" ]; then
			die "$cfg: the enforcer judged ${seen:-0} new flows for $reqs requests: it was not in the path"
		fi
		tw_g=$(time_wait "$guest") tw_s=$(time_wait "$server")
		printf '%s %d %s %s %s %s %s %s %s %s %s\n' "$cfg" "$rep" "$reqs" "$us" "$p50" "$p99" "$errs" \
			"${seen:-0}" "${flows:-0}" "$tw_g" "$tw_s" >>"$T/runs.txt"
		printf '  conn %-4s rep %d: %7.0f conn/s, p50 %5d us, p99 %5d us, %s errors, %s judged, %s tracked, TIME_WAIT %s guest / %s server\n' \
			"$cfg" "$rep" "$(awk -v n="$reqs" -v us="$us" 'BEGIN { print n * 1e6 / us }')" "$p50" "$p99" \
			"$errs" "${seen:-0}" "${flows:-0}" "$tw_g" "$tw_s" >&2
	done
done

"$PY" - "$T/runs.txt" "$OUT" "$SECS" "$THREADS" "$CONNS" <<'EOF' || die "cannot write $OUT"
import json, sys
runs = []
for line in open(sys.argv[1]):
    cfg, rep, reqs, us, p50, p99, errs, seen, flows, tw_g, tw_s = line.split()
    runs.append({"config": cfg, "rep": int(rep), "requests": int(reqs), "seconds": int(us) / 1e6,
                 "conn_per_s": int(reqs) * 1e6 / int(us), "p50_us": int(p50), "p99_us": int(p99),
                 "errors": int(errs), "judged": int(seen), "tracked": int(flows),
                 "time_wait_guest": int(tw_g), "time_wait_server": int(tw_s)})
json.dump({"tool": "conn", "seconds": int(sys.argv[3]), "threads": int(sys.argv[4]),
           "connections": int(sys.argv[5]), "runs": runs}, open(sys.argv[2], "w"), indent=1)
EOF
