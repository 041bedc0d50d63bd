#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Rejections (docs/reject.md). A session with "on_deny": "reject": a denied TCP connect fails with
# ECONNREFUSED in under 50 ms (IPv4 and IPv6), a denied UDP datagram gets ICMP administratively
# prohibited (EHOSTUNREACH; ICMPv6: EACCES), a lookup of a name no rule allows gets REFUSED at
# once; nothing reaches the listeners. Each three times: as the guest sends them (checksums left
# to offload), with the guest's offload off (the guest's stack checks every answer's checksum),
# and with the host's off (the host finishes the answers' checksums, and the guest checks them).
# The floor is answered like the rest (so silence tells nothing), but multicast and a spoofed
# source get nothing; with "drop", nothing comes back; a quarantine resets an established
# connection. The operator's on_deny and on_deny_floor apply, and the rate limit holds a flood to
# its budget, counted.
#
#   guest ga 10.10.1.2 ─ ha ─ host (router, tapfenced, dnsmasq 10.10.1.1) ─ inet: 198.51.100.10
#   fd00:a:1::2                                                   (tcp 80, 7001), 203.0.113.10,
#                                                                 2001:db8:99::10 (tcp 80)
# TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode (test_reject_xdp.sh runs it in XDP mode).
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-rjh-$TF_SFX guest=tf-rjg-$TF_SFX inet=tf-rji-$TF_SFX
tf_need dnsmasq ethtool
one_guest "$host" "$guest" "$inet"
FAR=203.0.113.10 FAR6=2001:db8:99::10 OK=198.51.100.10 MD=169.254.169.254
setup ip -n "$host" -6 route add $FAR6/128 via fd00:99::2 dev hi
setup ip -n "$inet" addr add $FAR6/128 dev lo nodad
L6=$T/inet6.log
listener_start "$inet" "$L6" "tcp:[$FAR6]:80"
L_FP=$T/fp.log
flowpeer_start "$inet" "$L_FP" --tcp $OK:7001
DNS_LOG=$T/dns.log
dnsmasq_start "$host" "$DNS_LOG" 10.10.1.1 --host-record=allowed.test,$OK --host-record=denied.test,$FAR

# XDP_TX on a veth queues the frame for its peer, whose queue is run only if the peer has an XDP
# program of its own (veth_xdp_flush()): the guest's end gets one that passes everything. A tap
# hands XDP_TX frames to its reader directly.
if [ "${TF_ATTACH_MODE:-}" = xdp ]; then
	printf '%s\n' 'struct xdp_md;' \
		'__attribute__((section("xdp"), used)) int pass(struct xdp_md *c) { return 2; /* XDP_PASS */ }' \
		'char _license[] __attribute__((section("license"), used)) = "GPL";' >"$T/pass.bpf.c"
	setup clang -O2 -target bpf -c "$T/pass.bpf.c" -o "$T/pass.bpf.o"
	setup ip -n "$guest" link set dev ga xdpdrv obj "$T/pass.bpf.o" sec xdp
fi

RP=$TF_NETNS_DIR/rejectprobe.py
# rp ARGS...: rejectprobe.py in the guest; its line in $T/rp.out.
rp() { n "$guest" "$PY" "$RP" "$@" >"$T/rp.out" 2>&1; }
# fails_fast DESC WANT ARGS...: the probe's outcome is WANT within 50 ms.
fails_fast() {
	local desc=$1 want=$2 what outcome t
	shift 2
	rp "$1" --timeout 2 "${@:2}"
	read -r what outcome t _ <"$T/rp.out"
	if [ "$outcome" = "$want" ] && awk -v t="$t" 'BEGIN { exit !(t < 50) }'; then
		pass "$desc: $want in $t ms"
	else
		fail "$desc: want $want in under 50 ms, got: $(cat "$T/rp.out")"
	fi
}
# gets DESC WANT ARGS...: the probe's outcome is WANT (a timeout: nothing came back).
gets() {
	local desc=$1 want=$2 what outcome
	shift 2
	rp "$1" --timeout 1 "${@:2}"
	read -r what outcome _ <"$T/rp.out"
	if [ "$outcome" = "$want" ]; then pass "$desc: $want"; else fail "$desc: want $want, got: $(cat "$T/rp.out")"; fi
}
spec() { # spec FILE ID ON_DENY|-: the session, allowing tcp 80 and 7001 to $OK and allowed.test
	session_spec "$1" "$2" ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
		fd00:a:1::1 "[{\"cidr\":\"$OK/32\",\"proto\":\"tcp\",\"ports\":[80,7001]},{\"host\":\"allowed.test\",\"proto\":\"tcp\",\"ports\":[443]}]"
	[ "$3" = - ] || tfjson set "$1" on_deny "\"$3\"" || die "cannot write $1"
}

