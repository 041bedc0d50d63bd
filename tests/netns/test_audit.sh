#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that the event log is sealed (docs/audit.md): `tapfence log verify' passes on the log a daemon
# wrote under load, across a SIGHUP rotation, a kill -9 with a torn last line, and a full disk (the
# lines it could not write sealed as a gap, verdicts unchanged); that every checkpoint also verifies
# with an independent implementation (Python's hashlib and cryptography); and that each tampering a
# reviewer must catch is caught, with the file and line it names: a changed byte, a deleted line, an
# inserted line, two lines swapped, a truncation (against a trusted checkpoint), a deleted segment,
# segments swapped, a replayed checkpoint, a forged checkpoint, and the wrong key.
#
#   ns g (guest) ─ veth ga|ha ─ ns host (tapfenced) ─ ns inet
#     10.10.1.2                                         198.51.100.10:80 (allowed), 203.0.113.0/24 (denied)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-host-$TF_SFX g=tf-g-$TF_SFX inet=tf-inet-$TF_SFX
one_guest "$host" "$g" "$inet"
bpffs_mount "$T/bpffs"
# The log on a small tmpfs of its own, so that the test can fill it (and give room again).
mkdir -p "$T/logfs"
mount -t tmpfs -o size=4m,mode=0755 tmpfs "$T/logfs" || die "cannot mount a tmpfs for the log"
defer umount -l "$T/logfs"
one_guest_spec "$T/a.json"
tfd_config "$T/tf.json" '"limits":{"events_per_s":0},"log":{"checkpoint_lines":40,"checkpoint_s":1,"name":"test-node"}'
# The log lives on the tmpfs; TF_EVENTS follows it for lib.sh's expectations.
sed -i "s|\"event_log\":\"[^\"]*\"|\"event_log\":\"$T/logfs/events.jsonl\"|" "$T/tf.json"
TF_EVENTS=$T/logfs/events.jsonl
TFD_KEEP_LOG=1	# restarts append to the log: it is one sealed history
KEY=$T/state/log.key.pub

# deny_burst N: the guest sends N datagrams to denied destinations (N deny events).
deny_burst() {
	n "$g" "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[1])):
    s.sendto(b"x", ("203.0.113.%d" % (1 + i % 200), 9))' "$1"
}
# verify_says DESC WANT_RC TEXT FILE...: verify exits WANT_RC and its output contains TEXT.
verify_says() { check_says "$1" "$2" "$3" "$TF_BUILD/tapfence" log verify --key "$KEY" "${@:4}"; }
stop_daemon() {
	kill -TERM "$TFD_PID"
	wait "$TFD_PID" 2>/dev/null
	TFD_PID=
}
# Independent check: every checkpoint's Ed25519 signature (signed-note format) and RFC 6962 root.
pycheck() {
	"$PY" "$TF_NETNS_DIR/audit_checkpoints.py" "$KEY" "$@"
}

tfd_start "$host"
check "session a added" tfc session add "$T/a.json"
check "tapfence log key prints the node's verifier key" \
	sh -c "test \"\$('$TF_BUILD/tapfence' log key --key-file '$T/state/log.key')\" = \"\$(cat '$KEY')\""
check "the log key is 0600" test "$(stat -c %a "$T/state/log.key")" = 600
check "the first line of the log is its epoch line, naming no earlier checkpoint" \
	sh -c "head -n 1 '$TF_EVENTS' | grep -q '\"kind\":\"epoch\".*\"prev\":null'"

note "phase 1: load, then SIGTERM seals the rest"
deny_burst 500
guest_probe "allowed during the load" 198.51.100.10 reached
sleep 1.5
stop_daemon
check "every line but the epoch line and the checkpoints carries seq and prev" "$PY" -c 'import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(not all("seq" in o and "prev" in o for o in ls[1:] if o.get("kind") != "checkpoint"))' "$TF_EVENTS"
check "the last line is a checkpoint (written at SIGTERM)" \
	sh -c "tail -n 1 '$TF_EVENTS' | grep -q '\"kind\":\"checkpoint\"'"
nlines=$(wc -l <"$TF_EVENTS")
check "the load's 500 denials are in the log ($nlines lines)" test "$nlines" -gt 500
verify_says "log verify: the whole log is verified" 0 "verified:" "$TF_EVENTS"
check "log verify --json says verified with no unsealed line" sh -c \
	"'$TF_BUILD/tapfence' log verify --json --key '$KEY' '$TF_EVENTS' | grep -q '\"unsealed_lines\": 0'"
