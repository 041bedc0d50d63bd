#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfenced with "user" in its config runs as that dedicated user, with only its three
# capabilities, and still does its whole job: adds, changes and deletes sessions (pinning and
# unpinning links), enforces, writes and reopens its event log, and re-adopts on restart.
#
#   ns g (guest) ─ veth ga|ha ─ ns host (router, tapfenced as $duser) ─ ns inet
#     10.10.1.2                                                      198.51.100.10:80 (allowed)
#                                                                    203.0.113.10:80 (denied)
set -u
. "$(dirname "$0")/lib.sh"
tf_init
cleanup() {
	tf_cleanup
	userdel "$duser" 2>/dev/null
	userdel "$other" 2>/dev/null
}

host=tf-host-$TF_SFX g=tf-g-$TF_SFX inet=tf-inet-$TF_SFX
duser=tfd$TF_SFX other=tfo$TF_SFX
one_guest "$host" "$g" "$inet"

useradd -M -N -r -s /usr/sbin/nologin "$duser" || die "cannot create user $duser"
useradd -M -N -r -s /usr/sbin/nologin "$other" || die "cannot create user $other"
duid=$(id -u "$duser") dgid=$(id -g "$duser")
# The daemon's files live under $T: the user must be able to get through it (not list it).
chmod 0711 "$T"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json" "\"user\":\"$duser\",\"log\":{\"session_evidence\":true}"
one_guest_spec "$T/a.json"

note "the daemon rotates its log itself: the user must be able to create files beside it"
check_says "--check-config: the log in $T (root's, 0711) is refused, the directory and user named" 1 \
	"must create and list files in \`$T' as user \`$duser', which it cannot: Permission denied" \
	"$TF_BUILD/tapfenced" --check-config "$T/tf.json"
check_says "a start is refused so, before it touches anything" 1 "must create and list files in \`$T'" \
	timeout 20 ip netns exec "$host" "$TF_BUILD/tapfenced" --config "$T/tf.json" --foreground
check "... nothing was made under the pin dir" test ! -e "$TF_PIN_DIR"
# user_config EXTRA: the test's config with EXTRA, its log in $T/log, the user's directory.
install -d -m 0755 -o "$duser" -g "$dgid" "$T/log" # 0755: root under the unit (no CAP_DAC_*) gets in
user_config() {
	tfd_config "$T/tf.json" "\"user\":\"$duser\",$1"
	sed -i "s|\"event_log\":\"[^\"]*\"|\"event_log\":\"$T/log/events.jsonl\"|" "$T/tf.json"
	TF_EVENTS=$T/log/events.jsonl
}
user_config '"log":{"session_evidence":true}'
check_says "--check-config: valid with the log in the user's directory" 0 valid \
	"$TF_BUILD/tapfenced" --check-config "$T/tf.json"
check_says "... also with SIGCHLD ignored (it waits for its own child)" 0 valid \
	bash -c "trap '' CHLD; exec '$TF_BUILD/tapfenced' --check-config '$T/tf.json'"
check_says "... and run by another user: valid, the directory not checked, said so" 0 "checked only as root" \
	runuser -u "$other" -- "$TF_BUILD/tapfenced" --check-config "$T/tf.json"
sed "s|\"event_log\":\"[^\"]*\"|\"event_log\":\"$T/state/events.jsonl\"|" "$T/tf.json" >"$T/tf-state.json"
check_says "--check-config: a log in the state dir (the daemon gives it the user) is valid" 0 valid \
	"$TF_BUILD/tapfenced" --check-config "$T/tf-state.json"
# The state dir as the daemon makes it (root's, 0700), its log named through "state/.".
install -d -m 0700 -o root -g root "$T/state"
sed "s|\"event_log\":\"[^\"]*\"|\"event_log\":\"$T/state/./events.jsonl\"|" "$T/tf.json" >"$T/tf-state.json"
check_says "... spelt another way (state/.), the same directory: valid" 0 valid \
	"$TF_BUILD/tapfenced" --check-config "$T/tf-state.json"

status() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$TFD_PID/status"; }

