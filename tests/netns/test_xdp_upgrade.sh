#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that a restarted daemon in XDP mode replaces the XDP program it finds on a session's device
# with its own in one step (a new build, new load-time knobs), and that enforcement holds across.
#
#   ns g (guest) ─ veth ga|ha ─ ns host (router, tapfenced, attach_mode xdp) ─ ns inet
#     10.10.1.2                                                     198.51.100.10:80 (allowed)
#                                                                   203.0.113.10:80 (denied)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-host-$TF_SFX g=tf-g-$TF_SFX inet=tf-inet-$TF_SFX
one_guest "$host" "$g" "$inet"
bpffs_mount "$T/bpffs"
one_guest_spec "$T/a.json"


# The id of the XDP program on the guest's device, "" if none.
xdp_id() { ip -n "$host" -d link show dev ha | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p'; }

restart() {
	kill -TERM "$TFD_PID"
	wait "$TFD_PID" 2>/dev/null
	TFD_PID=
	tfd_start "$host"
}

tfd_config "$T/tf.json" '"attach_mode":"xdp","limits":{"events_per_s":200}'
tfd_start "$host"
check "session a added" tfc session add "$T/a.json"
id1=$(xdp_id)
check "an XDP program is on the guest's device ($id1)" test -n "$id1"
guest_probe "A -> 198.51.100.10:80 (its rule)" 198.51.100.10 reached
guest_probe "A -> 203.0.113.10:80 (no rule)" 203.0.113.10 blocked

for knob in 200 300; do
	note "restart (events_per_s $knob): the program is replaced in place"
	tfd_config "$T/tf.json" '"attach_mode":"xdp","limits":{"events_per_s":'"$knob"'}'
	restart
	id2=$(xdp_id)
	check "another XDP program ($id2, was $id1) is on the device" test -n "$id2" -a "$id2" != "$id1"
	check "the log names the replacement" grep -q "XDP program $id1 replaced by a new one" "$T/tapfenced.log"
	guest_probe "after the replacement: A -> 198.51.100.10:80" 198.51.100.10 reached
	guest_probe "after the replacement: A -> 203.0.113.10:80" 203.0.113.10 blocked
	expect_event reason=no_rule -- "the new program reports the denial"
	id1=$id2
done

tf_done
