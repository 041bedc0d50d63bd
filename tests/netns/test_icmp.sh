#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that ICMP errors about a guest's flows reach it cut to what they need: PMTU still works, a payload does not get in.
#
#  ┌──────────────────────────┐
#  │ $ga  (guest A)           │  icmpprobe.py capture: raw ICMP/ICMPv6 sockets log every error
#  │ ga 10.10.1.2/24          │  that reaches the guest's kernel, its length, and whether it
#  │    fd00:a:1::2/64        │  holds the crafted payload's marker
#  └────────────┬─────────────┘
#               │ veth
#  ┌────────────┴─────────────────────────────────────────────────────────┐
#  │ $host  (router; tapfenced attaches to ha, session a)                 │
#  │ ha 10.10.1.1/24 fd00:a:1::1   hr 10.97.0.1/30 fd00:97::1             │
#  └────────────┬─────────────────────────────────────────────────────────┘
#               │ veth
#  ┌────────────┴─────────────────────────────────────────────────────────┐
#  │ $rtr  (a real router) rh 10.97.0.2 fd00:97::2                        │
#  │ ri 10.98.0.1/30 fd00:98::1, MTU 1280: it answers a bigger packet     │
#  │ with DF with Frag Needed / Packet Too Big quoting as much as Linux   │
#  │ quotes (576 bytes in all for ICMPv4, 1280 for ICMPv6)                │
#  └────────────┬─────────────────────────────────────────────────────────┘
#               │ veth, MTU 1280
#  ┌────────────┴─────────────────────────────────────────────────────────┐
#  │ $inet  ir 10.98.0.2 fd00:98::2; on lo 198.51.100.10 2001:db8:100::10 │
#  │ UDP echo on :7 of both; icmpprobe.py error crafts errors (scapy)     │
#  └──────────────────────────────────────────────────────────────────────┘
#
# Session a allows UDP to port 7 of 198.51.100.0/24 and 2001:db8:100::/48. Per family: the guest
# sends a 1400-byte datagram with DF (a flow), the router answers with a real PMTU error; then the
# internet crafts a port unreachable about the same flow carrying 1000 bytes of a marker.
# Phase 1 (baseline, nothing enforces): both errors reach the guest whole (the marker arrives, the
# guest learns the MTU), so the checks later cannot pass because a probe was broken. Phase 2
# (tapfenced): the PMTU error still teaches the guest's kernel the MTU (its checksums must be right
# for that), and the crafted one reaches it only cut to its header, the quoted header and 8
# bytes; each is an allow_icmp_error event. TF_KEEP=1 keeps $T.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX rtr=tf-rtr-$TF_SFX inet=tf-inet-$TF_SFX

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$ga" "$rtr" "$inet"
setup ns_router "$host"
setup ns_router "$rtr"

A_MAC=02:00:00:00:0a:02 A_GW_MAC=02:00:00:00:0a:01
setup guest_link "$ga" ga $A_MAC 10.10.1.2/24 fd00:a:1::2/64 "$host" ha $A_GW_MAC 10.10.1.1/24 fd00:a:1::1/64

