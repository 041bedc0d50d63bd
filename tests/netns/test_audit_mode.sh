#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Audit mode (docs/audit-mode.md). A session in "mode": "audit" whose allowlist holds one host rule
# runs a workload enforce mode would deny: an HTTP GET to an address no rule covers, a name no rule
# allows (through the session's resolver), HTTPS with an SNI the host rule does not name. Each
# reaches its real server, reported with verdict audit and the reason enforce mode would give;
# the metadata server and a spoofed source stay denied. `session mode' switches live: a connection
# audit mode opened is revoked in enforce mode and works again in audit mode; the mode survives a
# restart; a quarantine is enforced in audit mode. The suggestion from the audit events, applied in
# enforce mode, lets the same workload run clean.
#
#   guest ga 10.10.1.2 ─ ha ─ host (router, tapfenced, dnsmasq 10.10.1.1) ─ inet: 198.51.100.10
#   (tcp 80, tcp 7001), 203.0.113.10 (tcp 80, tls 443: www.app.test, other.test), 169.254.169.254 tcp 80
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-amh-$TF_SFX guest=tf-amg-$TF_SFX inet=tf-ami-$TF_SFX
tf_need dnsmasq curl openssl
one_guest "$host" "$guest" "$inet"
MD=169.254.169.254 WEB=203.0.113.10 FAR=198.51.100.10
setup ip -n "$host" route add $MD/32 via 10.99.0.2 dev hi
setup ip -n "$inet" addr add $MD/32 dev lo
L_MD=$T/md.log
listener_start "$inet" "$L_MD" tcp:$MD:80
setup tls_certs "$T" www.app.test other.test
SLOG=$T/tls.log
tlsserver_start "$inet" "$SLOG" --cert "www.app.test:$T/www.app.test.pem:$T/www.app.test.key" \
	--cert "other.test:$T/other.test.pem:$T/other.test.key" --tcp $WEB:443
FP=$TF_NETNS_DIR/flowpeer.py L_FP=$T/fp.log
flowpeer_start "$inet" "$L_FP" --tcp $FAR:7001
DNS_LOG=$T/dns.log
dnsmasq_start "$host" "$DNS_LOG" 10.10.1.1 --host-record=www.app.test,$WEB \
	--host-record=name.test,$WEB --host-record=other.test,$WEB
printf 'nameserver 10.10.1.1\noptions timeout:1 attempts:1\n' >"$T/resolv.conf"

g() { n_resolv "$guest" "$T/resolv.conf" "$@"; }
get_name() { g timeout 10 curl -sS --noproxy '*' --connect-timeout 2 --max-time 3 "http://$1/" \
	>"$T/client.out" 2>&1; }
https() { g timeout 10 curl -sS --noproxy '*' --cacert "$T/ca.pem" --connect-timeout 2 --max-time 3 \
	"https://$1/" >"$T/client.out" 2>&1; }

# workload WHAT reached|blocked: the three steps a policy has to allow.
workload() {
	probe_tcp "$1: GET $FAR" "$L_INET" "$guest" 10.10.1.2 $FAR 80 "$2"
	tf_mark
	if [ "$2" = reached ]; then
		check "$1: GET http://name.test/ (a name no rule allows)" get_name name.test
		expect_reached "$L_INET" "tcp $WEB:80 from 10.10.1.2:" "$1: name.test reached"
		# www.app.test first: its address, learnt, asks for a hello, which names other.test.
		check "$1: GET https://www.app.test/ (allowed)" https www.app.test
		check "$1: GET https://other.test/ (an SNI no rule allows)" https other.test
		expect_reached "$SLOG" "sni other.test line" "$1: the TLS server saw other.test's request"
	else
		check_not "$1: GET http://name.test/" get_name name.test
		check "$1: GET https://www.app.test/ (allowed)" https www.app.test
		check_not "$1: GET https://other.test/" https other.test
	fi
}

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
session_spec "$T/a.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
	fd00:a:1::1 '[{"host":"www.app.test","proto":"tcp","ports":[443]}]'
tfjson set "$T/a.json" mode '"audit"' || die "cannot write the spec"

note "enforce mode first: the same workload is denied"
cp "$T/a.json" "$T/e.json"
tfjson set "$T/e.json" mode '"enforce"' || die "cannot write the spec"
tfjson set "$T/e.json" id '"e"' || die "cannot write the spec"
sessions_add e
workload "enforce" blocked
tfc session del e >/dev/null 2>&1

note "audit mode"
sessions_add a
tfc --json session show a >"$T/show.json" 2>&1
check "session show: mode audit" tfjson check "$T/show.json" 'd["session"]["mode"] == "audit"'
tf_mark
from_a=${tf_mark_at[$TF_EVENTS]}
workload "audit" reached
tf_mark_at[$TF_EVENTS]=$from_a
expect_event session=a verdict=audit reason=no_rule dst=$FAR dport=80 -- \
	"audit: the GET to $FAR is reported: audit, no_rule"
expect_event session=a verdict=audit reason=dns_name_denied name=name.test -- \
	"audit: the lookup of name.test is reported: audit, dns_name_denied"
expect_event session=a verdict=audit reason=tls_sni_denied name=other.test -- \
	"audit: the hello for other.test is reported: audit, tls_sni_denied"
