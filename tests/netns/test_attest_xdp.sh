#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test `tapfence attest' in XDP mode (docs/attest.md): a device's ingress is its XDP program and,
# after it, the tcx ingress chain headed by tc_gso_guard (what XDP cannot see, GSO DNS, is refused
# there). A fresh attestation lists both as tapfence's and verifies; a program attached ahead of
# the guard on tcx ingress makes it stale, and a new one fails verification naming the device.
#
#   ns ga (guest a) ─ veth | ─ ns host (tapfenced, attach_mode xdp) ─ veth | ─ ns inet (one_guest)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX inet=tf-inet-$TF_SFX
one_guest "$host" "$ga" "$inet"
bpffs_mount "$T/bpffs"
one_guest_spec "$T/a.json"
tfd_config "$T/tf.json" '"attach_mode":"xdp","log":{"name":"attest-xdp","checkpoint_s":1}'
KEY=$T/state/log.key.pub
averify() { check_says "$1" "$2" "$3" "$TF_BUILD/tapfence" attest verify --key "$KEY" --allow-no-battery "${@:4}"; }
stale() { tfc --json stats | "$PY" -c 'import json, sys; sys.exit(not json.load(sys.stdin)["stats"]["attestation"].get("stale"))'; }

tfd_start "$host"
check "session a added (XDP mode)" tfc session add "$T/a.json"
check "tapfence attest" tfc attest --out "$T/att1.json"
averify "a fresh attestation verifies" 0 "tapfence first on every device" "$T/att1.json"
check "its ingress lists the XDP program, then tc_gso_guard, both tapfence's" "$PY" -c 'import base64, json, sys
st = json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))
i = st["predicate"]["sessions"][0]["programs"]["in"]
sys.exit(not (len(i) == 2 and i[0]["hook"] == "xdp" and i[0]["tapfence"] and i[1]["tapfence"]
              and i[1]["name"] == "tc_gso_guard"))' "$T/att1.json"
n "$host" "$TF_BUILD/tests/tools/tcx_ahead" ha "$T/bpffs/ahead" 2>"$T/ahead.err"
defer rm -f "$T/bpffs/ahead"
check "a no-op attached ahead of the guard on ha's tcx ingress ($(cat "$T/ahead.err"))" test -e "$T/bpffs/ahead"
check "stats says the attestation is stale" wait_for 3 stale
check "a new attestation" tfc attest --out "$T/att2.json"
averify "it fails verification, naming the device" 1 "device ha (session a): tapfence is not the first program" "$T/att2.json"
rm -f "$T/bpffs/ahead"
check "the no-op detached: a new attestation" tfc attest --out "$T/att3.json"
averify "... verifies again" 0 "tapfence first on every device" "$T/att3.json"

tf_done
