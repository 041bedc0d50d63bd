#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Quarantine (docs/quarantine.md): `session quarantine' cuts a session off at once, its established
# TCP connection and UDP stream included, but for what the operator's quarantine.keep_open keeps
# (here one TCP service, whose open connection goes on); events say so; rules cannot change
# meanwhile; it survives a restart; `session resume' gives the session its policy back; with
# --reset, the cut TCP connection is reset toward the guest.
#
#   $g (guest) gq 10.21.1.2 ─ hq ─ $host (router, tapfenced) ─ $inet: 198.51.100.10 udp 7000,
#                                                                    tcp 7001; 203.0.113.10 tcp 7001
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-qh-$TF_SFX g=tf-qg-$TF_SFX inet=tf-qi-$TF_SFX
G_MAC=02:00:00:00:21:02 GW_MAC=02:00:00:00:21:01 G4=10.21.1.2
CUT=198.51.100.10 KEEP=203.0.113.10
FP=$TF_NETNS_DIR/flowpeer.py

setup ns_add "$host" "$g" "$inet"
setup ns_router "$host"
setup guest_link "$g" gq $G_MAC $G4/24 fd00:c:1::2/64 "$host" hq $GW_MAC 10.21.1.1/24 fd00:c:1::1/64
setup inet_link "$host" "$inet" 97 10.21.0.0/16 fd00:c::/32 $CUT/32 $KEEP/32 -- $CUT $KEEP

bg() {
	local name=$1
	shift
	ip netns exec "$@" >>"$T/$name.out" 2>&1 &
	defer kill_pid $!
	eval "PID_$name=$!"
}
wait_ready() {
	wait_for 5 test -e "$1" || die "$1 not written: $(tail -n 3 "$T"/*.out)"
}

L=$T/inet.log
bg serve "$inet" "$PY" "$FP" serve --log "$L" --ready "$T/serve.ready" \
	--udp $CUT:7000 --tcp $CUT:7001 --tcp $KEEP:7001
wait_ready "$T/serve.ready"
tf_watch "$L"

setup bpffs_mount "$T/bpffs"
setup tfd_config "$T/tf.json" "\"quarantine\":{\"keep_open\":[{\"cidr\":\"$KEEP/32\",\"proto\":\"tcp\",\"ports\":[7001]}]}"
tfd_start "$host"
setup session_spec "$T/q.json" q hq $G_MAC $G4 fd00:c:1::2 $GW_MAC 10.21.1.1 fd00:c:1::1 \
	"[{\"cidr\":\"$CUT/32\",\"proto\":\"udp\",\"ports\":[7000]},{\"cidr\":\"$CUT/32\",\"proto\":\"tcp\",\"ports\":[7001]},{\"cidr\":\"$KEEP/32\",\"proto\":\"tcp\",\"ports\":[7001]}]"
sessions_add q

# The streams: NAME SPORT PROTO HOST:PORT.
streams=(cut_udp:42000:udp:$CUT:7000 cut_tcp:42001:tcp:$CUT:7001 keep_tcp:42002:tcp:$KEEP:7001)
for s in "${streams[@]}"; do
	IFS=: read -r name sport proto dst port <<<"$s"
	: >"$T/$name.log"
	bg "$name" "$g" "$PY" "$FP" stream "--$proto" "$dst:$port" --sport "$sport" --tag "$name" \
		--log "$T/$name.log" --stop "$T/stop" --ready "$T/$name.ready"
	wait_ready "$T/$name.ready"
	tf_watch "$T/$name.log"
done
stream_reaches() {
	expect_reached "$L" "from $G4:$2 msg $1" "$3: reaches the listener"
}
stream_stopped() {
	expect_not_reached "$L" "from $G4:$2 msg" "$3: never reaches the listener"
	expect_reached "$T/$1.log" "sent" "$3: while its client goes on sending"
}
once() { n "$g" "$PY" "$FP" once --tcp "$1:7001" --sport "$2" --tag once >/dev/null 2>&1; }

sleep 1
tf_mark
sleep 1
stream_reaches cut_udp 42000 "before: the UDP stream"
stream_reaches cut_tcp 42001 "before: the TCP connection"
stream_reaches keep_tcp 42002 "before: the connection to the kept service"

