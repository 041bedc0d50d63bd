#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `tapfence events' filters and outputs (docs/events.md#the-cli): --verdict, --reason (a list),
# --proto, --session; live from the daemon's stream and offline from the event log (--log, --since,
# --until, --last N); -o compact|table|json; bad values named; `--follow | head -n 1' exits 0; the
# bash completion offers commands, session ids from the daemon, reasons and modes.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-ech-$TF_SFX guest=tf-ecg-$TF_SFX inet=tf-eci-$TF_SFX
tf_need curl
one_guest "$host" "$guest" "$inet"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
one_guest_spec "$T/a.json"
sessions_add a

traffic() {
	tcp_get "$guest" 198.51.100.10 80 || true           # allow_rule
	tcp_get "$guest" 203.0.113.10 80 || true            # no_rule
	tcp_get "$guest" 169.254.169.254 80 || true         # floor_metadata
	n "$guest" ping -c 1 -W 1 203.0.113.10 >/dev/null 2>&1 || true # icmp, no_rule
}
# lines FILE: how many lines FILE has.
lines() { wc -l <"$1"; }

note "live, filtered"
"$TF_BUILD/tapfence" --socket "$TF_SOCK" events --follow --verdict deny --reason no_rule -o json \
	>"$T/live.json" 2>"$T/live.err" &
LIVE=$!
defer kill_pid "$LIVE"
sleep 0.5
t0=$(date -u +%Y-%m-%dT%H:%M:%S.%N)
traffic
sleep 1
kill -TERM "$LIVE"
wait "$LIVE"
check "live --follow --verdict deny --reason no_rule: exit 0 on SIGTERM" test $? -eq 0
check "live: the no_rule denials came (TCP and ICMP)" sh -c \
	"grep -q '\"reason\":\"no_rule\".*\"proto\":\"tcp\"' '$T/live.json' && grep -q '\"proto\":\"icmp\"' '$T/live.json'"
check_not "live: nothing but deny/no_rule" grep -qv '"verdict":"deny","reason":"no_rule"' "$T/live.json"

note "offline, from the log"
sleep 1 # the log has the lines
ev() { tfc events --log "$TF_EVENTS" "$@"; }
check "--log --verdict allow" sh -c "'$TF_BUILD/tapfence' events --log '$TF_EVENTS' --verdict allow -o json >'$T/o1'"
check "... only allow lines, and the GET's among them" sh -c \
	"grep -q allow_rule '$T/o1' && ! grep -qv '\"verdict\":\"allow\"' '$T/o1'"
ev --reason no_rule,floor_metadata -o json >"$T/o2" 2>&1
check "--reason no_rule,floor_metadata: both, nothing else" sh -c \
	"grep -q floor_metadata '$T/o2' && grep -q no_rule '$T/o2' && ! grep -vqE 'no_rule|floor_metadata' '$T/o2'"
ev --proto icmp -o json >"$T/o3" 2>&1
check "--proto icmp: the ping only" sh -c "test -s '$T/o3' && ! grep -qv '\"proto\":\"icmp\"' '$T/o3'"
ev --verdict deny --last 1 -o json >"$T/o4" 2>&1
check "--verdict deny --last 1: one line" test "$(lines "$T/o4")" -eq 1
check "... the last denial of the log" test "$(cat "$T/o4")" = \
	"$(grep '"verdict":"deny"' "$TF_EVENTS" | tail -n 1)"
ev --since 2999 -o json >"$T/o5" 2>&1
check "--since after everything: nothing" test ! -s "$T/o5"
ev --until "$t0" --reason floor_metadata -o json >"$T/o6" 2>&1
check "--until before the traffic: none of its denials" test ! -s "$T/o6"
ev --since "$t0" --reason floor_metadata -o json >"$T/o7" 2>&1
check "--since the traffic began: its floor denial" test "$(lines "$T/o7")" -ge 1
ev --since "$t0" --verdict deny -o table >"$T/o8" 2>&1
check "-o table: a header" grep -q '^TIME  *SESSION  *DIRECTION  *VERDICT  *REASON' "$T/o8"
check "-o table: the no_rule row, source and destination" grep -qE \
	'^[0-9T:.Z-]+ +a +from_guest +deny +no_rule +tcp +10\.10\.1\.2:[0-9]+ -> 203\.0\.113\.10:80' "$T/o8"
ev --session a --verdict deny >"$T/o9" 2>&1
check "compact (the default): one line per denial" grep -q ' a from_guest deny floor_metadata tcp ' "$T/o9"
check_says "--verdict maybe: named" 64 "--verdict: \`maybe' is not allow, deny or audit" \
	tfc events --verdict maybe
check_says "--last 0: named" 64 "--last: \`0' is not a count" tfc events --log "$TF_EVENTS" --last 0
check_says "-o xml: named" 64 "-o: \`xml' is not compact, table or json" tfc events -o xml
check_says "--follow with --last: refused" 64 "--follow reads the daemon's stream" \
	tfc events --follow --last 3
check_says "--log of a missing file: named" 1 "--log: cannot read" tfc events --log "$T/none.jsonl"

note "bash completion (tools/completion/tapfence.bash)"
# comp WORD...: what completing the last WORD offers, with this test's daemon as the default one.
comp() {
	TAPFENCE_SOCKET=$TF_SOCK PATH=$TF_BUILD:$PATH bash -c '
		. "$0"; COMP_WORDS=("${@}"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tapfence
		printf "%s\n" "${COMPREPLY[@]}"' "$TF_ROOT/tools/completion/tapfence.bash" "$@"
}
comp tapfence "" >"$T/c1"
check "completion: every top command" sh -c "grep -qx session '$T/c1' && grep -qx events '$T/c1' && grep -qx metrics '$T/c1'"
comp tapfence session "" >"$T/c2"
check "completion: session's subcommands" sh -c "grep -qx quarantine '$T/c2' && grep -qx mode '$T/c2'"
comp tapfence session show "" >"$T/c3"
check "completion: session ids from the daemon" grep -qx a "$T/c3"
comp tapfence events --reason no_rule,deny_r >"$T/c4"
check "completion: reasons, after a comma too" grep -qx "no_rule,deny_rule" "$T/c4"
comp tapfence session mode a "" >"$T/c5"
check "completion: the modes" sh -c "grep -qx audit '$T/c5' && grep -qx enforce '$T/c5'"

note "--follow | head -n 1"
( sleep 1; traffic ) &
defer kill_pid $!
timeout 15 "$TF_BUILD/tapfence" --socket "$TF_SOCK" events --follow | head -n 1 >"$T/head.out"
st=("${PIPESTATUS[@]}")
check "events --follow | head -n 1: tapfence exits 0 (${st[0]})" test "${st[0]}" -eq 0
check "... and head got its line" test "$(lines "$T/head.out")" -eq 1

tf_done
