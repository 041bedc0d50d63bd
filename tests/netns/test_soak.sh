#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfenced under valgrind's memcheck answers every request of a short soak (sessions coming and going, rule churn, queries, bad, stalled and vanishing clients, subscribers, guest traffic) and ends it with no memory error, no leak, and no file descriptor or heap left behind.
#
#  ┌──────────────────────────────┐
#  │ $g1  (guest)                 │
#  │ g1 10.40.1.2/24 fd00:28:1::2 │
#  └──────────────┬───────────────┘
#                 │ veth
#  ┌──────────────┴───────────────────────────────────────────────────┐
#  │ $host  (router; tapfenced under valgrind; session g1 on h1        │
#  │ 10.40.1.1, where dnsmasq answers allowed.test and forbidden.test) │
#  │ c0..c3 (veths, peers c0p..c3p here too) and t0..t3 (taps): the    │
#  │ devices the soak's sessions come and go on                        │
#  │ hi 10.41.0.1/30   routes 198.51.100.0/24 203.0.113.0/24           │
#  └──────────────┬───────────────────────────────────────────────────┘
#                 │ veth
#  ┌──────────────┴───────────────────────────────────────────────────┐
#  │ $inet  ii 10.41.0.2/30; on lo 198.51.100.10 203.0.113.10          │
#  │ 203.0.113.20; tcp listeners on :80 of all three                   │
#  └──────────────────────────────────────────────────────────────────┘
#
# g1 may reach 198.51.100.0/24 tcp/80 and allowed.test (203.0.113.20) tcp/80 once resolved; it is
# denied 203.0.113.10 and the name forbidden.test. For SOAK_SECONDS (default 60) a driver (Python,
# tests/netns/soak_client.py) runs six clients at once on the control socket, the guest runs its probes,
# the CLI queries and follows the feed; then every session is deleted and the daemon stopped with
# SIGTERM. Valgrind's log is $T/valgrind.log (TF_KEEP=1 keeps it). Suppressions, each with its
# reason: tests/netns/valgrind-libbpf.supp. The whole test takes about SOAK_SECONDS + 60 s.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX g1=tf-g1-$TF_SFX inet=tf-inet-$TF_SFX
SOAK_SECONDS=${SOAK_SECONDS:-60}

[[ $SOAK_SECONDS =~ ^[1-9][0-9]*$ ]] || die "SOAK_SECONDS=\`$SOAK_SECONDS' is not a number of seconds"
tf_need valgrind vgdb dnsmasq dig

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$g1" "$inet"
setup ns_router "$host"

M1=02:00:00:28:01:02 GW1=02:00:00:28:01:01 RES=10.40.1.1
setup guest_link "$g1" g1 $M1 10.40.1.2/24 fd00:28:1::2/64 "$host" h1 $GW1 $RES/24 fd00:28:1::1/64
setup inet_link "$host" "$inet" 41 10.40.0.0/16 fd00:28::/32 198.51.100.0/24 203.0.113.0/24 -- \
	198.51.100.10 203.0.113.10 203.0.113.20

# The devices sessions come and go on: no traffic crosses them, tapfence attaches all the same.
CYCLE_DEVS=()
for k in 0 1 2 3; do
	setup veth_pair "$host" c$k "$host" c${k}p
	setup ip -n "$host" link set c$k up
	setup ip -n "$host" link set c${k}p up
	setup ip -n "$host" tuntap add dev t$k mode tap
	setup ip -n "$host" link set t$k up
	CYCLE_DEVS+=("c$k" "t$k")
done

# The session's resolver: dnsmasq on the gateway address only, no upstream, two records.
DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$host" "$DNS_LOG" "$RES" --local=/test/ --host-record=allowed.test,203.0.113.20,300 \
	--host-record=forbidden.test,203.0.113.10,300

L_INET=$T/inet.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80 tcp:203.0.113.20:80
PID_INET=$LISTENER_PID

# --- probes -----------------------------------------------------------------------------------

# dig_a NAME: g1 asks its resolver for NAME's A record; 0 iff the answer is ADDR (second argument).
dig_a() {
	n "$g1" timeout 5 dig @$RES +time=2 +tries=1 +short "$1" A 2>/dev/null | grep -qxF "$2"
}
ping_once() { n "$g1" ping -c 1 -W 1 "$1" >/dev/null 2>&1; }

