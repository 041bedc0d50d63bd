#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# 64-byte packet rate through a session's tap device, written the way a VMM without vhost-net
# writes (build/bench/tappps: one writev() of virtio-net header and frame per frame, the tap
# non-blocking), at FLOWS concurrent UDP flows: with nothing enforcing, tapfence in TC and in XDP
# mode, and the same policy as an nftables ruleset (tools/bench/enforce.sh).
#
#  ┌──────────────────────────────────────────┐      ┌──────────────────────────────────┐
#  │ $host (router)                           │ veth │ $server                          │
#  │ t0 tap 10.77.0.1/24  <- tapfenced        ├──────┤ s0 203.0.113.2/24                │
#  │    written by tappps as guest 10.77.0.2  │      │ netdev ingress: count, drop      │
#  │ h1 203.0.113.1/24 (forwarding,           │      │ (the sink: its rx_packets)       │
#  │    192.0.2.0/24 via 203.0.113.2)         │      │                                  │
#  └──────────────────────────────────────────┘      └──────────────────────────────────┘
#
# Every address lives in a namespace made here (private and documentation ranges only); the root
# namespace gets no link and no route. Within the writer's write() the kernel runs the tap's
# programs, routes and forwards each frame to s0, where it is counted and dropped: the rate is the
# frames that reached s0 per second of one writer on one CPU, and the CPU per packet is the
# writer's time on a CPU over the timed part (the softirq work in its context included; what is
# pushed to ksoftirqd is not) per frame delivered. This kernel has
# no vhost-net (CONFIG_VHOST_NET): where it has, a VMM's vhost thread writes the same way, in
# batches. Flows to 192.0.2.1.. port 5000, source ports 20000.. (allowed by the session); each flow
# is written once untimed (its new flow), then every flow in turn for SECONDS.
# For each repetition, flow count and configuration (alternating within a repetition): a fresh
# enforcer; after each enforcing run, its counters must show it judged the run's frames, or the
# run is an error. tapfenced's flow table is 1310720 slots (1M flows with the LRU's slack).
#
# Usage: pps.sh OUT.json [REPS] [SECONDS] [FLOWS...]   (raw runs as JSON; report.py sums up)
# PPS_CONFIGS: the configurations to run (default "none tc xdp nft").

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/enforce.sh"

OUT=${1:?usage: pps.sh OUT.json [REPS] [SECONDS] [FLOWS...]}
REPS=${2:-3}
SECS=${3:-3}
shift $(($# < 3 ? $# : 3))
FLOW_COUNTS=("${@:-1000 100000 1000000}")
read -r -a FLOW_COUNTS <<<"${FLOW_COUNTS[*]}"
read -r -a CONFIGS <<<"${PPS_CONFIGS:-none tc xdp nft}"
TAPPPS=$TF_BUILD/bench/tappps

tf_init
host=tfb-host-$TF_SFX
server=tfb-server-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

setup() { "$@" || die "setup: $*"; }

G_MAC=02:00:00:00:77:02 GW_MAC=02:00:00:00:77:01

[ -x "$TAPPPS" ] || die "$TAPPPS is not built (make bench)"
setup ns_add "$host" "$server"
setup ns_router "$host"
setup ip -n "$host" tuntap add dev t0 mode tap vnet_hdr
setup ip -n "$host" link set t0 address $GW_MAC
setup ip -n "$host" addr add 10.77.0.1/24 dev t0
setup ip -n "$host" link set t0 up
setup veth_pair "$host" h1 "$server" s0
setup ip -n "$host" addr add 203.0.113.1/24 dev h1
setup ip -n "$server" addr add 203.0.113.2/24 dev s0
setup ip -n "$host" link set h1 up
setup ip -n "$server" link set s0 up
setup ip -n "$host" route add 192.0.2.0/24 via 203.0.113.2 dev h1
setup n "$server" nft add table netdev sink \; \
	add chain netdev sink in '{ type filter hook ingress device s0 priority 0; }' \; \
	add rule netdev sink in ip daddr 192.0.2.0/24 drop
# The sink's namespace, for tappps to read s0's counters from (/proc/PID/net/dev).
ip netns exec "$server" sleep infinity &
SINK_PID=$!
defer kill_pid "$SINK_PID"

session_spec "$T/session.json" bench t0 $G_MAC 10.77.0.2 fd00:77::2 $GW_MAC 10.77.0.1 fd00:77::1 "$BENCH_ALLOW"
nft_ruleset "$T/nft.conf" t0 10.77.0.2
bpffs_mount "$T/bpffs"

: >"$T/runs.jsonl"
for ((rep = 1; rep <= REPS; rep++)); do
	for flows in "${FLOW_COUNTS[@]}"; do
		for cfg in "${CONFIGS[@]}"; do
			enforce_on "$cfg" '"limits":{"flows_per_session":1310720}'
			n "$host" "$TAPPPS" t0 $G_MAC $GW_MAC 10.77.0.2 192.0.2.0 5000 "$flows" "$SECS" \
				"$SINK_PID" s0 >"$T/run.json" 2>"$T/run.err"
			rc=$?
			seen=$(enforcer_judged "$cfg")
			enforce_off "$cfg"
			[ $rc -eq 0 ] || die "tappps ($cfg, $flows flows, repetition $rep) exited $rc: $(cat "$T/run.err" "$T/run.json")"
			delivered=$("$PY" - "$T/run.json" "$cfg" "$rep" "${seen:-0}" "$T/runs.jsonl" <<-'PY'
			import json, sys
			r = json.load(open(sys.argv[1]))
			r.update(config=sys.argv[2], rep=int(sys.argv[3]), judged=int(sys.argv[4]))
			print(json.dumps(r), file=open(sys.argv[5], "a"))
			print(f"  pps {r['config']:<4} {r['flows']:>7} flows rep {r['rep']}: {r['pps'] / 1e3:5.0f} kpps,"
			      f" {r['cpu_ns_per_pkt']:5.0f} ns CPU a packet ({r['delivered']} of {r['sent']} delivered)",
			      file=sys.stderr)
			print(r["delivered"])
			PY
			) || die "cannot read $T/run.json"
			if [ "$cfg" != none ] && [ "${seen:-0}" -lt "$delivered" ]; then
				die "$cfg: the enforcer judged ${seen:-0} packets, $delivered reached the sink: it was not in the path"
			fi
		done
	done
done

"$PY" - "$T/runs.jsonl" "$OUT" "$SECS" <<'EOF' || die "cannot write $OUT"
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
json.dump({"tool": "pps", "seconds": int(sys.argv[3]), "frame_bytes": 64, "runs": runs},
          open(sys.argv[2], "w"), indent=1)
EOF
