#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test the node's second key, key rotation and session evidence (docs/audit.md, docs/attest.md):
# with log.ecdsa_key, checkpoints and attestations carry an ECDSA P-256 signature beside the
# Ed25519 one, each checked by an independent verifier (Python's cryptography); `tapfence log
# rotate-key' replaces both keys with sealed key lines the old keys endorse, so the log verifies
# with the old keys alone, across the rotation and a restart, and an edited key line is caught;
# only uid 0 may rotate; every policy a session gets is a sealed "policy" line; with
# log.session_evidence a session del writes a signed statement of its lines, counters and policy
# history that `tapfence attest verify' checks, and an edited one is refused.
#
#   ns ga (guest a) ─ veth | ─ ns host (tapfenced) ─ veth | ─ ns inet (lib.sh's one_guest)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX inet=tf-inet-$TF_SFX
one_guest "$host" "$ga" "$inet"
bpffs_mount "$T/bpffs"
one_guest_spec "$T/a.json"
"$PY" "$TF_NETNS_DIR/spec_widen.py" "$T/a.json" "$T/a2.json"
user=tfe$TF_SFX
useradd -M -N -r -s /usr/sbin/nologin "$user" || die "cannot create user $user"
defer userdel "$user"
tfd_config "$T/tf.json" "\"allowed_uids\":[$(id -u "$user")],\"log\":{\"name\":\"ev-node\",\"checkpoint_s\":1,\
\"ecdsa_key\":\"$T/state/log.ecdsa.key\",\"session_evidence\":true}"
ED=$T/state/log.key.pub EC=$T/state/log.ecdsa.key.pub

# lverify / averify DESC WANT_RC TEXT ARGS...: tapfence log verify / attest verify ARGS.
lverify() { check_says "$1" "$2" "$3" "$TF_BUILD/tapfence" log verify "${@:4}"; }
averify() { check_says "$1" "$2" "$3" "$TF_BUILD/tapfence" attest verify "${@:4}"; }
# The independent verifier: signed notes and DSSE envelopes by Ed25519 and ECDSA P-256 keys, and
# the key lines' endorsements (tests/netns/sigcheck.py).
sigcheck() { "$PY" "$TF_NETNS_DIR/sigcheck.py" "$@"; }

note "an ECDSA P-256 second key"
tfd_start "$host"
check "the ECDSA key was created, mode 0600" test "$(stat -c %a "$T/state/log.ecdsa.key" 2>/dev/null)" = 600
check "its verifier key is an ECDSA one (type 0x02)" sigcheck vkey-type "$EC" 2
check "the Ed25519 one is type 0x01" sigcheck vkey-type "$ED" 1
check "session a added" tfc session add "$T/a.json"
check "rule add to session a" tfc rule add a '{"cidr":"203.0.113.0/24","proto":"udp","ports":[53000]}'
for i in 1 2 3; do
	n "$ga" "$PY" -c 'import socket; socket.socket(2, 2).sendto(b"x", ("198.51.100.7", 9))'
done
check "a checkpoint after the traffic" wait_for 3 sh -c "grep -q '\"kind\":\"checkpoint\"' '$TF_EVENTS'"
sleep 1.2
check "every checkpoint is signed by both keys (an independent verifier)" sigcheck notes "$TF_EVENTS" "$ED" "$EC"
check "tapfence attest" tfc attest --out "$T/att.json"
check "the envelope has two signatures, each verified independently" sigcheck dsse "$T/att.json" "$ED" "$EC"
averify "verify with the Ed25519 key" 0 "tapfence first on every device" --key "$ED" --allow-no-battery "$T/att.json"
averify "verify with the ECDSA key alone" 0 "tapfence first on every device" --key "$EC" --allow-no-battery "$T/att.json"
averify "verify asking for both" 0 "tapfence first on every device" --key "$ED" --key "$EC" --allow-no-battery "$T/att.json"
"$PY" -c 'import base64, json, sys
env = json.load(open(sys.argv[1]))
s = env["signatures"][1]
sig = bytearray(base64.b64decode(s["sig"])); sig[-1] ^= 1
s["sig"] = base64.b64encode(bytes(sig)).decode()
json.dump(env, open(sys.argv[2], "w"))' "$T/att.json" "$T/att-bad.json"
averify "a broken ECDSA signature fails when both keys are asked for" 1 "the ecdsa-p256 signature does not verify" \
	--key "$ED" --key "$EC" --allow-no-battery "$T/att-bad.json"