note "baseline, nothing enforces: every probe the soak uses gets through"
tf_mark
check "baseline: g1 -> 198.51.100.10:80" tcp_get "$g1" 198.51.100.10 80
check "baseline: g1 -> 203.0.113.10:80" tcp_get "$g1" 203.0.113.10 80
check "baseline: g1 -> 203.0.113.20:80" tcp_get "$g1" 203.0.113.20 80
expect_reached "$L_INET" "tcp 203.0.113.10:80 from 10.40.1.2:" "baseline: 203.0.113.10:80 logs g1's connection"
check "baseline: g1 pings 203.0.113.10" ping_once 203.0.113.10
check "baseline: allowed.test resolves to 203.0.113.20" dig_a allowed.test 203.0.113.20
check "baseline: forbidden.test resolves to 203.0.113.10" dig_a forbidden.test 203.0.113.10

# --- tapfenced under valgrind -----------------------------------------------------------------

note "tapfenced under valgrind memcheck"
VG_LOG=$T/valgrind.log
VGDB_PREFIX=$T/vgdb
# The options of docs/testing.md; --vgdb lets the test ask for a heap summary while it runs.
# shellcheck disable=SC2054 # the commas are inside valgrind options
TFD_WRAP=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect
	--errors-for-leak-kinds=definite,indirect --error-exitcode=99 --track-fds=no
	--suppressions="$TF_NETNS_DIR/valgrind-libbpf.supp" --num-callers=30
	--log-file="$VG_LOG" --vgdb=yes --vgdb-prefix="$VGDB_PREFIX")
TFD_START_WAIT=120 # loading the programs under valgrind takes 10-30 s
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" '"limits":{"client_timeout_ms":500}'
tfd_start "$host"
VG_PID=$TFD_PID

