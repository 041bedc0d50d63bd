#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench [QUICK=1]: every part of the benchmark, then one results file and the table.
#   dp    build/bench/bench_dp       per-packet cost of each path, and scaling (BPF_PROG_TEST_RUN)
#   tput  tools/bench/throughput.sh  iperf3 through a session's veth: none / TC / XDP / nftables
#   pps   tools/bench/pps.sh         64 B frames written to a session's tap as a VMM does, 1k-1M flows
#   conn  tools/bench/conn.sh        new TCP connections a second and request latency (wrk, nginx)
#   ctl   tools/bench/ctl.sh         control-socket latency, plain TC and guarded; BPF memory, fds
#   tls   tools/bench/tls.sh         connect latency the TLS SNI check adds (hello in 1 and 2 segments)
#   names tools/bench/names.sh       a fresh name's query to first byte, first SYN: tapfence / dnsmasq --nftset
# Results: build/bench/results/<UTC time>-<commit>.json (compare two with
# `tools/bench/report.py compare OLD NEW'), plots: build/bench/scale_*.png. QUICK=1 runs a subset
# in under three minutes. BENCH_PARTS="dp ctl" runs only those parts. Targets are reported, never
# asserted: the exit status is non-zero only if a part could not run.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
QUICK=${QUICK:-}
[ "$QUICK" = 0 ] && QUICK=
PARTS=${BENCH_PARTS:-dp tput pps conn ctl tls names}
[ "$(id -u)" -eq 0 ] || { echo "bench: must run as root (BPF, namespaces)" >&2; exit 1; }

run=$BUILD/bench/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$run"
if [ -n "$QUICK" ]; then
	dp_args=(--quick) tput_args=(1 2 0) pps_args=(1 1 100000) conn_args=(2 1) ctl_args=(100 50)
	tls_args=(50 2) names_args=(50 2)
else
	dp_args=() tput_args=(5 5 1) pps_args=(3 3 1000 100000 1000000) conn_args=(5 5) ctl_args=(1000 200 4000)
	tls_args=(200 10) names_args=(250 10)
fi

skipped=()
for p in dp tput pps conn ctl tls names; do
	[[ " $PARTS " == *" $p "* ]] || skipped+=("$p")
done

part() { # name cmd...
	local name=$1 t0=$SECONDS
	shift
	[[ " $PARTS " == *" $name "* ]] || return 0
	echo "== bench: $name" >&2
	"$@" || echo "bench: part $name failed" >&2
	echo "== bench: $name took $((SECONDS - t0)) s" >&2
}

part dp "$BUILD/bench/bench_dp" "${dp_args[@]}" --out "$run/dp.json"
part tput tools/bench/throughput.sh "$run/tput.json" "${tput_args[@]}"
part pps tools/bench/pps.sh "$run/pps.json" "${pps_args[@]}"
part conn tools/bench/conn.sh "$run/conn.json" "${conn_args[@]}"
part ctl tools/bench/ctl.sh "$run/ctl.json" "${ctl_args[@]}"
part tls tools/bench/tls.sh "$run/tls.json" "${tls_args[@]}"
part names tools/bench/names.sh "$run/names.json" "${names_args[@]}"

QUICK=$QUICK BENCH_SKIPPED="${skipped[*]}" /usr/bin/python3 tools/bench/report.py run "$run" \
	"$BUILD/bench/results" "$BUILD/bench" | tee "$run/table.txt"
rc=${PIPESTATUS[0]}
grep -q '^PART FAILED' "$run/table.txt" && rc=1
exit "$rc"
