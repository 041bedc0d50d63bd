#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Sessions in other network namespaces (docs/netns.md), E2B style: two per-VM namespaces each hold a
# tap called tap0 at the same ifindex, with the same gateway MAC and address, and a guest (tapvmm.py
# on the tap) with the same MAC and address, NATed inside its namespace. Each is its own session,
# with its own rules, counters and events. A third per-VM namespace holds the host-side veth of a
# guest namespace with a real TCP stack. Then: a namespace deleted under a live session ends it
# (a note in the log, its pins gone); a restarted daemon re-adopts the sessions whose namespaces
# live and ends the one whose namespace went while it was down; bad netns fields are refused.
#
#   V1: tap0 (10.0.0.1) ─ tapvmm guest 10.0.0.2 ┐ masquerade, up1|h1 10.201.1.0/30 ┐
#   V2: tap0 (10.0.0.1) ─ tapvmm guest 10.0.0.2 ┤ masquerade, up1|h2 10.201.2.0/30 ├ H ─ INET
#   G3 ─ ga|vh (V3, 10.0.3.1) ───── guest 10.0.3.2 ┘ masquerade, up1|h3 10.201.3.0/30 ┘ (daemon)
#   INET: 198.51.100.10 and 203.0.113.10, tcp :80 and udp :7 (echo)
# Session v1 allows 198.51.100.0/24 only, v2 203.0.113.0/24 only, v3 198.51.100.0/24 tcp/80.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-h-$TF_SFX inet=tf-i-$TF_SFX v1=tf-v1-$TF_SFX v2=tf-v2-$TF_SFX v3=tf-v3-$TF_SFX g3=tf-g3-$TF_SFX
v5=tf-v5-$TF_SFX v6=tf-v6-$TF_SFX
GMAC=02:fc:00:00:00:05 TMAC=02:fc:00:00:00:01
tf_need nft
setup ns_add "$host" "$inet" "$v1" "$v2" "$v3" "$g3"
setup ns_router "$host"
setup inet_link "$host" "$inet" 99 10.201.0.0/16 fd00:c9::/32 198.51.100.0/24 203.0.113.0/24 -- \
	198.51.100.10 203.0.113.10
L_INET=$T/inet.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80 udp:198.51.100.10:7 \
	udp:203.0.113.10:7

# vm_ns NS N: NS's uplink up1|hN to the host on 10.201.N.0/30, its default route, and masquerade.
vm_ns() {
	local ns=$1 i=$2
	veth_pair "$ns" up1 "$host" "h$i" || return
	ip -n "$ns" addr add "10.201.$i.2/30" dev up1 && ip -n "$ns" link set up1 up || return
	ip -n "$host" addr add "10.201.$i.1/30" dev "h$i" && ip -n "$host" link set "h$i" up || return
	ip -n "$ns" route add default via "10.201.$i.1" || return
	ns_router "$ns" || return
	n "$ns" nft 'table ip nat { chain post { type nat hook postrouting priority 100; oifname "up1" masquerade; }; }'
}
for i in 1 2; do
	ns=$v1
	[ "$i" = 2 ] && ns=$v2
	setup tap_link "$ns" tap0 "$TMAC" 10.0.0.1/24 fd00:0:0:0::1/64 "$GMAC" 10.0.0.2 fd00:0:0:0::2
	setup vm_ns "$ns" "$i"
done
setup guest_link "$g3" ga "$GMAC" 10.0.3.2/24 fd00:0:0:3::2/64 "$v3" vh "$TMAC" 10.0.3.1/24 \
	fd00:0:0:3::1/64
setup vm_ns "$v3" 3

check "E2B layout: tap0 has the same ifindex in both VM namespaces" \
	test "$(ip -n "$v1" -o link show tap0 | cut -d: -f1)" = "$(ip -n "$v2" -o link show tap0 | cut -d: -f1)"

# guest VM DST: one UDP datagram from VM's guest (tapvmm on its tap0) to DST:7; 0 iff echoed.
guest() { tapvmm "$1" tap0 "$GMAC" 10.0.0.2 "$TMAC" udp "$2" 7 --payload "from-$1"; }