# fd_count: the daemon's open file descriptors (valgrind's own few included; they do not change).
fd_count() {
	local fds=(/proc/"$VG_PID"/fd/*)
	if [ -e "${fds[0]}" ]; then echo "${#fds[@]}"; else echo 0; fi
}
# heap_bytes FILE: the daemon's heap in use (every block valgrind's leak search finds, reachable or
# not). The search's report goes to FILE: with its loss records, those that grew since the last one.
heap_bytes() {
	vgdb --vgdb-prefix="$VGDB_PREFIX" --pid="$VG_PID" leak_check full reachable increased \
		>"$1" 2>&1
	"$PY" -c '
import re, sys
n = [int(m.group(1).replace(",", "")) for m in
     re.finditer(r"(?:definitely lost|indirectly lost|possibly lost|still reachable): ([\d,]+)", sys.stdin.read())]
print(sum(n) if len(n) == 4 else "")' <"$1"
}
fd_is() { [ "$(fd_count)" -eq "$1" ]; }

# fd_settled: the count once it has held for half a second (the daemon closes a client's
# connection at its next turn of the loop, slowly under valgrind).
fd_settled() {
	local a b i
	b=$(fd_count)
	for i in $(seq 20); do
		sleep 0.5
		a=$(fd_count)
		[ "$a" -eq "$b" ] && break
		b=$a
	done
	echo "$b"
}
# Counted once the daemon has answered: it opens its signalfd in its loop, after the socket.
tfc version >/dev/null || die "tapfenced does not answer"
FD_START=$(fd_settled)
note "daemon's fds at start, no session, no client: $FD_START"

# --- the permanent session, warm-up -----------------------------------------------------------

session_spec "$T/g1.json" g1 h1 $M1 10.40.1.2 fd00:28:1::2 $GW1 $RES fd00:28:1::1 \
	'[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]},{"host":"allowed.test","proto":"tcp","ports":[80]}]'
check "session add g1" tfc session add "$T/g1.json"

# One of each probe, so that everything allocated once (stdio buffers of the logs, ...) is before
# the heap is measured; and a first look that the session enforces.
tf_mark
check "warm-up: g1 -> 198.51.100.10:80 (rule) gets through" tcp_get "$g1" 198.51.100.10 80
check_not "warm-up: g1 -> 203.0.113.10:80 (no rule) does not" tcp_get "$g1" 203.0.113.10 80
check "warm-up: allowed.test resolves" dig_a allowed.test 203.0.113.20
check "warm-up: g1 -> 203.0.113.20:80 (learnt) gets through" tcp_get "$g1" 203.0.113.20 80
check_not "warm-up: forbidden.test does not resolve" dig_a forbidden.test 203.0.113.10
for c in version stats "session list" "session show g1"; do
	# shellcheck disable=SC2086 # the words of $c are the command's
	tfc $c >/dev/null 2>&1 || fail "warm-up: tapfence $c"
done
expect_event session=g1 reason=no_rule dst=203.0.113.10 -- "warm-up: the denied connection is in the feed"

FD_WARM=$(fd_settled) # the CLI's connections closed
HEAP_WARM=$(heap_bytes "$T/heap-warm.txt")
note "after warm-up (session g1, no client): $FD_WARM fds, heap ${HEAP_WARM:-?} bytes"
[ -n "$HEAP_WARM" ] || fail "vgdb: no heap summary from the daemon (see $VG_LOG)"

# --- the soak ---------------------------------------------------------------------------------

# The driver: each worker is one thread, looping until the deadline; every request is on a fresh
# connection unless said otherwise, and counts as answered only if a response line came back within
# TIMEOUT. It prints a JSON summary: per kind of request [sent, answered, unexpected], per kind of
# client that leaves without waiting for an answer how many there were, and the first problems.

# traffic END: the guest's probes, again and again until END (epoch seconds) or until $T/stop
# exists, tallied on stdout.
traffic() {
	local end=$1 allowed=0 allowed_fail=0 learnt=0 learnt_fail=0 resolved=0 resolved_fail=0
	local denied_through=0 denied=0 ping_through=0 forbidden_resolved=0 rounds=0
	while [ "$(date +%s)" -lt "$end" ] && [ ! -e "$T/stop" ]; do
		if tcp_get "$g1" 198.51.100.10 80; then allowed=$((allowed + 1)); else allowed_fail=$((allowed_fail + 1)); fi
		if dig_a allowed.test 203.0.113.20; then resolved=$((resolved + 1)); else resolved_fail=$((resolved_fail + 1)); fi
		if tcp_get "$g1" 203.0.113.20 80; then learnt=$((learnt + 1)); else learnt_fail=$((learnt_fail + 1)); fi
		if TF_CONNECT_TIMEOUT=1 tcp_get "$g1" 203.0.113.10 80; then
			denied_through=$((denied_through + 1))
		else
			denied=$((denied + 1))
		fi
		ping_once 203.0.113.10 && ping_through=$((ping_through + 1))
		dig_a forbidden.test 203.0.113.10 && forbidden_resolved=$((forbidden_resolved + 1))
		rounds=$((rounds + 1))
	done
	echo "rounds=$rounds allowed=$allowed allowed_fail=$allowed_fail resolved=$resolved" \
		"resolved_fail=$resolved_fail learnt=$learnt learnt_fail=$learnt_fail denied=$denied" \
		"denied_through=$denied_through ping_through=$ping_through forbidden_resolved=$forbidden_resolved"
}

note "soak: $SOAK_SECONDS s"
tf_mark
END=$(($(date +%s) + SOAK_SECONDS))
"$TF_BUILD/tapfence" --socket "$TF_SOCK" --json events --follow >"$T/follow.json" 2>"$T/follow.err" &
FOLLOW_PID=$!
# kill_var NAME: kill_pid the PID in variable NAME, if it still holds one (it is emptied once the
# process has been waited for, so a reused PID is never signalled).
kill_var() { [ -z "${!1:-}" ] || kill_pid "${!1}"; }
defer kill_var FOLLOW_PID
traffic "$END" >"$T/traffic.out" 2>&1 &
TRAFFIC_PID=$!
# Stopped between probes (each is bounded by its timeout), so none is left running without it.
stop_traffic() {
	local i
	[ -n "$TRAFFIC_PID" ] || return 0
	touch "$T/stop"
	for ((i = 0; i < 150; i++)); do
		kill -0 "$TRAFFIC_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill_pid "$TRAFFIC_PID"
}
defer stop_traffic
devs=$(IFS=,; echo "${CYCLE_DEVS[*]}")
"$PY" "$TF_NETNS_DIR/soak_client.py" "$TF_SOCK" "$host" "$SOAK_SECONDS" "$devs" >"$T/driver.json" 2>"$T/driver.err" &
DRIVER_PID=$!
defer kill_var DRIVER_PID

# Meanwhile the CLI asks what an operator would, and the daemon's fds are sampled.
cli_ok=0 cli_fail=0 fd_max=0
: >"$T/fds.log"
while [ "$(date +%s)" -lt "$END" ]; do
	for c in "session list" "--json stats" "session show g1"; do
		# shellcheck disable=SC2086
		if tfc $c >/dev/null 2>>"$T/cli.err"; then cli_ok=$((cli_ok + 1)); else cli_fail=$((cli_fail + 1)); fi
	done
	f=$(fd_count)
	echo "$(date +%s) $f" >>"$T/fds.log"
	[ "$f" -gt "$fd_max" ] && fd_max=$f
	sleep 0.5
done
wait "$TRAFFIC_PID"
TRAFFIC_PID=
wait "$DRIVER_PID"
check "the driver exited 0" test $? -eq 0
DRIVER_PID=

# --- what the soak saw ------------------------------------------------------------------------

note "during the soak: the daemon's fds peaked at $fd_max (sampled every ~0.5 s in $T/fds.log)"
check "tapfenced still runs after the soak" kill -0 "$VG_PID"
check "the inet listener still runs" kill -0 "$PID_INET"
"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k, (s, a, u) in sorted(d["requests"].items()):
    print("#   %-48s sent %6d answered %6d unexpected %d" % (k, s, a, u))
for k, n in sorted(d["clients"].items()):
    print("#   client: %-40s %6d" % (k, n))
for p in d["problems"]:
    print("#   problem: " + p[:300])' "$T/driver.json" 2>/dev/null || note "driver: $(head -c 600 "$T/driver.err")"
dj() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T/driver.json" "$1" 2>/dev/null; }
sent=$(dj 'sum(v[0] for v in d["requests"].values())')
answered=$(dj 'sum(v[1] for v in d["requests"].values())')
unexpected=$(dj 'sum(v[2] for v in d["requests"].values())')
cycles=$(dj 'd["requests"].get("session.add", [0])[0]')
note "driver: $sent requests, $answered answered, $unexpected unexpected; $cycles session add/del cycles"
check "driver: every worker finished" test "$(dj 'd["alive"]')" = 0
check "driver: ran at least $((SOAK_SECONDS * 5)) requests ($sent)" test "${sent:-0}" -ge $((SOAK_SECONDS * 5))
check "driver: at least $((SOAK_SECONDS / 10 + 1)) session add/del cycles ($cycles)" \
	test "${cycles:-0}" -ge $((SOAK_SECONDS / 10 + 1))
check "driver: the daemon answered every request ($answered of $sent)" test -n "$sent" -a "$answered" = "$sent"
check "driver: every answer was the expected one ($unexpected not)" test "${unexpected:-1}" = 0
check "CLI during the soak: every command succeeded ($cli_ok, $cli_fail failed)" test "$cli_fail" -eq 0 -a "$cli_ok" -gt 0
[ "$cli_fail" -eq 0 ] || note "CLI: $(head -n 1 "$T/cli.err")"

note "guest traffic: $(cat "$T/traffic.out")"
tv() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" "$T/traffic.out"; }
check "traffic: ran at least 2 rounds" test "$(tv rounds)" -ge 2
check "traffic: g1 -> 198.51.100.10:80 got through every time" test "$(tv allowed_fail)" = 0 -a "$(tv allowed)" -gt 0
check "traffic: allowed.test resolved every time" test "$(tv resolved_fail)" = 0 -a "$(tv resolved)" -gt 0
check "traffic: g1 -> 203.0.113.20:80 (learnt) got through every time" test "$(tv learnt_fail)" = 0 -a "$(tv learnt)" -gt 0
check "traffic: g1 -> 203.0.113.10:80 never got a reply" test "$(tv denied_through)" = 0 -a "$(tv denied)" -gt 0
check "traffic: g1's pings to 203.0.113.10 never got a reply" test "$(tv ping_through)" = 0
check "traffic: forbidden.test never resolved" test "$(tv forbidden_resolved)" = 0
check_not "traffic: 203.0.113.10:80 never logged a connection from g1" grep_since "$L_INET" "tcp 203.0.113.10:80 from 10.40.1.2:"

# has_event FILE FILTER...: FILE (JSON lines) has an event whose fields equal KEY=VALUE words.
has_event() {
	local f=$1
	shift
	events_match "$f" 0 0 1 "$@" >/dev/null
}
check "events --follow: still running" kill -0 "$FOLLOW_PID"
for ev in "reason=allow_rule dst=198.51.100.10" "reason=no_rule dst=203.0.113.10 proto=tcp" \
	"reason=no_rule dst=203.0.113.10 proto=icmp" "reason=allow_dns name=allowed.test" \
	"reason=allow_dns_answer name=allowed.test" "reason=allow_learned dst=203.0.113.20" \
	"reason=dns_name_denied name=forbidden.test"; do
	# shellcheck disable=SC2086
	check "events --follow: g1's $ev" has_event "$T/follow.json" session=g1 $ev
done
kill -TERM "$FOLLOW_PID"
wait "$FOLLOW_PID"
check "events --follow: exits 0 on SIGTERM" test $? -eq 0
FOLLOW_PID=
check "the event log is JSON lines throughout" "$PY" -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
sys.exit(not lines or not all(isinstance(json.loads(l), dict) for l in lines))' "$TF_EVENTS"

# --- back to where it started -----------------------------------------------------------------

note "after the soak: fds and heap as after the warm-up, then every session deleted"
check "session list: g1 is the only session left" test "$(tfc --json session list |
	"$PY" -c 'import json, sys; print(sorted(s["id"] for s in json.load(sys.stdin)["sessions"]))')" = "['g1']"
wait_for 10 fd_is "$FD_WARM"
fd_end=$(fd_count)
check "fds back to the warm-up's $FD_WARM once the clients left ($fd_end)" test "$fd_end" -eq "$FD_WARM"
HEAP_END=$(heap_bytes "$T/heap-end.txt")
# g1's policy is now the one its last rule change compiled, not the one session add did: a few
# hundred bytes differ. Growth with the number of requests would not fit in the slack.
check "heap back to the warm-up's ${HEAP_WARM:-?} bytes, within 4 KiB (${HEAP_END:-?})" \
	test -n "$HEAP_WARM" -a -n "$HEAP_END" -a "$((${HEAP_END:-0} - ${HEAP_WARM:-0}))" -le 4096
if [ "$((${HEAP_END:-0} - ${HEAP_WARM:-0}))" -gt 4096 ]; then
	note "what grew since the warm-up, by allocation stack (valgrind's \"increased\" loss records):"
	grep -A12 'in loss record' "$T/heap-end.txt" | grep -E 'in loss record|by 0x.*\(' | head -n 40 |
		sed 's/^==[0-9]*== */#   /'
fi
check "session del g1" tfc session del g1
wait_for 10 fd_is "$FD_START"
fd_end=$(fd_count)
check "fds back to the start's $FD_START with no session ($fd_end)" test "$fd_end" -eq "$FD_START"

# --- SIGTERM, valgrind's verdict --------------------------------------------------------------

note "SIGTERM; valgrind's leak check"
kill -TERM "$VG_PID"
for ((i = 0; i < 1200; i++)); do
	kill -0 "$VG_PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$VG_PID" 2>/dev/null; then
	fail "tapfenced under valgrind did not exit within 120 s of SIGTERM"
else
	wait "$VG_PID"
	rc=$?
	TFD_PID=
	check "valgrind's exit status is not 99 (errors) ($rc)" test "$rc" -ne 99
	check "tapfenced exits 0 on SIGTERM ($rc)" test "$rc" -eq 0
fi
check "valgrind: ERROR SUMMARY: 0 errors" grep -q 'ERROR SUMMARY: 0 errors from 0 contexts' "$VG_LOG"
lost() { # KIND: the bytes of KIND lost at exit, 0 if nothing was
	local b
	b=$(sed -n "s/.*$1 lost: \([0-9,]*\) bytes.*/\1/p" "$VG_LOG" | tail -n 1 | tr -d ,)
	echo "${b:-0}"
}
check "valgrind: the leak check ran" grep -qE 'All heap blocks were freed|LEAK SUMMARY' "$VG_LOG"
check "valgrind: definitely lost 0 bytes ($(lost definitely))" test "$(lost definitely)" = 0
check "valgrind: indirectly lost 0 bytes ($(lost indirectly))" test "$(lost indirectly)" = 0
note "valgrind: $(grep -o 'suppressed: [0-9,]* from [0-9]*' "$VG_LOG" | tail -n 1) (valgrind-libbpf.supp);" \
	"$(grep -c 'WARNING: unhandled eBPF command' "$VG_LOG") warnings of bpf commands it does not model" \
	"(link create and detach, prog bind map), not errors"
if grep -q 'ERROR SUMMARY: [1-9]' "$VG_LOG"; then
	note "valgrind's first errors:"
	sed -n '/^==[0-9]*== [A-Z]/,/^==[0-9]*== $/p' "$VG_LOG" | grep -v 'WARNING' | head -n 40 | sed 's/^/#   /'
fi

note "tapfenced --cleanup"
n "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --cleanup >>"$T/tapfenced.log" 2>&1
check "after --cleanup: no pins left under the pin dir" \
	test -z "$(find "$TF_PIN_DIR" -mindepth 1 2>/dev/null | head -n 1)"
check "after --cleanup: no saved sessions" test -z "$(find "$T/state/sessions" -name '*.json' 2>/dev/null)"

tfd_log_tail 3
tf_done
