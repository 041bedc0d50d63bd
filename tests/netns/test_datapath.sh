#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfence lets each guest reach exactly its allowlist and nothing else, on veths and a tap.
#
#  ┌──────────────────────┐   ┌──────────────────────┐
#  │ $ga  (guest A)       │   │ $gb  (guest B)       │    tapvmm.py (a VMM's part)
#  │ ga 10.10.1.2/24      │   │ gb 10.10.2.2/24      │    guest 02:00:00:00:0c:02
#  │    (+ .99 to spoof)  │   │    fd00:a:2::2/64    │          10.10.3.2
#  │    fd00:a:1::2/64    │   │ listener :8082, u:7  │    writes/reads frames on the
#  │ listener :8081       │   │                      │    /dev/net/tun fd of "tc"
#  └─────────┬────────────┘   └─────────┬────────────┘               │
#            │ veth                     │ veth                       │ tap
#  ┌─────────┴──────────────────────────┴────────────────────────────┴───────┐
#  │ $host  (router; tapfenced runs here and attaches to ha, hb, tc)         │
#  │ ha 10.10.1.1/24 fd00:a:1::1   hb 10.10.2.1/24 fd00:a:2::1               │
#  │ tc 10.10.3.1/24 fd00:a:3::1   (session a, b, c: one per guest link)     │
#  │ hi 10.99.0.1/30 fd00:99::1    routes 198.51.100/24 203.0.113/24         │
#  │                               169.254.169.254 192.168.77/24 2001:db8::/32│
#  └─────────────────────────────────────┬───────────────────────────────────┘
#                                        │ veth
#  ┌─────────────────────────────────────┴───────────────────────────────────┐
#  │ $inet  ii 10.99.0.2/30 fd00:99::2; on lo: 198.51.100.10 203.0.113.10    │
#  │ 169.254.169.254 (metadata) 192.168.77.10 (private) 2001:db8:100::10     │
#  │ 2001:db8:200::10; listeners on all of them; routes back to 10.10/16 and │
#  │ fd00:a::/32 via $host                                                   │
#  └─────────────────────────────────────────────────────────────────────────┘
#
# Phase 1 (baseline, nothing enforces): every probe, allowed or to-be-denied, reaches its listener
# and gets its reply, so the negative checks later cannot pass because a probe was broken.
# Phase 2: tapfenced with sessions a, b, c; each probe reaches or not per the allowlists, and the
# event log names the reason. Then live rule changes, the hard floor, and --cleanup.
# TF_BASELINE_ONLY=1 stops after phase 1 (needs no daemon). TF_KEEP=1 keeps $T for inspection.
# TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode (default: the daemon's own).

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX gb=tf-gb-$TF_SFX inet=tf-inet-$TF_SFX

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$ga" "$gb" "$inet"
setup ns_router "$host"

A_MAC=02:00:00:00:0a:02 A_GW_MAC=02:00:00:00:0a:01
B_MAC=02:00:00:00:0b:02 B_GW_MAC=02:00:00:00:0b:01
C_MAC=02:00:00:00:0c:02 C_GW_MAC=02:00:00:00:0c:01

setup guest_link "$ga" ga $A_MAC 10.10.1.2/24 fd00:a:1::2/64 "$host" ha $A_GW_MAC 10.10.1.1/24 fd00:a:1::1/64
setup guest_link "$gb" gb $B_MAC 10.10.2.2/24 fd00:a:2::2/64 "$host" hb $B_GW_MAC 10.10.2.1/24 fd00:a:2::1/64
setup tap_link "$host" tc $C_GW_MAC 10.10.3.1/24 fd00:a:3::1/64 $C_MAC 10.10.3.2 fd00:a:3::2
# Second addresses on guest A, in its own subnets, to send from as a spoofer would (secondary
# and deprecated, so the kernel never picks them unless told to).
setup ip -n "$ga" addr add 10.10.1.99/24 dev ga
setup ip -n "$ga" addr add fd00:a:1::99/64 dev ga nodad preferred_lft 0

setup inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 \
	198.51.100.0/24 203.0.113.0/24 169.254.169.254/32 192.168.77.0/24 2001:db8::/32 -- \
	198.51.100.10 203.0.113.10 169.254.169.254 192.168.77.10 2001:db8:100::10 2001:db8:200::10

# --- listeners --------------------------------------------------------------------------------