expect_event session=a verdict=allow reason=allow_tls name=www.app.test -- \
	"audit: the allowed hello is an allow, as in enforce mode"
expect_no_event session=a verdict=deny -- "audit: nothing of the workload was denied"

note "audit mode: the floor and anti-spoofing stay enforced"
probe_tcp "audit: GET $MD (metadata)" "$L_MD" "$guest" 10.10.1.2 $MD 80 blocked
expect_event session=a verdict=deny reason=floor_metadata -- "audit: the metadata server is denied, floor_metadata"
setup ip -n "$guest" addr add 10.10.1.99/24 dev ga
tf_mark
check_not "audit: a GET from a spoofed 10.10.1.99" tcp_get "$guest" --src 10.10.1.99 $FAR 80
expect_not_reached "$L_INET" "from 10.10.1.99:" "audit: the spoofed GET never reaches the listener"
expect_event session=a verdict=deny reason=spoofed_src -- "audit: spoofed_src is denied"
setup ip -n "$guest" addr del 10.10.1.99/24 dev ga
tfc --json session show a >"$T/show.json" 2>&1
check "session show: the audited counter" tfjson check "$T/show.json" \
	'd["session"]["counters"]["audited"] >= 3'

note "a live switch: a connection audit mode opened"
flowpeer_stream "$guest" "$T/st.log" --tcp $FAR:7001 --sport 42001 --tag st --stop "$T/stop" --abort
sleep 1
tf_mark
sleep 1
expect_reached "$L_FP" "from 10.10.1.2:42001 msg st" "audit: the stream reaches its server"
tf_mark
check "session mode a enforce" tfc session mode a enforce
expect_event session=a verdict=deny reason=revoked -- "enforce: its packets are revoked"
check_says "a second switch to enforce is refused" 1 "enforce mode already" tfc session mode a enforce
check_says "a mode that is not one is refused" 64 "usage" tfc session mode a permissive
sleep 0.5
tf_mark
sleep 1.5
expect_not_reached "$L_FP" "from 10.10.1.2:42001 msg" "enforce: the stream audit mode opened is cut"
check_not "enforce: GET http://name.test/ is denied" get_name name.test
tf_unmark "$TF_EVENTS"
expect_event kind=session session=a mode=enforce -- "the sealed log says a went to enforce mode"
expect_event kind=policy session=a op=mode.enforce -- "the policy line of the switch is sealed"
# Audit mode first, then the stream's end: its RST must pass (under enforce it was revoked, and
# the server went on retransmitting its echo into session b's time on the same device).
check "session mode a audit" tfc session mode a audit
touch "$T/stop"
check "audit again: a new connection to $FAR:7001 works" n "$guest" "$PY" "$FP" once --tcp $FAR:7001 \
	--sport 42002 --tag once

note "a restart keeps audit mode"
kill_pid "$TFD_PID"
TFD_PID=
TFD_KEEP_LOG=1 tfd_start "$host"
tfc --json session show a >"$T/show.json" 2>&1
check "restarted: still audit mode" tfjson check "$T/show.json" 'd["session"]["mode"] == "audit"'
check "restarted: GET http://name.test/ still passes" get_name name.test

note "a quarantine is enforced in audit mode"
rm -f "$T/stop"
flowpeer_stream "$guest" "$T/st2.log" --tcp $FAR:7001 --sport 42003 --tag st2 --stop "$T/stop" --abort
sleep 1
tf_mark
sleep 1
expect_reached "$L_FP" "from 10.10.1.2:42003 msg st2" "audit: a second stream reaches its server"
check "session quarantine a" tfc session quarantine a
sleep 0.5
tf_mark
sleep 1.5
expect_not_reached "$L_FP" "from 10.10.1.2:42003 msg" "quarantined in audit mode: the stream is cut"
check_not "quarantined in audit mode: GET http://name.test/ is denied" get_name name.test
check "session resume a" tfc session resume a
check "resumed: audit mode again: GET http://name.test/ passes" get_name name.test
touch "$T/stop"

note "the suggestion from the audit events, added to the allowlist, in enforce mode"
sleep 1
check "policy suggest a" sh -c "'$TF_BUILD/tapfence' policy suggest a --log '$TF_EVENTS' >'$T/suggest.json'"
check "the suggestion names the address, the name and the SNI" tfjson check "$T/suggest.json" \
	'any(r.get("cidr") == "198.51.100.10" and 80 in r["ports"] for r in d["allow"]) and
	 any(r.get("host") == "name.test" for r in d["allow"]) and
	 any(r.get("host") == "other.test" and 443 in r["ports"] for r in d["allow"])'
tfc session del a >/dev/null 2>&1
allow=$("$PY" -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["allow"] +
	json.load(open(sys.argv[2]))["allow"]))' "$T/a.json" "$T/suggest.json")
session_spec "$T/b.json" b ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
	fd00:a:1::1 "$allow"
sessions_add b
tf_mark
from_b=${tf_mark_at[$TF_EVENTS]}
workload "the suggestion applied, enforce mode" reached
tf_mark_at[$TF_EVENTS]=$from_b
expect_no_event session=b verdict=deny -- "the suggestion applied: session b is denied nothing"
expect_no_event session=b verdict=audit -- "... and, in enforce mode, audits nothing"

tf_done