note "start as $duser"
tfd_start "$host"
check "the daemon's uids are all $duser's ($duid)" test "$(status Uid)" = "$duid $duid $duid $duid"
check "its gids are all $duser's group ($dgid)" test "$(status Gid)" = "$dgid $dgid $dgid $dgid"
check "it has no supplementary group" test -z "$(status Groups)"
# CAP_NET_ADMIN (12), CAP_PERFMON (38), CAP_BPF (39): nothing else, in any set.
for set in CapEff CapPrm CapBnd; do
	check "its $set is cap_net_admin, cap_perfmon, cap_bpf" test "$(status $set)" = 000000c000001000
done
check "its CapInh and CapAmb are empty" test "$(status CapInh)$(status CapAmb)" = 00000000000000000000000000000000
check "it has no_new_privs" test "$(status NoNewPrivs)" = 1
check "the log says so" grep -q "running as user $duser (uid $duid" "$T/tapfenced.log"

note "its job, unprivileged"
check "session a added" tfc session add "$T/a.json"
check "its links are pinned, owned by $duser" test "$(stat -c %u "$(link_pin a in)")" = "$duid"
check "its state file is written, owned by $duser" test "$(stat -c %u "$T/state/sessions/a.json")" = "$duid"
guest_probe "A -> 198.51.100.10:80 (its rule)" 198.51.100.10 reached
guest_probe "A -> 203.0.113.10:80 (no rule)" 203.0.113.10 blocked
expect_event reason=no_rule -- "the denial is in the event log"
check "rule add" tfc rule add a '{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}'
guest_probe "A -> 203.0.113.10:80 after rule add" 203.0.113.10 reached
check "rule del" tfc rule del a '{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}'

note "another local user"
check_not "$other cannot list the pins" runuser -u "$other" -- ls "$TF_PIN_DIR/links"
check_not "$other cannot open a pinned map" runuser -u "$other" -- bpftool map show pinned "$TF_PIN_DIR/maps/tf_sessions"

note "log rotation, as logrotate's create would do it"
mv "$TF_EVENTS" "$TF_EVENTS.1"
install -m 0640 -o "$duser" -g "$dgid" /dev/null "$TF_EVENTS"
check "SIGHUP" kill -HUP "$TFD_PID"
sleep 0.5
guest_probe "after the reopen: A -> 203.0.113.10:80" 203.0.113.10 blocked
check "the new log gets the events" wait_for 3 grep -q '"reason":"no_rule"' "$TF_EVENTS"

note "restart"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
tfd_start "$host"
check "session a re-adopted" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' session list | grep -q '^a '"
check "the restarted daemon is $duser again" test "$(status Uid)" = "$duid $duid $duid $duid"
# a's and the warm slots' the last run left, pinned again at the start (by root), and the pool's since.
check "the slot tables' pins are all $duser's" \
	test "$(find "$TF_PIN_DIR/slots" -mindepth 1 ! -user "$duid" | wc -l)" = 0
check "a's among them" test -e "$TF_PIN_DIR/slots/tf_learned_1"
guest_probe "after the restart: A -> 198.51.100.10:80" 198.51.100.10 reached
check "rule add after the restart" tfc rule add a '{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}'
note "a restart as tapfenced.service starts it: root without CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER"
UNIT_CAPS=(capsh --drop=cap_dac_override,cap_dac_read_search,cap_fowner -- -c 'exec "$0" "$@"')
second() {
	timeout 10 ip netns exec "$host" "${UNIT_CAPS[@]}" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" \
		--foreground >"$T/second.log" 2>&1
}
check_not "a second daemon started so while $duser's runs is refused" second
check "by the running daemon's lock" grep -q "in use by another tapfenced (pid $TFD_PID" "$T/second.log"
check "and leaves the running daemon its dirs ($duser's, 0700)" \
	test "$(stat -c %u:%a "$T/state" "$TF_PIN_DIR" | sort -u)" = "$duid:700"
check "which still saves a change" tfc rule add a '{"cidr":"203.0.113.0/24","proto":"udp","ports":[53]}'
# Everything under the state and pin dirs is $duser's now, in directories of mode 0700. What the
# user leaves there besides its own directories and files goes: a symlink root would follow to
# another program's pin, a FIFO named as a session file that a restore would block on.
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
check "the state dir's files are $duser's before the start" \
	test -n "$(find "$T/state" -mindepth 1 -user "$duid" -print -quit)"