setup veth_pair "$host" hr "$rtr" rh
setup veth_pair "$rtr" ri "$inet" ir
setup ip -n "$host" addr add 10.97.0.1/30 dev hr
setup ip -n "$host" addr add fd00:97::1/64 dev hr nodad
setup ip -n "$rtr" addr add 10.97.0.2/30 dev rh
setup ip -n "$rtr" addr add fd00:97::2/64 dev rh nodad
setup ip -n "$rtr" link set ri mtu 1280
setup ip -n "$inet" link set ir mtu 1280
setup ip -n "$rtr" addr add 10.98.0.1/30 dev ri
setup ip -n "$rtr" addr add fd00:98::1/64 dev ri nodad
setup ip -n "$inet" addr add 10.98.0.2/30 dev ir
setup ip -n "$inet" addr add fd00:98::2/64 dev ir nodad
for l in "$host hr" "$rtr rh" "$rtr ri" "$inet ir"; do
	# shellcheck disable=SC2086 # "NS DEV"
	setup ip -n ${l% *} link set ${l#* } up
done
setup ip -n "$inet" addr add 198.51.100.10/32 dev lo
setup ip -n "$inet" addr add 2001:db8:100::10/128 dev lo nodad
setup ip -n "$host" route add 198.51.100.0/24 via 10.97.0.2
setup ip -n "$host" -6 route add 2001:db8::/32 via fd00:97::2
setup ip -n "$rtr" route add 198.51.100.0/24 via 10.98.0.2
setup ip -n "$rtr" -6 route add 2001:db8::/32 via fd00:98::2
setup ip -n "$rtr" route add 10.10.0.0/16 via 10.97.0.1
setup ip -n "$rtr" -6 route add fd00:a::/32 via fd00:97::1
setup ip -n "$inet" route add 10.10.0.0/16 via 10.98.0.1
setup ip -n "$inet" -6 route add fd00:a::/32 via fd00:98::1

L_INET=$T/inet.log L_ICMP=$T/guest-icmp.log
listener_start "$inet" "$L_INET" udp:198.51.100.10:7 'udp:[2001:db8:100::10]:7'
: >"$L_ICMP"
ip netns exec "$ga" "$PY" "$TF_NETNS_DIR/icmpprobe.py" capture --log "$L_ICMP" --ready "$T/capture.ready" \
	>>"$T/capture.out" 2>&1 &
CAPTURE_PID=$!
defer kill_pid "$CAPTURE_PID"
wait_for 5 test -e "$T/capture.ready" || die "icmpprobe capture did not start: $(tail -n 3 "$T/capture.out")"
tf_watch "$L_ICMP"

icmpprobe() { local ns=$1; shift; n "$ns" timeout 10 "$PY" "$TF_NETNS_DIR/icmpprobe.py" "$@" >>"$T/probe.out" 2>&1; }

# pmtu PHASE FAMILY DST SPORT: the guest sends 1400 bytes with DF to DST:7, the router answers with
# its PMTU error about it; the guest's kernel must learn MTU 1280 for DST. Enforced, the error
# arrives cut (36 bytes of ICMP, 56 of ICMPv6) and is an allow_icmp_error event.
pmtu() {
	local phase=$1 fam=$2 dst=$3 sport=$4 v=() cut rgot
	[ "$fam" = 6 ] && v=(-6)
	cut=36 && [ "$fam" = 6 ] && cut=56
	n "$ga" ip "${v[@]}" route flush cache >/dev/null 2>&1
	tf_mark
	if icmpprobe "$ga" big "$dst" 7 1400 --sport "$sport" && tail -n 1 "$T/probe.out" | grep -q "socket mtu 1280"; then
		pass "$phase: IPv$fam the guest's socket learnt MTU 1280 (EMSGSIZE on 1400 bytes)"
	else
		fail "$phase: IPv$fam the guest's socket learnt MTU 1280 ($(tail -n 1 "$T/probe.out"))"
	fi
	rgot=$(wait_for 3 grep_since "$L_ICMP" "icmp$fam type=$([ "$fam" = 6 ] && echo 2 || echo 3)" &&
		since "$L_ICMP" | grep "icmp$fam" | head -n 1)
	if [ "$phase" = baseline ]; then
		check "$phase: IPv$fam the router's PMTU error reaches the guest quoting more than a header ($rgot)" \
			test "$(sed -n 's/.* len=\([0-9]*\) .*/\1/p' <<<"$rgot")" -gt "$cut"
	else
		check "$phase: IPv$fam the router's PMTU error reaches the guest cut to $cut bytes ($rgot)" \
			grep -q "len=$cut marker=0" <<<"$rgot"
		expect_event session=a direction=to_guest family="ipv$fam" verdict=allow reason=allow_icmp_error \
			-- "$phase: IPv$fam the PMTU error: event allow/allow_icmp_error"
	fi
	if wait_for 2 sh -c "ip netns exec '$ga' ip ${v[*]} route get '$dst' | grep -q 'mtu 1280'"; then
		pass "$phase: IPv$fam the guest's kernel learnt MTU 1280 for $dst"
	else
		fail "$phase: IPv$fam the guest's kernel learnt MTU 1280 for $dst ($(n "$ga" ip "${v[@]}" route get "$dst" | head -n 2 | tr '\n' ' '))"
	fi
}

# crafted PHASE FAMILY FROM GUEST DST SPORT: a flow GUEST:SPORT -> DST:7 (an echoed datagram), then the
# internet sends a port unreachable about it with 1000 bytes of marker after the quoted UDP header.
crafted() {
	local phase=$1 fam=$2 from=$3 guest=$4 dst=$5 sport=$6 type=3 code=3 cut=36 got
	[ "$fam" = 6 ] && type=1 code=4 cut=56
	n "$ga" timeout 10 "$PY" "$TF_NETNS_DIR/listener.py" udp --sport "$sport" "$dst" 7 >"$T/client.out" 2>&1 ||
		fail "$phase: IPv$fam the guest's UDP flow to $dst:7 got its echo"
	tf_mark
	icmpprobe "$inet" error --src "$from" --dst "$guest" --type $type --code $code --inner-dst "$dst" \
		--sport "$sport" --dport 7 --payload-len 1000
	got=$(wait_for 3 grep_since "$L_ICMP" "icmp$fam type=$type" && since "$L_ICMP" | grep "icmp$fam type=$type" | head -n 1)
	if [ "$phase" = baseline ]; then
		check "$phase: IPv$fam a crafted error with 1000 bytes of payload reaches the guest whole ($got)" \
			grep -q "marker=1" <<<"$got"
	else
		check "$phase: IPv$fam a crafted error with 1000 bytes of payload reaches the guest cut to $cut bytes, no payload ($got)" \
			grep -q "len=$cut marker=0" <<<"$got"
		check_not "$phase: IPv$fam no error holding the payload reached the guest" grep_since "$L_ICMP" "marker=1"
		expect_event session=a direction=to_guest family="ipv$fam" src="$from" verdict=allow reason=allow_icmp_error \
			-- "$phase: IPv$fam the crafted error: event allow/allow_icmp_error from $from"
	fi
}

# --- phase 1: baseline ------------------------------------------------------------------------

note "phase 1: baseline, nothing enforces"
pmtu baseline 4 198.51.100.10 40001
pmtu baseline 6 2001:db8:100::10 40002
crafted baseline 4 198.51.100.10 10.10.1.2 198.51.100.10 40003
crafted baseline 6 2001:db8:100::10 fd00:a:1::2 2001:db8:100::10 40004

# --- phase 2: tapfenced -----------------------------------------------------------------------

note "phase 2: tapfenced with session a"
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" "${TF_ATTACH_MODE:+\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"
session_spec "$T/a.json" a ha $A_MAC 10.10.1.2 fd00:a:1::2 $A_GW_MAC 10.10.1.1 fd00:a:1::1 '[
	{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]},
	{"cidr":"2001:db8:100::/48","proto":"udp","ports":[7]}]'
tfc session add "$T/a.json" >"$T/cli.out" 2>&1 || { fail "session add a: $(head -n 2 "$T/cli.out")"; tf_done; exit 1; }
pass "session add a"

pmtu enforced 4 198.51.100.10 40011
pmtu enforced 6 2001:db8:100::10 40012
crafted enforced 4 198.51.100.10 10.10.1.2 198.51.100.10 40013
crafted enforced 6 2001:db8:100::10 fd00:a:1::2 2001:db8:100::10 40014

check "icmpprobe capture still running" kill -0 "$CAPTURE_PID"
check "tapfenced still running" kill -0 "$TFD_PID"
tfd_log_tail 5
tf_done
