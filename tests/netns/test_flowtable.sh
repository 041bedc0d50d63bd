#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that a small flow table (limits.flows_per_session 64) keeps an idle TCP connection while the
# guest opens and closes hundreds of others, and that flows it does evict are counted and reported.
#
#  ┌──────────────────────────────────────┐
#  │ $g (guest)  gf 10.20.2.2/24          │  flowpeer.py: one idle stream (a line every 6 s),
#  └──────────────────┬───────────────────┘  churns of short TCP connections and UDP flows
#                     │ veth
#  ┌──────────────────┴───────────────────┐
#  │ $host (router; tapfenced attaches to │
#  │ hf 10.20.2.1/24), routes 203.0.113.20│
#  └──────────────────┬───────────────────┘
#                     │ veth
#  ┌──────────────────┴───────────────────┐
#  │ $inet ii, 203.0.113.20 on lo         │  flowpeer.py serve: TCP 7001, UDP 7000 (echo)
#  └──────────────────────────────────────┘
#
# A connection's flow is removed at its last ACK (the second FIN's), whichever end closed first,
# so 150 closed by the guest and 150 by the server leave the table to the idle connection: its
# next line is echoed; three half-closed connections read a 4 MB answer whole before theirs go.
# Without the removal (closed flows kept timeouts.tcp_fin_s, 120 s), either half alone fills
# the table and pushes the idle flow out. Then 300 UDP flows at once overflow it: the
# evictions show in `session show', the metrics, the daemon's log and a "flows" line of the
# sealed log. A restart tells none of them again; what the session evicts while the daemon is
# down is told at its next start, with the size its table keeps whatever the new config says;
# a session whose flow table is gone when it is re-adopted gets a new one and counts from zero.
# TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode. TF_KEEP=1 keeps $T.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX g=tf-g-$TF_SFX inet=tf-inet-$TF_SFX

G_MAC=02:00:00:00:0e:02 GW_MAC=02:00:00:00:0e:01 G4=10.20.2.2 DST=203.0.113.20
FP=$TF_NETNS_DIR/flowpeer.py

setup ns_add "$host" "$g" "$inet"
setup ns_router "$host"
setup guest_link "$g" gf $G_MAC $G4/24 fd00:b:2::2/64 "$host" hf $GW_MAC 10.20.2.1/24 fd00:b:2::1/64
setup inet_link "$host" "$inet" 97 10.20.0.0/16 fd00:b::/32 $DST/32 -- $DST

L=$T/inet.log
setup flowpeer_start "$inet" "$L" --tcp $DST:7001 --udp $DST:7000

mode=${TF_ATTACH_MODE:+\"attach_mode\":\"$TF_ATTACH_MODE\",}
setup tfd_config "$T/tf.json" "$mode\"limits\":{\"flows_per_session\":64},\"metrics\":{\"per_session\":true}"
setup bpffs_mount "$T/bpffs"
tfd_start "$host"
setup session_spec "$T/f.json" f hf $G_MAC $G4 fd00:b:2::2 $GW_MAC 10.20.2.1 fd00:b:2::1 \
	'[{"cidr":"203.0.113.20/32","proto":"tcp","ports":[7001]},{"cidr":"203.0.113.20/32","proto":"udp","ports":[7000]}]'
check "session add f" tfc session add "$T/f.json"

# flows FIELD: session f's flow table's FIELD (entries, opened, removed, evicted, capacity).
flows() {
	tfc --json session show f | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["session"]["flows"][sys.argv[1]])' "$1"
}
# churn ARGS...: flowpeer.py churn in the guest; 0 iff every flow worked.
churn() { n "$g" timeout 60 "$PY" "$FP" churn "$@" >"$T/churn.out" 2>&1; }

note "an idle connection outlives 300 closed ones in a table of 64"
setup flowpeer_stream "$g" "$T/idle.log" --tcp $DST:7001 --sport 42000 --tag idle --interval 6 --stop "$T/stop"
check "the flow table holds 64" test "$(flows capacity)" = 64
expect_reached "$L" "from $G4:42000 msg idle 1" "the idle connection's first line reaches the server"
check "150 connections the guest closes first" churn --tcp $DST:7001 --count 150
check "150 connections the server closes first" churn --tcp $DST:7001 --count 150 --server-close
opened=$(flows opened) removed=$(flows removed)
check "301 flows opened ($opened)" test "$opened" -ge 301
check "each closed connection's flow removed at its last ACK ($removed)" test "$removed" -ge 300
check "nothing evicted ($(flows evicted))" test "$(flows evicted)" = 0
entries=$(flows entries)
check "the idle connection's entry and few others left ($entries)" test "$entries" -ge 1 -a "$entries" -le 8
tf_mark
check "the idle connection's next line reaches the server" \
	wait_for 8 grep_since "$L" "from $G4:42000 msg idle 2"
check "... and its echo comes back" wait_for 2 grep_since "$T/idle.log" "echo 2"
expect_no_event session=f verdict=deny proto=tcp -- "no TCP segment of the churn or the idle connection is denied"

note "a half-closed connection gets its whole answer, then leaves the table"
# The guest's FIN goes first; 4 MB follow it (GSO and GRO on the veths), then the server's FIN
# and the guest's last ACK. A removal before that last ACK would cut the answer short.
removed0=$(flows removed)
check "3 connections half-closed at once each read a 4 MB answer whole" \
	churn --tcp $DST:7001 --count 3 --bulk 4000000 --timeout 10