note "baseline: nothing enforcing"
tf_mark
check "baseline: v1's guest reaches 203.0.113.10" guest "$v1" 203.0.113.10
check "baseline: v2's guest reaches 198.51.100.10" guest "$v2" 198.51.100.10
check "baseline: g3 reaches 203.0.113.10:80" tcp_get "$g3" 203.0.113.10 80

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"

spec() { # spec ID NS IFNAME N ALLOW: gateway 10.0.N.1, fd00:0:0:N::1; guest .2, ::2
	tfjson session-spec --netns "/run/netns/$2" "$T/$1.json" "$1" "$3" "$GMAC" "10.0.$4.2" \
		"fd00:0:0:$4::2" "$TMAC" "10.0.$4.1" "fd00:0:0:$4::1" "$5" || die "cannot write $1's spec"
}
spec v1 "$v1" tap0 0 '[{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]}]'
spec v2 "$v2" tap0 0 '[{"cidr":"203.0.113.0/24","proto":"udp","ports":[7]}]'
spec v3 "$v3" vh 3 '[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
sessions_add v1 v2 v3

tfc --json session show v1 >"$T/v1.show" 2>&1
tfc --json session show v2 >"$T/v2.show" 2>&1
check "v1 and v2: the same ifindex, two sessions, two slots" tfjson check "$T/v1.show" \
	'd["session"]["ifindex"] == json.load(open(a[0]))["session"]["ifindex"] and d["session"]["slot"] != json.load(open(a[0]))["session"]["slot"]' \
	"$T/v2.show"
check "session show v1: its namespace, and tapfence first on tap0" tfjson check "$T/v1.show" \
	'd["session"]["netns"] == a[0] and d["session"]["first"] is True' "/run/netns/$v1"
spec v1b "$v1" tap0 0 '[]'
check_says "a second session on v1's tap0 is refused" 1 "already has session \`v1'" \
	tfc session add "$T/v1b.json"
tfjson session-spec --netns "/run/netns/$v1" "$T/v1other.json" v1other up1 02:fc:00:00:00:09 \
	10.0.0.2 fd00:0:0:0::9 "$TMAC" 10.0.0.1 fd00:0:0:0::1 '[]'
check_says "a second address 10.0.0.2 in v1's namespace is refused" 1 "is already session \`v1''s address" \
	tfc session add "$T/v1other.json"

note "enforced: each guest by its own session"
tf_mark
check "v1's guest reaches 198.51.100.10 (v1's rule)" guest "$v1" 198.51.100.10
expect_event session=v1 verdict=allow reason=allow_rule netns="/run/netns/$v1" \
	-- "v1's allow event names v1 and its namespace"
check_not "v1's guest does not reach 203.0.113.10 (v2's rule only)" guest "$v1" 203.0.113.10
expect_event session=v1 verdict=deny reason=no_rule dst=203.0.113.10 -- "v1's deny is v1's event"
expect_no_event session=v2 dst=198.51.100.10 -- "v1's traffic is never v2's event"
tf_mark
check "v2's guest reaches 203.0.113.10 (v2's rule)" guest "$v2" 203.0.113.10
check_not "v2's guest does not reach 198.51.100.10 (v1's rule only)" guest "$v2" 198.51.100.10
expect_event session=v2 verdict=deny reason=no_rule dst=198.51.100.10 -- "v2's deny is v2's event"
expect_no_event session=v1 dst=203.0.113.10 -- "v2's traffic is never v1's event"
tf_mark
probe_tcp "g3 behind V3's veth, allowed" "$L_INET" "$g3" 10.201.3.2 198.51.100.10 80 reached
probe_tcp "g3 behind V3's veth, no rule" "$L_INET" "$g3" 10.201.3.2 203.0.113.10 80 blocked

