#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that no rule and no DNS answer lets a guest reach the host's own addresses or its gateway.
#
#  ┌──────────────────────────────┐      ┌──────────────────────────────────────┐
#  │ $ga  (guest A)               │      │ $gb  (guest B)                       │
#  │ ga 10.10.1.2/24 fd00:a:1::2  │      │ gb 10.10.2.2/24 fd00:a:2::2          │
#  │ session a: 0.0.0.0/0, ::/0   │      │ session b: gateway 198.51.100.254    │
#  │   (proto any)                │      │   2001:db8:fe::254 (not on $host),   │
#  │                              │      │   rules for exactly those, host rules│
#  └──────────────┬───────────────┘      └────────────────┬─────────────────────┘
#                 │ veth                                  │ veth (static neighbours)
#  ┌──────────────┴───────────────────────────────────────┴─────────────────────┐
#  │ $host  (router; tapfenced runs here, attaches to ha and hb)                │
#  │ ha 10.10.1.1/24 fd00:a:1::1   hb 10.10.2.1/24 fd00:a:2::1                  │
#  │ hi 10.99.0.1/30 fd00:99::1, uplink addresses 203.0.113.1/24 2001:db8:99::1 │
#  │ listeners tcp 203.0.113.1:8080 [2001:db8:99::1]:8080, udp 0.0.0.0:9999     │
#  │ vx4: VXLAN 42 local 203.0.113.1 dstport 4789                               │
#  │ vx6: VXLAN 43 local 2001:db8:99::1 dstport 4790                            │
#  │ routes 198.51.100.254 2001:db8:fe::/48 169.254.169.254 192.0.2.0/24        │
#  │        2001:db8:77::/48 -> inet; later 192.0.2.1, 2001:db8:77::1 on hi too │
#  └─────────────────────────────────────┬──────────────────────────────────────┘
#                                        │ veth
#  ┌─────────────────────────────────────┴──────────────────────────────────────┐
#  │ $inet  ii 10.99.0.2/30 fd00:99::2; on lo 198.51.100.254 2001:db8:fe::254   │
#  │ (B's gateway: listeners :8080, dnsmasq :53 = B's resolver),                │
#  │ 169.254.169.254 (udp :7, the metadata service), 192.0.2.1 2001:db8:77::1   │
#  │ (tcp :8080)                                                                │
#  └────────────────────────────────────────────────────────────────────────────┘
#
# dnsmasq: hostsvc.example.com A 203.0.113.1 AAAA 2001:db8:99::1 (the host's uplink),
# gw.example.com A 198.51.100.254 (B's gateway), ok.example.com A 192.0.2.1.
#
# Phase 1 (baseline, nothing enforces): every probe below reaches its listener: the host's
# services, the metadata server through a VXLAN packet decapsulated by the host, B's gateway.
# Phase 2: tapfenced; none of them does, with the reason in the feed; DNS answers naming a host
# or gateway address are not learnt; an address added to the host later is floored and one
# removed is not any more. TF_KEEP=1 keeps $T for inspection.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX gb=tf-gb-$TF_SFX inet=tf-inet-$TF_SFX

tf_need dnsmasq dig

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$ga" "$gb" "$inet"
setup ns_router "$host"

A_MAC=02:00:00:00:0a:02 A_GW_MAC=02:00:00:00:0a:01
B_MAC=02:00:00:00:0b:02 B_GW_MAC=02:00:00:00:0b:01
B_GW4=198.51.100.254 B_GW6=2001:db8:fe::254
B_GW_LL=fe80::ff:fe00:b01 # EUI-64 of B_GW_MAC
UP4=203.0.113.1 UP6=2001:db8:99::1
VX4_MAC=02:00:00:00:42:01 VX6_MAC=02:00:00:00:43:01

