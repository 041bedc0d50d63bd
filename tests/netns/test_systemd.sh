#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The systemd unit (docs/systemd.md), as far as a machine whose PID 1 is not systemd can show it.
# The installed unit passes `systemd-analyze verify`, and `systemd-analyze security --offline`
# rates it 4.5 or better. tapfenced started with only the unit's CapabilityBoundingSet loads,
# enforces and serves. Its notifications, to a socket playing the manager's side: READY=1 only
# once the control socket serves (with a STATUS), RELOADING=1 then READY=1 on SIGHUP (the unit's
# ExecReload), STOPPING=1 on SIGTERM; enforcement stays after the stop.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need systemd-analyze capsh
host=tf-sdh-$TF_SFX guest=tf-sdg-$TF_SFX inet=tf-sdi-$TF_SFX

note "the unit as make install writes it"
root=$T/root
check "make install DESTDIR PREFIX=/usr" make -s -C "$TF_ROOT" BUILD="$TF_BUILD" DESTDIR="$root" \
	PREFIX=/usr install
UNIT=$root/usr/lib/systemd/system/tapfenced.service
check "the unit is installed" test -f "$UNIT"
check_not "its @...@ placeholders are all filled" grep -qE '@[A-Z]+@' "$UNIT"
# verify resolves ExecStart, so a copy runs the build's daemon.
sed "s|/usr/sbin/tapfenced|$TF_BUILD/tapfenced|g" "$UNIT" >"$T/tapfenced.service"
systemd-analyze verify "$T/tapfenced.service" >"$T/verify.out" 2>&1
check "systemd-analyze verify: exit 0" test $? = 0
check "systemd-analyze verify: nothing to say" test ! -s "$T/verify.out"
systemd-analyze security --offline=yes "$T/tapfenced.service" >"$T/security.out" 2>&1
exposure=$(sed -n 's/.*Overall exposure level for tapfenced.service: \([0-9.]*\).*/\1/p' "$T/security.out")
note "systemd-analyze security --offline=yes: exposure $exposure"
check "the exposure is 4.5 or better ($exposure)" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 4.5) }'

note "the unit's capabilities are enough"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z' 'a-z')
drop=$(capsh --print | sed -n 's/^Bounding set =//p' | tr ',' '\n' | grep -vxF -f <(tr ' ' '\n' <<<"$caps") |
	paste -sd, -)
check "the unit names its capabilities ($caps)" test -n "$caps"
check "... and the rest are dropped from the daemon's bounding set ($drop)" test -n "$drop"
one_guest "$host" "$guest" "$inet"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
NS=$T/notify.sock NLOG=$T/notify.log
: >"$NLOG"
ip netns exec "$host" "$PY" "$TF_NETNS_DIR/notifysock.py" --socket "$NS" --log "$NLOG" \
	--ready "$T/notify.ready" >>"$T/notify.out" 2>&1 &
defer kill_pid $!
wait_for 5 test -e "$T/notify.ready" || die "notifysock.py did not start"
TFD_WRAP=(env NOTIFY_SOCKET="$NS" capsh --drop="$drop" --)
TFD_WRAP+=(-c 'exec "$0" "$@"')
tfd_start "$host"
one_guest_spec "$T/a.json"
sessions_add a
guest_probe "bounded: 198.51.100.10:80 (allowed)" 198.51.100.10 reached
guest_probe "bounded: 203.0.113.10:80 (no rule)" 203.0.113.10 blocked

note "notifications"
check "READY=1 came" grep -qx "READY=1" "$NLOG"
check "... with a STATUS saying it serves" grep -q "^STATUS=serving 0 sessions on $TF_SOCK" "$NLOG"
check "... and the daemon's PID" grep -qx "MAINPID=$TFD_PID" "$NLOG"
check "a STATUS before READY=1 (re-adopting)" sh -c "grep -n . '$NLOG' | grep -m1 -B99 'READY=1' | grep -q 'STATUS=re-adopting'"
kill -HUP "$TFD_PID"
check "SIGHUP (ExecReload): RELOADING=1, then READY=1 again" wait_for 3 sh -c \
	"grep -A3 -x 'RELOADING=1' '$NLOG' | grep -qx 'READY=1'"
kill -TERM "$TFD_PID"
check "SIGTERM: STOPPING=1" wait_for 5 grep -qx "STOPPING=1" "$NLOG"
wait_for 5 sh -c "! kill -0 $TFD_PID 2>/dev/null"
TFD_PID=
guest_probe "stopped: 203.0.113.10:80 still blocked (enforcement stays)" 203.0.113.10 blocked

tf_done
