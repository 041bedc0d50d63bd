#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A session on a guarded device is judged through the guard's programs only while they run first
# on it (docs/guard.md#sessions-judged-through-the-guard): the add asks the kernel which XDP
# program the device runs first (user/daemon/netns.c, one RTM_GETLINK of that device, not a dump
# of every device: docs/performance.md#session-set-up). With an XDP program of someone else's on
# the device, the session attaches its own links (and the log says why); with the device's XDP
# slot empty again, the next session is judged through the guard. Either way its traffic is
# judged: an allowed TCP connection gets through, a denied one does not.
#
#  guest ns (10.10.1.2) ── veth ha (guarded) ── host ns: tapfenced ── the fake internet
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-gah-$TF_SFX guest=tf-gag-$TF_SFX inet=tf-gai-$TF_SFX
one_guest "$host" "$guest" "$inet"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json" '"guard":{"interfaces":["ha"]}'
tfd_start "$host"
# guarded: ha has the guard's programs.
guarded() { tfc --json guard | "$PY" -c 'import json, sys
sys.exit(not any(e.get("programs") for e in json.load(sys.stdin).get("devices", [])))'; }
check "the guard holds ha" wait_for 5 guarded
one_guest_spec "$T/a.json"
# attach_is WHAT FIRST: session a's attach and whether tapfence runs first.
attach_is() { tfc --json session show a >"$T/show.json" &&
	tfjson check "$T/show.json" "d['session']['attach'] == '$1' and d['session']['first'] is $2"; }

note "an XDP program of someone else's runs ahead of the guard on ha"
check "an XDP no-op on ha" n "$host" "$TF_BUILD/tests/tools/tcx_ahead" ha --xdp
defer ip -n "$host" link set dev ha xdpgeneric off
sessions_add a
check "session a: its own links, not the guard's" attach_is tcx False
check "the log says why" grep -q "ahead of the guard" "$T/tapfenced.log"
check "session a: an allowed connection gets through" tcp_get "$guest" 198.51.100.10 80
check_not "session a: a denied one does not" tcp_get "$guest" 203.0.113.10 80
check "session del a" tfc session del a

note "the XDP slot empty again"
check "the XDP no-op removed" ip -n "$host" link set dev ha xdpgeneric off
sessions_add a
check "session a: judged through the guard, which runs first" attach_is guard True
check "session a: an allowed connection gets through" tcp_get "$guest" 198.51.100.10 80
check_not "session a: a denied one does not" tcp_get "$guest" 203.0.113.10 80
tf_done