setup guest_link "$ga" ga $A_MAC 10.10.1.2/24 fd00:a:1::2/64 "$host" ha $A_GW_MAC 10.10.1.1/24 fd00:a:1::1/64
setup guest_link "$gb" gb $B_MAC 10.10.2.2/24 fd00:a:2::2/64 "$host" hb $B_GW_MAC 10.10.2.1/24 fd00:a:2::1/64
setup inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 \
	$B_GW4/32 2001:db8:fe::/48 169.254.169.254/32 192.0.2.0/24 2001:db8:77::/48 -- \
	$B_GW4 $B_GW6 169.254.169.254 192.0.2.1 2001:db8:77::1
setup ip -n "$host" addr add $UP4/24 dev hi
setup ip -n "$host" addr add $UP6/64 dev hi nodad

# Guest B's gateway is an address the host does not have (it lives in $inet, as a host end in
# another namespace would): both ends know the other's MAC statically, since the host's own
# source addresses on hb are not B's gateway, so tapfence would refuse its ARP and NDP.
setup ip -n "$gb" route replace default via $B_GW4 dev gb onlink
setup ip -n "$gb" -6 route replace default via $B_GW_LL dev gb
setup ip -n "$gb" neigh replace $B_GW4 lladdr $B_GW_MAC dev gb nud permanent
setup ip -n "$host" neigh replace 10.10.2.2 lladdr $B_MAC dev hb nud permanent
setup ip -n "$host" neigh replace fd00:a:2::2 lladdr $B_MAC dev hb nud permanent
setup ip -n "$gb" neigh replace $B_GW_LL lladdr $B_GW_MAC dev gb nud permanent

# Tunnel endpoints on the host's uplink addresses: what arrives there is decapsulated and routed.
setup ip -n "$host" link add vx4 address $VX4_MAC type vxlan id 42 dstport 4789 local $UP4 nolearning
setup ip -n "$host" link add vx6 address $VX6_MAC type vxlan id 43 dstport 4790 local $UP6 nolearning
setup ip -n "$host" link set vx4 up
setup ip -n "$host" link set vx6 up

# --- resolver (B's, at its gateway) and listeners ---------------------------------------------

DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$inet" "$DNS_LOG" "$B_GW4" --local=/example.com/ \
	--host-record=hostsvc.example.com,$UP4,$UP6,300 --host-record=gw.example.com,$B_GW4,300 \
	--host-record=ok.example.com,192.0.2.1,300

L_HOST=$T/host.log L_INET=$T/inet.log
listener_start "$host" "$L_HOST" tcp:$UP4:8080 "tcp:[$UP6]:8080" udp:0.0.0.0:9999
listener_start "$inet" "$L_INET" tcp:$B_GW4:8080 "tcp:[$B_GW6]:8080" udp:169.254.169.254:7 \
	tcp:192.0.2.1:8080 "tcp:[2001:db8:77::1]:8080"

# --- probes -----------------------------------------------------------------------------------

ENFORCED=0 # phase 2: probes also expect their events

# vxlan_send NS OUTER_DST PORT INNER_MAC TAG: a UDP datagram to the VXLAN port of OUTER_DST whose
# payload is a VXLAN header and an Ethernet frame to INNER_MAC carrying UDP from a made-up source,
# 198.18.0.7, to the metadata server 169.254.169.254:7, with TAG as its payload.
vxlan_send() {
	n "$1" "$PY" "$TF_NETNS_DIR/vxlan_send.py" "$2" "$3" "$4" "$5"
}

# probe_vxlan DESC OUTER_DST PORT INNER_MAC reached|blocked
probe_vxlan() {
	local desc=$1 dst=$2 port=$3 mac=$4 want=$5 tag=vx-$RANDOM
	tf_mark
	vxlan_send "$ga" "$dst" "$port" "$mac" "$tag" || fail "$desc: the guest could not send"
	if [ "$want" = reached ]; then
		expect_reached "$L_INET" "udp 169.254.169.254:7 from 198.18.0.7:40007" "$desc: the inner packet reached the metadata server"
	else
		sleep 1
		expect_not_reached "$L_INET" "udp 169.254.169.254:7 from 198.18.0.7:40007" "$desc: the inner packet never reached the metadata server"
		expect_event reason=floor_host dst="$dst" dport="$port" -- "$desc: event floor_host"
	fi
}

