#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that the sealed event log survives the trip off the node through a standard log shipper, and
# that the shipped copy is what catches a truncation on the node: rsyslog's imfile on the node reads
# tapfenced's log and forwards it over TCP to a collecting rsyslog in another namespace; the
# collector's copy verifies with `tapfence log verify', and the node's log cut back to an earlier
# checkpoint is caught against the last checkpoint the collector received.
#
#   ns g (guest) ─ veth ga|ha ─ ns host (tapfenced, rsyslogd: imfile -> omfwd) ─ veth cn|cc ─ ns coll
#     10.10.1.2                   10.77.0.1                                       10.77.0.2:5514 (rsyslogd: imtcp -> file)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need rsyslogd
host=tf-host-$TF_SFX g=tf-g-$TF_SFX coll=tf-coll-$TF_SFX
ns_add "$host" "$g" "$coll"
guest_link "$g" ga 02:00:00:00:1a:02 10.10.1.2/24 fd00:a:1::2/64 "$host" ha 02:00:00:00:1a:01 10.10.1.1/24 fd00:a:1::1/64
veth_pair "$host" cn "$coll" cc
ip -n "$host" addr add 10.77.0.1/30 dev cn
ip -n "$coll" addr add 10.77.0.2/30 dev cc
ip -n "$host" link set cn up
ip -n "$coll" link set cc up
bpffs_mount "$T/bpffs"
session_spec "$T/a.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 fd00:a:1::1 \
	'[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
tfd_config "$T/tf.json" '"limits":{"events_per_s":0},"log":{"checkpoint_lines":50,"checkpoint_s":1,"name":"ship-node"}'
KEY=$T/state/log.key.pub
COLLECTED=$T/collected.jsonl

# rsyslogd_start NS NAME CONFIG_TEXT: a private rsyslogd (its own config, work dir and pid file).
rsyslogd_start() {
	local ns=$1 name=$2
	mkdir -p "$T/rs-$name"
	printf '%s\n' "$3" >"$T/rs-$name.conf"
	ip netns exec "$ns" rsyslogd -n -f "$T/rs-$name.conf" -i "$T/rs-$name.pid" >>"$T/rs-$name.out" 2>&1 &
	RS_PID=$!
	defer kill_pid "$RS_PID"
}

# The configs are docs/examples', placeholders filled: the example docs/fleet.md gives is this one.
EX=$TF_ROOT/docs/examples
rsyslogd_start "$coll" coll "$(sed "s|@WORKDIR@|$T/rs-coll|; s|@LISTEN@|10.77.0.2|; s|@PORT@|5514|;
	s|@OUT@|$COLLECTED|" "$EX/rsyslog-tapfence-collector.conf")"
wait_for 5 n "$coll" sh -c 'ss -ltn | grep -q 10.77.0.2:5514' || die "the collector does not listen: $(tail -n 3 "$T/rs-coll.out")"

tfd_start "$host"
check "session a added" tfc session add "$T/a.json"
rsyslogd_start "$host" node "$(sed "s|@WORKDIR@|$T/rs-node|; s|@EVENT_LOG@|$TF_EVENTS|;
	s|@COLLECTOR@|10.77.0.2|; s|@PORT@|5514|" "$EX/rsyslog-tapfence-node.conf")"

n "$g" "$PY" -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(300):
    s.sendto(b"x", ("203.0.113.%d" % (1 + i % 200), 9))'
sleep 2
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
nlines=$(wc -l <"$TF_EVENTS")
check "the collector received every line of the node's log ($nlines)" \
	wait_for 10 sh -c "test \"\$(wc -l <'$COLLECTED' 2>/dev/null)\" -ge $nlines"
check "the collected copy is the node's log byte for byte" cmp -s "$TF_EVENTS" "$COLLECTED"
"$TF_BUILD/tapfence" log verify --key "$KEY" "$COLLECTED" >"$T/verify.out" 2>&1
check "log verify at the collector: verified ($(head -n 1 "$T/verify.out"))" grep -q '^verified: ' "$T/verify.out"

# The last checkpoint the collector holds: what a reviewer trusts, since it left the node.
"$PY" -c 'import json, sys
cps = [json.loads(l) for l in open(sys.argv[1]) if "\"kind\":\"checkpoint\"" in l]
sys.stdout.write(cps[-1]["note"])' "$COLLECTED" >"$T/shipped.checkpoint"
c2=$(grep -n '"kind":"checkpoint"' "$TF_EVENTS" | sed -n 2p | cut -d: -f1)
head -n "$c2" "$TF_EVENTS" >"$T/cut.jsonl"
"$TF_BUILD/tapfence" log verify --key "$KEY" "$T/cut.jsonl" >"$T/verify.out" 2>&1
check "the node's log cut back to its 2nd checkpoint verifies on its own (as documented)" test $? -eq 0
"$TF_BUILD/tapfence" log verify --key "$KEY" --trusted-checkpoint "$T/shipped.checkpoint" "$T/cut.jsonl" \
	>"$T/verify.out" 2>&1
rc=$?
check "... and is caught against the collector's checkpoint (exit $rc: $(head -c 160 "$T/verify.out"))" \
	sh -c "test $rc -eq 1 && grep -q '^tampered: truncated' '$T/verify.out'"
n "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --cleanup >>"$T/tapfenced.log" 2>&1

tf_done