L_INET=$T/inet.log L_A=$T/guest-a.log L_B=$T/guest-b.log
listener_start "$inet" "$L_INET" \
	tcp:198.51.100.10:80 tcp:198.51.100.10:8080 tcp:198.51.100.10:22 tcp:198.51.100.10:443 \
	tcp:203.0.113.10:80 tcp:203.0.113.10:443 tcp:169.254.169.254:80 tcp:192.168.77.10:80 \
	'tcp:[2001:db8:100::10]:80' 'tcp:[2001:db8:200::10]:80' \
	udp:198.51.100.10:7 udp:198.51.100.10:9 udp:203.0.113.10:7
PID_INET=$LISTENER_PID
listener_start "$ga" "$L_A" tcp:10.10.1.2:8081
PID_A=$LISTENER_PID
listener_start "$gb" "$L_B" tcp:10.10.2.2:8082 udp:10.10.2.2:7
PID_B=$LISTENER_PID
# Session c's resolver address: a plain UDP listener, so every datagram that arrives is logged.
L_RES=$T/resolver-c.log
listener_start "$host" "$L_RES" udp:10.10.3.1:53

# --- probes -----------------------------------------------------------------------------------
# The probe table (lib.sh: probe, run_probe).
A4="direction=from_guest session=a ifname=ha family=ipv4"
A6="direction=from_guest session=a ifname=ha family=ipv6"
B4="direction=from_guest session=b ifname=hb family=ipv4"
C4="direction=from_guest session=c ifname=tc"
tap() { tapvmm "$host" tc "$@"; }
tapc() { tap $C_MAC 10.10.3.2 $C_GW_MAC "$@"; }

probe a_tcp80 allow allow_rule "$A4 proto=tcp dst=198.51.100.10 dport=80" \
	"$L_INET" "tcp 198.51.100.10:80 from 10.10.1.2:" "A tcp 198.51.100.10:80 (rule port 80)" \
	-- tcp_get "$ga" 198.51.100.10 80
probe a_tcp8080 allow allow_rule "$A4 proto=tcp dst=198.51.100.10 dport=8080" \
	"$L_INET" "tcp 198.51.100.10:8080 from 10.10.1.2:" "A tcp 198.51.100.10:8080 (rule range 8000-8100)" \
	-- tcp_get "$ga" 198.51.100.10 8080
probe a_tcp22 deny port_not_allowed "$A4 proto=tcp dst=198.51.100.10 dport=22" \
	"$L_INET" "tcp 198.51.100.10:22 from 10.10.1.2:" "A tcp 198.51.100.10:22 (port not in rule)" \
	-- tcp_get "$ga" 198.51.100.10 22
probe a_tcp_norule deny no_rule "$A4 proto=tcp dst=203.0.113.10 dport=80" \
	"$L_INET" "tcp 203.0.113.10:80 from 10.10.1.2:" "A tcp 203.0.113.10:80 (no rule)" \
	-- tcp_get "$ga" 203.0.113.10 80
probe a_tcp_bs deny no_rule "$A4 proto=tcp dst=203.0.113.10 dport=443" \
	"$L_INET" "tcp 203.0.113.10:443 from 10.10.1.2:" "A tcp 203.0.113.10:443 (only B's rule)" \
	-- tcp_get "$ga" 203.0.113.10 443
probe a_metadata deny floor_metadata "$A4 proto=tcp dst=169.254.169.254 dport=80" \
	"$L_INET" "tcp 169.254.169.254:80 from 10.10.1.2:" "A tcp 169.254.169.254:80 (metadata floor)" \
	-- tcp_get "$ga" 169.254.169.254 80
probe a_private deny floor_private "$A4 proto=tcp dst=192.168.77.10 dport=80" \
	"$L_INET" "tcp 192.168.77.10:80 from 10.10.1.2:" "A tcp 192.168.77.10:80 (private floor)" \
	-- tcp_get "$ga" 192.168.77.10 80
probe a_to_b deny other_session "$A4 proto=tcp dst=10.10.2.2 dport=8082" \
	"$L_B" "tcp 10.10.2.2:8082 from 10.10.1.2:" "A tcp 10.10.2.2:8082 (guest B)" \
	-- tcp_get "$ga" 10.10.2.2 8082
probe a_spoof4 deny spoofed_src "$A4 proto=tcp src=10.10.1.99 dst=198.51.100.10 dport=80" \
	"$L_INET" "tcp 198.51.100.10:80 from 10.10.1.99:" "A tcp from spoofed 10.10.1.99 to 198.51.100.10:80" \
	-- tcp_get "$ga" --src 10.10.1.99 198.51.100.10 80