check "an independent verifier (hashlib, cryptography) accepts every checkpoint" pycheck "$TF_EVENTS"
cp "$T/state/log.checkpoint" "$T/trusted.1"
check "the checkpoint file is the log's last checkpoint" \
	sh -c "tail -n 1 '$TF_EVENTS' | '$PY' -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)[\"note\"])' | cmp -s - '$T/state/log.checkpoint'"

note "phase 1b: a session's lines exported with inclusion proofs, verified on their own"
"$TF_BUILD/tapfence" log export --session a --key "$KEY" --out "$T/a.bundle" "$TF_EVENTS" 2>"$T/export.err"
check "log export --session a: $(cat "$T/export.err")" test -s "$T/a.bundle"
nb=$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["entries"]))' "$T/a.bundle")
na=$(grep -c '"session":"a"' "$TF_EVENTS")
check "the bundle holds every line of session a ($nb of $na)" test "$nb" -eq "$na"
verify_says "log verify --bundle: every line proven" 0 "verified: $nb line(s) of session a" --bundle "$T/a.bundle"
check "an independent verifier (RFC 9162 inclusion, signed notes) accepts the bundle" \
	"$PY" "$TF_NETNS_DIR/audit_bundle.py" "$KEY" "$T/a.bundle"
"$PY" -c 'import json, sys
b = json.load(open(sys.argv[1]))
b["entries"][3]["line"] = b["entries"][3]["line"].replace("203.0.113.", "203.0.114.")
json.dump(b, open(sys.argv[2], "w"))' "$T/a.bundle" "$T/bad.bundle"
verify_says "a bundle with an edited line is caught" 1 "entry 3 of the bundle" --bundle "$T/bad.bundle"
"$PY" -c 'import json, sys
b = json.load(open(sys.argv[1]))
b["entries"].append(b["entries"][3])
json.dump(b, open(sys.argv[2], "w"))' "$T/a.bundle" "$T/bad.bundle"
verify_says "a bundle holding one line twice is caught" 1 "a line it already holds" --bundle "$T/bad.bundle"
"$PY" -c 'import json, sys
b = json.load(open(sys.argv[1]))
del b["entries"][0]["line"]
json.dump(b, open(sys.argv[2], "w"))' "$T/a.bundle" "$T/bad.bundle"
verify_says "a bundle entry without its line is caught (not a crash)" 1 "entry 0 of the bundle" --bundle "$T/bad.bundle"
"$TF_BUILD/tapfence" log export --session a --since 2099-01-01T00:00:00Z --key "$KEY" --out "$T/none.bundle" \
	"$TF_EVENTS" 2>/dev/null
check "--since after the log: an empty bundle" "$PY" -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["entries"] != [])' "$T/none.bundle"

