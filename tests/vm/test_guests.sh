#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfence holds real microVM guests behind real tap devices to their own allowlists.
#
#  ┌─────────────────────────────────┐      ┌─────────────────────────────────┐
#  │ guest A: QEMU microvm (TCG),    │      │ guest B: QEMU microvm (TCG),    │
#  │ Debian cloud kernel, busybox    │      │ same image                      │
#  │ eth0 02:00:00:00:4a:02          │      │ eth0 02:00:00:00:4b:02          │
#  │   10.40.1.2/24 fd00:40:1::2/64  │      │   10.40.2.2/24 fd00:40:2::2/64  │
#  │   (+ 10.40.1.99 to spoof)       │      │ tfprobe serve :8082 (HIT lines) │
#  │ tfprobe serve :8081 (HIT lines) │      │                                 │
#  └────────────┬────────────────────┘      └────────────┬────────────────────┘
#               │ virtio-net-device -> tap tva           │ -> tap tvb
#  ┌────────────┴──────────────────────────────────────────┴──────────────────┐
#  │ $host (router): qemu for A and B run here (ip netns exec), on taps       │
#  │ tva 10.40.1.1/24 fd00:40:1::1 (session a)  tvb 10.40.2.1/24 fd00:40:2::1 │
#  │ (session b); tapfenced attaches to both; dnsmasq on 10.40.1.1:53 and     │
#  │ 10.40.2.1:53 only (each session's resolver is its gateway), no upstream  │
#  │ hi 10.98.0.1/30 fd00:98::1  routes 198.51.100/24 203.0.113/24            │
#  │                             169.254.169.254 192.168.77/24 2001:db8::/32  │
#  └──────────────────────────────────┬───────────────────────────────────────┘
#                                     │ veth
#  ┌──────────────────────────────────┴───────────────────────────────────────┐
#  │ $inet ii 10.98.0.2/30 fd00:98::2; on lo, listeners on 198.51.100.10      │
#  │ (:80 :22, udp 7 9), 198.51.100.20:80 (allowed.example.com),              │
#  │ 198.51.100.30:80 (denied.example.com), 203.0.113.10 (:80, udp 7),        │
#  │ 203.0.113.20:80 (bee.example.net), 169.254.169.254:80 (metadata),        │
#  │ 192.168.77.10:80 (RFC1918), [2001:db8:100::10]:80, [2001:db8:200::10]:80,│
#  │ udp 198.51.100.53:53 (not a resolver); routes back to 10.40/16, fd00:40::│
#  └──────────────────────────────────────────────────────────────────────────┘
#
# The guests are built by tools/vm/build-image.sh (cached in build/vm/) and boot in parallel, each
# to a READY line on its serial console; a guest that does not get there is booted once more
# (the only retry: a probe is never repeated). The host sends each probe to a guest over its
# console: busybox wget for HTTP, busybox nslookup for DNS, tfprobe (tools/vm/tfprobe.c) for UDP
# and for a chosen source address. The guest's answer ("PROBE ID rc=N") is its own view; the
# verdict is what the host saw: the listener's log, dnsmasq's query log, the other guest's
# console (HIT lines) and tapfenced's event feed.
#
# Phase 1 (baseline, nothing enforces): every probe reaches its listener, so a negative check
# later cannot pass because a probe was broken. Phase 2: tapfenced with session a (198.51.100.10
# tcp/80 udp/7, 2001:db8:100::/48 tcp/80, host allowed.example.com tcp/80) and session b
# (203.0.113.10 tcp/80 udp/7, host bee.example.net tcp/80); every probe is allowed or denied with
# the event naming the reason. Phase 3: a live rule change, then counters, liveness and the feed.
# TF_BASELINE_ONLY=1 stops after phase 1. TF_KEEP=1 keeps $T (consoles, QEMU and daemon logs).
# TF_VM_ACCEL=tcg|kvm skips the KVM probe (tests/vm/lib.sh).

set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../netns/lib.sh
source "$(dirname "$0")/../netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-vmhost-$TF_SFX inet=tf-vminet-$TF_SFX
t_start=$SECONDS

vm_prereqs || die "the vm tier needs:$VM_MISSING (make deps)"
tf_need dnsmasq

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$inet"
setup ns_router "$host"

A_MAC=02:00:00:00:4a:02 A_GW_MAC=02:00:00:00:4a:01 A4=10.40.1.2 A_GW4=10.40.1.1
B_MAC=02:00:00:00:4b:02 B_GW_MAC=02:00:00:00:4b:01 B4=10.40.2.2 B_GW4=10.40.2.1
setup tap_link "$host" tva $A_GW_MAC $A_GW4/24 fd00:40:1::1/64 $A_MAC $A4 fd00:40:1::2
setup tap_link "$host" tvb $B_GW_MAC $B_GW4/24 fd00:40:2::1/64 $B_MAC $B4 fd00:40:2::2

