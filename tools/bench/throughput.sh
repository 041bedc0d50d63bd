#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bulk TCP throughput through a session's host-side veth: with nothing enforcing, with tapfence in
# TC and in XDP mode, and with the same policy as an nftables ruleset (sets, forward chain).
#
#  ┌──────────────────────┐      ┌────────────────────────────────┐      ┌──────────────────────┐
#  │ $guest               │ veth │ $host (router)                 │ veth │ $server              │
#  │ g0 10.77.0.2/24      ├──────┤ t0 10.77.0.1/24  <- tapfenced  ├──────┤ s0 203.0.113.2/24    │
#  │    fd00:77::2/64     │      │    fd00:77::1/64    attaches   │      │ iperf3 -s :5201      │
#  │ iperf3 -c ...        │      │ h1 203.0.113.1/24 (forwarding, │      │ 10.77.0.0/24 via     │
#  │ default via .1       │      │    nftables in (c))            │      │   203.0.113.1        │
#  └──────────────────────┘      └────────────────────────────────┘      └──────────────────────┘
#
# Every address lives in a namespace made here (private and documentation ranges only); the root
# namespace gets no link and no route. Configurations alternate within each repetition:
#   none  nothing enforces            tc   tapfenced, attach_mode tc (tcx on t0)
#   xdp   tapfenced, attach_mode xdp  nft  the session's policy as an nftables ruleset on $host
# Each run is `iperf3 -t SECONDS' (one stream, guest -> server). After each enforcing run, the
# enforcer's own counters must show it judged the run's packets, or the run is an error.
# Then one more run per tapfence mode, untimed, with BPF run-time statistics on (BPF_ENABLE_STATS,
# held only while that run lasts) for what each of the daemon's programs costs per run under load.
#
# Usage: throughput.sh OUT.json [REPS] [SECONDS] [PROFILE]   (raw runs as JSON; report.py sums up)
# PROFILE=0 skips the runs with statistics on.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/enforce.sh"

OUT=${1:?usage: throughput.sh OUT.json [REPS] [SECONDS] [PROFILE]}
REPS=${2:-3}
SECS=${3:-5}
PROFILE=${4:-1}
CONFIGS=(none tc xdp nft)

tf_init
guest=tfb-guest-$TF_SFX
host=tfb-host-$TF_SFX
server=tfb-server-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

setup() { "$@" || die "setup: $*"; }

G_MAC=02:00:00:00:77:02 GW_MAC=02:00:00:00:77:01
SERVER=203.0.113.2 PORT=5201

bench_topology

session_spec "$T/session.json" bench t0 $G_MAC 10.77.0.2 fd00:77::2 $GW_MAC 10.77.0.1 fd00:77::1 "$BENCH_ALLOW"
nft_ruleset "$T/nft.conf" t0 10.77.0.2

bpffs_mount "$T/bpffs"
ip netns exec "$server" iperf3 -s -B $SERVER -p $PORT >"$T/iperf3-server.log" 2>&1 &
IPERF_PID=$!
defer kill_pid "$IPERF_PID"
wait_for 5 n "$server" bash -c "exec 3<>/dev/tcp/$SERVER/$PORT" 2>/dev/null || die "iperf3 server did not start"