tfc --json session show v1 >"$T/v1.show" 2>&1
tfc --json session show v2 >"$T/v2.show" 2>&1
check "v1's counters: its allows and denies only" tfjson check "$T/v1.show" \
	'd["session"]["counters"].get("allow_rule", 0) >= 1 and d["session"]["counters"].get("no_rule", 0) == 1'
check "v2's counters: its allows and denies only" tfjson check "$T/v2.show" \
	'd["session"]["counters"].get("allow_rule", 0) >= 1 and d["session"]["counters"].get("no_rule", 0) == 1'

note "refusals"
tfjson session-spec --netns /etc/hostname "$T/bad1.json" bad1 tap0 "$GMAC" 10.9.0.2 fd00:9::2 \
	"$TMAC" 10.9.0.1 fd00:9::1 '[]'
check_says "netns naming a plain file is refused" 1 "netns: \`/etc/hostname' is not a network namespace" \
	tfc session add "$T/bad1.json"
tfjson session-spec --netns /run/netns/tf-none-$TF_SFX "$T/bad2.json" bad2 tap0 "$GMAC" 10.9.0.2 \
	fd00:9::2 "$TMAC" 10.9.0.1 fd00:9::1 '[]'
check_says "netns naming no file is refused" 1 "netns: no such file \`/run/netns/tf-none-$TF_SFX'" \
	tfc session add "$T/bad2.json"
tfjson session-spec --netns "/run/netns/$v1" "$T/bad3.json" bad3 tapX "$GMAC" 10.9.0.2 fd00:9::2 \
	"$TMAC" 10.9.0.1 fd00:9::1 '[]'
check_says "a device missing from the namespace is refused" 1 \
	"ifname: no such interface \`tapX' in /run/netns/$v1" tfc session add "$T/bad3.json"
tfjson session-spec --netns "relative/path" "$T/bad4.json" bad4 tap0 "$GMAC" 10.9.0.2 fd00:9::2 \
	"$TMAC" 10.9.0.1 fd00:9::1 '[]'
check_says "a relative netns path is refused" 1 "netns: invalid namespace path \`relative/path'" \
	tfc session add "$T/bad4.json"

note "a namespace deleted under its session"
tf_mark
ip netns del "$v3"
ip netns del "$g3"
wait_for 5 sh -c "! '$TF_BUILD/tapfence' --socket '$TF_SOCK' session show v3 >/dev/null 2>&1"
check_says "v3 is gone once its namespace is" 1 "no session \`v3'" tfc session show v3
expect_event kind=session session=v3 ended=netns_gone -- "the log says v3 ended with its namespace"
check "v3's link pins are gone" sh -c "! ls '$TF_PIN_DIR/links/' | grep -q '^v3-'"
check "v3's state file is gone" test ! -e "$T/state/sessions/v3.json"
check "v1 is untouched" guest "$v1" 198.51.100.10

note "restart: v2's namespace deleted while the daemon is down"
kill_pid "$TFD_PID"
TFD_PID=
check "with the daemon down, v1 is still enforced (pinned)" guest "$v1" 198.51.100.10
check_not "with the daemon down, v1 still denies 203.0.113.10" guest "$v1" 203.0.113.10
ip netns del "$v2"
TFD_KEEP_LOG=1 tfd_start "$host"
tf_unmark "$TF_EVENTS"
expect_event kind=session session=v2 ended=netns_gone -- "the restarted daemon ends v2 (its namespace is gone)"
tfc --json session list >"$T/list.json" 2>&1
check "the restarted daemon re-adopted v1 and only v1" tfjson check "$T/list.json" \
	'sorted(s["id"] for s in d["sessions"]) == ["v1"]'
check "v2's link pins are gone" sh -c "! ls '$TF_PIN_DIR/links/' | grep -q '^v2-'"
tf_mark
check "after the restart v1's guest reaches 198.51.100.10" guest "$v1" 198.51.100.10
check_not "after the restart v1's guest does not reach 203.0.113.10" guest "$v1" 203.0.113.10
expect_event session=v1 verdict=deny reason=no_rule dst=203.0.113.10 -- "the re-adopted v1 reports its deny"

