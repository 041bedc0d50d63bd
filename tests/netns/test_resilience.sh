#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that enforcement outlives a killed daemon, that the control plane and pins refuse a local
# non-root user, that the daemon runs with only its documented capabilities, and that one session
# flooding the datapath changes nothing for another.
#
#   ns ga (guest A) ─ veth ga|ha ─┐                        ┌─ ns inet (fake internet)
#     10.10.1.2, host rules only  │  ns host (router)      │  198.51.100.10:80, :9000 (echo)
#                                 ├─ tapfenced, dnsmasq  ──┤  198.51.100.11:80
#   ns gb (guest B) ─ veth gb|hb ─┘  on 10.10.1.1:53       │  203.0.113.10:80, :9000 (echo)
#     10.10.2.2, a CIDR rule                               │  192.0.2.1:7 (udp)
#
# Phases: set-up checks (capabilities, a non-root user refused everywhere); kill -9 while A holds
# an established connection: denied stays denied, allowed and established keep working, a name
# resolved during the outage still opens its address (the learning is in the kernel); restart:
# the outage's events are drained into the feed; A floods denied packets and new flows while B
# is judged, counted and logged exactly as before.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need dnsmasq dig

host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX gb=tf-gb-$TF_SFX gc=tf-gc-$TF_SFX gd=tf-gd-$TF_SFX inet=tf-inet-$TF_SFX
ns_add "$host" "$ga" "$gb" "$gc" "$gd" "$inet"
ns_router "$host"
guest_link "$ga" ga 02:00:00:00:1a:02 10.10.1.2/24 fd00:a:1::2/64 "$host" ha 02:00:00:00:1a:01 10.10.1.1/24 fd00:a:1::1/64
guest_link "$gb" gb 02:00:00:00:1b:02 10.10.2.2/24 fd00:a:2::2/64 "$host" hb 02:00:00:00:1b:01 10.10.2.1/24 fd00:a:2::1/64
guest_link "$gc" gc 02:00:00:00:1c:02 10.10.3.2/24 fd00:a:3::2/64 "$host" hc 02:00:00:00:1c:01 10.10.3.1/24 fd00:a:3::1/64
guest_link "$gd" gd 02:00:00:00:1d:02 10.10.4.2/24 fd00:a:4::2/64 "$host" hd 02:00:00:00:1d:01 10.10.4.1/24 fd00:a:4::1/64
inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 198.51.100.0/24 203.0.113.0/24 192.0.2.0/24 -- \
	198.51.100.10 198.51.100.11 203.0.113.10 192.0.2.1 || die "cannot build the fake internet"

# The session's resolver: no upstream, no hosts file, bound to A's gateway address only.
DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$host" "$DNS_LOG" "10.10.1.1" --local=/example.com/ \
	--host-record=web.example.com,198.51.100.10,300 \
	--host-record=web2.example.com,198.51.100.11,300 \
	--host-record=denied.example.com,203.0.113.10,300

L_INET=$T/inet.log L_ECHO=$T/echo.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:198.51.100.11:80 tcp:203.0.113.10:80 udp:192.0.2.1:7
: >"$L_ECHO"
ip netns exec "$inet" "$PY" "$TF_NETNS_DIR/dnsprobe.py" echo-serve --log "$L_ECHO" --ready "$T/echo.ready" \
	--tcp 198.51.100.10:9000 --tcp 203.0.113.10:9000 >>"$T/listeners.out" 2>&1 &
defer kill_pid "$!"
wait_for 5 test -e "$T/echo.ready" || die "echo server did not start"

bpffs_mount "$T/bpffs"
# Small flow tables, so a flood really fills A's; a small rule table, so re-adopting a large
# session after a restart (old and new generation side by side) runs out of room.
# The control socket's group, and a user who is in it only as a supplementary group.
group=tfg$TF_SFX member=tfm$TF_SFX
groupadd -r "$group" || die "cannot create group $group"
defer groupdel "$group"
useradd -M -N -r -s /usr/sbin/nologin -G "$group" "$member" || die "cannot create user $member"
defer userdel "$member"
tfd_config "$T/tf.json" '"socket_group":"'"$group"'","limits":{"flows_per_session":256,"rule_entries":1024}'
session_spec "$T/a.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 fd00:a:1::1 \
	'[{"host":"web.example.com","proto":"tcp","ports":[80,9000]},{"host":"web2.example.com","proto":"tcp","ports":[80]},
	  {"cidr":"192.0.2.0/24","proto":"udp"}]'
