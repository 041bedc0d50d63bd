#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Control-plane latency and memory: tapfenced in a namespace of its own with N tap devices, driven
# by build/bench/bench_ctl over its control socket (session add, rule add, session del, one
# connection), and the BPF memory the sessions take, read from the daemon's own pinned maps.
#
#  ┌──────────────────────────────────────────────┐
#  │ $ns: d1 .. dN (taps, up); tapfenced (TC)     │   bench_ctl ── control socket ($T/control.sock)
#  └──────────────────────────────────────────────┘
#
# No packet is sent: the taps (persistent, no VMM attached; this kernel has no dummy driver) only
# give the sessions a device to attach to, as a VMM's taps would.
# Usage: ctl.sh OUT.json [N]

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"

OUT=${1:?usage: ctl.sh OUT.json [N]}
N=${2:-1000}
CTL=$TF_BUILD/bench/bench_ctl

tf_init
ns=tfb-ctl-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

[ -x "$CTL" ] || die "$CTL is not built (make bench)"
ns_add "$ns" || die "setup: namespace $ns"
for ((i = 1; i <= N; i++)); do
	printf 'tuntap add dev d%d mode tap\nlink set d%d up\n' "$i" "$i"
done >"$T/links.batch"
ip -n "$ns" -batch "$T/links.batch" || die "setup: $N tap devices"

bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" "\"limits\":{\"max_sessions\":$((N > 1024 ? N : 1024))}"
# Not tfd_start: its --verbose would put debug logging on the measured path. Same bookkeeping.
TFD_NS=$ns
ip netns exec "$ns" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" >>"$T/tapfenced.log" 2>&1 &
TFD_PID=$!
defer tfd_stop
wait_for 10 test -S "$TF_SOCK" || { tfd_log_tail 20; die "tapfenced did not open $TF_SOCK"; }

# bpf_memlock: bytes of the daemon's pinned maps (an array of maps counts only itself).
bpf_memlock() {
	local m total=0 b
	for m in "$TF_PIN_DIR"/maps/*; do
		b=$(bpftool -j map show pinned "$m" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("bytes_memlock", 0))')
		total=$((total + b))
	done
	echo "$total"
}

# slot_memlock: bytes of slot 1's own maps, the inner maps of every pinned array of maps
# (flow table, DNS state), as "name:bytes ..." then the total.
slot_memlock() {
	local m id b total=0 names=()
	for m in "$TF_PIN_DIR"/maps/*; do
		bpftool -j map show pinned "$m" | grep -q '"type":"array_of_maps"' || continue
		id=$(bpftool -j map lookup pinned "$m" key 1 0 0 0 | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
v = d.get("inner_map_id", d.get("value"))
print(int.from_bytes(bytes(int(x, 16) for x in v), "little") if isinstance(v, list) else v)')
		b=$(bpftool -j map show id "$id" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("bytes_memlock", 0))')
		names+=("$(basename "$m"):$b")
		total=$((total + b))
	done
	echo "${names[*]} $total"
}

mem0=$(bpf_memlock)
"$CTL" "$TF_SOCK" "$N" "$T/add.json" session_add rule_add || { tfd_log_tail 10; die "bench_ctl add"; }
mem1=$(bpf_memlock)
read -r -a slot <<<"$(slot_memlock)"
"$CTL" "$TF_SOCK" "$N" "$T/del.json" session_del || { tfd_log_tail 10; die "bench_ctl del"; }

"$PY" - "$OUT" "$N" "$mem0" "$mem1" "${slot[*]}" "$T/add.json" "$T/del.json" <<'EOF' || die "cannot write $OUT"
import json, sys
out, n, mem0, mem1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
*parts, slot = sys.argv[5].split()
metrics = []
for f in sys.argv[6:]:
    metrics += json.load(open(f))["metrics"]
def mem(id, desc, value):
    metrics.append({"id": id, "group": "memory", "desc": desc, "unit": "KiB", "value": value / 1024})
mem("mem.maps_fixed", "pinned maps before any session (bytes_memlock)", mem0)
mem("mem.per_session_shared", f"growth of the pinned maps per session ({n} sessions, 11 rules each)", (mem1 - mem0) / n)
mem("mem.per_session_slot_maps", "one session's own maps (inner maps: " + ", ".join(parts) + " bytes)",
    int(slot))
json.dump({"tool": "ctl", "sessions": n, "metrics": metrics}, open(out, "w"), indent=1)
EOF
