#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Subscribers of every session share one feed (control.c: the lines are written once and sent to
# each, docs/performance.md#event-feed), and one of them that stops reading must not cost the
# others a line: a guest floods 20,000 denied datagrams with every event written
# ("events_per_s": 0, about 7 MB of lines); a subscriber that reads nothing (a 4 KiB receive
# buffer) is disconnected once 4 MiB are queued for it, and the log says so; a subscriber of every
# session and one of the session, both reading, get every line of the flood; the stalled one,
# reading at last, finds the connection closed after at most 4 MiB and what its socket held.
#
#  guest ns (10.10.1.2) ── veth ── host ns: tapfenced, session a ── the fake internet
#
# Everything lives in namespaces this script makes, and goes with it.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-sbh-$TF_SFX guest=tf-sbg-$TF_SFX inet=tf-sbi-$TF_SFX
FLOOD=20000
one_guest "$host" "$guest" "$inet"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json" '"limits":{"events_per_s":0}'
tfd_start "$host"
one_guest_spec "$T/a.json"
sessions_add a

"$TF_BUILD/tapfence" --socket "$TF_SOCK" events --follow -o json >"$T/all.json" 2>"$T/all.err" &
ALL=$!
defer kill_pid "$ALL"
"$TF_BUILD/tapfence" --socket "$TF_SOCK" events --follow --session a -o json >"$T/a.json.out" \
	2>"$T/a.err" &
ONE=$!
defer kill_pid "$ONE"
"$PY" "$TF_NETNS_DIR/ctlraw.py" "$TF_SOCK" --timeout 5 stalled "$T/go" >"$T/stalled.json" 2>&1 &
STALLED=$!
defer kill_pid "$STALLED"
# Every subscriber in place: a first event reaches both readers.
for i in 1 2 3 4 5; do
	n "$guest" ping -c 1 -W 1 203.0.113.10 >/dev/null 2>&1
	grep -q '"proto":"icmp"' "$T/all.json" 2>/dev/null && grep -q '"proto":"icmp"' "$T/a.json.out" \
		2>/dev/null && break
done
check "both readers subscribed (a first event reached them)" grep -q '"proto":"icmp"' "$T/a.json.out"

note "a flood of $FLOOD denied datagrams, every event written"
# Paced at about 10,000 a second: the readers (the CLI parses every line) keep up, while the
# stalled subscriber's queue passes 4 MiB all the same.
n "$guest" "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[1])):
    s.sendto(b"x", ("203.0.113.10", 20000 + i % 1000))
    if i % 10 == 9:
        time.sleep(0.001)' "$FLOOD"
# flood_lines FILE: lines of FILE that are the flood's events.
flood_lines() { grep -c '"dst":"203.0.113.10","sport":[0-9]*,"dport":2[0-9]\{4\}' "$1"; }
wait_for 20 sh -c "test \"\$(grep -c '\"dst\":\"203.0.113.10\",\"sport\":[0-9]*,\"dport\":2[0-9]\{4\}' '$TF_EVENTS')\" -ge $FLOOD" ||
	fail "the log has $(flood_lines "$TF_EVENTS") of the flood's $FLOOD events"
wait_for 20 sh -c "test \"\$(grep -c '\"dport\":2[0-9]\{4\}' '$T/all.json')\" -ge $FLOOD"
wait_for 20 sh -c "test \"\$(grep -c '\"dport\":2[0-9]\{4\}' '$T/a.json.out')\" -ge $FLOOD"
check "the log has every event of the flood" test "$(flood_lines "$TF_EVENTS")" -eq "$FLOOD"
check "the subscriber of every session got every event of the flood" \
	test "$(flood_lines "$T/all.json")" -eq "$FLOOD"
check "the subscriber of session a got every event of the flood" \
	test "$(flood_lines "$T/a.json.out")" -eq "$FLOOD"
check "the subscriber of every session got the lines in the log's order" sh -c \
	"grep '\"dport\":2[0-9]\{4\}' '$TF_EVENTS' | sed 's/,\"seq\".*//' >'$T/log.flood' &&
	 grep '\"dport\":2[0-9]\{4\}' '$T/all.json' | sed 's/,\"seq\".*//' | cmp -s - '$T/log.flood'"
check "both readers are still connected" kill -0 "$ALL" "$ONE"
check "the log says the subscriber that read nothing fell behind" \
	grep -q "subscriber fell 4194304 bytes behind: disconnected" "$T/tapfenced.log"
touch "$T/go"
wait "$STALLED"
check "the stalled subscriber: the answer, then the end of the connection (read at last)" \
	tfjson check "$T/stalled.json" 'd["answer"] == "{\"ok\":true,\"subscribed\":true}" and d["end"] in ("eof", "reset")'
check "... after at most 4 MiB and its socket's buffers, never the whole flood" \
	tfjson check "$T/stalled.json" "0 < d['bytes'] <= 4194304 + 1048576 and d['lines'] < $FLOOD"
tf_done