setup inet_link "$host" "$inet" 98 10.40.0.0/16 fd00:40::/32 \
	198.51.100.0/24 203.0.113.0/24 169.254.169.254/32 192.168.77.0/24 2001:db8::/32 -- \
	198.51.100.10 198.51.100.20 198.51.100.30 198.51.100.53 203.0.113.10 203.0.113.20 \
	169.254.169.254 192.168.77.10 2001:db8:100::10 2001:db8:200::10

# --- the resolver: dnsmasq in $host, on the two gateway addresses only ------------------------

DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$host" "$DNS_LOG" "$A_GW4,$B_GW4" --local=/example.com/ --local=/example.net/ \
	--host-record=allowed.example.com,198.51.100.20,300 \
	--host-record=denied.example.com,198.51.100.30,300 \
	--host-record=bee.example.net,203.0.113.20,300

# --- listeners --------------------------------------------------------------------------------

L_INET=$T/inet.log
listener_start "$inet" "$L_INET" \
	tcp:198.51.100.10:80 tcp:198.51.100.10:22 tcp:198.51.100.20:80 tcp:198.51.100.30:80 \
	tcp:203.0.113.10:80 tcp:203.0.113.20:80 tcp:169.254.169.254:80 tcp:192.168.77.10:80 \
	'tcp:[2001:db8:100::10]:80' 'tcp:[2001:db8:200::10]:80' \
	udp:198.51.100.10:7 udp:198.51.100.10:9 udp:203.0.113.10:7 udp:198.51.100.53:53
PID_INET=$LISTENER_PID

# --- the guests -------------------------------------------------------------------------------

vm_image || die "cannot build the guest image (tools/vm/build-image.sh)"
vm_pick_accel
t_boot=$SECONDS
vm_start a "$host" tva $A_MAC $A4/24 $A_GW4 fd00:40:1::2/64 fd00:40:1::1 8081
vm_start b "$host" tvb $B_MAC $B4/24 $B_GW4 fd00:40:2::2/64 fd00:40:2::1 8082
note "booting guests a and b in parallel (accel $VM_ACCEL, kernel $(cat "$VM_DIR/kernel/release"))"
for g in a b; do
	vm_ready $g || die "guest $g did not boot, twice (its console is above)"
done
note "both guests READY $((SECONDS - t_boot)) s after the first QEMU started"
CON_A=${vm_con[a]} CON_B=${vm_con[b]}
# A second address on guest A, to send from as a spoofer would.
vm_run a addaddr 10.40.1.99/24 || die "guest a: ip addr add 10.40.1.99/24: $(cat "$VM_OUT")"

# --- probes -----------------------------------------------------------------------------------
# The probe table (netns/lib.sh: probe, run_probe); each CLIENT is vm_probe GUEST COMMAND..., a
# function of tools/vm/guest-init.sh run in GUEST.

# vm_probe GUEST COMMAND...: vm_run for run_probe: 125 when the guest did not answer.
vm_probe() {
	vm_run "$@"
	local rc=$?
	[ "$VM_RC" = none ] || return "$rc"
	note "guest $1 did not answer within ${VM_RUN_TIMEOUT:-15} s"
	return 125
}
probe_note() { vm_out_note; }

EA4="direction=from_guest session=a ifname=tva family=ipv4"
EA6="direction=from_guest session=a ifname=tva family=ipv6"
EB4="direction=from_guest session=b ifname=tvb family=ipv4"
EB6="direction=from_guest session=b ifname=tvb family=ipv6"

probe a_http allow allow_rule "$EA4 proto=tcp src=$A4 dst=198.51.100.10 dport=80" \
	"$L_INET" "tcp 198.51.100.10:80 from $A4:" "A wget 198.51.100.10:80 (A's rule)" \
	-- vm_probe a get 198.51.100.10 80
probe a_tcp22 deny port_not_allowed "$EA4 proto=tcp dst=198.51.100.10 dport=22" \
	"$L_INET" "tcp 198.51.100.10:22 from $A4:" "A tcp 198.51.100.10:22 (port not in the rule)" \
	-- vm_probe a tcp 198.51.100.10 22
probe a_http_b deny no_rule "$EA4 proto=tcp dst=203.0.113.10 dport=80" \
	"$L_INET" "tcp 203.0.113.10:80 from $A4:" "A wget 203.0.113.10:80 (only B's rule)" \
	-- vm_probe a get 203.0.113.10 80
