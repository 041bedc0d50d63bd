#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that `tapfence attest' signs what enforces which policy and that `tapfence attest verify'
# checks it offline (docs/attest.md): a fresh attestation verifies, with each session's spec; after
# `rule add' the old one is stale (stats, a sealed line) and no longer matches the new spec, while a
# new one does; with a program attached ahead of tapfence on a device, the attestation is stale and
# a new one fails verification naming the device; an edited statement, the wrong key and an old one
# are refused; a restart marks the last attestation stale. An independent verifier (Python's
# cryptography) checks the DSSE signature.
#
#   ns ga (guest a) ─ veth | ─ ns host (tapfenced) ─ veth | ─ ns gb (guest b)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX gb=tf-gb-$TF_SFX
ns_add "$host" "$ga" "$gb"
guest_link "$ga" ea 02:00:00:00:2a:02 10.10.1.2/24 fd00:a:1::2/64 "$host" ha 02:00:00:00:2a:01 10.10.1.1/24 fd00:a:1::1/64
guest_link "$gb" eb 02:00:00:00:2b:02 10.10.2.2/24 fd00:a:2::2/64 "$host" hb 02:00:00:00:2b:01 10.10.2.1/24 fd00:a:2::1/64
bpffs_mount "$T/bpffs"
session_spec "$T/a.json" a ha 02:00:00:00:2a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:2a:01 10.10.1.1 fd00:a:1::1 \
	'[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
session_spec "$T/b.json" b hb 02:00:00:00:2b:02 10.10.2.2 fd00:a:2::2 02:00:00:00:2b:01 10.10.2.1 fd00:a:2::1 \
	'[{"host":"example.test","proto":"tcp","ports":[443]}]'
tfd_config "$T/tf.json" '"log":{"name":"attest-node","checkpoint_s":1}'
KEY=$T/state/log.key.pub

# averify DESC WANT_RC TEXT ARGS...: tapfence attest verify ARGS exits WANT_RC, its output has TEXT.
averify() { check_says "$1" "$2" "$3" "$TF_BUILD/tapfence" attest verify "${@:4}"; }
stale() { tfc --json stats | "$PY" -c 'import json, sys; a = json.load(sys.stdin)["stats"]["attestation"]
sys.exit(not a.get("stale"))'; }
stale_why() { tfc --json stats | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["stats"]["attestation"].get("why"))'; }

tfd_start "$host"
check "session a added" tfc session add "$T/a.json"
check "session b added" tfc session add "$T/b.json"
check "tapfence attest" tfc attest --out "$T/att1.json"
averify "without a battery report the claim is held" 1 "claim held: no battery report" --key "$KEY" "$T/att1.json"
averify "a fresh attestation verifies (battery waived)" 0 "2 session(s), tapfence first on every device" --key "$KEY" \
	--allow-no-battery "$T/att1.json"
averify "... with session a's spec" 0 "the spec's policy in force for a" --key "$KEY" --spec "$T/a.json" --allow-no-battery "$T/att1.json"
averify "... with session b's spec" 0 "in force for b" --key "$KEY" --spec "$T/b.json" --allow-no-battery "$T/att1.json"
check "an independent verifier (DSSE PAE, Ed25519 with cryptography) accepts it" "$PY" "$TF_NETNS_DIR/attest_verify.py" "$KEY" "$T/att1.json"
check "the statement names the daemon's binary by its SHA-256" "$PY" -c 'import base64, hashlib, json, sys
st = json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))
want = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
sys.exit(next(s["digest"]["sha256"] for s in st["subject"] if s["name"] == "tapfenced") != want)' \
	"$T/att1.json" "$TF_BUILD/tapfenced"
