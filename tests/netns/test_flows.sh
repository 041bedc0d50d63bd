#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that a flow lives only as long as the policy and its idle timeout allow: a rule change
# re-judges established flows in flight, and idle or closed flows expire.
#
#  ┌──────────────────────────────────────┐
#  │ $g (guest)  gf 10.20.1.2/24          │  flowpeer.py streams: one UDP socket or TCP connection
#  │             fd00:b:1::2/64           │  each, a line every 100 ms; ping every 200 ms
#  └──────────────────┬───────────────────┘
#                     │ veth
#  ┌──────────────────┴───────────────────┐
#  │ $host (router; tapfenced attaches to │
#  │ hf 10.20.1.1/24 fd00:b:1::1)         │
#  │ hi 10.98.0.1/30, routes 198.51.100.10│
#  │ and 203.0.113.10 via $inet           │
#  └──────────────────┬───────────────────┘
#                     │ veth
#  ┌──────────────────┴───────────────────┐
#  │ $inet ii 10.98.0.2/30; on lo:        │  flowpeer.py serve: logs and echoes every line;
#  │ 198.51.100.10 ("doomed": rules to be │  flowpeer.py sniff on ii: every TCP segment to 7003
#  │ deleted), 203.0.113.10 ("kept")      │
#  └──────────────────────────────────────┘
#
# Phase 1 (nothing enforces): a lone TCP segment on a closed connection's tuple reaches the
# server's link, so the negative check on it later means something.
# Phase 2 (tapfenced, short timeouts): streams to both addresses; an unrelated rule add breaks
# none; deleting the doomed rules stops the doomed streams at once (revoked events) while the
# kept ones go on; an idle UDP flow is judged as new after its timeout (re-opened with an allow
# event under its rule, refused once its rule is gone); a segment after FIN + timeout drops.
# TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode. TF_KEEP=1 keeps $T.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX g=tf-g-$TF_SFX inet=tf-inet-$TF_SFX

G_MAC=02:00:00:00:0d:02 GW_MAC=02:00:00:00:0d:01 G4=10.20.1.2
DOOM=198.51.100.10 KEEP=203.0.113.10
FP=$TF_NETNS_DIR/flowpeer.py

setup ns_add "$host" "$g" "$inet"
setup ns_router "$host"
setup guest_link "$g" gf $G_MAC $G4/24 fd00:b:1::2/64 "$host" hf $GW_MAC 10.20.1.1/24 fd00:b:1::1/64
setup inet_link "$host" "$inet" 98 10.20.0.0/16 fd00:b::/32 $DOOM/32 $KEEP/32 -- $DOOM $KEEP

# bg NAME CMD...: run CMD inside a namespace in the background (ip netns exec execs in place, so
# $! is CMD's PID), stopped at cleanup.
bg() {
	local name=$1
	shift
	ip netns exec "$@" >>"$T/$name.out" 2>&1 &
	defer kill_pid $!
	eval "PID_$name=$!"
}

# wait_ready FILE PID: a flowpeer.py that writes FILE once it is set up.
wait_ready() {
	wait_for 5 test -e "$1" || die "$1 not written: $(tail -n 3 "$T"/*.out)"
	[ "$(cat "$1")" = "$2" ] || die "$1 names PID $(cat "$1"), not $2"
}

L=$T/inet.log SNIFF=$T/sniff.log
bg serve "$inet" "$PY" "$FP" serve --log "$L" --ready "$T/serve.ready" \
	--udp $DOOM:7000 --tcp $DOOM:7001 --udp $DOOM:7002 \
	--udp $KEEP:7000 --tcp $KEEP:7001 --tcp $KEEP:7003
wait_ready "$T/serve.ready" "$PID_serve"
: >"$SNIFF"
bg sniff "$inet" "$PY" "$FP" sniff --dev ii --port 7003 --log "$SNIFF" --ready "$T/sniff.ready"
wait_ready "$T/sniff.ready" "$PID_sniff"
tf_watch "$L"
tf_watch "$SNIFF"

# late_segment SPORT: a lone TCP segment with data, as a connection on that tuple would send it.
late_segment() {
	n "$g" "$PY" -c '
import sys
from scapy.all import IP, TCP, Raw, send
send(IP(src=sys.argv[1], dst=sys.argv[2]) / TCP(sport=int(sys.argv[3]), dport=7003, flags="PA",
     seq=1000, ack=1000) / Raw(b"late\n"), verbose=0)' $G4 $KEEP "$1" >>"$T/scapy.out" 2>&1
}

# udp_from SPORT HOST PORT: one datagram from SPORT; 0 iff its echo came back.
udp_from() {
	n "$g" timeout 10 "$PY" "$TF_NETNS_DIR/listener.py" udp --sport "$1" --payload "p$1" \
		--timeout "$TF_CONNECT_TIMEOUT" "$2" "$3" >"$T/client.out" 2>&1
}

