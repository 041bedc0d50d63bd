#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that the operator cannot break tapfenced by accident: one daemon per state dir, pin dir and
# control socket; --cleanup refused while a daemon runs (--force for a wedged one); the daemon
# raises its file-descriptor limit for max_sessions or refuses to start, and an add that fails
# anywhere (fds running out at each step in turn) leaves nothing behind; session ids with a dot
# work; a bad user or socket_group is refused before anything is touched.
#
#   ns g (guest) ─ veth ga|ha ──┐  ns host (router, tapfenced)  ┌─ ns inet
#     10.10.1.2, session vm.1   ├──────────────────────────────┤  198.51.100.10:80 (allowed)
#   ns x (guest) ─ veth xa|hx ──┘  p1|q1 ... p39|q39 (veths,    │  203.0.113.10:80 (denied)
#     10.10.2.2, session x         both ends in host: sessions  │
#                                  that only count fds)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need capsh prlimit

host=tf-host-$TF_SFX g=tf-g-$TF_SFX x=tf-x-$TF_SFX inet=tf-inet-$TF_SFX
one_guest "$host" "$g" "$inet"
ns_add "$x"
guest_link "$x" xa 02:00:00:00:1b:02 10.10.2.2/24 fd00:a:2::2/64 "$host" hx 02:00:00:00:1b:01 10.10.2.1/24 fd00:a:2::1/64

# 40 sessions need 2 x 40 (their links) + 64 (max_clients) + 128 = 272 fds; the daemon starts under
# a soft limit of 256 (the old daemon broke at its 30th session). Raising the hard limit needs
# CAP_SYS_RESOURCE, which some sandboxes withhold even from root: that case is checked where it is
# held.
MAX=40 NEED=272
has_sys_resource=$(( (0x$(awk '/^CapEff/ { print $2 }' /proc/self/status) >> 24) & 1 ))
for ((i = 1; i < MAX; i++)); do
	veth_pair "$host" "p$i" "$host" "q$i" || die "cannot create veth p$i"
	ip -n "$host" link set "p$i" up
done
bpffs_mount "$T/bpffs"
# warm_slots 0: every add makes its slot's tables itself, so the fd shortage below hits each step.
tfd_config "$T/tf.json" '"limits":{"max_sessions":'$MAX',"warm_slots":0}'
TFD_WRAP=(prlimit --nofile=256:4096)
allow='[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
session_spec "$T/vm.1.json" vm.1 ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 fd00:a:1::1 "$allow"
session_spec "$T/x.json" x hx 02:00:00:00:1b:02 10.10.2.2 fd00:a:2::2 02:00:00:00:1b:01 10.10.2.1 fd00:a:2::1 "$allow"
"$PY" "$TF_NETNS_DIR/fd_budget_specs.py" "$T" "$MAX" || die "cannot write the fd-budget session specs"