runuser -u "$duser" -- ln -s "$T/bpffs/elsewhere-pin" "$(link_pin a in)x" ||
	fail "the user could not plant a symlink among the link pins"
runuser -u "$duser" -- mkfifo "$T/state/sessions/zz.json" || fail "the user could not plant a FIFO"
TFD_WRAP=("${UNIT_CAPS[@]}")
tfd_start "$host"
TFD_WRAP=()
check "it starts and re-adopts session a" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' session list | grep -q '^a '"
check "the planted symlink and FIFO are gone" test ! -L "$(link_pin a in)x" -a ! -e "$T/state/sessions/zz.json"
check "the log says so" grep -q "zz.json': not a directory or a file of its own, owned by uid $duid: removed" "$T/tapfenced.log"
check "as $duser again" test "$(status Uid)" = "$duid $duid $duid $duid"
guest_probe "A -> 198.51.100.10:80" 198.51.100.10 reached
check "rule del (saved)" tfc rule del a '{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}'
guest_probe "A -> 203.0.113.10:80 after it" 203.0.113.10 blocked
check "session del, its evidence written" tfc session del a
check "... by $duser" test "$(find "$T/state/evidence" -name 'a.*.json' -user "$duid" | wc -l)" = 1
check "session add again" tfc session add "$T/a.json"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
TFD_WRAP=("${UNIT_CAPS[@]}")
tfd_start "$host"
TFD_WRAP=()
check "restarted so again, it re-adopts session a" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' session list | grep -q '^a '"
sleep 1 # the second evidence file's name has the second in it
check "session del" tfc session del a
check "its evidence is written beside the first's (taken back and handed over again)" \
	test "$(find "$T/state/evidence" -name 'a.*.json' -user "$duid" | wc -l)" = 2
check "nothing was refused it" sh -c "! grep -q 'Permission denied' '$T/tapfenced.log'"
check "a's tables could be opened for all of it" sh -c "! grep -qE 'cannot (open its|empty its tables)' '$T/tapfenced.log'"
check "its links are unpinned" test ! -e "$(link_pin a in)"
check "its state file is gone" test ! -e "$T/state/sessions/a.json"

note "the daemon's own rotation, as $duser"
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
user_config '"log":{"session_evidence":true,"segment_bytes":4096}'
tfd_start "$host"
check "session a added" tfc session add "$T/a.json"
# 40 denied datagrams, an event each (within the default budget of 200 a second): past 4096 bytes.
n "$g" "$PY" -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(40):
    s.sendto(b"x", ("203.0.113.%d" % (1 + i), 9))'
check "past 4096 bytes, the daemon rotates the log (at its next tick)" wait_for 20 grep -q "event log: rotated to \`$T/log/events.jsonl\." "$T/tapfenced.log"
check "... and compresses the closed segment, $duser's" wait_for 10 \
	sh -c "find '$T/log' -name 'events.jsonl.*.gz' -user '$duid' | grep -q ."
check "... with no rotation refused" sh -c "! grep -q 'cannot rotate' '$T/tapfenced.log'"
check "session del a" tfc session del a
kill -TERM "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
mapfile -t segs < <(ls "$T/log"/events.jsonl.*.gz | sort)
check_says "the segments $duser closed and the open file verify as one sealed history" 0 "verified:" \
	"$TF_BUILD/tapfence" log verify --key "$T/state/log.key.pub" "${segs[@]}" "$TF_EVENTS"

note "a symlink the user put in its state dir (the daemon stopped)"
install -d -m 0755 -o root -g root "$T/victim"
runuser -u "$duser" -- sh -c "rmdir '$T/state/sessions' && ln -s '$T/victim' '$T/state/sessions'" ||
	fail "the user could not plant the symlink"
start_foreground() {
	timeout 20 ip netns exec "$host" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --foreground \
		>>"$T/tapfenced.log" 2>&1
}
check_not "the next start (as root) refuses the symlinked state dir" start_foreground
check "the link's target keeps its owner and mode (root, 0755)" \
	test "$(stat -c %U:%a "$T/victim")" = root:755
rm -f "$T/state/sessions"

tf_done
