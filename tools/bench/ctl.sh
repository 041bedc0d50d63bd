#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Control-plane latency and memory: tapfenced in a namespace of its own with N + C tap devices,
# driven by build/bench/bench_ctl over its control socket, in two configurations, each a fresh
# daemon:
#   tc     the default: each session attaches its own tcx links
#   guard  guard.interfaces ["d*"]: the guard's programs hold every device, so a session judged
#          through them attaches nothing (docs/guard.md, TF_SF_VIA_GUARD)
# In each: N sessions added in a row (from an empty daemon), a rule added to each, then C sessions
# added and deleted in turn with the N present (churn: what a platform does all day), then the N
# deleted. Memory and fds (tc): read from the daemon's own pinned maps and /proc.
# Then rule changes to a large session (tc, a fresh daemon each): one session of 1,000 and one of
# 10,000 CIDR rules, C rules added to it one by one, then deleted (ctl.rules1k.*, ctl.rules10k.*).
# Then, with TOTAL > 0, the control plane at scale (guard, a fresh daemon, TOTAL devices): BIG =
# TOTAL - 200 sessions added, 200 added and deleted in turn with them present
# (ctl.scale.churn_*), then the 200 added from 4 connections at once and deleted so
# (ctl.scale.conc.*: latency and rate). TOTAL is lowered to what the hard limit on open files
# allows the daemon (2 a session, 192 more: tf_fd_need()), which a root without
# CAP_SYS_RESOURCE (a container) cannot raise.
#
#  ┌────────────────────────────────────────────────┐
#  │ $ns: d1 .. dN+C (taps, up); tapfenced (TC)     │   bench_ctl ── control socket ($T/control.sock)
#  └────────────────────────────────────────────────┘
#
# No packet is sent: the taps (persistent, no VMM attached; this kernel has no dummy driver) only
# give the sessions a device to attach to, as a VMM's taps would.
# Usage: ctl.sh OUT.json [N [C [TOTAL]]]

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/enforce.sh"

OUT=${1:?usage: ctl.sh OUT.json [N [C [TOTAL]]]}
N=${2:-1000}
C=${3:-200}
TOTAL=${4:-0}
S=200
fd_room=$((($(ulimit -Hn) - 192) / 2))
[ "$TOTAL" -le "$fd_room" ] || { echo "ctl: $TOTAL sessions at scale need more files than the hard limit $(ulimit -Hn): $fd_room" >&2; TOTAL=$fd_room; }
[ "$TOTAL" -le 4095 ] || TOTAL=4095 # limits.max_sessions at most
BIG=$((TOTAL > S ? TOTAL - S : 0))
CTL=$TF_BUILD/bench/bench_ctl

tf_init
ns=tfb-ctl-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

[ -x "$CTL" ] || die "$CTL is not built (make bench)"
ns_add "$ns" || die "setup: namespace $ns"
for ((i = 1; i <= N + C; i++)); do
	printf 'tuntap add dev d%d mode tap\nlink set d%d up\n' "$i" "$i"
done >"$T/links.batch"
ip -n "$ns" -batch "$T/links.batch" || die "setup: $((N + C)) tap devices"

bpffs_mount "$T/bpffs"

# daemon_start EXTRA [LIMITS [SESSIONS]]: a fresh tapfenced, config EXTRA, more limits LIMITS
# (",name":value), room for SESSIONS (default N + C).
daemon_start() {
	local room=${3:-$((N + C))}
	tfd_config "$T/tapfenced.json" "\"limits\":{\"max_sessions\":$((room > 1024 ? room : 1024))${2:-}}$1"
	tfd_start_quiet "$ns" 60
}
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