note "phase 1: baseline, nothing enforces"
check "baseline: a TCP connection to $KEEP:7003 from 41090 opens and closes" \
	n "$g" "$PY" "$FP" once --tcp $KEEP:7003 --sport 41090 --tag base
sleep 0.5
tf_mark
check "baseline: a lone segment on the closed tuple is sent" late_segment 41090
expect_reached "$SNIFF" "$G4:41090 > $KEEP:7003 flags 0x18" \
	"baseline: the lone segment reaches the server's link"

note "phase 2: tapfenced"
mode=${TF_ATTACH_MODE:+\"attach_mode\":\"$TF_ATTACH_MODE\",}
setup tfd_config "$T/tf.json" "$mode\"timeouts\":{\"udp_s\":2,\"udp_replied_s\":3,\"tcp_fin_s\":2,\"tcp_rst_s\":2,\"icmp_s\":2}"
setup bpffs_mount "$T/bpffs"
tfd_start "$host"

R_DU='{"cidr":"198.51.100.10/32","proto":"udp","ports":[7000]}'
R_DT='{"cidr":"198.51.100.10/32","proto":"tcp","ports":[7001]}'
R_DI='{"cidr":"198.51.100.10/32","proto":"icmp"}'
R_IDLE='{"cidr":"198.51.100.10/32","proto":"udp","ports":[7002]}'
R_KU='{"cidr":"203.0.113.10/32","proto":"udp","ports":[7000]}'
R_KT='{"cidr":"203.0.113.10/32","proto":"tcp","ports":[7001,7003]}'
R_OTHER='{"cidr":"192.0.2.0/24","proto":"tcp","ports":[80]}'
setup session_spec "$T/f.json" f hf $G_MAC $G4 fd00:b:1::2 $GW_MAC 10.20.1.1 fd00:b:1::1 \
	"[$R_DU,$R_DT,$R_DI,$R_IDLE,$R_KU,$R_KT]"
check "session add f" tfc session add "$T/f.json"
EV="session=f direction=from_guest"

# The streams: NAME SPORT PROTO HOST:PORT.
streams=(doomed_udp:41000:udp:$DOOM:7000 doomed_tcp:41001:tcp:$DOOM:7001
	kept_udp:41002:udp:$KEEP:7000 kept_tcp:41003:tcp:$KEEP:7001)
for s in "${streams[@]}"; do
	IFS=: read -r name sport proto dst port <<<"$s"
	: >"$T/$name.log"
	bg "$name" "$g" "$PY" "$FP" stream "--$proto" "$dst:$port" --sport "$sport" --tag "$name" \
		--log "$T/$name.log" --stop "$T/stop" --ready "$T/$name.ready"
	eval "wait_ready \"\$T/$name.ready\" \"\$PID_$name\""
	tf_watch "$T/$name.log"
done
bg ping "$g" ping -n -i 0.2 $DOOM
tf_watch "$T/ping.out"

# stream_reaches NAME SPORT DESC / stream_stopped NAME SPORT DESC: since tf_mark, the listener got
# the stream's lines / got none while its client went on sending.
stream_reaches() {
	expect_reached "$L" "from $G4:$2 msg $1" "$3: reaches the listener"
	expect_reached "$T/$1.log" "echo" "$3: its echoes come back"
}
stream_stopped() {
	expect_not_reached "$L" "from $G4:$2 msg" "$3: never reaches the listener"
	expect_reached "$T/$1.log" "sent" "$3: while its client goes on sending"
}

sleep 1
tf_mark
sleep 1
for s in "${streams[@]}"; do
	IFS=: read -r name sport _ <<<"$s"
	stream_reaches "$name" "$sport" "before any change: $name"
done
expect_reached "$T/ping.out" "bytes from $DOOM" "before any change: ping gets replies"

tf_mark
check "rule add f (unrelated): $R_OTHER" tfc rule add f "$R_OTHER"
sleep 1.5
for s in "${streams[@]}"; do
	IFS=: read -r name sport _ <<<"$s"
	stream_reaches "$name" "$sport" "after an unrelated rule add: $name"
done
expect_reached "$T/ping.out" "bytes from $DOOM" "after an unrelated rule add: ping gets replies"
expect_no_event session=f reason=revoked -- "an unrelated rule add revokes no flow"
expect_no_event session=f verdict=deny dst=$DOOM -- "an unrelated rule add denies nothing to $DOOM"
expect_no_event session=f verdict=deny dst=$KEEP -- "an unrelated rule add denies nothing to $KEEP"

gen() { tfc --json session show f | "$PY" -c 'import json,sys; s = json.load(sys.stdin)["session"]; print(s["rules_generation"], s["policy_version"])'; }
read -r GEN0 VER0 < <(gen)
tf_mark
check "rule del f $R_DU" tfc rule del f "$R_DU"
check "rule del f $R_DT" tfc rule del f "$R_DT"
check "rule del f $R_DI" tfc rule del f "$R_DI"
check "three CIDR rules deleted in place: rules generation $GEN0 kept, policy version $VER0 + 6" \
	test "$(gen)" = "$GEN0 $((VER0 + 6))"
expect_event $EV reason=revoked proto=udp dst=$DOOM sport=41000 dport=7000 -- \
	"the doomed UDP stream's next datagram is revoked"
# The connection's first segment after the delete is the client's next one or the server's (its
# echo or ACK, to_guest): either is revoked, and the flow goes with it.
tcp_revoked() {
	local at=${tf_mark_at[$TF_EVENTS]:-0}
	events_match "$TF_EVENTS" "$at" 3 1 $EV reason=revoked proto=tcp dst=$DOOM sport=41001 \
		dport=7001 >/dev/null ||
		events_match "$TF_EVENTS" "$at" 1 1 session=f direction=to_guest reason=revoked \
			proto=tcp src=$DOOM sport=7001 dport=41001 >/dev/null
}
check "the doomed TCP connection's next segment, either side's, is revoked" tcp_revoked
expect_event $EV reason=revoked proto=icmp dst=$DOOM -- "the doomed ping's next echo is revoked"
expect_event $EV reason=port_not_allowed proto=udp sport=41000 dport=7000 -- \
	"then the doomed UDP stream is judged as new: port_not_allowed (7002 is still allowed)"
expect_event $EV reason=tcp_no_flow sport=41001 dport=7001 -- \
	"then the doomed TCP connection has no flow: tcp_no_flow"
expect_no_event session=f reason=revoked dst=$KEEP -- "no flow to the kept address is revoked"
sleep 0.5
tf_mark
sleep 2
stream_stopped doomed_udp 41000 "after rule del: the doomed UDP stream"
stream_stopped doomed_tcp 41001 "after rule del: the doomed TCP connection"
check_not "after rule del: ping gets no reply" grep_since "$T/ping.out" "bytes from $DOOM"
stream_reaches kept_udp 41002 "after rule del: the kept UDP stream"
stream_reaches kept_tcp 41003 "after rule del: the kept TCP connection"
: >"$T/stop"

note "idle UDP flows expire (udp_s 2, udp_replied_s 3)"
check "a UDP flow from 41010 to $KEEP:7000 opens and is answered" udp_from 41010 $KEEP 7000
sleep 4
tf_mark
check "idle 4 s: the next datagram from 41010 gets its echo" udp_from 41010 $KEEP 7000
expect_event $EV reason=allow_rule proto=udp sport=41010 dport=7000 -- \
	"idle 4 s under its rule: judged as new, a new allow_rule event"
check "a UDP flow from 41011 to $DOOM:7002 opens and is answered" udp_from 41011 $DOOM 7002
check "rule del f $R_IDLE while that flow is idle" tfc rule del f "$R_IDLE"
sleep 4
tf_mark
check_not "idle 4 s, its rule gone: the next datagram from 41011 gets no echo" udp_from 41011 $DOOM 7002
expect_not_reached "$L" "from $G4:41011 msg" "idle 4 s, its rule gone: never reaches the listener"
expect_event $EV reason=no_rule proto=udp sport=41011 dport=7002 -- \
	"idle 4 s, its rule gone: judged as new, no_rule"
expect_no_event session=f reason=revoked sport=41011 -- "an expired flow is not revoked, it is new"

note "TCP after FIN expires (tcp_fin_s 2)"
tf_mark
check "a TCP connection to $KEEP:7003 from 41020 opens and closes" \
	n "$g" "$PY" "$FP" once --tcp $KEEP:7003 --sport 41020 --tag fin
expect_reached "$SNIFF" "$G4:41020 > $KEEP:7003 flags 0x11" "its FIN reaches the server's link"
sleep 3
tf_mark
check "3 s after the close: a lone segment on its tuple is sent" late_segment 41020
expect_not_reached "$SNIFF" "$G4:41020 >" "3 s after the close: the lone segment never reaches the server's link"
expect_event $EV reason=tcp_no_flow proto=tcp sport=41020 dport=7003 -- \
	"3 s after the close: the lone segment is tcp_no_flow"

check "the listener still runs" kill -0 "$PID_serve"
check "the sniffer still runs" kill -0 "$PID_sniff"
check "tapfenced still runs" kill -0 "$TFD_PID"
tf_done