probe a_v6_ok allow allow_rule "$A6 proto=tcp dst=2001:db8:100::10 dport=80" \
	"$L_INET" "tcp [2001:db8:100::10]:80 from [fd00:a:1::2]:" "A tcp [2001:db8:100::10]:80 (v6 rule)" \
	-- tcp_get "$ga" 2001:db8:100::10 80
probe a_v6_norule deny no_rule "$A6 proto=tcp dst=2001:db8:200::10 dport=80" \
	"$L_INET" "tcp [2001:db8:200::10]:80 from [fd00:a:1::2]:" "A tcp [2001:db8:200::10]:80 (no v6 rule)" \
	-- tcp_get "$ga" 2001:db8:200::10 80
probe a_spoof6 deny spoofed_src "$A6 proto=tcp src=fd00:a:1::99 dst=2001:db8:100::10 dport=80" \
	"$L_INET" "tcp [2001:db8:100::10]:80 from [fd00:a:1::99]:" "A tcp from spoofed fd00:a:1::99 to [2001:db8:100::10]:80" \
	-- tcp_get "$ga" --src fd00:a:1::99 2001:db8:100::10 80
probe a_udp7 allow allow_rule "$A4 proto=udp dst=198.51.100.10 dport=7" \
	"$L_INET" "udp 198.51.100.10:7 from 10.10.1.2:" "A udp 198.51.100.10:7 (udp rule)" \
	-- udp_echo "$ga" 198.51.100.10 7
probe a_udp9 deny port_not_allowed "$A4 proto=udp dst=198.51.100.10 dport=9" \
	"$L_INET" "udp 198.51.100.10:9 from 10.10.1.2:" "A udp 198.51.100.10:9 (port not in rule)" \
	-- udp_echo "$ga" 198.51.100.10 9
probe a_udp_norule deny no_rule "$A4 proto=udp dst=203.0.113.10 dport=7" \
	"$L_INET" "udp 203.0.113.10:7 from 10.10.1.2:" "A udp 203.0.113.10:7 (only B's rule)" \
	-- udp_echo "$ga" 203.0.113.10 7
probe unsolicited deny unsolicited "direction=to_guest session=a ifname=ha proto=tcp dst=10.10.1.2 dport=8081" \
	"$L_A" "tcp 10.10.1.2:8081 from 198.51.100.10:" "inet tcp to guest A 10.10.1.2:8081 (unsolicited)" \
	-- tcp_get "$inet" --src 198.51.100.10 10.10.1.2 8081
probe b_tcp443 allow allow_rule "$B4 proto=tcp dst=203.0.113.10 dport=443" \
	"$L_INET" "tcp 203.0.113.10:443 from 10.10.2.2:" "B tcp 203.0.113.10:443 (B's rule)" \
	-- tcp_get "$gb" 203.0.113.10 443
probe b_udp7 allow allow_rule "$B4 proto=udp dst=203.0.113.10 dport=7" \
	"$L_INET" "udp 203.0.113.10:7 from 10.10.2.2:" "B udp 203.0.113.10:7 (B's rule)" \
	-- udp_echo "$gb" 203.0.113.10 7
probe b_tcp80 deny no_rule "$B4 proto=tcp dst=198.51.100.10 dport=80" \
	"$L_INET" "tcp 198.51.100.10:80 from 10.10.2.2:" "B tcp 198.51.100.10:80 (only A's rule)" \
	-- tcp_get "$gb" 198.51.100.10 80
probe c_udp7 allow allow_rule "$C4 family=ipv4 proto=udp dst=198.51.100.10 dport=7" \
	"$L_INET" "udp 198.51.100.10:7 from 10.10.3.2:" "C (tap) udp 198.51.100.10:7, echo read from the tap fd" \
	-- tapc udp 198.51.100.10 7
probe c_udp_norule deny no_rule "$C4 family=ipv4 proto=udp dst=203.0.113.10 dport=7" \
	"$L_INET" "udp 203.0.113.10:7 from 10.10.3.2:" "C (tap) udp 203.0.113.10:7 (no rule)" \
	-- tapc udp 203.0.113.10 7
