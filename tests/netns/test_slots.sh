#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Recycled slots (docs/performance.md#session-set-up): a deleted session's slot keeps its tables,
# emptied by the pool's thread after a grace period, and the next session gets it ready. Nothing
# of the old session may survive into the new one: a connection the old session allowed, still
# retransmitting into the device, must not pass under a new session on the same device, with the
# same addresses, the same slot and the same policy generation number, that does not allow it.
# Also: the pool's gauges in the metrics, and a session on a guarded device judged through the
# guard's programs with no links of its own (TF_SF_VIA_GUARD): judged, still judged when the
# guard's pins are removed (it holds the links; the pins come back), and cut at its delete.
# Last, a restart: a session whose state file cannot be read keeps enforcing its pinned policy,
# and a session restored into a fresh slot is never handed that slot (its device would enforce
# the newcomer's policy).
#
#   guest ga 10.10.1.2 ─ ha ─ host (router, tapfenced) ─ inet: 198.51.100.10 (tcp 7001, echo)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-slh-$TF_SFX guest=tf-slg-$TF_SFX inet=tf-sli-$TF_SFX
one_guest "$host" "$guest" "$inet"
OK=198.51.100.10
L_FP=$T/fp.log
flowpeer_start "$inet" "$L_FP" --tcp $OK:7001

bpffs_mount "$T/bpffs"
# limits.warm_slots 2: the pool is small, so the freed slot is the one handed out next.
tfd_config "$T/tf.json" '"limits":{"warm_slots":2}'
tfd_start "$host"