note "quarantine"
check "session quarantine q --reason" tfc session quarantine q --reason "caught exfiltrating"
sleep 0.5
tf_mark
sleep 1.5
stream_stopped cut_udp 42000 "quarantined: the established UDP stream"
stream_stopped cut_tcp 42001 "quarantined: the established TCP connection"
stream_reaches keep_tcp 42002 "quarantined: the open connection to the keep_open service"
expect_event session=q quarantined=True verdict=deny -- "quarantined: its denials are events marked quarantined"
check_not "quarantined: a new TCP connection to $CUT fails" once $CUT 42010
check "quarantined: a new connection to the keep_open service works" once $KEEP 42011
tfc --json session show q >"$T/show.json" 2>&1
check "session show: quarantined, with its reason" tfjson check "$T/show.json" \
	'd["session"]["quarantined"]["reason"] == "caught exfiltrating" and d["session"]["quarantined"]["since"] > 0'
check "session show: its own allowlist is still its spec" tfjson check "$T/show.json" \
	'len(d["session"]["spec"]["allow"]) == 3'
check_says "a rule change is refused while quarantined" 1 "is quarantined" \
	tfc rule add q '{"cidr":"192.0.2.0/24","proto":"tcp","ports":[80]}'
check_says "a second quarantine is refused" 1 "quarantined already" tfc session quarantine q
check_says "a reason with a quote is refused, naming the field" 1 "reason: expected" \
	tfc session quarantine q --reason 'say "hi"'
tf_unmark "$TF_EVENTS"
expect_event kind=session session=q quarantined=True "reason=caught exfiltrating" \
	-- "the sealed log says q was quarantined, and why"
expect_event kind=policy session=q op=quarantine -- "the policy line of the quarantine is sealed"

note "a restart keeps the quarantine"
kill_pid "$TFD_PID"
TFD_PID=
TFD_KEEP_LOG=1 tfd_start "$host"
tfc --json session show q >"$T/show.json" 2>&1
check "restarted: q is still quarantined" tfjson check "$T/show.json" \
	'd["session"]["quarantined"]["reason"] == "caught exfiltrating"'
tf_mark
sleep 1.5
stream_stopped cut_udp 42000 "restarted: the UDP stream"
check_not "restarted: a new TCP connection to $CUT fails" once $CUT 42012
check "restarted: the keep_open service still works" once $KEEP 42013

note "resume"
check "session resume q" tfc session resume q
check_says "a second resume is refused" 1 "not quarantined" tfc session resume q
tf_mark
sleep 1.5
stream_reaches cut_udp 42000 "resumed: the UDP stream"
check "resumed: a new TCP connection to $CUT works" once $CUT 42014
tfc --json session show q >"$T/show.json" 2>&1
check "session show: not quarantined" tfjson check "$T/show.json" '"quarantined" not in d["session"]'
check "resumed: rule changes work again" tfc rule add q '{"cidr":"192.0.2.0/24","proto":"tcp","ports":[80]}'
tf_unmark "$TF_EVENTS"
expect_event kind=session session=q resumed=True -- "the sealed log says q was resumed"
touch "$T/stop"

note "quarantine --reset: the cut connection is reset toward the guest (the session drops otherwise)"
: >"$T/rs.log"
bg rs "$g" "$PY" "$FP" stream --tcp "$CUT:7001" --sport 42030 --tag rs --interval 0.2 \
	--log "$T/rs.log" --stop "$T/stop2" --ready "$T/rs.ready"
wait_ready "$T/rs.ready"
sleep 1
check "session quarantine q --reset" tfc session quarantine q --reset --reason "reset test"
if wait_for 3 grep -q "error.*[Rr]eset" "$T/rs.log"; then
	pass "quarantine --reset: the guest's connection is reset ($(grep -m1 error "$T/rs.log"))"
else
	fail "quarantine --reset: the guest's connection is not reset: $(tail -n 2 "$T/rs.log")"
fi
tfc --json session show q >"$T/show.json" 2>&1
check "session show: quarantined with reset" tfjson check "$T/show.json" \
	'd["session"]["quarantined"]["reset"] is True and d["session"]["on_deny"] == "drop"'
check "session resume q" tfc session resume q
touch "$T/stop2"

tf_done