# answered VARIANT: every kind of answer, and that nothing got through.
answered() {
	local v=$1
	tf_mark
	fails_fast "$v: TCP connect to $FAR:80" ECONNREFUSED tcp $FAR:80
	fails_fast "$v: TCP connect to [$FAR6]:80" ECONNREFUSED tcp "[$FAR6]:80"
	fails_fast "$v: TCP connect to $OK:22 (a port no rule allows)" ECONNREFUSED tcp $OK:22
	fails_fast "$v: UDP to $FAR:7000" EHOSTUNREACH udp $FAR:7000
	fails_fast "$v: UDP to [$FAR6]:7000" EACCES udp "[$FAR6]:7000"
	fails_fast "$v: a lookup of denied.test" REFUSED dns 10.10.1.1 denied.test
	gets "$v: a lookup of allowed.test" NOERROR dns 10.10.1.1 allowed.test
	gets "$v: TCP connect to $OK:80 (allowed)" connected tcp $OK:80
	expect_not_reached "$L_INET" "tcp $FAR:80 from" "$v: $FAR:80 never reached"
	expect_not_reached "$L6" "from [fd00:a:1::2]" "$v: [$FAR6]:80 never reached"
	expect_event session=r verdict=deny reason=no_rule rejected=True dport=80 -- \
		"$v: the denial's event says it was answered"
	expect_event session=r verdict=deny reason=dns_name_denied rejected=True name=denied.test -- \
		"$v: the refused lookup's event says so too"
}

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json" "\"limits\":{\"reject_per_s\":100,\"reject_burst\":100}${TF_ATTACH_MODE:+,\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"
spec "$T/r.json" r reject
sessions_add r
tfc --json session show r >"$T/show.json" 2>&1
check "session show: on_deny reject" tfjson check "$T/show.json" 'd["session"]["on_deny"] == "reject"'

note "the guest's own stack sends (offloads on)"
answered "offload"
setup ip netns exec "$guest" ethtool -K ga tx off >/dev/null
note "the guest's offload off: the guest checks every answer's checksum"
answered "guest computes checksums"
setup ip netns exec "$guest" ethtool -K ga tx on >/dev/null
setup ip netns exec "$host" ethtool -K ha tx off >/dev/null
note "the host's offload off: it finishes the answers' checksums, the guest checks them"
answered "host finishes checksums"
setup ip netns exec "$host" ethtool -K ha tx on >/dev/null

note "what is never answered"
note "the floor is answered like the rest (on_deny_floor reject, the default), but for addresses no answer may come from"
fails_fast "the metadata server" ECONNREFUSED tcp $MD:80
expect_event session=r verdict=deny reason=floor_metadata rejected=True -- "the floor's denial is answered"
gets "UDP to multicast 224.0.0.251" ETIMEDOUT udp 224.0.0.251:5353
expect_no_event session=r rejected=True dst=224.0.0.251 -- "... multicast is not answered"
setup ip -n "$guest" addr add 10.10.1.99/24 dev ga
tf_mark
check_not "a connect from a spoofed 10.10.1.99 gets nothing back" tcp_get "$guest" --src 10.10.1.99 $FAR 80
expect_event session=r verdict=deny reason=spoofed_src -- "the spoofed connect is denied"
expect_no_event session=r reason=spoofed_src rejected=True -- "... not answered"
setup ip -n "$guest" addr del 10.10.1.99/24 dev ga

note "a quarantine resets an established connection"
flowpeer_stream "$guest" "$T/st.log" --tcp $OK:7001 --sport 42001 --tag st --stop "$T/stop" \
	--interval 0.2
sleep 1
expect_reached "$L_FP" "from 10.10.1.2:42001 msg st" "the stream reaches its server"
tf_mark
check "session quarantine r" tfc session quarantine r
if wait_for 3 grep -q "error.*[Rr]eset" "$T/st.log"; then
	pass "quarantined: the guest's connection is reset ($(grep -m1 error "$T/st.log"))"
else
	fail "quarantined: the guest's connection is not reset: $(tail -n 2 "$T/st.log")"
fi
touch "$T/stop"
check "session resume r" tfc session resume r

note "on_deny drop: nothing comes back"
tfc session del r >/dev/null 2>&1
spec "$T/d.json" d drop
sessions_add d
gets "drop: TCP connect to $FAR:80" ETIMEDOUT tcp $FAR:80
gets "drop: UDP to $FAR:7000" ETIMEDOUT udp $FAR:7000
gets "drop: a lookup of denied.test" timeout dns 10.10.1.1 denied.test
tfc session del d >/dev/null 2>&1

note "the operator's on_deny and on_deny_floor, and the rate limit"
tfd_stop
tfd_config "$T/tf.json" "\"on_deny\":\"reject\",\"on_deny_floor\":\"drop\",\"limits\":{\"reject_per_s\":5,\"reject_burst\":5}${TF_ATTACH_MODE:+,\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"
spec "$T/o.json" o -
sessions_add o
tfc --json session show o >"$T/show.json" 2>&1
check "session show: on_deny reject, the operator's" tfjson check "$T/show.json" 'd["session"]["on_deny"] == "reject"'
fails_fast "the operator's on_deny: TCP connect to $FAR:80" ECONNREFUSED tcp $FAR:80
gets "on_deny_floor drop: the metadata server gets nothing" ETIMEDOUT tcp $MD:80
check "a flood of 200 denied datagrams" rp flood $FAR:7000 200
tfc --json session show o >"$T/show.json" 2>&1
check "the flood: at most its burst answered, the rest counted as limited" tfjson check "$T/show.json" \
	'd["session"]["counters"]["rejected"] <= 2 + 2 * (5 + 2) and d["session"]["counters"]["reject_limited"] >= 150'

tf_done