averify "... though the Ed25519 one alone still verifies" 0 "tapfence first" --key "$ED" --allow-no-battery "$T/att-bad.json"
averify "a statement of another predicate type is refused" 1 "not a tapfence statement" --key "$ED" \
	--allow-no-battery <("$PY" "$TF_NETNS_DIR/sigcheck.py" resign "$T/att.json" "$T/state/log.key" predicateType x)
lverify "the log verifies with the ECDSA key alone" 0 "verified:" --key "$EC" "$TF_EVENTS"

note "policy lines: every policy the session got is sealed"
check "an add line, then a rule.add line with the hash the attestation states" \
	sigcheck policy-lines "$TF_EVENTS" a "$T/att.json" add rule.add

note "key rotation"
cp "$ED" "$T/ed0.pub"
cp "$EC" "$T/ec0.pub"
cp "$T/state/log.key" "$T/ed0.pem"
chmod 0666 "$TF_SOCK"	# past the file mode, SO_PEERCRED and allowed_uids decide
check_not "a non-root peer cannot rotate the keys" \
	sh -c "runuser -u '$user' -- '$TF_BUILD/tapfence' --socket '$TF_SOCK' log rotate-key >'$T/user.out' 2>&1"
check "... refused for its uid ($(head -c 120 "$T/user.out"))" grep -q "needs uid 0" "$T/user.out"
check "... though the socket serves it (session list)" runuser -u "$user" -- "$TF_BUILD/tapfence" --socket "$TF_SOCK" session list
check "tapfence log rotate-key" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' log rotate-key >'$T/rot.out'"
check "it prints the two new keys, which are the .pub files now" sh -c "test \"\$(cat '$ED' '$EC')\" = \"\$(cat '$T/rot.out')\""
check_not "... and are new" cmp -s "$ED" "$T/ed0.pub"
check "no new key left behind as .new" sh -c "! ls '$T/state/'*.new 2>/dev/null | grep -q ."
check "two sealed key lines, endorsed by the old and the new keys (independently)" sigcheck key-lines "$TF_EVENTS" 2
sleep 1.2
check "checkpoints after the rotation are signed by the new keys" sigcheck notes-tail "$TF_EVENTS" "$ED" "$EC"
lverify "the log verifies with the old Ed25519 key alone, across the rotation" 0 "across key rotations" --key "$T/ed0.pub" "$TF_EVENTS"
lverify "... and with the old ECDSA key alone" 0 "across key rotations" --key "$T/ec0.pub" "$TF_EVENTS"
lverify "the new key alone cannot vouch for what the old one signed" 2 "not signed by a key given" --key "$ED" "$TF_EVENTS"
"$PY" "$TF_NETNS_DIR/evidence_key_edit.py" "$TF_EVENTS" "$T/edited-new.jsonl"
lverify "a key line whose new key was edited is caught" 1 "is not the one its endorsement names" --key "$T/ed0.pub" "$T/edited-new.jsonl"
"$PY" "$TF_NETNS_DIR/evidence_endorsement_edit.py" "$TF_EVENTS" "$T/edited-end.jsonl"
lverify "a key line whose endorsement was edited is caught" 1 "a key rotation that hands on no trust" --key "$T/ed0.pub" "$T/edited-end.jsonl"
sigcheck forge "$TF_EVENTS" "$T/state/log.key" "$T/state/log.ecdsa.key" "$T/forged.jsonl"
lverify "a log made up by the new keys alone, the genuine key lines copied in, is refused with the old key" 1 \
	"does not follow a checkpoint of the tree its endorsement names" --key "$T/ed0.pub" "$T/forged.jsonl"
sigcheck old-checkpoint "$TF_EVENTS" "$T/ed0.pem" "$T/late-old.jsonl"
lverify "a checkpoint by the old key after the rotation counts for nothing (the key is retired)" 1 \
	"not signed by a key given or handed on to" --key "$T/ed0.pub" "$T/late-old.jsonl"