note "phase 2: tampering, each on a copy, each caught at the line it names"
L=$T/tamper.jsonl
# A line k with events at k-1..k+2 (no seal or checkpoint next to it), past the 100th.
k=$("$PY" -c 'import sys
ls = open(sys.argv[1]).read().split("\n")
ev = lambda i: "\"reason\":\"no_rule\"" in ls[i - 1]
print(next(i for i in range(100, len(ls) - 3) if all(ev(j) for j in range(i - 1, i + 3))))' "$TF_EVENTS")
sed "${k}s/203\\.0\\.113\\./203.0.114./" "$TF_EVENTS" >"$L"
verify_says "a changed byte in line $k" 1 "tamper.jsonl:$k (" "$L"
sed "${k}d" "$TF_EVENTS" >"$L"
verify_says "line $k deleted" 1 "tamper.jsonl:$k (" "$L"
sed "${k}p" "$TF_EVENTS" >"$L"
verify_says "line $k inserted again after itself" 1 "tamper.jsonl:$((k + 1)) (" "$L"
sed -n "$((k + 1))p" "$TF_EVENTS" >"$T/next"
sed -e "$((k + 1))d" -e "$((k - 1))r $T/next" "$TF_EVENTS" >"$L"
verify_says "lines $k and $((k + 1)) swapped" 1 "tamper.jsonl:$k (" "$L"
cp_lines=$(grep -n '"kind":"checkpoint"' "$TF_EVENTS" | cut -d: -f1)
c2=$(sed -n 2p <<<"$cp_lines") c3=$(sed -n 3p <<<"$cp_lines")
head -n "$c2" "$TF_EVENTS" >"$L"
verify_says "truncated at a checkpoint: verified as far as it goes, without a trusted checkpoint" 0 "verified:" "$L"
verify_says "truncated at a checkpoint: caught against the trusted checkpoint" 1 "truncated:" \
	--trusted-checkpoint "$T/trusted.1" "$L"
verify_says "the whole log against the trusted checkpoint" 0 "verified:" --trusted-checkpoint "$T/trusted.1" "$TF_EVENTS"
sed -n "${c2}p" "$TF_EVENTS" >"$T/oldcp"
sed "${c3}r $T/oldcp" "$TF_EVENTS" >"$L"
verify_says "an old checkpoint replayed later" 1 "tamper.jsonl:$((c3 + 1)):" "$L"
"$PY" "$TF_NETNS_DIR/audit_forge.py" "$TF_EVENTS" "$L" "$c3"
verify_says "a forged checkpoint (another root under the old signature)" 1 "tamper.jsonl:$c3: the checkpoint's signature" "$L"
openssl genpkey -algorithm ed25519 -out "$T/other.pem" 2>/dev/null
"$PY" "$TF_NETNS_DIR/key_from_pem.py" "$T/other.pem" >"$T/other.pub"
# Every --key given is trusted: the other key alone, without $KEY.
check_says "the wrong key: cannot verify (exit 2), saying so" 2 "wrong key" \
	"$TF_BUILD/tapfence" log verify --key "$T/other.pub" "$TF_EVENTS"

note "phase 3: a rotation (SIGHUP) continues the tree in the new file"
tfd_start "$host"
check "a restart's epoch line names the previous epoch's last checkpoint" \
	sh -c "grep '\"kind\":\"epoch\"' '$TF_EVENTS' | tail -n 1 | grep -q '\"prev\":\"tapfence/test-node/'"
deny_burst 100
sleep 0.5
mv "$TF_EVENTS" "$TF_EVENTS.1"
kill -HUP "$TFD_PID"
check "the new file starts with a continue line" wait_for 3 sh -c "head -n 1 '$TF_EVENTS' 2>/dev/null | grep -q '\"kind\":\"continue\"'"
deny_burst 100
sleep 0.5
mv "$TF_EVENTS" "$TF_EVENTS.2"
kill -HUP "$TFD_PID"
wait_for 3 test -s "$TF_EVENTS"
deny_burst 100
sleep 1.5
stop_daemon
verify_says "three segments, in order" 0 "verified:" "$TF_EVENTS.1" "$TF_EVENTS.2" "$TF_EVENTS"
check "independently too" pycheck "$TF_EVENTS.1" "$TF_EVENTS.2" "$TF_EVENTS"
verify_says "the middle segment deleted" 1 "events.jsonl:1: this file goes on from another point" \
	"$TF_EVENTS.1" "$TF_EVENTS"
verify_says "segments swapped" 1 "out of order" "$TF_EVENTS.2" "$TF_EVENTS.1" "$TF_EVENTS"
verify_says "the last segment alone verifies: its continue line carries the checkpoint it goes on from" 0 \
	"(some from a rotated file on)" "$TF_EVENTS"
"$PY" "$TF_NETNS_DIR/audit_edge.py" "$TF_EVENTS" "$L"
verify_says "the last segment alone, its tree edge edited" 1 "tamper.jsonl:1: the tree edge" "$L"

note "phase 4: kill -9 under load, a torn last line, and the next start"
tfd_start "$host"
deny_burst 3000 &
burst=$!
sleep 0.3
kill -KILL "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
wait "$burst"
printf '{"time":"2026-12-01T00:00:00Z","session":"a","verd' >>"$TF_EVENTS"
tfd_start "$host"
check "the next epoch says it found a torn tail" \
	sh -c "grep '\"kind\":\"epoch\"' '$TF_EVENTS' | tail -n 1 | grep -q '\"torn_tail\":true'"
deny_burst 50
sleep 1.5
stop_daemon
ALL=("$TF_EVENTS.1" "$TF_EVENTS.2" "$TF_EVENTS")
verify_says "kill -9: the log verifies, the killed epoch's tail reported unsealed" 0 "unsealed (not verified):" "${ALL[@]}"
check "... and every sealed line counts" sh -c "grep -q '^verified: ' '$T/says.out'"

note "phase 5: a full disk never changes a verdict; what could not be written is sealed as a gap"
tfd_start "$host"
head -c 4M /dev/zero >"$T/logfs/fill" 2>/dev/null
deny_burst 2000
guest_probe "allowed while the log's disk is full" 198.51.100.10 reached
guest_probe "denied while the log's disk is full" 203.0.113.10 blocked
check "the daemon says it cannot write its log" grep -q "cannot write: No space left" "$T/tapfenced.log"
check "tapfence stats counts the unwritten lines" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' --json stats |
	/usr/bin/python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)[\"stats\"][\"log\"][\"unwritten\"] == 0)'"
rm -f "$T/logfs/fill"
sleep 1.5
stop_daemon
check "a seal line counts the unwritten lines" "$PY" -c 'import json, sys
seals = [json.loads(l) for l in open(sys.argv[1]) if "\"kind\":\"seal\"" in l]
sys.exit(not any(s["unwritten"] > 0 for s in seals))' "$TF_EVENTS"
verify_says "the log with a gap verifies" 0 "verified:" "${ALL[@]}"
verify_says "... with the verifier key given inline" 0 "verified:" --key "$(cat "$KEY")" "${ALL[@]}"
verify_says "the same file given twice" 1 "tampered:" "${ALL[@]}" "$TF_EVENTS"
cat "${ALL[@]}" >"$T/all.jsonl"
"$PY" "$TF_NETNS_DIR/audit_drop_epoch.py" "$T/all.jsonl" "$L"
verify_says "a whole epoch removed" 1 "which the files do not hold before it" "$L"
"$PY" "$TF_NETNS_DIR/audit_nul_line.py" "$TF_EVENTS" "$L"
verify_says "a line hidden behind a NUL byte" 1 "a line with a NUL byte" "$L"

note "phase 6: the daemon rotates by size itself, compresses closed segments, removes the oldest"
mkdir -p "$T/logfs/r"
tfd_config "$T/tf.json" '"limits":{"events_per_s":0},"log":{"checkpoint_lines":40,"checkpoint_s":1,"name":"test-node","segment_bytes":40000,"retain_bytes":12000}'
sed -i "s|\"event_log\":\"[^\"]*\"|\"event_log\":\"$T/logfs/r/events.jsonl\"|" "$T/tf.json"
TF_EVENTS=$T/logfs/r/events.jsonl
# A file whose name could break a sealed line if quoted raw, old enough for retention: not ours, kept.
weird="events.jsonl.0\",\"kind\":\"checkpoint\",\"x\":\""
touch -d 2000-01-01 "$T/logfs/r/$weird"
tfd_start "$host"
for i in 1 2 3 4 5 6 7 8; do
	deny_burst 150
	sleep 0.6
done
sleep 1
stop_daemon
mapfile -t segs < <(ls "$T/logfs/r" | grep -E '^events\.jsonl\.[0-9]{8}T[0-9]{6}\.[0-9]{9}Z\.gz$' | sort)
check "closed segments are compressed (${#segs[@]} .gz files kept)" test "${#segs[@]}" -ge 1
check "they read with zcat" sh -c "zcat '$T/logfs/r/${segs[-1]}' | head -n 1 | grep -q '\"kind\":\"continue\"'"
check "the oldest were removed, each said in a sealed retention line" \
	sh -c "zcat -f '$T/logfs/r/'* | grep -q '\"kind\":\"retention\"'"
check "what is kept is within retain_bytes, plus the open file" \
	test "$(cat "$T/logfs/r"/events.jsonl* | wc -c)" -le $((12000 + 40000 + 8192))
R=()
for f in "${segs[@]}"; do R+=("$T/logfs/r/$f"); done
verify_says "the kept segments and the open file verify, the oldest kept one from its continue line on" 0 \
	"verified:" "${R[@]}" "$TF_EVENTS"
verify_says "the oldest kept segment alone verifies" 0 "verified:" "${R[0]}"
check "retention leaves a file it did not name alone" test -e "$T/logfs/r/$weird"
n "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --cleanup >>"$T/tapfenced.log" 2>&1

tf_done