probe c_spoof deny spoofed_src "$C4 family=ipv4 proto=udp src=10.10.3.99 dst=198.51.100.10 dport=7" \
	"$L_INET" "udp 198.51.100.10:7 from 10.10.3.99:" "C (tap) udp from spoofed 10.10.3.99 to 198.51.100.10:7" \
	-- tapc udp --src 10.10.3.99 198.51.100.10 7
probe c_l2mac deny l2_src_mac "$C4" \
	"$L_INET" "udp 198.51.100.10:7 from 10.10.3.2:" "C (tap) udp 198.51.100.10:7 from a foreign MAC" \
	-- tap 02:00:00:00:0c:99 10.10.3.2 $C_GW_MAC udp 198.51.100.10 7
# A priority tag (VLAN 0) is delivered like an untagged frame when nothing enforces, and at TC
# the stack has already taken the tag off: the datapath must look at the skb, not the frame.
probe c_vlan0 deny l2_vlan "$C4" \
	"$L_INET" "udp 198.51.100.10:7 from 10.10.3.2:" "C (tap) udp 198.51.100.10:7 with an 802.1Q priority tag" \
	-- tapc udp --vlan 0 198.51.100.10 7
probe c_arp_gw allow - "" \
	- - "C (tap) ARP who-has gateway 10.10.3.1 is answered" \
	-- tapc arp 10.10.3.1
probe c_arp_other deny arp "$C4" \
	- - "C (tap) ARP who-has 10.10.1.1 (not its gateway)" \
	-- tapc arp 10.10.1.1

# --- phase 1: baseline ------------------------------------------------------------------------

note "phase 1: baseline, nothing enforces"
for p in "${probes[@]}"; do run_probe "$p" baseline; done

# dns_gso PHASE: session c writes two DNS queries to its resolver as one UDP segmentation offload
# write (the host cuts it in two datagrams): an allowed name's query, then another name's.
dns_gso() {
	local n
	tf_mark
	tapc dns-gso 10.10.3.1 allowed.example.com exfil.denied.example.net >/dev/null 2>&1
	sleep 0.5
	n=$(since "$L_RES" | grep -c "udp 10.10.3.1:53 from 10.10.3.2:40053")
	if [ "$1" = baseline ]; then
		check "baseline: C (tap) two queries in one UDP GSO write: both reach the resolver ($n)" test "$n" -eq 2
	else
		check "enforced: C (tap) two queries in one UDP GSO write: none reaches the resolver ($n)" test "$n" -eq 0
		# XDP reads the write whole, and trailing bytes after a question are dns_malformed there.
		# shellcheck disable=SC2086 # the filter is a list of words
		expect_event $C4 proto=udp dst=10.10.3.1 dport=53 verdict=deny reason="$GSO2_REASON" \
			-- "enforced: C (tap) UDP GSO write to the resolver: event deny/$GSO2_REASON"
		tf_mark
		tapc dns-gso 10.10.3.1 allowed.example.com >/dev/null 2>&1
		expect_reached "$L_RES" "udp 10.10.3.1:53 from 10.10.3.2:40053" \
			"enforced: C (tap) the allowed name's query alone reaches the resolver"
	fi
}
dns_gso baseline
GSO2_REASON=dns_gso
[ "${TF_ATTACH_MODE:-}" = xdp ] && GSO2_REASON=dns_malformed

# dns_gso_opt PHASE: one UDP GSO write that reads whole as one query for the allowed name (its EDNS0
# OPT record runs to the end), with gso_size chosen so that its last segment, inside the OPT
# record's data, is a complete query for a name no rule allows. The resolver logs the names of the
# queries it receives: the hidden name must never be among them, in either attach mode.
dns_gso_opt() {
	tf_mark
	tapc dns-gso --hide-in-opt 10.10.3.1 allowed.example.com exfil.denied.example.net >/dev/null 2>&1
	if [ "$1" = baseline ]; then
		expect_reached "$L_RES" "udp 10.10.3.1:53 from 10.10.3.2:40053 len 42 q=exfil.denied.example.net" \
			"baseline: C (tap) a query hidden in an OPT record of a UDP GSO write reaches the resolver"
	else
		expect_not_reached "$L_RES" "udp 10.10.3.1:53 from 10.10.3.2:40053" \
			"enforced: C (tap) a query hidden in an OPT record of a UDP GSO write: nothing reaches the resolver"
		# shellcheck disable=SC2086 # the filter is a list of words
		expect_event $C4 proto=udp dst=10.10.3.1 dport=53 verdict=deny reason=dns_gso \
			-- "enforced: C (tap) a query hidden in an OPT record of a UDP GSO write: event deny/dns_gso"
	fi
}
dns_gso_opt baseline