: >"$T/runs.txt"
for ((rep = 1; rep <= REPS; rep++)); do
	for cfg in "${CONFIGS[@]}"; do
		enforce_on "$cfg"
		n "$guest" timeout $((SECS + 20)) iperf3 -c $SERVER -p $PORT -t "$SECS" -J >"$T/iperf3.json" 2>&1
		rc=$?
		seen=$(enforcer_judged "$cfg")
		enforce_off "$cfg"
		[ $rc -eq 0 ] || die "iperf3 ($cfg, repetition $rep) exited $rc: $(head -c 300 "$T/iperf3.json")"
		bps=$("$PY" -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; print(e["sum_received"]["bits_per_second"], e["sum_sent"].get("retransmits", 0))' "$T/iperf3.json") ||
			die "cannot read $T/iperf3.json"
		if [ "$cfg" != none ] && [ "${seen:-0}" -lt 1000 ]; then
			die "$cfg: the enforcer judged ${seen:-0} packets of the run: it was not in the path"
		fi
		read -r bits retrans <<<"$bps"
		printf '%s %d %s %s %s\n' "$cfg" "$rep" "$bits" "$retrans" "${seen:-0}" >>"$T/runs.txt"
		printf '  throughput %-4s rep %d: %6.2f Gbit/s (%s retransmits, %s packets judged)\n' \
			"$cfg" "$rep" "$(awk -v b="$bits" 'BEGIN { print b / 1e9 }')" "$retrans" "${seen:-0}" >&2
	done
done

# profile CFG: the daemon's programs, average ns per run over one more iperf3 run.
profile() {
	local cfg=$1
	enforce_on "$cfg"
	"$PY" - "$TFD_PID" "$cfg" -- ip netns exec "$guest" timeout $((SECS + 20)) \
		iperf3 -c $SERVER -p $PORT -t "$SECS" >>"$T/profile.txt" 2>"$T/profile.err" <<-'EOF'
		import ctypes, json, os, platform, subprocess, sys
		pid, cfg, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
		nr_bpf = {"x86_64": 321, "aarch64": 280}[platform.machine()]
		libc = ctypes.CDLL(None, use_errno=True)
		attr = ctypes.create_string_buffer(8)        # bpf_attr.enable_stats.type = BPF_STATS_RUN_TIME
		fd = libc.syscall(nr_bpf, 32, attr, 4)       # BPF_ENABLE_STATS
		if fd < 0:
		    sys.exit(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
		def ours():
		    """Program ids the daemon holds fds of (its fdinfo says prog_id)."""
		    ids = set()
		    for fd_ in os.listdir(f"/proc/{pid}/fdinfo"):
		        try:
		            for line in open(f"/proc/{pid}/fdinfo/{fd_}"):
		                if line.startswith("prog_id:"):
		                    ids.add(int(line.split()[1]))
		        except OSError:
		            pass
		    return ids
		def progs():
		    out = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
		                                    text=True).stdout)
		    mine = ours()
		    return {p["id"]: p for p in out if p["id"] in mine}
		before = progs()
		rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
		after = progs()
		os.close(fd)
		for i, p in after.items():
		    n = p.get("run_cnt", 0) - before.get(i, {}).get("run_cnt", 0)
		    t = p.get("run_time_ns", 0) - before.get(i, {}).get("run_time_ns", 0)
		    if n > 0:
		        print(cfg, p["name"], n, t)
		sys.exit(rc)
	EOF
	local rc=$?
	enforce_off "$cfg"
	[ $rc -eq 0 ] || note "profile $cfg failed: $(head -c 300 "$T/profile.err")"
}

: >"$T/profile.txt"
if [ "$PROFILE" != 0 ]; then
	for cfg in tc xdp; do
		profile "$cfg"
	done
fi
sed 's/^/  profile: /' "$T/profile.txt" >&2

"$PY" - "$T/runs.txt" "$OUT" "$SECS" "$T/profile.txt" <<'EOF' || die "cannot write $OUT"
import json, sys
runs = []
for line in open(sys.argv[1]):
    cfg, rep, bits, retrans, seen = line.split()
    runs.append({"config": cfg, "rep": int(rep), "bits_per_second": float(bits),
                 "retransmits": int(retrans), "judged_packets": int(seen)})
profile = []
for line in open(sys.argv[4]):
    cfg, name, n, t = line.split()
    profile.append({"config": cfg, "prog": name, "runs": int(n), "ns_per_run": int(t) / int(n)})
json.dump({"tool": "throughput", "seconds": int(sys.argv[3]), "streams": 1, "runs": runs,
           "profile": profile}, open(sys.argv[2], "w"), indent=1)
EOF
