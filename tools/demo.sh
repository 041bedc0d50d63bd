#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfence works end to end, as a demo: two guests, two allowlists, probes that must get
# through or be blocked, then the event feed and the counters. Run by `make demo'; exits 0 only if
# every probe behaved as expected, so it doubles as a smoke test.
#
#  ┌────────────────────┐   ┌────────────────────┐
#  │ $alpha (guest)     │   │ $beta (guest)      │
#  │ 10.30.1.2/24       │   │ 10.30.2.2/24       │
#  │ listener :8080     │   │                    │
#  └─────────┬──────────┘   └─────────┬──────────┘
#            │ veth (a VM's tap)      │ veth
#  ┌─────────┴────────────────────────┴──────────┐
#  │ $host: router; tapfenced on ha and hb,      │
#  │ sessions "alpha" and "beta"                 │
#  └──────────────────────┬──────────────────────┘
#                         │ veth
#  ┌──────────────────────┴──────────────────────┐
#  │ $inet: fake internet; web servers on        │
#  │ 198.51.100.10:80 and 203.0.113.10:80, a     │
#  │ fake metadata server on 169.254.169.254:80  │
#  └─────────────────────────────────────────────┘
#
# Where QEMU and busybox-static are installed (make deps), alpha and beta are real microVMs
# instead (tests/vm/lib.sh: QEMU's microvm machine, a Debian cloud kernel, a busybox initramfs)
# on taps named ha and hb in $host, and the probes run inside them over their serial consoles; a
# guest whose VM does not boot (twice) falls back to its namespace. TF_DEMO_VM=0 uses namespaces
# only.
#
# Everything lives in namespaces and a scratch directory made here, and is removed on exit.
# TF_KEEP=1 keeps the scratch directory (daemon log, event log) for a look afterwards.

set -uo pipefail
TF_CONNECT_TIMEOUT=${TF_CONNECT_TIMEOUT:-1}
# shellcheck source-path=SCRIPTDIR source=../tests/netns/lib.sh
source "$(dirname "$0")/../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../tests/vm/lib.sh
source "$(dirname "$0")/../tests/vm/lib.sh"

tf_init
host=tf-demo-host-$TF_SFX
alpha=tf-demo-alpha-$TF_SFX
beta=tf-demo-beta-$TF_SFX
inet=tf-demo-inet-$TF_SFX

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	tf_cleanup
	echo "(cleaned up: namespaces, bpffs, pins, processes)"
}
trap cleanup EXIT

heading() { printf '\n== %s\n' "$*"; }
setup() { "$@" >/dev/null 2>&1 || die "setup: $*"; }
indent() { sed 's/^/    /'; }
# shown CMD...: print a CLI command, then run it with its output indented.
shown() {
	echo "  \$ tapfence $*"
	tfc "$@" 2>&1 | indent
	return "${PIPESTATUS[0]}"
}

# --- topology ---------------------------------------------------------------------------------

heading "Setting up: two guests, a host, a fake internet"
setup ns_add "$host" "$inet"
setup ns_router "$host"
A_MAC=02:00:00:00:1e:02 A_GW=02:00:00:00:1e:01
B_MAC=02:00:00:00:1f:02 B_GW=02:00:00:00:1f:01

# --- the guests: microVMs where they boot, namespaces where not (tests/vm/lib.sh) -------------
declare -A guest_kind=([alpha]=netns [beta]=netns)
# guest_netns NAME: NAME as a namespace on a veth (ha or hb in $host), as without QEMU.
guest_netns() {
	case $1 in
	alpha)
		setup ns_add "$alpha"
		setup guest_link "$alpha" alpha $A_MAC 10.30.1.2/24 fd00:1e:1::2/64 "$host" ha $A_GW 10.30.1.1/24 fd00:1e:1::1/64
		;;
	beta)
		setup ns_add "$beta"
		setup guest_link "$beta" beta $B_MAC 10.30.2.2/24 fd00:1e:2::2/64 "$host" hb $B_GW 10.30.2.1/24 fd00:1e:2::1/64
		;;
	esac
	guest_kind[$1]=netns
}
if [ "${TF_DEMO_VM:-1}" = 0 ]; then
	echo "  TF_DEMO_VM=0: the guests are network namespaces"
	guest_netns alpha
	guest_netns beta
elif ! vm_prereqs; then
	echo "  no microVMs (missing:$VM_MISSING; make deps installs them): the guests are network namespaces"
	guest_netns alpha
	guest_netns beta