if [ -n "${TF_BASELINE_ONLY:-}" ]; then
	tf_done
	exit
fi

# --- phase 2: tapfenced -----------------------------------------------------------------------

note "phase 2: tapfenced with sessions a, b, c"
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" "${TF_ATTACH_MODE:+\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"

session_spec "$T/a.json" a ha $A_MAC 10.10.1.2 fd00:a:1::2 $A_GW_MAC 10.10.1.1 fd00:a:1::1 '[
	{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80,"8000-8100"]},
	{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]},
	{"cidr":"2001:db8:100::/48","proto":"tcp","ports":[80]}]'
session_spec "$T/b.json" b hb $B_MAC 10.10.2.2 fd00:a:2::2 $B_GW_MAC 10.10.2.1 fd00:a:2::1 '[
	{"cidr":"203.0.113.0/24","proto":"tcp","ports":[443]},
	{"cidr":"203.0.113.0/24","proto":"udp","ports":[7]}]'
session_spec "$T/c.json" c tc $C_MAC 10.10.3.2 fd00:a:3::2 $C_GW_MAC 10.10.3.1 fd00:a:3::1 '[
	{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]},
	{"host":"allowed.example.com","proto":"tcp","ports":[443]}]'
sessions_ok=1
sessions_add a b c || sessions_ok=0
tfc session list 2>&1 | sed 's/^/#   session list: /'
# Without its sessions every probe below would fail for one reason, already reported.
[ "$sessions_ok" = 1 ] || { tf_done; exit 1; }

for p in "${probes[@]}"; do run_probe "$p" enforced; done
dns_gso enforced
dns_gso_opt enforced

# --- phase 3: live rule changes on session a --------------------------------------------------

note "phase 3: live rules"
rule='{"cidr":"203.0.113.10/32","proto":"tcp","ports":[80]}'
check "rule add a $rule" tfc rule add a "$rule"
p_verdict[a_tcp_norule]=allow p_reason[a_tcp_norule]=allow_rule
p_desc[a_tcp_norule]="A tcp 203.0.113.10:80 after rule add"
run_probe a_tcp_norule enforced
check "rule del a $rule" tfc rule del a "$rule"
p_verdict[a_tcp_norule]=deny p_reason[a_tcp_norule]=no_rule
p_desc[a_tcp_norule]="A tcp 203.0.113.10:80 after rule del"
run_probe a_tcp_norule enforced

# The floor wins over a session rule. A daemon may refuse such a rule outright; either way the
# probe must not get through, so the rule add result is only noted.
for r in '{"cidr":"169.254.0.0/16","proto":"tcp","ports":[80]}' \
	'{"cidr":"192.168.77.0/24","proto":"tcp","ports":[80]}'; do
	if tfc rule add a "$r" >"$T/cli.out" 2>&1; then
		note "rule add a $r: accepted"
	else
		note "rule add a $r: refused: $(head -n 1 "$T/cli.out")"
	fi
done
p_desc[a_metadata]="A tcp 169.254.169.254:80 with a rule for 169.254.0.0/16"
run_probe a_metadata enforced
p_desc[a_private]="A tcp 192.168.77.10:80 with a rule for 192.168.77.0/24"
run_probe a_private enforced

# A negative check means something only while the listener behind it is alive.
check "inet listener still running" kill -0 "$PID_INET"
check "guest A listener still running" kill -0 "$PID_A"
check "guest B listener still running" kill -0 "$PID_B"
check "tapfenced still running" kill -0 "$TFD_PID"

# The whole feed: well-formed, and no event for packets of an established flow.
tf_unmark "$TF_EVENTS"
expect_event_schema "event log: every line is JSON with the common keys"
expect_no_event reason=allow_flow -- "event log: no allow_flow events"

# --- phase 4: stop and --cleanup --------------------------------------------------------------

note "phase 4: stop, --cleanup"
tfd_stop
# Detached is shown by what passes now (below): Debian 12's bpftool lists no tcx links per device.
check "after --cleanup: no pins left under the pin dir" \
	test -z "$(find "$TF_PIN_DIR" -mindepth 1 2>/dev/null | head -n 1)"
p_desc[a_tcp_norule]="A tcp 203.0.113.10:80 (was denied)"
run_probe a_tcp_norule after-cleanup

tfd_log_tail 5
tf_done