probe a_udp7 allow allow_rule "$EA4 proto=udp dst=198.51.100.10 dport=7" \
	"$L_INET" "udp 198.51.100.10:7 from $A4:" "A udp 198.51.100.10:7 (A's rule)" \
	-- vm_probe a udp 198.51.100.10 7
probe a_udp9 deny port_not_allowed "$EA4 proto=udp dst=198.51.100.10 dport=9" \
	"$L_INET" "udp 198.51.100.10:9 from $A4:" "A udp 198.51.100.10:9 (port not in the rule)" \
	-- vm_probe a udp 198.51.100.10 9
probe a_udp_b deny no_rule "$EA4 proto=udp dst=203.0.113.10 dport=7" \
	"$L_INET" "udp 203.0.113.10:7 from $A4:" "A udp 203.0.113.10:7 (only B's rule)" \
	-- vm_probe a udp 203.0.113.10 7
probe a_metadata deny floor_metadata "$EA4 proto=tcp dst=169.254.169.254 dport=80" \
	"$L_INET" "tcp 169.254.169.254:80 from $A4:" "A wget 169.254.169.254:80 (metadata)" \
	-- vm_probe a get 169.254.169.254 80
probe a_private deny floor_private "$EA4 proto=tcp dst=192.168.77.10 dport=80" \
	"$L_INET" "tcp 192.168.77.10:80 from $A4:" "A wget 192.168.77.10:80 (RFC1918)" \
	-- vm_probe a get 192.168.77.10 80
probe a_to_b deny other_session "$EA4 proto=tcp dst=$B4 dport=8082" \
	"$CON_B" "HIT tcp 8082 from $A4:" "A wget guest B $B4:8082 (another session's guest)" \
	-- vm_probe a get $B4 8082
probe a_spoof_tcp deny spoofed_src "$EA4 proto=tcp src=10.40.1.99 dst=198.51.100.10 dport=80" \
	"$L_INET" "tcp 198.51.100.10:80 from 10.40.1.99:" "A tcp from spoofed 10.40.1.99 to 198.51.100.10:80" \
	-- vm_probe a tcp -s 10.40.1.99 198.51.100.10 80
probe a_spoof_udp deny spoofed_src "$EA4 proto=udp src=10.40.1.99 dst=198.51.100.10 dport=7" \
	"$L_INET" "udp 198.51.100.10:7 from 10.40.1.99:" "A udp from spoofed 10.40.1.99 to 198.51.100.10:7" \
	-- vm_probe a udp -s 10.40.1.99 198.51.100.10 7
probe a_v6 allow allow_rule "$EA6 proto=tcp dst=2001:db8:100::10 dport=80" \
	"$L_INET" "tcp [2001:db8:100::10]:80 from [fd00:40:1::2]:" "A wget [2001:db8:100::10]:80 (A's v6 rule)" \
	-- vm_probe a get 2001:db8:100::10 80
probe a_v6_norule deny no_rule "$EA6 proto=tcp dst=2001:db8:200::10 dport=80" \
	"$L_INET" "tcp [2001:db8:200::10]:80 from [fd00:40:1::2]:" "A wget [2001:db8:200::10]:80 (no v6 rule)" \
	-- vm_probe a get 2001:db8:200::10 80
probe a_unresolved deny no_rule "$EA4 proto=tcp dst=198.51.100.20 dport=80" \
	"$L_INET" "tcp 198.51.100.20:80 from $A4:" "A wget 198.51.100.20:80 before resolving allowed.example.com" \
	-- vm_probe a get 198.51.100.20 80
probe a_dns allow allow_dns "session=a direction=from_guest proto=udp dst=$A_GW4 dport=53 name=allowed.example.com" \
	"$DNS_LOG" "query[A] allowed.example.com from $A4" "A nslookup allowed.example.com at its resolver" \
	-- vm_probe a dns allowed.example.com $A_GW4
probe a_dns_http allow allow_learned "$EA4 proto=tcp dst=198.51.100.20 dport=80" \
	"$L_INET" "tcp 198.51.100.20:80 from $A4:" "A wget allowed.example.com:80 (the address it learnt)" \
	-- vm_probe a dnsget allowed.example.com $A_GW4 80
probe a_dns_denied deny dns_name_denied "session=a direction=from_guest name=denied.example.com" \
	"$DNS_LOG" "query[A] denied.example.com from $A4" "A nslookup denied.example.com (no rule names it)" \
	-- vm_probe a dns denied.example.com $A_GW4