spec() { # FILE ID PORT
	session_spec "$1" "$2" ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 \
		10.10.1.1 fd00:a:1::1 "[{\"cidr\":\"$OK\",\"proto\":\"tcp\",\"ports\":[$3]}]"
}
spec "$T/a.json" a 7001
spec "$T/b.json" b 80
slot_of() { tfc --json session show "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["session"]["slot"])'; }
metric() { tfc metrics | awk -v m="$1" '$1 == m { print $2 }'; }
# cleared: no slot waits to be emptied, and at least one is ready.
cleared() { [ "$(metric tapfence_slots_dirty)" = 0 ] && [ "$(metric tapfence_slots_ready)" -ge 1 ]; }

# a_streams SPORT TAG: session a added (its slot in SLOT_A), a stream from the guest's SPORT to
# $OK:7001 (its rule) that keeps sending TAG, seen reaching the server.
a_streams() {
	sessions_add a
	SLOT_A=$(slot_of a)
	flowpeer_stream "$guest" "$T/st-$2.log" --tcp $OK:7001 --sport "$1" --tag "$2" --stop "$T/stop-$2"
	sleep 1
	tf_mark
	sleep 1
	expect_reached "$L_FP" "from 10.10.1.2:$1 msg $2" "session a: the stream reaches $OK:7001"
}

note "the pool"
check "metrics: the pool has slots ready (limits.warm_slots 2)" wait_for 5 \
	sh -c "[ \"\$($TF_BUILD/tapfence --socket $TF_SOCK metrics | awk '\$1 == \"tapfence_slots_ready\" { print \$2 }')\" = 2 ]"

note "a deleted session's flows do not outlive it in its recycled slot"
a_streams 42001 st
check "session del a" tfc session del a
check "the slot is emptied and ready again" wait_for 5 cleared
sessions_add b
check "session b has session a's slot ($SLOT_A)" test "$(slot_of b)" = "$SLOT_A"
check "... and the same policy generation (1)" tfjson check <(tfc --json session show b) \
	'd["session"]["policy_version"] == 1'
tf_mark
sleep 3
expect_not_reached "$L_FP" "from 10.10.1.2:42001 msg" \
	"session b (tcp 80 only): the old stream's retransmissions never reach $OK:7001"
expect_event session=b verdict=deny dst=$OK dport=7001 -- "... session b denies them"
check "session del b" tfc session del b

note "a slot's table pin swapped in bpffs is refused, never emptied as the slot's"
check "the slots are ready again" wait_for 5 cleared
a_streams 42003 sw
# Another slot's flow table pinned under a's name, and a's under the other's.
R=$(ls "$TF_PIN_DIR/slots" | sed -n 's/^tf_flows_\([0-9]*\)$/\1/p' | grep -vx "$SLOT_A" | head -1)
check "another slot ($R) has a flow table pinned" test -n "$R"
S=$TF_PIN_DIR/slots
# A's learnt-address table swapped for a moment: what reads it says it cannot, and shows nothing of R's.
setup mv "$S/tf_learned_$SLOT_A" "$S/swap"
setup mv "$S/tf_learned_$R" "$S/tf_learned_$SLOT_A"
check "session show a: learned is null, and why" tfjson check <(tfc --json session show a) \
	'd["session"]["learned"] is None and "Stale file handle" in d["session"]["learned_error"]'
check "top: session a's LEARNT is -" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' top --once --log '$TF_EVENTS' | awk '\$1 == \"a\" { print \$6 }' | grep -qx -- -"
setup mv "$S/tf_learned_$SLOT_A" "$S/tf_learned_$R"
setup mv "$S/swap" "$S/tf_learned_$SLOT_A"
setup mv "$S/tf_flows_$SLOT_A" "$S/swap"
setup mv "$S/tf_flows_$R" "$S/tf_flows_$SLOT_A"
setup mv "$S/swap" "$S/tf_flows_$R"
check "session del a" tfc session del a
check "the swapped pin is refused" wait_for 5 \
	grep -q "slot $SLOT_A: \`.*tf_flows_$SLOT_A' is not the table the slot was given" "$T/tapfenced.log"
check "and slot $SLOT_A deleted instead of emptied through it" \
	grep -q "slot $SLOT_A: cannot empty its tables" "$T/tapfenced.log"
sessions_add b
tf_mark
sleep 3
expect_not_reached "$L_FP" "from 10.10.1.2:42003 msg" \
	"session b (tcp 80 only, slot $(slot_of b)): a's stream never reaches $OK:7001"
check "session del b" tfc session del b

note "a session judged through the guard's programs"
tfd_stop
tfd_config "$T/tf.json" '"guard":{"interfaces":["ha"]}'
tfd_start "$host"
check "the guard holds ha" wait_for 5 sh -c "$TF_BUILD/tapfence --socket $TF_SOCK --json guard | grep -q '\"programs\": *true'"
sessions_add a
check "session a on ha: attach guard (no links of its own)" tfjson check \
	<(tfc --json session show a) 'd["session"]["attach"] == "guard" and d["session"]["first"] is True'
check "... no session link is pinned" test -z "$(ls "$TF_PIN_DIR/links")"
flowpeer_stream "$guest" "$T/st2.log" --tcp $OK:7001 --sport 42002 --tag g2 --stop "$T/stop2"
sleep 1
tf_mark
sleep 1
expect_reached "$L_FP" "from 10.10.1.2:42002 msg g2" "through the guard's programs: the stream reaches $OK:7001"
guest_probe "through the guard's programs: $OK:80 (no rule)" $OK blocked

note "the guard's pins removed under a session judged through them"
rm -f "$TF_PIN_DIR"/guard/*
guest_probe "pins gone: $OK:80 still blocked (the session holds the guard's links)" $OK blocked
tf_mark
sleep 1
expect_reached "$L_FP" "from 10.10.1.2:42002 msg g2" "pins gone: the stream still reaches $OK:7001"
check "the pins are back within 2 s" wait_for 2 sh -c "[ \$(ls '$TF_PIN_DIR/guard' | wc -l) -eq 2 ]"
check "session del a" tfc session del a
tf_mark
sleep 2
expect_not_reached "$L_FP" "from 10.10.1.2:42002 msg" "deleted: the stream is cut (the guard denies)"
expect_event verdict=deny reason=guard_unclaimed -- "... reported as guard_unclaimed"

note "a restart never hands a session the slot of a device still enforcing another's policy"
tfd_stop
# warm_slots 0: a fresh slot is the lowest free one, a's if nothing held it.
tfd_config "$T/tf.json" '"limits":{"warm_slots":0}'
tfd_start "$host"
setup ip -n "$host" tuntap add dev tc1 mode tap
setup ip -n "$host" link set tc1 up
session_spec "$T/c.json" c tc1 02:00:00:00:1c:02 10.10.3.2 fd00:a:3::2 02:00:00:00:1c:01 \
	10.10.3.1 fd00:a:3::1 "[{\"cidr\":\"$OK\",\"proto\":\"tcp\",\"ports\":[80]}]"
sessions_add a c
SLOT_A=$(slot_of a)
guest_probe "session a (tcp 7001 only): $OK:80" $OK blocked
# As after a crash: the daemon killed, its pins left; a's state file unreadable, c's naming no slot.
kill_pid "$TFD_PID"
TFD_PID=
echo '{' >"$T/state/sessions/a.json"
setup "$PY" -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["slot"] = 0; json.dump(d, open(p, "w"))' \
	"$T/state/sessions/c.json"
tfd_start "$host"
check "session c is restored" test -n "$(slot_of c)"
check "... into a fresh slot, not a's ($SLOT_A), which ha still enforces" \
	test "$(slot_of c)" != "$SLOT_A"
guest_probe "ha keeps a's pinned policy: $OK:80 (c's rule) still" $OK blocked
check "the log names slot $SLOT_A as kept" grep -q "keeps enforcing the pinned policy of slot $SLOT_A" \
	"$T/tapfenced.log"

tf_done