note "a namespace replaced at its path while the daemon is down"
kill_pid "$TFD_PID"
TFD_PID=
ip netns del "$v1"
ip netns add "$v1"
TFD_KEEP_LOG=1 tfd_start "$host"
tf_unmark "$TF_EVENTS"
expect_event kind=session session=v1 ended=netns_gone -- "v1 ends: its path names another namespace now"
check_says "v1 is not re-adopted into the new namespace" 1 "no session \`v1'" tfc session show v1
check "and nothing is attached to the new namespace's devices" sh -c \
	"! ls '$TF_PIN_DIR/links/' | grep -q '^v1-'"

note "a namespace unmounted while a process still holds it: alive, so still enforced"
for i in 5 6; do
	ns=$v5
	[ "$i" = 6 ] && ns=$v6
	setup ns_add "$ns"
	setup tap_link "$ns" tap0 "$TMAC" 10.0.0.1/24 fd00:0:0:0::1/64 "$GMAC" 10.0.0.2 fd00:0:0:0::2
	setup vm_ns "$ns" "$i"
done
spec v5 "$v5" tap0 0 '[{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]}]'
sessions_add v5
ip netns exec "$v5" sleep 600 &
HOLD=$!
defer kill_pid "$HOLD"
wait_for 2 test -e "/proc/$HOLD/ns/net"
# guest_in PID DST: guest() in the namespace PID is in (its name is gone).
guest_in() { nsenter --net="/proc/$1/ns/net" timeout 15 "$PY" "$TF_NETNS_DIR/tapvmm.py" --dev tap0 \
	--guest-mac "$GMAC" --guest-ip 10.0.0.2 --gw-mac "$TMAC" --timeout "$TF_CONNECT_TIMEOUT" \
	udp "$2" 7 --payload held >"$T/client.out" 2>&1; }
kill_pid "$TFD_PID"
TFD_PID=
ip netns del "$v5"
TFD_KEEP_LOG=1 tfd_start "$host"
check "restarted: v5 (its path gone, its namespace held) is not restored" \
	sh -c "! '$TF_BUILD/tapfence' --socket '$TF_SOCK' session show v5 >/dev/null 2>&1"
check "its pinned links stay" test -e "$(link_pin v5 in)"
check_not "and still enforce: its guest does not reach 203.0.113.10" guest_in "$HOLD" 203.0.113.10
check "... and reaches 198.51.100.10 (its rule)" guest_in "$HOLD" 198.51.100.10
note "the same session id on another namespace's device at the same ifindex"
spec v5 "$v6" tap0 0 '[{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]}]'
sessions_add v5
check_not "v5 on $v6's tap0 is enforced by its own links: 203.0.113.10 denied" guest "$v6" 203.0.113.10
check "... 198.51.100.10 allowed" guest "$v6" 198.51.100.10
check_not "and the held namespace's tap0 still denies 203.0.113.10" guest_in "$HOLD" 203.0.113.10
tfc session del v5 >/dev/null 2>&1

note "a broker that stops answering"
broker=$(pgrep -P "$TFD_PID" -x tapfenced-netns)
check "the daemon has its netns broker (tapfenced-netns)" test -n "$broker"
ip netns add "$v2"
spec v4 "$v2" lo 4 '[]'
kill -STOP "$broker"
check_says "with the broker stopped, a session add in a namespace fails (within its 5 s)" 1 \
	"netns: the daemon's netns broker is not running" timeout 15 "$TF_BUILD/tapfence" \
	--socket "$TF_SOCK" session add "$T/v4.json"
check "the stuck broker was killed" wait_for 3 sh -c "! kill -0 $broker 2>/dev/null || \
	grep -q '^State:.*Z' /proc/$broker/status"
check_says "later ones fail at once, naming it" 1 "netns broker is not running" \
	timeout 3 "$TF_BUILD/tapfence" --socket "$TF_SOCK" session add "$T/v4.json"
check "the daemon still answers" tfc session list
ip netns del "$v2"

tf_done
