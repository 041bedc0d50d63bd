#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The guard (docs/guard.md): a device matching guard.interfaces denies everything from its
# creation until a session claims it, and again after `session del'; only --release on a device no
# pattern matches leaves it unfiltered. The race: tapstorm.py creates taps the way a VMM does
# (TUNSETIFF), brings them up into a bridge and writes frames at once, in a loop; with nothing
# enforcing the frames reach a listener beyond the bridge, guarded not one does. Also: a device
# re-created under a live session's name; a forged RTM_NEWLINK from a process, ignored; taps made while the daemon is down; a namespace the
# config names that appears later, and one found through a "DIR/*" pattern.
# TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode (test_guard_xdp.sh runs it in XDP mode).
#
#   tapstorm / tapvmm ─ tapN ─ br0 (10.50.0.1, in HOST) ─ HOST (router, daemon) ─ INET
#   guest 10.50.0.2                                                 198.51.100.10: udp :9 logs
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-gh-$TF_SFX inet=tf-gi-$TF_SFX vm=tf-gv-$TF_SFX vm2=tf-gw-$TF_SFX
GMAC=02:5a:00:00:00:02 BRMAC=02:5a:00:00:00:01
setup ns_add "$host" "$inet"
setup ns_router "$host"
setup inet_link "$host" "$inet" 98 10.50.0.0/16 fd00:5a::/32 198.51.100.0/24 -- 198.51.100.10
L_INET=$T/inet.log
listener_start "$inet" "$L_INET" udp:198.51.100.10:9
setup ip -n "$host" link add br0 type bridge
setup ip -n "$host" link set br0 address "$BRMAC"
setup ip -n "$host" addr add 10.50.0.1/24 dev br0
setup ip -n "$host" link set br0 up
# A claimed tap, persistent, in the bridge (its session is added below).
setup ip -n "$host" tuntap add dev tapc mode tap
setup ip -n "$host" link set tapc master br0 up
# A device no pattern matches, with a session, for --release.
setup ip -n "$host" tuntap add dev vmx0 mode tap
setup ip -n "$host" link set vmx0 master br0 up

FRAME=(--guest-mac "$GMAC" --gw-mac "$BRMAC" --src 10.50.0.2 --dst 198.51.100.10 --port 9)
storm() { n "$1" "$PY" "$TF_NETNS_DIR/tapstorm.py" storm --prefix "$2" --count 30 --frames 20 \
	--bridge br0 "${FRAME[@]}" >"$T/storm.out" 2>&1; }
write() { n "$1" "$PY" "$TF_NETNS_DIR/tapstorm.py" write --dev "$2" --frames 5 "${FRAME[@]}" \
	>"$T/storm.out" 2>&1; }
reached() { since "$L_INET" | grep -c "from 10.50.0.2:40000"; }
# some_reached: at least one did (for wait_for, which re-runs it: $(reached) in its arguments would not).
some_reached() { [ "$(reached)" -ge 1 ]; }
# write_reached [DEV]: write DEV's (tapc's) frames again, then some_reached (the first frames after
# a claim or a release can wait on the host's neighbour resolution towards the far side, and be
# dropped there).
write_reached() { write "$host" "${1:-tapc}" >/dev/null 2>&1; sleep 0.3; some_reached; }
# guarded IFNAME: `tapfence guard' lists IFNAME with its guard programs attached.
guarded() { tfc --json guard 2>/dev/null | tfjson check /dev/stdin \
	'any(e["ifname"] == a[0] and e["programs"] for e in d["devices"])' "$1" >/dev/null; }

note "baseline: nothing enforcing, the race script's frames reach the listener"
tf_mark
setup storm "$host" tapr
sleep 0.3
check "baseline: tapstorm wrote 600 frames on 30 new taps" grep -q "wrote 600 frames" "$T/storm.out"
n_base=$(reached)
check "baseline: frames written into brand-new taps reach the far side ($n_base)" test "$n_base" -gt 0

bpffs_mount "$T/bpffs"
# A directory of namespace files for the "DIR/*" pattern. Shared, as /run/netns is: a namespace
# bind-mounted into it later must show in the daemon's mount namespace (ip netns exec's own).
mkdir -p "$T/nsdir"
setup mount --bind "$T/nsdir" "$T/nsdir"
defer umount -l "$T/nsdir"
setup mount --make-shared "$T/nsdir"
tfd_config "$T/tf.json" "\"guard\":{\"interfaces\":[\"tap*\",\"fc-*\"],\"netns\":[\"/run/netns/$vm\",\"$T/nsdir/*\"]}${TF_ATTACH_MODE:+,\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"