# probe_udp DESC LOG NS SRC DST PORT LOGTEXT reached|blocked [FILTER...]
probe_udp() {
	local desc=$1 log=$2 ns=$3 src=$4 dst=$5 port=$6 text=$7 want=$8
	shift 8
	tf_mark
	udp_echo "$ns" "$dst" "$port"
	if [ "$want" = reached ]; then
		expect_reached "$log" "$text from $src:" "$desc: reached the listener"
	else
		expect_not_reached "$log" "$text from $src:" "$desc: never reached the listener"
		expect_event "$@" -- "$desc: event $*"
	fi
}

# tcp_probe DESC LOG NS SRC DST PORT reached|blocked [FILTER...]: an HTTP GET from NS (whose
# address is SRC) to DST:PORT; the reply came back and the listener logging to LOG saw it, or
# neither, and then (phase 2) an event matches FILTER.
tcp_probe() {
	local desc=$1 log=$2 ns=$3 src=$4 dst=$5 port=$6 want=$7 text
	shift 7
	case $dst in
	*:*) text="tcp [$dst]:$port from [$src]:" ;;
	*) text="tcp $dst:$port from $src:" ;;
	esac
	tf_mark
	if [ "$want" = reached ]; then
		check "$desc: the client got the reply" tcp_get "$ns" "$dst" "$port"
		expect_reached "$log" "$text" "$desc: reached the listener"
	else
		check_not "$desc: the client got no reply" tcp_get "$ns" "$dst" "$port"
		expect_not_reached "$log" "$text" "$desc: never reached the listener"
		[ $ENFORCED = 1 ] && [ $# -gt 0 ] && expect_event "$@" -- "$desc: event $*"
	fi
	return 0
}

# dig_a NS NAME TYPE: B asks its resolver; the short answer goes to $T/dig.out.
dig_a() {
	n "$1" timeout 10 dig @$B_GW4 +time=2 +tries=1 +short "$2" "$3" >"$T/dig.out" 2>&1
}

hosts_probes() {
	local want=$1 f4=() f6=() fb=() fg4=() fg6=()
	if [ "$want" = blocked ]; then
		f4=(reason=floor_host dst=$UP4) f6=(reason=floor_host dst=$UP6)
		fb=(reason=floor_host dst=203.0.113.255)
		fg4=(reason=floor_gateway dst=$B_GW4) fg6=(reason=floor_gateway dst=$B_GW6)
	fi
	tcp_probe "A to the host's uplink $UP4" "$L_HOST" "$ga" 10.10.1.2 $UP4 8080 "$want" "${f4[@]}"
	tcp_probe "A to the host's uplink $UP6" "$L_HOST" "$ga" fd00:a:1::2 $UP6 8080 "$want" "${f6[@]}"
	probe_udp "A to the uplink's broadcast 203.0.113.255" "$L_HOST" "$ga" 10.10.1.2 203.0.113.255 9999 \
		"udp 0.0.0.0:9999" "$want" "${fb[@]}"
	probe_vxlan "A's VXLAN packet to $UP4:4789" $UP4 4789 $VX4_MAC "$want"
	probe_vxlan "A's VXLAN packet to [$UP6]:4790" $UP6 4790 $VX6_MAC "$want"
	tcp_probe "B to its gateway $B_GW4" "$L_INET" "$gb" 10.10.2.2 $B_GW4 8080 "$want" "${fg4[@]}"
	tcp_probe "B to its gateway $B_GW6" "$L_INET" "$gb" fd00:a:2::2 $B_GW6 8080 "$want" "${fg6[@]}"
}

# --- phase 1: baseline ------------------------------------------------------------------------

