#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that a session's rule changes survive a crash through its journal (sessions/<id>.journal,
# docs/operations.md#what-survives-a-stop) exactly as they were acknowledged: replayed at the next
# start (a line cut short left out, lines of an older base skipped), a bad line failing that
# session's restore by name while its pinned policy goes on enforcing, never a line after a torn
# one, and every journal folded into its state file at a clean stop; and that an in-place rule
# change, and one that cannot be saved (undone), are sealed in the log with the versions of their
# transition.
#
#   guest ga 10.10.1.2 ─ ha ─ host (router, tapfenced) ─ inet: 198.51.100.10:80, 203.0.113.10:80
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-jh-$TF_SFX guest=tf-jg-$TF_SFX inet=tf-ji-$TF_SFX
one_guest "$host" "$guest" "$inet"
OK=198.51.100.10 OTHER=203.0.113.10
SD=$T/state/sessions
R_OK='{"cidr":"198.51.100.10/32","proto":"tcp","ports":[80]}'
R_OTHER='{"cidr":"203.0.113.10/32","proto":"tcp","ports":[80]}'

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
session_spec "$T/a.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 \
	10.10.1.1 fd00:a:1::1 '[{"cidr":"192.0.2.1/32","proto":"tcp","ports":[9]}]'
sessions_add a
base() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["journal_base"])' "$SD/a.json"; }
version() { tfc --json session show a | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["session"]["policy_version"])'; }
shown() { tfc session show a >/dev/null 2>&1; }
# sealed OP VERSION FIRST,LAST [CIDR]: the log has a policy line of a's with them (transition FIRST..LAST).
sealed() {
	"$PY" - "$TF_EVENTS" "$@" <<'EOF'
import json, sys
log, op, ver, trans = sys.argv[1:5]
cidr = sys.argv[5] if len(sys.argv) > 5 else None
for line in open(log):
    l = json.loads(line)
    if (l.get("kind") == "policy" and l.get("session") == "a" and l.get("op") == op and
            l.get("policy_version") == int(ver) and
            l.get("transition") == [int(t) for t in trans.split(",")] and
            (cidr is None or l.get("rule", {}).get("cidr") == cidr)):
        sys.exit(0)
sys.exit(1)
EOF
}
crash() { kill -KILL "$TFD_PID"; wait "$TFD_PID" 2>/dev/null; TFD_PID=; }
restart() { TFD_KEEP_LOG=1 tfd_start "$host"; }

note "an in-place change, sealed with its transition"
V0=$(version)
check "rule add a $R_OK" tfc rule add a "$R_OK"
guest_probe "after the add: $OK:80" $OK reached
check "the version moved by two" test "$(version)" = $((V0 + 2))
check "the log seals it: rule.add, version $((V0 + 2)), transition [$((V0 + 1)),$((V0 + 1))], the rule" \
	sealed rule.add $((V0 + 2)) $((V0 + 1)),$((V0 + 1)) 198.51.100.10/32

note "a crash: the journal is replayed, a line cut short left out"
B=$(base)
crash
check "a.journal: the add, of base $B" tfjson check "$SD/a.journal" 'd["base"] == int(a[0]) and d["op"] == "add"' "$B"
printf '{"base":%s,"op":"add","rule":%s' "$B" "$R_OTHER" >>"$SD/a.journal"
restart
check "session a is restored" shown
guest_probe "after the restart: $OK:80 (the journaled rule)" $OK reached
probe_tcp "after the restart: $OTHER:80 (the line cut short)" "$L_INET" "$guest" 10.10.1.2 $OTHER 80 blocked
check "the journal is folded into a.json" sh -c "! test -e '$SD/a.journal' && grep -q 198.51.100.10 '$SD/a.json'"

note "lines of an older base are skipped"
check "rule add a $R_OTHER" tfc rule add a "$R_OTHER"
crash
printf '{"base":1,"op":"del","rule":%s}\n' "$R_OK" >>"$SD/a.journal"
restart
guest_probe "after the restart: $OK:80 (a del of another base skipped)" $OK reached
guest_probe "after the restart: $OTHER:80 (added before the crash)" $OTHER reached

note "a journal that does not end with a whole line gets no line after it"
printf '{"base":%s,"op":"del","rule":' "$(base)" >"$SD/a.journal"
check "rule del a $R_OTHER" tfc rule del a "$R_OTHER"
check "... saved whole instead: no journal, a.json without the rule" \
	sh -c "! test -e '$SD/a.journal' && ! grep -q 203.0.113.10 '$SD/a.json'"
guest_probe "after the del: $OTHER:80" $OTHER blocked

note "a bad line: the session is not restored, its pinned policy goes on enforcing"
crash
printf '{"base":%s,"op":"frob","rule":%s}\n' "$(base)" "$R_OTHER" >"$SD/a.journal"
restart
check "the log names the file and the line" grep -qF \
	"cannot restore session from \`$SD/a.json': its journal, line 1: op: neither \`add' nor \`del'" \
	"$T/tapfenced.log"
check_not "session a is not restored" shown
guest_probe "while it is not: $OK:80 (pinned, allowed)" $OK reached
guest_probe "while it is not: $OTHER:80 (pinned, denied)" $OTHER blocked

note "a clean stop folds every journal in"
rm -f "$SD/a.journal"
tfd_stop_keep() { kill -TERM "$TFD_PID"; wait "$TFD_PID"; TFD_PID=; }
tfd_stop_keep
restart
check "session a is restored" shown
check "rule add a $R_OTHER" tfc rule add a "$R_OTHER"
check "a.journal has it" grep -q 203.0.113.10 "$SD/a.journal"
check "rule del a $R_OTHER, rule add a $R_OTHER" sh -c \
	"$TF_BUILD/tapfence --socket $TF_SOCK rule del a '$R_OTHER' && $TF_BUILD/tapfence --socket $TF_SOCK rule add a '$R_OTHER'"
check "... appended: a.journal has three lines" test "$(wc -l <"$SD/a.journal")" = 3
tfd_stop_keep
check "after SIGTERM: no journal, a.json has the rule" \
	sh -c "! test -e '$SD/a.journal' && grep -q 203.0.113.10 '$SD/a.json'"
restart
guest_probe "after the restart: $OTHER:80" $OTHER reached

note "a change that cannot be saved is undone, under versions of its own, sealed"
# The daemon keeps no CAP_DAC_OVERRIDE: a state dir it cannot write fails the journal and the save.
V0=$(version)
chmod 0500 "$SD"
defer chmod 0700 "$SD"
check_says "rule del a $R_OTHER: cannot be saved" 1 "cannot save the session to state_dir" \
	tfc rule del a "$R_OTHER"
chmod 0700 "$SD"
check "the version moved by four: the change and its undoing" test "$(version)" = $((V0 + 4))
check "the log seals it: undone, version $((V0 + 4)), transition [$((V0 + 1)),$((V0 + 3))], the rule" \
	sealed undone $((V0 + 4)) $((V0 + 1)),$((V0 + 3)) 203.0.113.10/32
guest_probe "undone: $OTHER:80 still" $OTHER reached
check "rule del a $R_OTHER, saved" tfc rule del a "$R_OTHER"
guest_probe "deleted: $OTHER:80" $OTHER blocked

tf_done