probe a_dns_b deny dns_name_denied "session=a direction=from_guest name=bee.example.net" \
	"$DNS_LOG" "query[A] bee.example.net from $A4" "A nslookup bee.example.net (B's name)" \
	-- vm_probe a dns bee.example.net $A_GW4
probe a_dns_other deny dns_not_resolver "session=a direction=from_guest proto=udp dst=198.51.100.53 dport=53" \
	"$L_INET" "udp 198.51.100.53:53 from $A4:" "A nslookup at 198.51.100.53 (not its resolver)" \
	- -- vm_probe a dns allowed.example.com 198.51.100.53
probe b_http allow allow_rule "$EB4 proto=tcp src=$B4 dst=203.0.113.10 dport=80" \
	"$L_INET" "tcp 203.0.113.10:80 from $B4:" "B wget 203.0.113.10:80 (B's rule)" \
	-- vm_probe b get 203.0.113.10 80
probe b_http_a deny no_rule "$EB4 proto=tcp dst=198.51.100.10 dport=80" \
	"$L_INET" "tcp 198.51.100.10:80 from $B4:" "B wget 198.51.100.10:80 (only A's rule)" \
	-- vm_probe b get 198.51.100.10 80
probe b_udp7 allow allow_rule "$EB4 proto=udp dst=203.0.113.10 dport=7" \
	"$L_INET" "udp 203.0.113.10:7 from $B4:" "B udp 203.0.113.10:7 (B's rule)" \
	-- vm_probe b udp 203.0.113.10 7
probe b_udp_a deny no_rule "$EB4 proto=udp dst=198.51.100.10 dport=7" \
	"$L_INET" "udp 198.51.100.10:7 from $B4:" "B udp 198.51.100.10:7 (only A's rule)" \
	-- vm_probe b udp 198.51.100.10 7
probe b_metadata deny floor_metadata "$EB4 proto=tcp dst=169.254.169.254 dport=80" \
	"$L_INET" "tcp 169.254.169.254:80 from $B4:" "B wget 169.254.169.254:80 (metadata)" \
	-- vm_probe b get 169.254.169.254 80
probe b_to_a deny other_session "$EB4 proto=tcp dst=$A4 dport=8081" \
	"$CON_A" "HIT tcp 8081 from $B4:" "B wget guest A $A4:8081 (another session's guest)" \
	-- vm_probe b get $A4 8081
probe b_v6_a deny no_rule "$EB6 proto=tcp dst=2001:db8:100::10 dport=80" \
	"$L_INET" "tcp [2001:db8:100::10]:80 from [fd00:40:2::2]:" "B wget [2001:db8:100::10]:80 (only A's v6 rule)" \
	-- vm_probe b get 2001:db8:100::10 80
probe b_dns_http allow allow_learned "$EB4 proto=tcp dst=203.0.113.20 dport=80" \
	"$L_INET" "tcp 203.0.113.20:80 from $B4:" "B wget bee.example.net:80 (the address it learnt)" \
	-- vm_probe b dnsget bee.example.net $B_GW4 80
probe b_dns_a deny dns_name_denied "session=b direction=from_guest name=allowed.example.com" \
	"$DNS_LOG" "query[A] allowed.example.com from $B4" "B nslookup allowed.example.com (A's name)" \
	-- vm_probe b dns allowed.example.com $B_GW4
probe b_learnt_by_a deny no_rule "$EB4 proto=tcp dst=198.51.100.20 dport=80" \
	"$L_INET" "tcp 198.51.100.20:80 from $B4:" "B wget 198.51.100.20:80 (learnt by A only)" \
	-- vm_probe b get 198.51.100.20 80

# --- phase 1: baseline ------------------------------------------------------------------------

t_probe=$SECONDS
note "phase 1: baseline, nothing enforces"
for p in "${probes[@]}"; do run_probe "$p" baseline; done
note "phase 1 took $((SECONDS - t_probe)) s"

if [ -n "${TF_BASELINE_ONLY:-}" ]; then
	tf_done
	exit
fi

# --- phase 2: tapfenced -----------------------------------------------------------------------

note "phase 2: tapfenced with sessions a and b"
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" "${TF_ATTACH_MODE:+\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"

session_spec "$T/a.json" a tva $A_MAC $A4 fd00:40:1::2 $A_GW_MAC $A_GW4 fd00:40:1::1 '[
	{"cidr":"198.51.100.10/32","proto":"tcp","ports":[80]},
	{"cidr":"198.51.100.10/32","proto":"udp","ports":[7]},
	{"cidr":"2001:db8:100::/48","proto":"tcp","ports":[80]},
	{"host":"allowed.example.com","proto":"tcp","ports":[80]}]'