# fds: the daemon's open file descriptors.
fds() { find "/proc/$TFD_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# guarded_all [COUNT]: every device (COUNT, default N + C) has its guard programs.
guarded_all() {
	tfc --json guard 2>/dev/null | "$PY" 2>/dev/null -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(sum(1 for e in d.get("devices", []) if e.get("programs")) < int(sys.argv[1]))' "${1:-$((N + C))}"
}

# pool_full: limits.warm_slots (32, the default) slots are ready.
pool_full() { tfc metrics 2>/dev/null | grep -qE '^tapfence_slots_ready (3[2-9]|[4-9][0-9]|[0-9]{3,})$'; }

# run_config NAME PREFIX EXTRA: one daemon, config EXTRA, metrics PREFIX.*
run_config() {
	local name=$1 prefix=$2 t0 mem0 mem1 fd0 fd1
	daemon_start "$3"
	if [ "$name" = guard ]; then
		t0=$SECONDS
		wait_for 600 guarded_all || { tfd_log_tail 10; die "guard: not every device got its programs"; }
		echo "  guard: $((N + C)) devices guarded in $((SECONDS - t0)) s" >&2
	fi
	mem0=$(bpf_memlock) fd0=$(fds)
	"$CTL" "$TF_SOCK" "$N" "$T/$name-add.json" prefix="$prefix" session_add rule_add ||
		{ tfd_log_tail 10; die "bench_ctl $name add"; }
	mem1=$(bpf_memlock) fd1=$(fds)
	[ "$name" = tc ] && read -r -a slot <<<"$(slot_memlock)"
	# The churn is the steady state: it starts once the pool has its slots ready again.
	wait_for 60 pool_full || { tfd_log_tail 10; die "$name: the slot pool did not refill"; }
	"$CTL" "$TF_SOCK" "$C" "$T/$name-churn.json" prefix="$prefix" first=$((N + 1)) present="$N" churn ||
		{ tfd_log_tail 10; die "bench_ctl $name churn"; }
	"$CTL" "$TF_SOCK" "$N" "$T/$name-del.json" prefix="$prefix" session_del ||
		{ tfd_log_tail 10; die "bench_ctl $name del"; }
	echo "$name $mem0 $mem1 $fd0 $fd1" >>"$T/mem.txt"
	tfd_stop # and --cleanup: the next configuration starts from nothing
}

# run_rules R NAME: session s1 on d1 with R more rules, then C rules added to it and deleted.
run_rules() {
	daemon_start "" ",\"max_rules\":$(($1 + C + 100))"
	"$CTL" "$TF_SOCK" 1 "$T/$2-add.json" prefix="ctl.$2" rules="$1" session_add ||
		{ tfd_log_tail 10; die "bench_ctl $2: a session of $1 rules"; }
	# The steady state, as for the churn: the pool's thread done refilling after the add.
	wait_for 60 pool_full || { tfd_log_tail 10; die "$2: the slot pool did not refill"; }
	"$CTL" "$TF_SOCK" "$C" "$T/$2.json" prefix="ctl.$2" target=1 present="1 (of $1 rules)" \
		rule_add rule_del || { tfd_log_tail 10; die "bench_ctl $2: rule changes"; }
	tfd_stop
}

# run_scale: BIG sessions present (guarded), S more churned, then added and deleted from 4
# connections at once.
run_scale() {
	local s=$S t0 i
	for ((i = N + C + 1; i <= BIG + s; i++)); do
		printf 'tuntap add dev d%d mode tap\nlink set d%d up\n' "$i" "$i"
	done >"$T/links-scale.batch"
	ip -n "$ns" -batch "$T/links-scale.batch" || die "setup: devices up to d$((BIG + s))"
	daemon_start ",\"guard\":{\"interfaces\":[\"d*\"]}" "" "$TOTAL"
	t0=$SECONDS
	wait_for 600 guarded_all $((BIG + s)) || { tfd_log_tail 10; die "scale: not every device got its programs"; }
	echo "  scale: $((BIG + s)) devices guarded in $((SECONDS - t0)) s" >&2
	"$CTL" "$TF_SOCK" "$BIG" "$T/scale-add.json" prefix=ctl.scale session_add ||
		{ tfd_log_tail 10; die "bench_ctl scale add"; }
	wait_for 60 pool_full || { tfd_log_tail 10; die "scale: the slot pool did not refill"; }
	"$CTL" "$TF_SOCK" "$s" "$T/scale-churn.json" prefix=ctl.scale first=$((BIG + 1)) present="$BIG" churn ||
		{ tfd_log_tail 10; die "bench_ctl scale churn"; }
	wait_for 60 pool_full || { tfd_log_tail 10; die "scale: the slot pool did not refill"; }
	"$CTL" "$TF_SOCK" "$s" "$T/scale-conc.json" prefix=ctl.scale.conc first=$((BIG + 1)) present="$BIG" \
		clients=4 session_add session_del || { tfd_log_tail 10; die "bench_ctl scale, 4 clients"; }
	echo "scale $(fds) $BIG" >>"$T/mem.txt"
	"$CTL" "$TF_SOCK" "$BIG" "$T/scale-del.json" prefix=ctl.scale session_del ||
		{ tfd_log_tail 10; die "bench_ctl scale del"; }
	tfd_stop
}

: >"$T/mem.txt"
run_config tc ctl ""
run_config guard ctl.guard ",\"guard\":{\"interfaces\":[\"d*\"]}"
run_rules 1000 rules1k
run_rules 10000 rules10k
scale=()
if [ "$BIG" -gt 0 ]; then
	run_scale
	scale=("$T"/scale-{add,churn,conc,del}.json)
elif [ "${4:-0}" -gt 0 ]; then
	echo "ctl: the scale run is skipped: the hard limit on open files holds $TOTAL sessions" >&2
fi

"$PY" - "$OUT" "$N" "$T/mem.txt" "${slot[*]}" "${4:-0}" "$TOTAL" "$T"/{tc,guard}-{add,churn,del}.json \
	"$T"/rules{1k,10k}.json ${scale[@]+"${scale[@]}"} <<'EOF' || die "cannot write $OUT"
import json, sys
out, n, memf = sys.argv[1], int(sys.argv[2]), sys.argv[3]
*parts, slot = sys.argv[4].split()
scale = {"asked": int(sys.argv[5]), "sessions": int(sys.argv[6]) if int(sys.argv[5]) else 0}
metrics = []
for f in sys.argv[7:]:
    metrics += json.load(open(f))["metrics"]
def mem(id, desc, value, unit="KiB", scale=1024):
    metrics.append({"id": id, "group": "memory", "desc": desc, "unit": unit, "value": value / scale})
for line in open(memf):
    if line.startswith("scale "):
        _, fds, big = line.split()
        metrics.append({"id": "mem.scale.fds", "group": "memory", "unit": "fds", "value": int(fds),
                        "desc": f"the daemon's fds with {big} sessions (guarded: no links of their own)"})
        continue
    name, mem0, mem1, fd0, fd1 = line.split()
    mem0, mem1, fd0, fd1 = int(mem0), int(mem1), int(fd0), int(fd1)
    if name == "tc":
        mem("mem.maps_fixed", "pinned maps before any session (bytes_memlock)", mem0)
        mem("mem.per_session_shared", f"growth of the pinned maps per session ({n} sessions, 11 rules each)", (mem1 - mem0) / n)
        mem("mem.per_session_slot_maps", "one session's own maps (inner maps: " + ", ".join(parts) + " bytes)",
            int(slot))
    mem(f"mem.{name}.fds_per_session", f"the daemon's fds per session ({name}: {fd0} before {n} sessions, {fd1} with them)",
        (fd1 - fd0) / n, unit="fds", scale=1)
# scale: the sessions the scale run was asked for, and had (fewer: the hard limit on open files).
json.dump({"tool": "ctl", "sessions": n, "scale": scale, "metrics": metrics}, open(out, "w"), indent=1)
EOF