session_spec "$T/b.json" b hb 02:00:00:00:1b:02 10.10.2.2 fd00:a:2::2 02:00:00:00:1b:01 10.10.2.1 fd00:a:2::1 \
	'[{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80,9000]}]'

# ns_probe DESC NS HOST PORT reached|blocked: probe_tcp from guest NS (its address known here)
ns_probe() {
	local src
	case $2 in
	"$ga") src=10.10.1.2 ;; "$gb") src=10.10.2.2 ;; "$gc") src=10.10.3.2 ;; *) src=10.10.4.2 ;;
	esac
	probe_tcp "$1" "$L_INET" "$2" "$src" "$3" "$4" "$5"
}

# resolve DESC NAME ADDR: guest A asks its resolver for NAME and gets ADDR.
resolve() {
	n "$ga" timeout 10 dig @10.10.1.1 +time=2 +tries=1 +short "$2" A >"$T/dig.out" 2>&1
	check "$1" grep -qxF "$3" "$T/dig.out"
}

note "baseline: nothing enforces yet"
ns_probe "baseline: A -> 203.0.113.10:80" "$ga" 203.0.113.10 80 reached
resolve "baseline: A resolves denied.example.com" denied.example.com 203.0.113.10

note "set-up"
tfd_start "$host"
check "session a added" tfc session add "$T/a.json"
check "session b added" tfc session add "$T/b.json"