removed_3() { [ $(($(flows removed) - removed0)) -eq 3 ]; }
check "... and each is removed at its last ACK" wait_for 2 removed_3
expect_no_event session=f verdict=deny proto=tcp -- "no segment of them is denied"

note "300 UDP flows at once overflow it: the evictions are reported"
tf_mark
check "300 UDP flows, each answered" churn --udp $DST:7000 --count 300
ev=$(flows evicted)
check "session show: at least 237 flows evicted ($ev)" test "$ev" -ge 237
check "session show: at most 64 entries ($(flows entries))" test "$(flows entries)" -le 64
check "the daemon's log says so" wait_for 8 grep -q "session f: its flow table is full" "$T/tapfenced.log"
check "the sealed log has a flows line for f" \
	wait_for 3 grep -q '"kind":"flows","session":"f","evicted":' "$TF_EVENTS"
check "metrics: tapfence_flows_evicted_total" \
	bash -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' metrics | grep -qE '^tapfence_flows_evicted_total [1-9]'"
check "metrics: tapfence_session_flows_evicted_total for f" \
	bash -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' metrics | grep -qE '^tapfence_session_flows_evicted_total\{session=\"f\"\} [1-9]'"
: >"$T/stop"

note "a restart does not tell the same evictions again, and tells new ones"
# told, lines: the daemon's log lines and the sealed log's flows lines about f so far.
told() { grep -c "session f: its flow table is full" "$T/tapfenced.log"; }
lines() { grep -c '"kind":"flows","session":"f"' "$TF_EVENTS"; }
told_more() { [ "$(told)" -gt "$t0" ]; }
lines_more() { [ "$(lines)" -gt "$l0" ]; }
same_evicted() { [ "$(flows evicted 2>/dev/null)" = "$ev" ]; }
ev=$(flows evicted)
# A look during the churn told part of it: wait for the one that told it all.
told_all() { grep -q "\"kind\":\"flows\",\"session\":\"f\",\"evicted\":$ev," "$TF_EVENTS"; }
check "a flows line tells all $ev" wait_for 8 told_all
t0=$(told) l0=$(lines)
kill_pid "$TFD_PID"
TFD_PID=
TFD_KEEP_LOG=1 tfd_start "$host"
check "session f restored with its counts ($ev evicted)" wait_for 5 same_evicted
# A look is asked at the first tick and told at the next: 7 s hold one whole look period.
sleep 7
check "the first look after the restart tells nothing ($(told) lines, $t0 before)" test "$(told)" = "$t0"
check "... and writes no flows line" test "$(lines)" = "$l0"
check "300 more UDP flows" churn --udp $DST:7000 --count 300
check "those evictions are told" wait_for 8 told_more
check "... in a new flows line" wait_for 3 lines_more

note "what a session evicts while the daemon is down is told at its next start"
ev=$(flows evicted)
check "a flows line tells all $ev" wait_for 8 told_all
t0=$(told) l0=$(lines)
kill_pid "$TFD_PID"
TFD_PID=
check "300 UDP flows while the daemon is down (the pinned programs judge them)" \
	churn --udp $DST:7000 --count 300
# The next start asks for tables of 128: the restored session keeps its table, and its size.
setup tfd_config "$T/tf.json" "$mode\"limits\":{\"flows_per_session\":128},\"metrics\":{\"per_session\":true}"
TFD_KEEP_LOG=1 tfd_start "$host"
grown() { [ "$(flows evicted 2>/dev/null)" -gt "$ev" ] 2>/dev/null; }
check "session f restored, more evicted than $ev" wait_for 5 grown
check "its table keeps its 64 entries (the new config says 128)" test "$(flows capacity)" = 64
check "the first look after the start tells them" wait_for 8 told_more
check "... as a table of 64" grep -q "session f: its flow table is full (64 entries" "$T/tapfenced.log"
check "... in a flows line" wait_for 3 lines_more
check "... whose capacity is 64" \
	grep -q '"kind":"flows","session":"f","evicted":[0-9]*,"capacity":64,' "$TF_EVENTS"

note "a re-adopted session whose flow table is gone counts from zero"
# sid: session f's slot, from the pinned session map (its BTF names the field).
sid=$(bpftool -j map dump pinned "$TF_PIN_DIR/maps/tf_sessions" | "$PY" -c '
import json, sys
print([e["formatted"]["value"]["sid"] for e in json.load(sys.stdin)][0])')
t0=$(told) l0=$(lines)
kill_pid "$TFD_PID"
TFD_PID=
check "its flow table taken out of the outer map (slot $sid)" \
	bpftool map delete pinned "$TF_PIN_DIR/maps/tf_flows" key $((sid & 255)) $((sid >> 8)) 0 0
TFD_KEEP_LOG=1 tfd_start "$host"
restored() { [ "$(flows evicted 2>/dev/null)" = 0 ]; }
check "session f restored with a new table: nothing evicted from it" wait_for 5 restored
check "... a table of 128, the config's" test "$(flows capacity)" = 128
check "10 UDP flows through it" churn --udp $DST:7000 --count 10
sleep 7
check "no eviction told: the old table's flows are not taken for evicted ones" test "$(told)" = "$t0"
check "... and no flows line" test "$(lines)" = "$l0"
check "300 UDP flows overflow the new table" churn --udp $DST:7000 --count 300
check "... and its evictions are told, counted from zero" wait_for 8 told_more
check "... in a flows line" wait_for 3 lines_more

check "tapfenced still runs" kill -0 "$TFD_PID"
tf_done