elif ! vm_image >"$T/vm-image.out"; then
	echo "  the microVM image did not build: the guests are network namespaces"
	indent <"$T/vm-image.out"
	guest_netns alpha
	guest_netns beta
else
	indent <"$T/vm-image.out"
	echo "  booting alpha and beta as microVMs (QEMU microvm, kernel $(cat "$VM_DIR/kernel/release"), busybox)"
	setup tap_link "$host" ha $A_GW 10.30.1.1/24 fd00:1e:1::1/64 $A_MAC 10.30.1.2 fd00:1e:1::2
	setup tap_link "$host" hb $B_GW 10.30.2.1/24 fd00:1e:2::1/64 $B_MAC 10.30.2.2 fd00:1e:2::2
	vm_start alpha "$host" ha $A_MAC 10.30.1.2/24 10.30.1.1 fd00:1e:1::2/64 fd00:1e:1::1 8080 >/dev/null
	vm_start beta "$host" hb $B_MAC 10.30.2.2/24 10.30.2.1 fd00:1e:2::2/64 fd00:1e:2::1 >/dev/null
	for g in alpha beta; do
		if vm_ready $g >"$T/vm-ready.out"; then
			guest_kind[$g]=vm
			echo "  $g: a microVM on tap h${g:0:1}, booted in ${VM_READY_S} s (QEMU pid ${vm_pid[$g]}, accel $VM_ACCEL)"
		else
			echo "  $g: the microVM did not boot; $g is a network namespace instead"
			indent <"$T/vm-ready.out"
			vm_stop $g
			setup ip -n "$host" link del "h${g:0:1}"
			guest_netns $g
		fi
	done
fi
# --- end of the guests -------------------------------------------------------------------------
setup inet_link "$host" "$inet" 97 10.30.0.0/16 fd00:1e::/32 \
	198.51.100.0/24 203.0.113.0/24 169.254.169.254/32 -- 198.51.100.10 203.0.113.10 169.254.169.254

L_INET=$T/inet.log L_ALPHA=$T/alpha.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80 tcp:169.254.169.254:80
if [ "${guest_kind[alpha]}" = vm ]; then
	# alpha's own listener (tfprobe serve 8080) prints "HIT tcp 8080 from PEER" on its console.
	L_ALPHA=${vm_con[alpha]}
else
	listener_start "$alpha" "$L_ALPHA" tcp:10.30.1.2:8080
fi
echo "  alpha 10.30.1.2 (${guest_kind[alpha]}) and beta 10.30.2.2 (${guest_kind[beta]}), each on its own link"
echo "  into the host, which routes to web servers at 198.51.100.10 and 203.0.113.10 and a"
echo "  metadata server at 169.254.169.254"

# --- probes -----------------------------------------------------------------------------------
# probe GUEST HOST PORT WHY EXPECT: an HTTP request from GUEST. "reached" means the client got the
# reply and the server logged the connection; "blocked" that neither happened.

declare -A guest_ns=([alpha]=$alpha [beta]=$beta) guest_ip=([alpha]=10.30.1.2 [beta]=10.30.2.2)
probes_ok=0 probes_bad=0

probe_result() { # GUEST HOST PORT -> prints reached|blocked|half
	local g=$1 host=$2 port=$3 log=$L_INET got=0 logged=0 text
	text="tcp $host:$port from ${guest_ip[$g]}:"
	[ "$host" = 10.30.1.2 ] && log=$L_ALPHA
	[ "$host" = 10.30.1.2 ] && [ "${guest_kind[alpha]}" = vm ] && text="HIT tcp $port from ${guest_ip[$g]}:"
	tf_mark
	if [ "${guest_kind[$g]}" = vm ]; then
		vm_run "$g" get "$host" "$port" && got=1 # busybox wget inside the microVM
	else
		tcp_get "${guest_ns[$g]}" "$host" "$port" && got=1
	fi
	if [ $got = 1 ]; then
		wait_for 2 grep_since "$log" "$text" && logged=1
	else
		sleep 0.3
		grep_since "$log" "$text" && logged=1
	fi
	if [ $got = 1 ] && [ $logged = 1 ]; then echo reached
	elif [ $got = 0 ] && [ $logged = 0 ]; then echo blocked
	else echo "half-way (reply: $got, server saw it: $logged)"
	fi
}