# CAP_NET_ADMIN (12), CAP_PERFMON (38), CAP_BPF (39): nothing else, in any set.
# Every thread's: capabilities are a thread's own, and one started before the drop would keep them.
caps_want=000000c000001000
ntasks=$(find "/proc/$TFD_PID/task" -mindepth 1 -maxdepth 1 | wc -l)
check "tapfenced runs its threads: main loop, slot pool, event log tree, feed sender ($ntasks)" test "$ntasks" -eq 4
for set in CapEff CapPrm CapBnd; do
	got=$(awk -v k="$set:" '$1 == k { print $2 }' /proc/"$TFD_PID"/task/*/status | sort -u | tr '\n' ' ')
	check "every tapfenced thread's $set is only cap_net_admin, cap_perfmon, cap_bpf ($got)" \
		test "$got" = "$caps_want "
done
check "tapfenced's CapInh is empty" test "$(awk '$1 == "CapInh:" { print $2 }' "/proc/$TFD_PID/status")" = 0000000000000000
check "tapfenced has no_new_privs" grep -qE '^NoNewPrivs:[[:space:]]+1$' "/proc/$TFD_PID/status"

note "a local non-root user"
user=tfu$TF_SFX
useradd -M -N -r -s /usr/sbin/nologin "$user" || die "cannot create user $user"
defer userdel "$user"
as_user() { runuser -u "$user" -- "$@" >"$T/user.out" 2>&1; }
check_not "non-root: the CLI cannot connect to the 0660 socket" as_user "$TF_BUILD/tapfence" --socket "$TF_SOCK" session list
check "non-root: ... because the socket refuses it" grep -q "Permission denied" "$T/user.out"
check_not "non-root: cannot list the pin dir" as_user ls "$TF_PIN_DIR"
check_not "non-root: cannot open a pinned map" as_user cat "$TF_PIN_DIR/maps/tf_sessions"
check_not "non-root: cannot read the saved sessions" as_user cat "$T/state/sessions/a.json"
check "pin dir is 0700" test "$(stat -c %a "$TF_PIN_DIR")" = 700
check "state dir is 0700" test "$(stat -c %a "$T/state/sessions")" = 700
check "the socket's group is socket_group" test "$(stat -c %G "$TF_SOCK")" = "$group"
runuser -u "$member" -- "$TF_BUILD/tapfence" --socket "$TF_SOCK" session list >"$T/member.out" 2>&1
check "a member of socket_group (a supplementary group) is served" grep -q "^a " "$T/member.out"
# Past the file mode, SO_PEERCRED still says no.
chmod 0666 "$TF_SOCK"
tf_mark
check_not "non-root on a 0666 socket: refused" as_user "$TF_BUILD/tapfence" --socket "$TF_SOCK" session list
check "non-root on a 0666 socket: the error names the uid" grep -q "permission denied: uid $(id -u "$user") " "$T/user.out"
expect_event kind=control reason=peer_refused uid="$(id -u "$user")" -- "non-root: a peer_refused line in the feed"
chmod 0660 "$TF_SOCK"

note "kill -9 with traffic in both sessions"
resolve "A resolves web.example.com" web.example.com 198.51.100.10
rm -f "$T/go"
ip netns exec "$ga" "$PY" "$TF_NETNS_DIR/dnsprobe.py" echo-client 198.51.100.10 9000 --go "$T/go" \
	--timeout "$TF_CONNECT_TIMEOUT" --wait 60 >"$T/echo.out" 2>&1 &
ECHO_PID=$!
defer kill_pid "$ECHO_PID"
check "A's long-lived connection is up (first echo)" wait_for 5 grep -q "echo 1 ok" "$T/echo.out"
ns_probe "B -> 203.0.113.10:80 (B's rule)" "$gb" 203.0.113.10 80 reached

kill -KILL "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
killed_pid=$TFD_PID
TFD_PID=
check "tapfenced is gone" test ! -d "/proc/$killed_pid"
check "its links stay pinned" test -n "$(ls "$TF_PIN_DIR/links" 2>/dev/null)"
ns_probe "outage: A -> 203.0.113.10:80 (no rule)" "$ga" 203.0.113.10 80 blocked
ns_probe "outage: B -> 198.51.100.10:80 (no rule for B)" "$gb" 198.51.100.10 80 blocked
ns_probe "outage: A -> 198.51.100.10:80 (learnt before)" "$ga" 198.51.100.10 80 reached
ns_probe "outage: B -> 203.0.113.10:80 (B's rule)" "$gb" 203.0.113.10 80 reached
ns_probe "outage: A -> 198.51.100.11:80 before asking for it" "$ga" 198.51.100.11 80 blocked
resolve "outage: A resolves web2.example.com (the kernel checks and learns)" web2.example.com 198.51.100.11
ns_probe "outage: A -> 198.51.100.11:80 by name" "$ga" 198.51.100.11 80 reached
tf_mark
n "$ga" timeout 10 dig @10.10.1.1 +time=2 +tries=1 +short denied.example.com A >/dev/null 2>&1
expect_not_reached "$DNS_LOG" "query[A] denied.example.com" "outage: A's query for denied.example.com never reaches the resolver"
touch "$T/go"
check "outage: A's established connection still echoes" wait_for 5 grep -q "echo 2 ok" "$T/echo.out"

note "restart: the outage's events are drained into the feed"
tfd_start "$host"
tf_unmark "$TF_EVENTS"
expect_event session=a verdict=deny reason=no_rule dst=203.0.113.10 dport=80 -- "restart: the outage's A -> 203.0.113.10 deny is in the feed"
expect_event session=a verdict=deny reason=dns_name_denied name=denied.example.com -- "restart: the outage's dns_name_denied is in the feed"
expect_event session=a verdict=allow reason=allow_learned dst=198.51.100.11 -- "restart: the outage's allow by name is in the feed"
tfc --json session list >"$T/list.json"
check "restart: sessions a and b re-adopted" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(sorted(s["id"] for s in d["sessions"]) != ["a", "b"])' "$T/list.json"
ns_probe "restart: A -> 203.0.113.10:80 still denied" "$ga" 203.0.113.10 80 blocked

note "noisy neighbour: A floods, B is judged as before"
# B holds a connection through A's flood; A opens far more flows than its table holds and
# sends a stream of denied packets.
rm -f "$T/gob"
ip netns exec "$gb" "$PY" "$TF_NETNS_DIR/dnsprobe.py" echo-client 203.0.113.10 9000 --go "$T/gob" \
	--timeout "$TF_CONNECT_TIMEOUT" --wait 60 >"$T/echob.out" 2>&1 &
defer kill_pid "$!"
n "$ga" timeout 60 "$PY" "$TF_NETNS_DIR/udp_flood.py" >"$T/flood.out" 2>&1
ns_probe "after A's flood: B -> 203.0.113.10:80 (B's rule)" "$gb" 203.0.113.10 80 reached
ns_probe "after A's flood: B -> 198.51.100.10:80 denied" "$gb" 198.51.100.10 80 blocked
expect_event session=b verdict=deny reason=no_rule dst=198.51.100.10 -- "after A's flood: B's deny is still in the feed"
tfc --json session show a >"$T/a.show"
tfc --json session show b >"$T/b.show"
check "A's flood was rate limited (events_suppressed > 0)" "$PY" -c '
import json, sys
sys.exit(not json.load(open(sys.argv[1]))["session"]["events_suppressed"] > 0)' "$T/a.show"
check "B lost and suppressed nothing" "$PY" -c '
import json, sys
s = json.load(open(sys.argv[1]))["session"]
sys.exit(not (s["events_suppressed"] == 0 and s["events_lost"] == 0))' "$T/b.show"
check "A's denied flood was all dropped (no_rule counted for every datagram)" "$PY" -c '
import json, sys
s = json.load(open(sys.argv[1]))["session"]
sys.exit(not s["counters"].get("no_rule", 0) >= 20000)' "$T/a.show"
touch "$T/gob"
check "B's connection held across A's flood fills A's flow table" wait_for 5 grep -q "echo 2 ok" "$T/echob.out"

note "a session that cannot be re-adopted keeps its pinned enforcement and its slot"
# D: 601 rules, so re-adopting it (new generation beside the old) overflows the 1024-entry table.
"$PY" "$TF_NETNS_DIR/many_rules.py" "$T/d.rules"
session_spec "$T/d.json" d hd 02:00:00:00:1d:02 10.10.4.2 fd00:a:4::2 02:00:00:00:1d:01 10.10.4.1 fd00:a:4::1 \
	"$(cat "$T/d.rules")"
check "session d (601 rules) added" tfc session add "$T/d.json"
d_slot=$(tfc --json session show d | tfjson get session.slot)
ns_probe "D -> 198.51.100.10:80 (D's rule)" "$gd" 198.51.100.10 80 reached
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
tfd_start "$host"
check "restart: D's restore fails for want of room" wait_for 5 grep -q "cannot restore session.*d.json" "$T/tapfenced.log"
tfc --json session list >"$T/list2.json"
check "restart: a and b re-adopted, d not" "$PY" -c '
import json, sys
sys.exit(sorted(s["id"] for s in json.load(open(sys.argv[1]))["sessions"]) != ["a", "b"])' "$T/list2.json"
check "restart: D's links are still pinned" test -e "$(link_pin d in)" -a -e "$(link_pin d out)"
ns_probe "restart: D -> 198.51.100.10:80 still allowed by its pinned policy" "$gd" 198.51.100.10 80 reached
ns_probe "restart: D -> 203.0.113.10:80 still denied" "$gd" 203.0.113.10 80 blocked
session_spec "$T/c.json" c hc 02:00:00:00:1c:02 10.10.3.2 fd00:a:3::2 02:00:00:00:1c:01 10.10.3.1 fd00:a:3::1 \
	'[{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}]'
check "a new session c is added" tfc session add "$T/c.json"
c_slot=$(tfc --json session show c | tfjson get session.slot)
check "c does not get D's slot ($c_slot, D had $d_slot)" test "$c_slot" != "$d_slot"
ns_probe "C -> 203.0.113.10:80 (C's rule)" "$gc" 203.0.113.10 80 reached
ns_probe "C -> 198.51.100.10:80 (only D's rule: not inherited)" "$gc" 198.51.100.10 80 blocked

note "pins made by a build with another ABI"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
check "mark the pinned maps as ABI 1" bpftool map update pinned "$TF_PIN_DIR/maps/tf_abi" \
	key 0 0 0 0 value 1 0 0 0
start_foreground() {
	timeout 20 ip netns exec "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --foreground \
		>>"$T/tapfenced.log" 2>&1
}
check_not "a start on them is refused" start_foreground
check "the refusal names both ABIs and --cleanup" \
	grep -q "have ABI 1, this build has ABI [0-9]*: run tapfenced --cleanup" "$T/tapfenced.log"
ns_probe "refused start: C -> 203.0.113.10:80 still allowed by the pinned programs" "$gc" 203.0.113.10 80 reached
ns_probe "refused start: C -> 198.51.100.10:80 still denied" "$gc" 198.51.100.10 80 blocked
check "--cleanup removes pins of another ABI" n "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --cleanup
check "no map is left pinned" test -z "$(ls "$TF_PIN_DIR/maps" 2>/dev/null)"

tf_done