note "phase 1: baseline, nothing enforces"
hosts_probes reached
check "baseline: B resolves hostsvc.example.com to $UP4" eval "dig_a $gb hostsvc.example.com A && grep -qxF $UP4 $T/dig.out"

# --- phase 2: enforced ------------------------------------------------------------------------

note "phase 2: tapfenced"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json" '"limits":{"floor_entries":1024}'
tfd_start "$host"
ENFORCED=1

session_spec "$T/a.json" a ha $A_MAC 10.10.1.2 fd00:a:1::2 $A_GW_MAC 10.10.1.1 fd00:a:1::1 \
	'[{"cidr":"0.0.0.0/0","proto":"any"},{"cidr":"::/0","proto":"any"}]'
session_spec "$T/b.json" b hb $B_MAC 10.10.2.2 fd00:a:2::2 $B_GW_MAC $B_GW4 $B_GW6 \
	'[{"cidr":"'$B_GW4'","proto":"tcp","ports":[8080]},{"cidr":"'$B_GW6'","proto":"tcp","ports":[8080]},
	  {"host":"hostsvc.example.com","proto":"tcp","ports":[8080]},
	  {"host":"gw.example.com","proto":"tcp","ports":[8080]},
	  {"host":"ok.example.com","proto":"tcp","ports":[8080]}]'
check "session a added" tfc session add "$T/a.json"
check "session b added" tfc session add "$T/b.json"

hosts_probes blocked

# B's host rules: an answer naming the host or B's gateway is not learnt, the others are.
tf_mark
check "B resolves hostsvc.example.com (the answer still reaches the guest)" \
	eval "dig_a $gb hostsvc.example.com A && grep -qxF $UP4 $T/dig.out"
expect_event reason=dns_rebind dst=$UP4 -- "an answer naming the host's $UP4 is a dns_rebind"
tcp_probe "B to hostsvc.example.com's $UP4 after the answer" "$L_HOST" "$gb" 10.10.2.2 $UP4 8080 blocked \
	reason=floor_host dst=$UP4
tf_mark
check "B resolves hostsvc.example.com AAAA" eval "dig_a $gb hostsvc.example.com AAAA && grep -qxF $UP6 $T/dig.out"
expect_event reason=dns_rebind dst=$UP6 -- "an answer naming the host's $UP6 is a dns_rebind"
tcp_probe "B to hostsvc.example.com's $UP6 after the answer" "$L_HOST" "$gb" fd00:a:2::2 $UP6 8080 blocked \
	reason=floor_host dst=$UP6
tf_mark
check "B resolves gw.example.com" eval "dig_a $gb gw.example.com A && grep -qxF $B_GW4 $T/dig.out"
expect_event reason=dns_rebind dst=$B_GW4 -- "an answer naming B's gateway is a dns_rebind"
tf_mark
check "B resolves ok.example.com" eval "dig_a $gb ok.example.com A && grep -qxF 192.0.2.1 $T/dig.out"
expect_no_event reason=dns_rebind -- "an answer naming 192.0.2.1 is learnt"
tcp_probe "B to ok.example.com's 192.0.2.1 (learnt)" "$L_INET" "$gb" 10.10.2.2 192.0.2.1 8080 reached

# An address the host gains after the start is floored, and no longer once it is gone.
host_entries() { tfc --json stats | tfjson get stats.floor.host_entries 2>/dev/null; }
entries_are() { [ "$(host_entries)" = "$1" ]; }
tcp_probe "A to 192.0.2.1 before the host has it" "$L_INET" "$ga" 10.10.1.2 192.0.2.1 8080 reached
before=$(host_entries)
note "host address entries in the floor: ${before:-none}"
t0=$(date +%s%N)
setup ip -n "$host" addr add 192.0.2.1/32 dev hi
check "192.0.2.1 added to the host: the floor gains an entry within 2 s" wait_for 2 entries_are $((before + 1))
note "floored $((($(date +%s%N) - t0) / 1000000)) ms after \`ip addr add' (polled every 0.1 s through the CLI)"
L_NEW=$T/host-new.log
listener_start "$host" "$L_NEW" tcp:192.0.2.1:8080
tcp_probe "A to 192.0.2.1 now the host's" "$L_NEW" "$ga" 10.10.1.2 192.0.2.1 8080 blocked \
	reason=floor_host dst=192.0.2.1