check_not "stats: issued, not stale" stale
"$PY" "$TF_NETNS_DIR/key_new.py" >"$T/other.pub"
averify "another key of the same name: cannot verify (exit 2)" 2 "not signed by the ed25519 key" --key "$T/other.pub" "$T/att1.json"
"$PY" -c 'import base64, json, sys
env = json.load(open(sys.argv[1]))
st = json.loads(base64.b64decode(env["payload"]))
st["predicate"]["sessions"][0]["policy_generation"] += 1
env["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
json.dump(env, open(sys.argv[2], "w"))' "$T/att1.json" "$T/edited.json"
averify "an edited statement is refused" 1 "signature does not verify" --key "$KEY" "$T/edited.json"

note "a rule added: the attestation is stale"
sleep 2.1
tf_mark
check "rule add to session a" tfc rule add a '{"cidr":"203.0.113.0/24","proto":"udp","ports":[53000]}'
check "stats says the attestation is stale (within 3 s)" wait_for 3 stale
check "... because of a session's policy ($(stale_why))" sh -c "test \"\$1\" = 'a session or its policy'" _ "$(stale_why)"
expect_event kind=attestation verdict=stale -- "a sealed attestation line says it is stale"
"$PY" "$TF_NETNS_DIR/spec_widen.py" "$T/a.json" "$T/a2.json"
averify "the old attestation does not show the new policy" 1 "enforces another policy than the spec" \
	--key "$KEY" --spec "$T/a2.json" --allow-no-battery "$T/att1.json"
averify "--max-age: an attestation older than allowed is refused" 1 "older than --max-age" --key "$KEY" \
	--max-age 1 --allow-no-battery "$T/att1.json"
check "a new attestation" tfc attest --out "$T/att2.json"
averify "... shows it" 0 "in force for a" --key "$KEY" --spec "$T/a2.json" --allow-no-battery "$T/att2.json"
check_not "... and stats is not stale any more" stale

note "a program attached ahead of tapfence on session a's device"
n "$host" "$TF_BUILD/tests/tools/tcx_ahead" ha "$T/bpffs/ahead" 2>"$T/ahead.err"
defer rm -f "$T/bpffs/ahead"
check "a no-op attached ahead on ha ($(cat "$T/ahead.err"))" test -e "$T/bpffs/ahead"
check "stats says the attestation is stale" wait_for 3 stale
check "... because of the programs on a device ($(stale_why))" sh -c "test \"\$1\" = 'the programs on a device'" _ "$(stale_why)"
check "a new attestation" tfc attest --out "$T/att3.json"
averify "it fails verification, naming the device" 1 "device ha (session a): tapfence is not the first program" \
	--key "$KEY" --allow-no-battery "$T/att3.json"
rm -f "$T/bpffs/ahead"
check "the no-op detached" tfc attest --out "$T/att4.json"
averify "once it is gone, a new attestation verifies" 0 "tapfence first on every device" --key "$KEY" --allow-no-battery "$T/att4.json"

note "an XDP program on session a's device runs before tapfence's tcx programs"
check "a fresh attestation" tfc attest --out "$T/att8.json"
check "an XDP no-op on ha" n "$host" "$TF_BUILD/tests/tools/tcx_ahead" ha --xdp
defer ip -n "$host" link set dev ha xdpgeneric off
check "stats says the attestation is stale" wait_for 3 stale
check "a new attestation" tfc attest --out "$T/att9.json"
averify "it fails verification, naming the device" 1 "device ha (session a): tapfence is not the first program" \
	--key "$KEY" --allow-no-battery "$T/att9.json"
ip -n "$host" link set dev ha xdpgeneric off

note "a session deleted and added again with another spec"
check "a fresh attestation" tfc attest --out "$T/att10.json"
check_not "... not stale" stale
check "session a deleted" tfc session del a
check "session a added again, with its first allowlist (without the added rule)" tfc session add "$T/a.json"
check "stats says the attestation is stale" wait_for 3 stale
averify "the old one does not show the re-added session's policy" 1 "enforces another policy than the spec" \
	--key "$KEY" --allow-no-battery --spec "$T/a.json" "$T/att10.json"

note "the battery's report, bound: any critical escape holds the claim"
bat() { # CRITICAL BROKEN BUILD_SHA
	"$PY" -c 'import json, sys
crit, broken, sha = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
probes = [{"probe": "metadata", "vector": "cloud metadata", "severity": "critical",
           "verdict": "escaped" if crit else "blocked", "evidence": "test report"}]
json.dump({"kind": "tapfence-battery", "version": 1, "time": "2026-12-01T00:00:00Z",
           "tapfenced_sha256": sha, "allowed_reached": True, "probes": probes, "escapes": crit, "critical_escapes": crit,
           "broken_probes": broken, "result": "held" if crit or broken else "no_escape"},
          open(sys.argv[1], "w"))' "$T/state/battery.json" "$@"
}
build=$(sha256sum "$TF_BUILD/tapfenced" | cut -d' ' -f1)
bat 0 0 "$build"
check "attest with a clean battery report of this build" tfc attest --out "$T/att5.json"
averify "the claim is verified" 0 "tapfence first on every device" --key "$KEY" "$T/att5.json"
check "the statement binds the report's digest" "$PY" -c 'import base64, hashlib, json, sys
st = json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))
b = st["predicate"]["battery"]
sys.exit(b["sha256"] != hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest() or st["predicate"]["claim"] != "verified")' \
	"$T/att5.json" "$T/state/battery.json"
bat 1 0 "$build"
tfc attest --out "$T/att6.json" >/dev/null
averify "a report with a critical escape: claim held" 1 "claim held: the battery found 1 critical escape" --key "$KEY" \
	--allow-no-battery "$T/att6.json"
bat 0 0 0000000000000000000000000000000000000000000000000000000000000000
tfc attest --out "$T/att7.json" >/dev/null
averify "a report of another build: claim held" 1 "claim held: the battery ran against another build" \
	--key "$KEY" "$T/att7.json"
rm -f "$T/state/battery.json"

note "a restart: new programs, so the last attestation is stale"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
TFD_KEEP_LOG=1 tfd_start "$host"
check "after the restart, stats says the last attestation is stale" wait_for 3 stale

tf_done