note "guarded: the race"
tf_mark
setup storm "$host" tapr
sleep 0.5
check "guarded: tapstorm wrote 600 frames on 30 new taps" grep -q "wrote 600 frames" "$T/storm.out"
check "guarded: not one of them reached the far side" test "$(reached)" -eq 0
tf_mark
setup write "$host" tapc
sleep 0.3
check "guarded: tapc, unclaimed, passes nothing" test "$(reached)" -eq 0
expect_event verdict=deny reason=guard_unclaimed ifname=tapc -- "tapc's drops are reported (guard_unclaimed)"
tfc --json guard >"$T/guard.json" 2>&1
check "tapfence guard lists tapc: guard programs on, drops counted, no session" tfjson check \
	"$T/guard.json" 'any(e["ifname"] == "tapc" and e["programs"] and e["dropped"] >= 5 and e.get("session") is None for e in d["devices"])'
check "tapfence guard does not list vmx0 (no pattern matches it)" tfjson check "$T/guard.json" \
	'not any(e["ifname"] == "vmx0" for e in d["devices"])'

session_spec "$T/c.json" c tapc "$GMAC" 10.50.0.2 fd00:5a::2 "$BRMAC" 10.50.0.1 fd00:5a::1 \
	'[{"cidr":"198.51.100.0/24","proto":"udp","ports":[9]}]'
sessions_add c
tfc --json session show c >"$T/c.show" 2>&1
check "session c: tapfence heads tapc's chains (its programs ahead of the guard's)" tfjson check \
	"$T/c.show" 'd["session"]["first"] is True'
tf_mark
check "claimed: tapc's frames reach the far side" wait_for 5 write_reached
check_says "--release on a guarded device is refused" 1 "matches guard.interfaces" \
	tfc session del c --release
tfc session del c >/dev/null 2>&1 || fail "session del c"
tf_mark
setup write "$host" tapc
sleep 0.3
check "after session del: tapc passes nothing again" test "$(reached)" -eq 0
expect_event verdict=deny reason=guard_unclaimed ifname=tapc -- "after session del: tapc's drops are reported"

note "a device re-created under a live session's name"
sessions_add c
ip -n "$host" link del tapc
ip -n "$host" tuntap add dev tapc mode tap
ip -n "$host" link set tapc master br0 up
tf_mark
setup write "$host" tapc
sleep 0.3
check "the re-created tapc passes nothing at once (the nftables guard)" test "$(reached)" -eq 0
# The device-level guard (which reports) follows within a second of the device.
check "the re-created tapc gets guard programs within 2 s" wait_for 2 guarded tapc
tf_mark
setup write "$host" tapc
sleep 0.3
check "the re-created tapc passes nothing (session c claims the old device only)" test "$(reached)" -eq 0
expect_event verdict=deny reason=guard_unclaimed ifname=tapc -- "the re-created tapc's drops are reported"
tfc session del c >/dev/null 2>&1
sessions_add c
tf_mark
check "re-claimed (session del, session add): tapc's frames pass" wait_for 5 write_reached
tfc session del c >/dev/null 2>&1

note "the nftables guard flushed away (a reload of nftables.service)"
n "$host" nft flush ruleset
check "flushed: the tables are written again within 2 s" wait_for 2 \
	n "$host" sh -c "nft list tables | grep -q 'inet tapfence'"
tf_unmark "$TF_EVENTS"
expect_event kind=guard rewritten= -- "the sealed log says the guard was written again"
tf_mark
setup storm "$host" tapf
sleep 0.3
check "after the flush: not one frame from new taps reached the far side" test "$(reached)" -eq 0

note "--release on a device no pattern matches"
session_spec "$T/x.json" x vmx0 "$GMAC" 10.50.0.2 fd00:5a::2 "$BRMAC" 10.50.0.1 fd00:5a::1 '[]'
sessions_add x
tf_mark
setup write "$host" vmx0
sleep 0.3
check "vmx0 with a session allowing nothing passes nothing" test "$(reached)" -eq 0
tfc session del x >/dev/null 2>&1 || fail "session del x"
tf_mark
setup write "$host" vmx0
sleep 0.3
check "after a plain session del, vmx0 (no pattern) still denies everything" test "$(reached)" -eq 0
sessions_add x
check "session del --release" tfc session del x --release
tf_mark
check "after --release, vmx0 is unfiltered" wait_for 5 write_reached vmx0
# A message from a process (CAP_NET_ADMIN, the daemon's namespace) naming a matching name with
# vmx0's ifindex: the daemon listens for the kernel's RTM_NEWLINK only.
vmx_idx=$(ip -n "$host" -o link show vmx0 | cut -d: -f1)
check "a forged RTM_NEWLINK (tapforged, vmx0's ifindex $vmx_idx) is sent to the daemon's listener" \
	n "$host" "$PY" "$TF_NETNS_DIR/nlforge.py" "$TFD_PID" tapforged "$vmx_idx"