setup ip -n "$host" addr del 192.0.2.1/32 dev hi
check "192.0.2.1 removed from the host: the floor loses its entry within 2 s" wait_for 2 entries_are "$before"
tcp_probe "A to 192.0.2.1, in the internet again" "$L_INET" "$ga" 10.10.1.2 192.0.2.1 8080 reached
# The same for IPv6 (a local route, and perhaps an anycast one: more entries, not exactly one).
entries_above() { [ "$(host_entries)" -gt "$1" ] 2>/dev/null; }
tcp_probe "A to 2001:db8:77::1 before the host has it" "$L_INET" "$ga" fd00:a:1::2 2001:db8:77::1 8080 reached
setup ip -n "$host" addr add 2001:db8:77::1/64 dev hi nodad
check "2001:db8:77::1 added to the host: the floor gains entries within 2 s" wait_for 2 entries_above "$before"
L_NEW6=$T/host-new6.log
listener_start "$host" "$L_NEW6" "tcp:[2001:db8:77::1]:8080"
tcp_probe "A to 2001:db8:77::1 now the host's" "$L_NEW6" "$ga" fd00:a:1::2 2001:db8:77::1 8080 blocked \
	reason=floor_host dst=2001:db8:77::1
setup ip -n "$host" addr del 2001:db8:77::1/64 dev hi
check "2001:db8:77::1 removed from the host: the floor loses its entries within 2 s" wait_for 2 entries_are "$before"
tcp_probe "A to 2001:db8:77::1, in the internet again" "$L_INET" "$ga" fd00:a:1::2 2001:db8:77::1 8080 reached

stats_complete() { tfc --json stats | "$PY" -c 'import json,sys; sys.exit(not json.load(sys.stdin)["stats"]["floor"]["complete"])'; }
check "stats: the floor is complete" stats_complete

# More host addresses than tf_floor holds (limits.floor_entries 1024): the ones that do not fit are
# an error, the floor is reported incomplete and new sessions are refused until it is whole again.
for ((i = 0; i < 1100; i++)); do echo "addr add 100.65.$((i / 250)).$((i % 250 + 1))/32 dev hi"; done >"$T/many.batch"
setup ip -n "$host" -batch "$T/many.batch"
check "1100 more host addresses: the floor is incomplete within 5 s" wait_for 5 eval '! stats_complete'
check "the daemon's log names an address it cannot floor" \
	grep -qE "cannot floor [0-9]+ host addresses \(the first: 100\.65\." "$T/tapfenced.log"
session_spec "$T/c.json" c hc 02:00:00:00:0c:02 10.10.3.2 fd00:a:3::2 02:00:00:00:0c:01 10.10.3.1 fd00:a:3::1 '[]'
setup veth_pair "$host" hc "$host" hcpeer
tfc session add "$T/c.json" >"$T/add.out" 2>&1
check "a new session is refused while the floor is incomplete" grep -q "hard floor lacks host addresses" "$T/add.out"
tcp_probe "A to the host's uplink $UP4 meanwhile" "$L_HOST" "$ga" 10.10.1.2 $UP4 8080 blocked reason=floor_host dst=$UP4
sed 's/^addr add/addr del/' "$T/many.batch" >"$T/few.batch"
setup ip -n "$host" -batch "$T/few.batch"
check "the addresses gone: the floor is complete again within 5 s" wait_for 5 stats_complete
check "a new session is accepted again" tfc session add "$T/c.json"

tf_done