probe_x() { probe_tcp "$1" "$L_INET" "$x" 10.10.2.2 "$2" 80 "$3"; }
# daemon LOG CONFIG [WRAP...]: a daemon in the host namespace in the foreground; its exit code if it
# exits within 5 s, 0 if it was still running then (it started: it is stopped by SIGTERM).
daemon() {
	local log=$1 cfg=$2 rc
	shift 2
	timeout 5 ip netns exec "$host" "$@" "$TF_BUILD/tapfenced" --config "$cfg" --foreground >"$log" 2>&1
	rc=$?
	[ "$rc" = 124 ] && return 0
	return "$rc"
}
restart() {
	kill -TERM "$TFD_PID"
	wait "$TFD_PID" 2>/dev/null
	TFD_PID=
	tfd_start "$host"
}
nentries() { bpftool map dump pinned "$TF_PIN_DIR/maps/$1" -j | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# limit_free K: set the daemon's soft fd limit to its (K+1)th free fd number: K fds can be opened.
limit_free() {
	local lim
	lim=$(find "/proc/$TFD_PID/fd" -mindepth 1 -printf '%f\n' | "$PY" -c '
import sys
used, k = {int(l) for l in sys.stdin}, int(sys.argv[1])
free = [n for n in range(max(used) + k + 2) if n not in used]
print(free[k])' "$1")
	prlimit --pid "$TFD_PID" --nofile="$lim:$hard"
}
# Everything a session add writes, for the failure-injection phase.
# pool_idle: no slot waits to be emptied, none is kept ready.
pool_idle() {
	tfc metrics 2>/dev/null | awk '$1 == "tapfence_slots_dirty" || $1 == "tapfence_slots_ready" { n += $2; k++ }
		END { exit !(k == 2 && n == 0) }'
}

footprint() {
	local m
	# A failed add's slot is emptied and its tables given back by the pool's thread (warm_slots 0).
	wait_for 10 pool_idle || echo "pool-busy "
	for m in tf_sessions tf_addrs tf_rules tf_ports tf_names tf_flows tf_dnsq tf_learned tf_tlsbuf tf_tlsbind; do
		printf '%s=%s ' "$m" "$(nentries "$m")"
	done
	ls "$TF_PIN_DIR/links" "$TF_PIN_DIR/slots" "$T/state/sessions" | tr '\n' ' '
}

note "a bad user or socket_group is refused before anything is touched"
tfd_config "$T/baduser.json" '"user":"nosuch'"$TF_SFX"'"'
check_not "start with user nosuch$TF_SFX refused" daemon "$T/baduser.log" "$T/baduser.json"
check "the error names the field and value" grep -q "config user: \`nosuch$TF_SFX': no such user" "$T/baduser.log"
check "no pin dir was made" test ! -e "$TF_PIN_DIR"
check "no state dir was made" test ! -e "$T/state"
tfd_config "$T/badgroup.json" '"socket_group":"nosuch'"$TF_SFX"'"'
check_not "start with socket_group nosuch$TF_SFX refused" daemon "$T/badgroup.log" "$T/badgroup.json"
check "the error names the field and value" grep -q "config socket_group: \`nosuch$TF_SFX': no such group" "$T/badgroup.log"
check "no pin dir was made" test ! -e "$TF_PIN_DIR"
check "no control socket was made" test ! -e "$TF_SOCK"
# warm_slots 0: every add makes its slot's tables itself, so the fd shortage below hits each step.
tfd_config "$T/tf.json" '"limits":{"max_sessions":'$MAX',"warm_slots":0}'

note "a session id with a dot, under a soft limit of 256 fds"
tfd_start "$host"
check "session vm.1 added" tfc session add "$T/vm.1.json"
check "its links are pinned as vm,1-in and vm,1-out (bpffs refuses dots)" \
	test -e "$(link_pin vm,1 in)" -a -e "$(link_pin vm,1 out)"
check "its state file is vm.1.json" test -e "$T/state/sessions/vm.1.json"
guest_probe "vm.1 -> 198.51.100.10:80 (its rule)" 198.51.100.10 reached
guest_probe "vm.1 -> 203.0.113.10:80 (no rule)" 203.0.113.10 blocked

note "a second daemon"
sock_ino=$(stat -c %i "$TF_SOCK")
check_not "a second daemon with the same config is refused" daemon "$T/second.log" "$TFD_CONFIG"
check "its error names the first daemon's pid" grep -q "state_dir .* in use by another tapfenced (pid $TFD_PID" "$T/second.log"
check "it re-adopted nothing" test "$(grep -c 'session vm.1' "$T/second.log")" = 0
check "the first daemon's socket is the same file" test "$(stat -c %i "$TF_SOCK" 2>/dev/null)" = "$sock_ino"
check "the first daemon still answers, with vm.1" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' session list | grep -q '^vm.1 '"
sed "s|\"control_socket\":\"[^\"]*\"|\"control_socket\":\"$T/other.sock\"|" "$TFD_CONFIG" >"$T/other.json"
check_not "a second daemon on its own socket over the same pins is refused" daemon "$T/other.log" "$T/other.json"
check "its error names the first daemon's pid" grep -q "in use by another tapfenced (pid $TFD_PID" "$T/other.log"
check "it made no socket" test ! -e "$T/other.sock"
mkdir -p "$T/bpffs/elsewhere"
sed -e "s|\"pin_dir\":\"[^\"]*\"|\"pin_dir\":\"$T/bpffs/elsewhere/tf\"|" \
	-e "s|\"state_dir\":\"[^\"]*\"|\"state_dir\":\"$T/state2\"|" "$TFD_CONFIG" >"$T/samesock.json"
check_not "a second daemon on other dirs but the same socket is refused" daemon "$T/samesock.log" "$T/samesock.json"
check "its error names the socket and the first daemon's pid" \
	grep -q "control_socket .* in use by another tapfenced (pid $TFD_PID" "$T/samesock.log"
check "the first daemon's socket is still the same file" test "$(stat -c %i "$TF_SOCK" 2>/dev/null)" = "$sock_ino"
guest_probe "after all that: vm.1 -> 203.0.113.10:80" 203.0.113.10 blocked
check "the state lock file holds the daemon's pid" test "$(cat "$T/state/tapfenced.lock")" = "$TFD_PID"
cloexec=1
for fd in /proc/"$TFD_PID"/fd/*; do
	case $(readlink "$fd") in
	*tapfenced.lock | *control.sock.lock | "$TF_PIN_DIR")
		flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$TFD_PID/fdinfo/${fd##*/}")
		[ $((8#$flags & 8#2000000)) -ne 0 ] || cloexec=0 ;;
	esac
done
check "its three lock fds are close-on-exec" test "$cloexec" = 1

note "--cleanup while the daemon runs"
check_not "tapfenced --cleanup is refused" sh -c "ip netns exec '$host' '$TF_BUILD/tapfenced' --config '$TFD_CONFIG' --cleanup >'$T/cleanup.log' 2>&1"
check "its error names the daemon's pid and --force" grep -q "running tapfenced (pid $TFD_PID.*--force" "$T/cleanup.log"
check "vm.1's links are still pinned" test -e "$(link_pin vm,1 in)"
check "vm.1's state file is still there" test -e "$T/state/sessions/vm.1.json"
guest_probe "vm.1 -> 203.0.113.10:80 still" 203.0.113.10 blocked
check_not "--force without --cleanup is a usage error" ip netns exec "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --force

note "an add that cannot be saved"
before=$(footprint)
# The save needs fewer fds than the steps before it (below): a sessions dir the daemon cannot
# write (it keeps no CAP_DAC_OVERRIDE) fails it.
chmod 0500 "$T/state/sessions"
check_not "an add that cannot be saved fails" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' session add '$T/x.json' >'$T/add.out' 2>&1"
chmod 0700 "$T/state/sessions"
check "it says so" grep -q "cannot save the session" "$T/add.out"
check "and is undone, leaving nothing" test "$(footprint)" = "$before"
check "x's device passes what no rule allows, as before" tcp_get "$x" 203.0.113.10 80

note "fds run out during an add, at each step in turn"
high=$(awk '/^Max open files/ { print $4 }' "/proc/$TFD_PID/limits")
hard=$(awk '/^Max open files/ { print $5 }' "/proc/$TFD_PID/limits")
check "the daemon raised its soft limit to $NEED" test "$high" = "$NEED"
failed=0 added=0 errs=$T/add-errors
: >"$errs"
for ((k = 1; k <= 16 && !added; k++)); do
	limit_free "$k"
	if tfc session add "$T/x.json" >"$T/add.out" 2>&1; then
		added=1
	else
		failed=$((failed + 1))
		cat "$T/add.out" >>"$errs"
		prlimit --pid "$TFD_PID" --nofile=$high:$hard
		now=$(footprint)
		[ "$now" = "$before" ] || fail "with $k free fds: the failed add left $now (before: $before)"
		# Nothing attached is left either: x's device passes what no rule allows, as before.
		tcp_get "$x" 203.0.113.10 80 || fail "with $k free fds: x's device still filters after the failed add"
	fi
done
prlimit --pid "$TFD_PID" --nofile=$high:$hard
note "$failed adds failed before one fit; their errors:"
sort "$errs" | uniq -c | sed 's/^/#   /'
check "adds failed at several steps, each leaving nothing" test "$failed" -ge 3 -a "$(sort -u "$errs" | wc -l)" -ge 3
check "one failed writing the session's maps (its slot's tables)" grep -q "cannot write session maps" "$errs"
check "an fd shortage is not blamed on a missing interface" sh -c "! grep -q 'no such interface' '$errs'"
check "then the add fits" test "$added" = 1
probe_x "x -> 198.51.100.10:80 (its rule)" 198.51.100.10 reached
probe_x "x -> 203.0.113.10:80 (no rule)" 203.0.113.10 blocked
limit_free 0
version_nofd() { timeout 5 "$TF_BUILD/tapfence" --socket "$TF_SOCK" version >"$T/nofd.out" 2>&1; }
check_not "with no fd free, a client is refused at once" version_nofd
check "told why, not left waiting" grep -q "out of file descriptors" "$T/nofd.out"
prlimit --pid "$TFD_PID" --nofile=$high:$hard
check "and served again once fds are free" tfc version
cp "$T/state/sessions/x.json" "$T/x.saved"
limit_free 1
check_not "a rule change that cannot be saved is refused" tfc rule add x '{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}'
prlimit --pid "$TFD_PID" --nofile=$high:$hard
probe_x "so x -> 203.0.113.10:80 stays denied" 203.0.113.10 blocked
check "and x's state file is as it was" cmp -s "$T/x.saved" "$T/state/sessions/x.json"
check "session x deleted" tfc session del x

note "max_sessions sessions, started under a soft limit of 256 fds"
nfds() { find "/proc/$TFD_PID/fd" -mindepth 1 | wc -l; }
wait_for 10 pool_idle
fds0=$(nfds)
ok=0
for ((i = 1; i < MAX; i++)); do
	tfc session add "$T/p$i.json" >/dev/null 2>"$T/padd.err" && ok=$((ok + 1))
done
check "all $((MAX - 1)) more sessions added ($ok)" test "$ok" = $((MAX - 1))
check "$MAX state files" test "$(find "$T/state/sessions" -name '*.json' | wc -l)" = "$MAX"
check "$((2 * MAX)) pinned links" test "$(find "$TF_PIN_DIR/links" -mindepth 1 | wc -l)" = $((2 * MAX))
check "$((5 * MAX)) pinned slot tables" test "$(find "$TF_PIN_DIR/slots" -mindepth 1 | wc -l)" = $((5 * MAX))
wait_for 10 pool_idle
fds1=$(nfds)
check "the daemon holds 2 fds a session, its links ($fds0 before $((MAX - 1)) adds, $fds1 after)" \
	test $((fds1 - fds0)) = $((2 * (MAX - 1)))
check_not "one more is refused by max_sessions" tfc session add "$T/x.json"
restart
check "the restart re-adopted all $MAX" test "$(tfc session list | grep -cE '^(vm\.1|p[0-9]+) ')" = "$MAX"
check "and complained about none" sh -c "! grep -q 'cannot restore' '$T/tapfenced.log'"
check "and pinned their $((5 * MAX)) tables again" test "$(find "$TF_PIN_DIR/slots" -mindepth 1 | wc -l)" = $((5 * MAX))
guest_probe "after the restart: vm.1 -> 198.51.100.10:80" 198.51.100.10 reached
guest_probe "after the restart: vm.1 -> 203.0.113.10:80" 203.0.113.10 blocked

note "a bad user with saved sessions: refused before re-adopting them"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
sed 's|"limits"|"user":"nosuch'"$TF_SFX"'","limits"|' "$TFD_CONFIG" >"$T/baduser2.json"
check_not "start refused" daemon "$T/baduser2.log" "$T/baduser2.json"
check "before any session was re-adopted" sh -c "! grep -q 'session vm.1' '$T/baduser2.log'"
guest_probe "vm.1 -> 203.0.113.10:80 (the pins keep enforcing)" 203.0.113.10 blocked

note "a limit that cannot be raised"
check_not "under 256:256 without CAP_SYS_RESOURCE the start is refused" daemon "$T/nores.log" "$TFD_CONFIG" \
	prlimit --nofile=256:256 capsh --drop=cap_sys_resource -- -c 'exec "$0" "$@"'
check "the error says what to set" grep -q "limits.max_sessions $MAX needs $NEED .*LimitNOFILE=$NEED.*ulimit -n $NEED" "$T/nores.log"
check "before any session was re-adopted" sh -c "! grep -q 'session vm.1' '$T/nores.log'"
if [ "$has_sys_resource" = 1 ]; then
	TFD_WRAP=(prlimit --nofile=256:256)
	tfd_start "$host"
	check "under 256:256 with CAP_SYS_RESOURCE both limits are raised to $NEED" \
		test "$(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$TFD_PID/limits")" = "$NEED:$NEED"
else
	note "no CAP_SYS_RESOURCE here, not even for root: raising the hard limit is not exercised"
	tfd_start "$host"
fi
check "all $MAX sessions are re-adopted" test "$(tfc session list | grep -cE '^(vm\.1|p[0-9]+) ')" = "$MAX"

note "--cleanup --force, for a wedged daemon"
kill -STOP "$TFD_PID"
check "--cleanup --force removes the enforcement anyway" \
	ip netns exec "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --cleanup --force
# The stopped daemon still holds vm.1's links: they pass only if --cleanup detached them.
guest_probe "vm.1 -> 203.0.113.10:80 (no rule) passes: its links detached, not only unpinned" \
	203.0.113.10 reached
kill -CONT "$TFD_PID"
check "the pins are gone" test ! -e "$(link_pin vm,1 in)"
check "the slot tables' pins too" test ! -e "$TF_PIN_DIR/slots"
check "the state files are gone" test ! -e "$T/state/sessions/vm.1.json"

tf_done
