#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `tapfence top' (docs/top.md). Plain (--once, not a terminal): one snapshot naming the session, its
# denials and top deny reason, and the denied destination from the event log. On a real
# pseudo-terminal of 80x24: every frame fits, the rates move with the guest's traffic, a key
# changes the sort, q ends it with status 0.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need curl
host=tf-toh-$TF_SFX guest=tf-tog-$TF_SFX inet=tf-toi-$TF_SFX
one_guest "$host" "$guest" "$inet"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
one_guest_spec "$T/a.json"
sessions_add a
deny3() { for i in 1 2 3; do tcp_get "$guest" 203.0.113.10 80 || true; done; }
deny3
tcp_get "$guest" 198.51.100.10 80 || true
sleep 1

note "plain: one snapshot"
check "top --once" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' top --once --log '$TF_EVENTS' >'$T/once.txt'"
check "the header" grep -qE '^  SESSION +MODE +ALLOW/s +DENY/s +DENIED +LEARNT +TOP DENY REASON' "$T/once.txt"
check "session a, its denials and top reason" grep -qE '^  a +enforce +[0-9.]+ +[0-9.]+ +[3-9][0-9]* +[0-9]+  no_rule [0-9]+' "$T/once.txt"
check "the denied destination, from the log" grep -qE '^ +[0-9]+  a +203\.0\.113\.10 tcp 80' "$T/once.txt"
check_not "no terminal control in plain output" grep -q $'\033' "$T/once.txt"
check_says "--interval 0: named" 64 "--interval: \`0' is not a number" tfc top --interval 0

note "a pseudo-terminal, 80x24"
( for i in 1 2 3 4 5 6; do deny3; sleep 0.3; done ) &
defer kill_pid $!
"$PY" "$TF_NETNS_DIR/ptyrun.py" --out "$T/tty.out" --rows 24 --cols 80 --delay 2.5 --keys "aq" \
	-- "$TF_BUILD/tapfence" --socket "$TF_SOCK" top --interval 0.5 --log "$TF_EVENTS" >"$T/pty.res"
cat "$T/pty.res" | sed 's/^/#   /'
check "q ends it with status 0" grep -qx "exit 0" "$T/pty.res"
read -r _ rows cols < <(grep '^frame' "$T/pty.res")
check "its frames fit 80x24 ($rows rows, $cols columns)" test "$rows" -le 24 -a "$cols" -le 80
check "it redraws in place (clear-screen sequences)" test "$(grep -c $'\033\[2J' "$T/tty.out")" -ge 3
check "a's denials per second were drawn, not zero" grep -aqE '> a +enforce +[0-9.]+ +[1-9][0-9]*\.[0-9]' "$T/tty.out"
check "key a: sorted by allowed/s" grep -aq 'sort allowed/s' "$T/tty.out"
tf_done
