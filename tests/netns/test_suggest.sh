#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `tapfence policy suggest' (docs/suggest.md): a workload runs under a session that allows
# nothing (an HTTP GET to an address, one to a name through the session's resolver); every step is
# denied. The suggestion from the event log, applied as the allowlist of a new session, lets the
# same workload run clean: each step reaches its listener, and the session is denied nothing.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-sh-$TF_SFX guest=tf-sg-$TF_SFX inet=tf-si-$TF_SFX
tf_need dnsmasq curl
one_guest "$host" "$guest" "$inet"
DNS_LOG=$T/dns.log
dnsmasq_start "$host" "$DNS_LOG" 10.10.1.1 --host-record=www.app.test,203.0.113.10
printf 'nameserver 10.10.1.1\noptions timeout:1 attempts:1\n' >"$T/resolv.conf"

# workload: the two steps; each a check DESC-prefixed, WANT reached|blocked.
get_name() { n_resolv "$guest" "$T/resolv.conf" timeout 10 curl -sS --noproxy '*' \
	--connect-timeout 2 --max-time 3 http://www.app.test/ >"$T/client.out" 2>&1; }
workload() {
	probe_tcp "$1: GET 198.51.100.10" "$L_INET" "$guest" 10.10.1.2 198.51.100.10 80 "$2"
	tf_mark
	if [ "$2" = reached ]; then
		check "$1: GET http://www.app.test/ (through the resolver)" get_name
		expect_reached "$L_INET" "tcp 203.0.113.10:80 from 10.10.1.2:" "$1: www.app.test reached"
	else
		check_not "$1: GET http://www.app.test/ (through the resolver)" get_name
		expect_not_reached "$L_INET" "tcp 203.0.113.10:80 from" "$1: www.app.test never reached"
	fi
}

workload baseline reached

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
session_spec "$T/a.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
	fd00:a:1::1 '[]'
sessions_add a
workload "nothing allowed" blocked
sleep 1 # the events reach the log

check "policy suggest a" sh -c "'$TF_BUILD/tapfence' policy suggest a --log '$TF_EVENTS' >'$T/suggest.json'"
check "the suggestion: the address's rule, the name's rule, with counts" tfjson check "$T/suggest.json" \
	'{"cidr": "198.51.100.10", "proto": "tcp", "ports": [80]} in d["allow"] and
	 any(r.get("host") == "www.app.test" and 80 in r["ports"] for r in d["allow"]) and
	 len(d["counts"]) == len(d["allow"]) and min(d["counts"]) >= 1'
check "policy suggest --since after it all: nothing" sh -c \
	"'$TF_BUILD/tapfence' policy suggest a --log '$TF_EVENTS' --since 2999 | grep -q '\"allow\": \\[\\]'"
check_says "policy suggest of a log that is not there names it" 1 "--log: cannot read" \
	"$TF_BUILD/tapfence" policy suggest a --log "$T/none.jsonl"

tfc session del a >/dev/null 2>&1
allow=$(tfjson get allow <"$T/suggest.json")
session_spec "$T/b.json" b ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
	fd00:a:1::1 "$allow"
sessions_add b
tf_mark
from_b=${tf_mark_at[$TF_EVENTS]}
workload "the suggestion applied" reached
tf_mark_at[$TF_EVENTS]=$from_b # the whole workload's events, not its last step's
expect_no_event session=b verdict=deny -- "the suggestion applied: session b is denied nothing"

tf_done
