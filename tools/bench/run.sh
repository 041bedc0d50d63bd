#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench [QUICK=1]: every part of the benchmark, then one results file and the table.
#   dp    build/bench/bench_dp       per-packet cost of each path, and scaling (BPF_PROG_TEST_RUN)
#   tput  tools/bench/throughput.sh  iperf3 through a session's veth: none / TC / XDP / nftables
#   ctl   tools/bench/ctl.sh         control-socket latency, plain TC and guarded; BPF memory, fds
#   tls   tools/bench/tls.sh         connect latency the TLS SNI check adds (hello in 1 and 2 segments)
#   conn  tools/bench/conn.sh        new TCP connections a second and request latency (wrk, nginx)
# Results: build/bench/results/<UTC time>-<commit>.json (compare two with
# `tools/bench/report.py compare OLD NEW'), plots: build/bench/scale_*.png. QUICK=1 runs a subset
# in under three minutes. BENCH_PARTS="dp ctl" runs only those parts. Targets are reported, never
# asserted: the exit status is non-zero only if a part could not run.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
QUICK=${QUICK:-}
[ "$QUICK" = 0 ] && QUICK=
PARTS=${BENCH_PARTS:-dp tput ctl tls conn}
[ "$(id -u)" -eq 0 ] || { echo "bench: must run as root (BPF, namespaces)" >&2; exit 1; }

run=$BUILD/bench/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$run"
if [ -n "$QUICK" ]; then
	dp_args=(--quick) tput_args=(1 3 0) ctl_args=(100 50) tls_args=(50 2) conn_args=(3 1)
else
	dp_args=() tput_args=(5 5 1) ctl_args=(1000 200) tls_args=(200 10) conn_args=(5 5)
fi

skipped=()
for p in dp tput ctl tls conn; do
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
part ctl tools/bench/ctl.sh "$run/ctl.json" "${ctl_args[@]}"
part tls tools/bench/tls.sh "$run/tls.json" "${tls_args[@]}"
part conn tools/bench/conn.sh "$run/conn.json" "${conn_args[@]}"

QUICK=$QUICK BENCH_SKIPPED="${skipped[*]}" /usr/bin/python3 tools/bench/report.py run "$run" \
	"$BUILD/bench/results" "$BUILD/bench" | tee "$run/table.txt"
rc=${PIPESTATUS[0]}
grep -q '^PART FAILED' "$run/table.txt" && rc=1
exit "$rc"