session_spec "$T/b.json" b tvb $B_MAC $B4 fd00:40:2::2 $B_GW_MAC $B_GW4 fd00:40:2::1 '[
	{"cidr":"203.0.113.10/32","proto":"tcp","ports":[80]},
	{"cidr":"203.0.113.10/32","proto":"udp","ports":[7]},
	{"host":"bee.example.net","proto":"tcp","ports":[80]}]'
sessions_add a b || { tf_done; exit 1; }

t_probe=$SECONDS
for p in "${probes[@]}"; do run_probe "$p" enforced; done
note "phase 2 took $((SECONDS - t_probe)) s"

# --- phase 3: a live rule, counters, liveness, the feed ---------------------------------------

note "phase 3: a live rule change on session a"
rule='{"cidr":"203.0.113.10/32","proto":"tcp","ports":[80]}'
check "rule add a $rule" tfc rule add a "$rule"
p_verdict[a_http_b]=allow p_reason[a_http_b]=allow_rule
p_desc[a_http_b]="A wget 203.0.113.10:80 after rule add"
run_probe a_http_b enforced
check "rule del a $rule" tfc rule del a "$rule"
p_verdict[a_http_b]=deny p_reason[a_http_b]=no_rule
p_desc[a_http_b]="A wget 203.0.113.10:80 after rule del"
run_probe a_http_b enforced

# counter_at_least SESSION REASON N: session show --json counts at least N for REASON.
counter_at_least() {
	tfc --json session show "$1" >"$T/show.json" 2>&1 &&
		"$PY" -c 'import json, sys; c = json.load(open(sys.argv[1]))["session"]["counters"]
sys.exit(0 if int(c.get(sys.argv[2], 0)) >= int(sys.argv[3]) else 1)' "$T/show.json" "$2" "$3"
}
for c in a:allow_rule a:allow_learned a:spoofed_src a:floor_metadata a:floor_private \
	a:other_session a:dns_name_denied a:dns_not_resolver b:allow_rule b:allow_learned \
	b:other_session b:no_rule; do
	check "session ${c%%:*}: counter ${c#*:} is not zero" counter_at_least "${c%%:*}" "${c#*:}" 1
done
tfc session show a 2>&1 | sed -n '/^counters:/,$p' | sed 's/^/#   session a /'

# A negative check means something only while what would have seen the probe is alive.
check "inet listener still running" kill -0 "$PID_INET"
check "dnsmasq still running" kill -0 "$DNS_PID"
check "guest a (QEMU) still running" kill -0 "${vm_pid[a]}"
check "guest b (QEMU) still running" kill -0 "${vm_pid[b]}"
check "tapfenced still running" kill -0 "$TFD_PID"
for g in a b; do
	check_not "guest $g: no BOOTFAIL, oops or panic on its console" \
		grep -qE 'BOOTFAIL|Oops|Kernel panic|BUG:' <(vm_console $g)
done

# --- phase 4: rejections ----------------------------------------------------------------------

note "phase 4: session b answers what it denies (on_deny reject, through virtio-net and a real tap)"
check "session del b" tfc session del b
tfjson set "$T/b.json" on_deny '"reject"' || die "cannot write $T/b.json"
sessions_add b
# rejected DESC TEXT COMMAND...: the guest's probe fails, saying TEXT (its kernel's errno).
rejected() {
	local desc=$1 text=$2
	shift 2
	if ! vm_run b "$@" && grep -q "$text" "$VM_OUT"; then
		pass "reject: $desc: $text"
	else
		fail "reject: $desc: want \`$text'"
		vm_out_note
	fi
}
tf_mark
rejected "B tcp 198.51.100.10:80 (only A's rule)" "Connection refused" tcp 198.51.100.10 80
rejected "B tcp [2001:db8:100::10]:80" "Connection refused" tcp 2001:db8:100::10 80
rejected "B udp 198.51.100.10:7" "No route to host" udp 198.51.100.10 7
rejected "B nslookup allowed.example.com (A's name)" "REFUSED" dns allowed.example.com $B_GW4
check "reject: B wget 203.0.113.10:80 (B's rule) still works" vm_run b get 203.0.113.10 80
expect_event session=b verdict=deny reason=no_rule rejected=True -- "reject: the denials' events say they were answered"
expect_not_reached "$L_INET" "tcp 198.51.100.10:80 from $B4:" "reject: nothing reached the listener"

tf_unmark "$TF_EVENTS"
expect_event_schema "event log: every line is JSON with the common keys"
expect_no_event reason=allow_flow -- "event log: no allow_flow events"

tfd_stop
note "tier time: $((SECONDS - t_start)) s"
tf_done