lverify "a trusted checkpoint signed by the new key, with the old key given" 0 "up to the trusted checkpoint" \
	--key "$T/ed0.pub" --trusted-checkpoint "$T/state/log.checkpoint" "$TF_EVENTS"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
# A crash between the key line and the rename: the old key back in place, the new one at .new.
mv "$T/state/log.key" "$T/state/log.key.new"
cp "$T/ed0.pem" "$T/state/log.key"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/state/log.ecdsa.key.new" 2>/dev/null
TFD_KEEP_LOG=1 tfd_start "$host"
check "a rotation cut short after its key line is completed at the next start" \
	sh -c "test ! -e '$T/state/log.key.new' && grep -q 'rotation cut short is completed' '$T/tapfenced.log'"
check "... a .new key no key line names is removed" sh -c "test ! -e '$T/state/log.ecdsa.key.new'"
check "after a restart, the new epoch names the new key" sh -c "grep '\"kind\":\"epoch\"' '$TF_EVENTS' | tail -1 | grep -qF \"\$(cat '$T/rot.out' | head -1)\""
sleep 1.2
lverify "two epochs verify with the first key alone" 0 "2 epoch(s)" --key "$T/ed0.pub" "$TF_EVENTS"

note "session evidence at session del"
n "$ga" "$PY" -c 'import socket; socket.socket(2, 2).sendto(b"x", ("198.51.100.7", 9))'
sleep 0.5
tfc --json session show a >"$T/show.json"
check "session del a" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' --json session del a >'$T/del.json'"
evidence=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("evidence") or "")' "$T/del.json")
check "the del names its evidence statement ($evidence)" test -s "$evidence"
averify "the statement verifies (--evidence)" 0 "session a, lines" --evidence --key "$ED" "$evidence"
averify "... by the ECDSA key too" 0 "session a, lines" --evidence --key "$EC" "$evidence"
averify "... with the last spec it enforced" 0 "the spec's policy among them" --evidence --key "$ED" --spec "$T/a2.json" "$evidence"
averify "without --evidence it never passes for a node's attestation" 1 "verify it with --evidence" --key "$ED" \
	--spec "$T/a2.json" --allow-no-battery "$evidence"
averify "--evidence with --max-age is a usage error" 2 "usage" --evidence --max-age 60 --key "$ED" "$evidence"
averify "--evidence --session of another session fails" 1 "not b" --evidence --session b --key "$ED" "$evidence"
session_spec "$T/never.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 fd00:a:1::1 \
	'[{"cidr":"0.0.0.0/0","proto":"tcp","ports":[22]}]'
averify "... but not with a spec it never enforced" 1 "never enforced the spec's policy" --evidence --key "$ED" \
	--spec "$T/never.json" "$evidence"
check "its lines, counters and policies are the log's (independently)" \
	sigcheck evidence "$evidence" "$TF_EVENTS" "$T/show.json" restore del
"$PY" "$TF_NETNS_DIR/evidence_counters_emptied.py" "$evidence" "$T/ev-bad.json"
averify "an edited statement (its counters emptied) is refused" 1 "signature does not verify" --evidence --key "$ED" \
	"$T/ev-bad.json"
sleep 1.2
tfc log export --session a --key "$T/ed0.pub" --out "$T/a.bundle" "$TF_EVENTS" 2>/dev/null
lverify "the session's export bundle verifies with the first key (its endorsements carried)" 0 "of session a" \
	--key "$T/ed0.pub" --bundle "$T/a.bundle"
check "... and holds its policy lines" grep -q 'kind\\":\\"policy' "$T/a.bundle"

note "a rotation cut short whose new key cannot take the old one's place"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
# The key the log handed on to, at .new; the key's path cannot be replaced (a directory in its way).
mv "$T/state/log.key" "$T/state/log.key.new"
mkdir "$T/state/log.key"
: >"$T/state/log.key/x"
check_not "the daemon does not start signing with the key the log retired" \
	timeout 10 ip netns exec "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --foreground \
	>"$T/refused.log" 2>&1
check "... and says why" grep -q "not starting with a retired key" "$T/refused.log"

tf_done