probe() {
	local g=$1 host=$2 port=$3 why=$4 want=$5 got
	got=$(probe_result "$g" "$host" "$port")
	if [ "$got" = "$want" ]; then
		printf '  %-5s -> %s:%s (%s): %s\n' "$g" "$host" "$port" "$why" "$got"
		probes_ok=$((probes_ok + 1))
	else
		printf '  %-5s -> %s:%s (%s): %s   <-- UNEXPECTED, wanted %s\n' "$g" "$host" "$port" "$why" "$got" "$want"
		probes_bad=$((probes_bad + 1))
	fi
}

heading "Before tapfence: every guest reaches everything"
baseline_bad=0
for p in "alpha 198.51.100.10 80" "alpha 203.0.113.10 80" "alpha 169.254.169.254 80" \
	"beta 203.0.113.10 80" "beta 198.51.100.10 80" "beta 169.254.169.254 80" "beta 10.30.1.2 8080"; do
	# shellcheck disable=SC2086 # three words
	r=$(probe_result $p)
	[ "$r" = reached ] || { echo "  baseline: $p: $r"; baseline_bad=$((baseline_bad + 1)); }
done
[ $baseline_bad = 0 ] || die "the network does not work without tapfence; a demo would show nothing"
echo "  7 of 7 probes reached their server (the metadata server too)"
# For a second or two after a link comes up, the host announces its IPv6 multicast groups (MLD
# reports, which tapfence denies towards the guest). Let that settle, so the feed shows the probes.
sleep 2

# --- tapfenced --------------------------------------------------------------------------------

heading "Starting tapfenced in the host namespace"
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json"
tfd_start "$host"
echo "  config $TFD_CONFIG: control socket, pins (a private bpffs) and state all under $T"
# The feed, from now on (shown at the end).
"$TF_BUILD/tapfence" --socket "$TF_SOCK" events --follow >"$T/feed.txt" 2>&1 &
FEED_PID=$!
defer kill_pid "$FEED_PID"

heading "Pushing two allowlists through the CLI"
session_spec "$T/alpha.json" alpha ha $A_MAC 10.30.1.2 fd00:1e:1::2 $A_GW 10.30.1.1 fd00:1e:1::1 \
	'[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
session_spec "$T/beta.json" beta hb $B_MAC 10.30.2.2 fd00:1e:2::2 $B_GW 10.30.2.1 fd00:1e:2::1 \
	'[{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80,443]}]'
echo "  alpha may open tcp to 198.51.100.0/24 port 80"
echo "  beta  may open tcp to 203.0.113.0/24 ports 80 and 443"
shown session add "$T/alpha.json" || die "session add alpha failed"
shown session add "$T/beta.json" || die "session add beta failed"
shown session list

heading "Probes with tapfence"
probe alpha 198.51.100.10 80 "allowed by rule" reached
probe alpha 203.0.113.10 80 "not in alpha's allowlist" blocked
probe alpha 169.254.169.254 80 "metadata" blocked
probe beta 203.0.113.10 80 "allowed by rule" reached
probe beta 198.51.100.10 80 "not in beta's allowlist" blocked
probe beta 169.254.169.254 80 "metadata" blocked
probe beta 10.30.1.2 8080 "another guest" blocked

heading "Changing beta's allowlist live"
shown rule add beta '{"cidr":"198.51.100.10/32","proto":"tcp","ports":[80]}' ||
	probes_bad=$((probes_bad + 1))
probe beta 198.51.100.10 80 "after rule add" reached
probe beta 169.254.169.254 80 "metadata" blocked
echo "  (a rule cannot open the metadata server: the floor of always-denied ranges comes first)"
shown rule add beta '{"cidr":"169.254.169.254/32","proto":"tcp","ports":[80]}' # refused or not, it must not open
probe beta 169.254.169.254 80 "metadata, with a rule for it" blocked

# --- feed and counters ------------------------------------------------------------------------

heading "The event feed (tapfence events --follow, one line per decision worth reporting)"
sleep 0.3
kill_pid "$FEED_PID"
if [ -s "$T/feed.txt" ]; then
	indent <"$T/feed.txt"
else
	echo "    (no events arrived)"
fi

heading "Counters per session"
shown session show alpha
shown session show beta

# --- verdict ----------------------------------------------------------------------------------

heading "Result"
if [ $probes_bad -eq 0 ]; then
	echo "  all $probes_ok probes behaved as expected"
	exit 0
fi
echo "  $probes_bad of $((probes_ok + probes_bad)) probes did NOT behave as expected"
tfd_log_tail 10
exit 1
