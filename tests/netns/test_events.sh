#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that a guest cannot hide the one denial it cares about behind a flood of others: over its event budget, the feed still names a new destination.
#
#  ┌──────────────────────────┐
#  │ $ga  (guest A)           │  one python process, pinned to one CPU (the budget is per CPU),
#  │ ga 10.10.1.2/24          │  sends the flood and then the denial that matters
#  └────────────┬─────────────┘
#               │ veth
#  ┌────────────┴─────────────────────────────────────────────────────────┐
#  │ $host  tapfenced on ha (session a: allows nothing but 198.51.100.0/24 │
#  │ udp/7), "limits":{"events_per_s":10,"events_burst":20}                │
#  │ ha 10.10.1.1/24; routes 203.0.113.0/24 198.51.100.0/24 via $inet      │
#  └────────────┬─────────────────────────────────────────────────────────┘
#               │ veth
#  ┌────────────┴─────────────────────────────────────────────────────────┐
#  │ $inet  ii 10.99.0.2; on lo 203.0.113.10 203.0.113.20 198.51.100.10;   │
#  │ UDP listeners on :9 of the first two                                   │
#  └──────────────────────────────────────────────────────────────────────┘
#
# Phase 1 (baseline, nothing enforces): the flood and the last datagram reach their listeners.
# Phase 2 (tapfenced): 1600 denied datagrams to 203.0.113.10:9, then at once one to 203.0.113.20:9.
# The flood is held back by the budget (suppressed), yet the feed names the second destination.
# Then a flood to 1000 distinct destinations: what gets out is bounded (two budgets), the rest is
# counted as suppressed, and every packet is still dropped and counted.
# Phase 3: an event that did not wake the daemon (one did less than TF_EV_WAKE_MS before) is in the
# log within the drain the daemon owes, and a run of events wakes it a few times, not once each
# (tests/netns/event_wake.py). TF_KEEP=1 keeps $T.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX inet=tf-inet-$TF_SFX

setup ns_add "$host" "$ga" "$inet"
setup ns_router "$host"
A_MAC=02:00:00:00:0a:02 A_GW_MAC=02:00:00:00:0a:01
setup guest_link "$ga" ga $A_MAC 10.10.1.2/24 fd00:a:1::2/64 "$host" ha $A_GW_MAC 10.10.1.1/24 fd00:a:1::1/64
setup inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 203.0.113.0/24 198.51.100.0/24 -- \
	203.0.113.10 203.0.113.20 198.51.100.10

L_INET=$T/inet.log
listener_start "$inet" "$L_INET" udp:203.0.113.10:9 udp:203.0.113.20:9

CPU=$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')

# flood N DST... : from the guest, on one CPU, N datagrams to port 9 of the DSTs in turn (the
# next DST for each), then one to LAST: flood N LAST DST...
flood() {
	local count=$1 last=$2
	shift 2
	n "$ga" taskset -c "$CPU" "$PY" "$TF_NETNS_DIR/udp_burst.py" "$count" "$last" "$@"
}

# --- phase 1: baseline ------------------------------------------------------------------------

note "phase 1: baseline, nothing enforces"
tf_mark
flood 1600 203.0.113.20 203.0.113.10
expect_reached "$L_INET" "udp 203.0.113.10:9 from 10.10.1.2:40900" "baseline: the flood reaches 203.0.113.10:9"
expect_reached "$L_INET" "udp 203.0.113.20:9 from 10.10.1.2:40900" "baseline: the last datagram reaches 203.0.113.20:9"

# --- phase 2: tapfenced -----------------------------------------------------------------------

note "phase 2: tapfenced, session a, a budget of 10 events/s, bursts of 20"
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" '"limits":{"events_per_s":10,"events_burst":20}'"${TF_ATTACH_MODE:+,\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"
session_spec "$T/a.json" a ha $A_MAC 10.10.1.2 fd00:a:1::2 $A_GW_MAC 10.10.1.1 fd00:a:1::1 '[
	{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]}]'
tfc session add "$T/a.json" >"$T/cli.out" 2>&1 || { fail "session add a: $(head -n 2 "$T/cli.out")"; tf_done; exit 1; }
pass "session add a"

# count_events FILTER...: events matching FILTER since tf_mark.
count_events() {
	events_match "$TF_EVENTS" "${tf_mark_at[$TF_EVENTS]:-0}" 1 1 "$@" | wc -l
}
# suppressed_total: what the session's counters say was suppressed, from `session show'.
suppressed_total() {
	tfc --json session show a 2>/dev/null |
		tfjson get session.events_suppressed
}

sleep 2.5 # the bucket is full again
tf_mark
flood 1600 203.0.113.20 203.0.113.10
expect_not_reached "$L_INET" "udp 203.0.113." "enforced: neither the flood nor the last datagram reaches a listener"
expect_event session=a verdict=deny reason=no_rule dst=203.0.113.20 dport=9 \
	-- "enforced: after 1600 denials to 203.0.113.10, the feed names the denial to 203.0.113.20"
n1=$(count_events session=a reason=no_rule dst=203.0.113.10)
check "enforced: the flood itself was held back by the budget ($n1 of 1600 events)" test "$n1" -lt 100
sup=$(suppressed_total)
check "enforced: the rest is counted as suppressed ($sup)" test "${sup:-0}" -gt 1400

sleep 2.5
tf_mark
dsts=()
for i in $(seq 1 250); do dsts+=("203.0.113.$i" "198.51.100.$((i % 250 + 1))"); done
flood 1000 203.0.113.20 "${dsts[@]:0:500}" "${dsts[@]:0:500}"
sleep 1
nd=$(count_events session=a verdict=deny)
# Two budgets per CPU (the flood runs on one): at most 2 * (20 + 10/s over its run) events, and
# the flood's run is far shorter than the 3 s this allows for.
check "enforced: 1000 denials to 500 distinct destinations: at most two budgets get out ($nd events)" \
	test "$nd" -le 100
# --- phase 3: what wakes the daemon -------------------------------------------------------------

sleep 2.5 # the bucket is full again
read -r b_ms wakes run_ms <<<"$(n "$ga" "$PY" "$TF_NETNS_DIR/event_wake.py" "$TF_EVENTS" "$TFD_PID" 203.0.113.20)"
note "wake-ups: B written ${b_ms:-?} ms after it was sent; 20 events 0.5 ms apart in ${run_ms:-?} ms, ${wakes:-?} wake-ups of the main thread"
check "wake-ups: an event that did not wake the daemon is written by the drain owed after the one that did (${b_ms:-?} ms, not the 250 ms tick)" \
	test "${b_ms:--1}" -ge 0 -a "${b_ms:--1}" -lt 150
# About one a TF_EV_WAKE_MS (10 ms) of the run, the drains owed after it, a tick, a look again at a
# record not yet committed: at most 10 more. A wake-up per event is 20 or more.
check "wake-ups: 20 events 0.5 ms apart wake the daemon about once per 10 ms of their run, not once each (${wakes:-?} in ${run_ms:-?} ms)" \
	test "${wakes:-99}" -le $((${run_ms:-999} / 10 + 10))
check "tapfenced still running" kill -0 "$TFD_PID"
tf_done