sleep 0.5
check "vmx0 got no guard programs from it" sh -c "! ls '$TF_PIN_DIR/guard' | grep -q -- '-$vmx_idx-'"
tf_mark
check "and is still unfiltered" wait_for 5 write_reached vmx0

note "the daemon down"
kill_pid "$TFD_PID"
TFD_PID=
tf_mark
setup storm "$host" tapd
sleep 0.3
check "daemon down: tapstorm wrote 600 frames" grep -q "wrote 600 frames" "$T/storm.out"
check "daemon down: not one frame from new taps reached the far side" test "$(reached)" -eq 0
setup ip -n "$host" tuntap add dev tapdown mode tap
setup ip -n "$host" link set tapdown master br0 up
TFD_KEEP_LOG=1 tfd_start "$host"
tfc --json guard >"$T/guard.json" 2>&1
check "restarted: the tap made while it was down has guard programs" tfjson check "$T/guard.json" \
	'any(e["ifname"] == "tapdown" and e["programs"] for e in d["devices"])'

note "guarded namespaces that appear later"
setup ns_add "$vm"
setup ip -n "$vm" link add br0 type bridge
setup ip -n "$vm" link set br0 address "$BRMAC"
setup ip -n "$vm" addr add 10.50.0.1/24 dev br0
setup ip -n "$vm" link set br0 up
L_VM=$T/vm.log
listener_start "$vm" "$L_VM" udp:10.50.0.1:9
wait_for 3 n "$vm" sh -c "nft list tables | grep -q 'inet tapfence'"
vm_reached() { since "$L_VM" | grep -c "from 10.50.0.2:40000"; }
FRAME=(--guest-mac "$GMAC" --gw-mac "$BRMAC" --src 10.50.0.2 --dst 10.50.0.1 --port 9)
tf_mark
setup storm "$vm" ctl
sleep 0.3
check "in $vm (made after the start): taps no pattern matches reach its listener" test "$(vm_reached)" -gt 0
tf_mark
setup storm "$vm" fc-r
sleep 0.3
check "in $vm: tapstorm wrote 600 frames on new fc-* taps" grep -q "wrote 600 frames" "$T/storm.out"
check "in $vm: not one of them reached its listener" test "$(vm_reached)" -eq 0
setup ns_add "$vm2"
touch "$T/nsdir/vm2"
mount --bind "/run/netns/$vm2" "$T/nsdir/vm2"
defer umount "$T/nsdir/vm2"
wait_for 3 n "$vm2" sh -c "nft list tables | grep -q 'inet tapfence'"
check "a namespace found through \"$T/nsdir/*\" gets the guard" \
	n "$vm2" sh -c "nft list tables | grep -q 'inet tapfence'"
setup ip -n "$vm2" tuntap add dev tapq mode tap
wait_for 3 sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' --json guard | grep -q '\"ifname\": \"tapq\".*\"programs\": true'"
tfc --json guard >"$T/guard.json" 2>&1
check "its tap gets guard programs, listed with its namespace" tfjson check "$T/guard.json" \
	'any(e["ifname"] == "tapq" and e["programs"] and e["netns"] == a[0] for e in d["devices"])' \
	"$T/nsdir/vm2"

note "cleanup removes the guard"
tfd_stop
check "tapfenced --cleanup: no tapfence table left in the daemon's namespace" \
	n "$host" sh -c "! nft list tables | grep -q tapfence"
check "tapfenced --cleanup: none in the watched namespaces" \
	n "$vm2" sh -c "! nft list tables | grep -q tapfence"
FRAME=(--guest-mac "$GMAC" --gw-mac "$BRMAC" --src 10.50.0.2 --dst 198.51.100.10 --port 9)
tf_mark
setup storm "$host" tapr
sleep 0.3
check "after cleanup the race script's frames reach the far side again" test "$(reached)" -gt 0

tf_done
