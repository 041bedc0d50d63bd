#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that host-name rules open only the addresses the session's own resolver gave to queries the guest really made.
#
#  ┌────────────────────────────┐        ┌────────────────────────────┐
#  │ $ga  (guest A)             │        │ $gb  (guest B)             │
#  │ ga 10.10.1.2/24            │        │ gb 10.10.2.2/24            │
#  │    fd00:a:1::2/64          │        │    fd00:a:2::2/64          │
#  │ dig, curl, dnsprobe.py     │        │ dig, curl                  │
#  └─────────────┬──────────────┘        └─────────────┬──────────────┘
#                │ veth                                │ veth
#  ┌─────────────┴─────────────────────────────────────┴──────────────────┐
#  │ $host  (router; tapfenced attaches to ha (session a), hb (session b))│
#  │ ha 10.10.1.1/24 fd00:a:1::1      hb 10.10.2.1/24 fd00:a:2::1         │
#  │ dnsmasq on 10.10.1.1:53 and 10.10.2.1:53 only (each session's        │
#  │   resolver = its gateway), no upstream, static records, query log    │
#  │ hi 10.99.0.1/30 fd00:99::1  routes 198.51.100/24 203.0.113/24        │
#  │                             10.1.2/24 169.254.169.254 2001:db8::/32  │
#  └──────────────────────────────────┬───────────────────────────────────┘
#                                     │ veth
#  ┌──────────────────────────────────┴───────────────────────────────────┐
#  │ $inet  ii 10.99.0.2/30 fd00:99::2; on lo, listeners on :443 of       │
#  │ 198.51.100.10 (allowed)  198.51.100.20 (edge, CNAME target)          │
#  │ 198.51.100.30 (nobody resolves it)  203.0.113.10 (denied)            │
#  │ 203.0.113.20 (B's name)  10.1.2.3 (rebind)  169.254.169.254 (meta)   │
#  │ 2001:db8:100::10 (allowed, AAAA); echo on 198.51.100.40:443 (short); │
#  │ udp 198.51.100.53:53 (not a resolver); routes back to 10.10/16       │
#  └──────────────────────────────────────────────────────────────────────┘
#
# dnsmasq records: allowed.example.com A 198.51.100.10 AAAA 2001:db8:100::10; www.example.org CNAME
# edge.example.net A 198.51.100.20; denied.example.com A 203.0.113.10; rebind.example.com A 10.1.2.3;
# meta.example.com A 169.254.169.254; short.example.com A 198.51.100.40 (TTL 2 s); ttl.example.org
# A 198.51.100.60 (TTL 1 day); example.org A 192.0.2.10; bee.example.net A 203.0.113.20; TXT on
# allowed.example.com. Every other TTL is 300 s.
# Session a allows tcp/443 to allowed.example.com, *.example.org, short.example.com,
# rebind.example.com, meta.example.com; session b allows tcp/443 to bee.example.net only. The
# rules say "tls": false: the probes are plain TCP, and this test is about what DNS opens (the SNI
# check on 443 is test_tls.sh's).
# tapfenced runs with "limits":{"dns_ttl_min_s":1,"dns_ttl_max_s":3600}.
#
# Phase 1 (baseline, nothing enforces): every query reaches dnsmasq and is answered, every
# connection and the forged answers reach their listeners, so the negative checks later cannot pass
# because a probe was broken. Phase 2: tapfenced; the story of a guest that resolves, connects,
# is refused, spoofed and outlives a TTL. TF_BASELINE_ONLY=1 stops after phase 1 (needs no daemon).
# TF_KEEP=1 keeps $T for inspection. TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX gb=tf-gb-$TF_SFX inet=tf-inet-$TF_SFX

tf_need dnsmasq dig

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$ga" "$gb" "$inet"
setup ns_router "$host"

A_MAC=02:00:00:00:0a:02 A_GW_MAC=02:00:00:00:0a:01
B_MAC=02:00:00:00:0b:02 B_GW_MAC=02:00:00:00:0b:01
RES_A=10.10.1.1 RES_B=10.10.2.1

setup guest_link "$ga" ga $A_MAC 10.10.1.2/24 fd00:a:1::2/64 "$host" ha $A_GW_MAC $RES_A/24 fd00:a:1::1/64
setup guest_link "$gb" gb $B_MAC 10.10.2.2/24 fd00:a:2::2/64 "$host" hb $B_GW_MAC $RES_B/24 fd00:a:2::1/64

setup inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 \
	198.51.100.0/24 203.0.113.0/24 10.1.2.0/24 169.254.169.254/32 2001:db8::/32 -- \
	198.51.100.10 198.51.100.20 198.51.100.30 198.51.100.40 198.51.100.53 \
	203.0.113.10 203.0.113.20 10.1.2.3 169.254.169.254 2001:db8:100::10

# --- the resolver: dnsmasq in $host, on the two gateway addresses only ------------------------

DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$host" "$DNS_LOG" "$RES_A,$RES_B" --local=/example.com/ --local=/example.org/ \
	--local=/example.net/ --host-record=allowed.example.com,198.51.100.10,2001:db8:100::10,300 \
	--txt-record=allowed.example.com,tapfence --host-record=edge.example.net,198.51.100.20,300 \
	--cname=www.example.org,edge.example.net,300 \
	--host-record=denied.example.com,203.0.113.10,300 \
	--host-record=rebind.example.com,10.1.2.3,300 \
	--host-record=meta.example.com,169.254.169.254,300 \
	--host-record=short.example.com,198.51.100.40,2 \
	--host-record=ttl.example.org,198.51.100.60,86400 --host-record=example.org,192.0.2.10,300 \
	--host-record=bee.example.net,203.0.113.20,300
n "$host" ss -Hlnup 'sport = :53' | grep -v -e "$RES_A:53" -e "$RES_B:53" | grep -q . &&
	die "dnsmasq listens beyond the test addresses: $(n "$host" ss -Hlnu 'sport = :53')"

# --- listeners --------------------------------------------------------------------------------

L_INET=$T/inet.log L_ECHO=$T/echo.log
listener_start "$inet" "$L_INET" \
	tcp:198.51.100.10:443 tcp:198.51.100.20:443 tcp:198.51.100.30:443 \
	tcp:203.0.113.10:443 tcp:203.0.113.20:443 tcp:10.1.2.3:443 tcp:169.254.169.254:443 \
	'tcp:[2001:db8:100::10]:443' udp:198.51.100.53:53
PID_INET=$LISTENER_PID

# A line echo on 198.51.100.40:443, for a connection that must outlive its name's TTL.
ready=$T/echo.ready
: >"$L_ECHO"
ip netns exec "$inet" "$PY" "$TF_NETNS_DIR/dnsprobe.py" echo-serve --log "$L_ECHO" --ready "$ready" \
	--tcp 198.51.100.40:443 >>"$T/listeners.out" 2>&1 &
PID_ECHO=$!
defer kill_pid "$PID_ECHO"
wait_for 5 test -e "$ready" || die "echo server did not start: $(tail -n 3 "$T/listeners.out")"
tf_watch "$L_ECHO"

# --- probes -----------------------------------------------------------------------------------

ENFORCED=0 # set in phase 2: conn_* and dns_* then also expect their events

dig_note() { sed 's/^/#   dig: /' <(head -n 4 "$T/dig.out"); }

# dig_q NS SERVER NAME TYPE [DIG-OPTION...]: dig's short answer into $T/dig.out; dig's exit status.
dig_q() {
	local ns=$1 server=$2 name=$3 type=$4
	shift 4
	n "$ns" timeout 10 dig @"$server" +time=2 +tries=1 +short "$@" "$name" "$type" >"$T/dig.out" 2>&1
}

# dig_ttl_is NS SERVER NAME TTL: the A answer for NAME carries TTL.
dig_ttl_is() {
	n "$1" timeout 10 dig @"$2" +time=2 +tries=1 +noall +answer "$3" A >"$T/dig.out" 2>&1
	awk -v name="$3." -v ttl="$4" '$1 == name && $4 == "A" { found = 1; if ($2 != ttl) bad = 1 }
		END { exit !(found && !bad) }' "$T/dig.out" || { dig_note; return 1; }
}

# guest_ip NS: the guest address a probe leaves from (for log lines).
guest_ip() { case $1 in "$ga") echo 10.10.1.2 ;; "$gb") echo 10.10.2.2 ;; esac; }

# dns_ok DESC NS SERVER NAME TYPE ANSWER [DIG-OPTION...]: the query reaches dnsmasq and the guest
# gets ANSWER (one line of dig +short).
dns_ok() {
	local desc=$1 ns=$2 server=$3 name=$4 type=$5 answer=$6
	shift 6
	tf_mark
	if dig_q "$ns" "$server" "$name" "$type" "$@" && grep -qxF -- "$answer" "$T/dig.out"; then
		pass "$desc: answer $answer"
	else
		fail "$desc: no answer $answer"
		dig_note
	fi
	expect_reached "$DNS_LOG" "query[$type] $name from $(guest_ip "$ns")" "$desc: reached dnsmasq"
}

# dns_dropped DESC NS SERVER NAME TYPE [FILTER... --] [DIG-OPTION...]: the guest gets no answer,
# dnsmasq never saw the query, and (phase 2) an event matches FILTER.
dns_dropped() {
	local desc=$1 ns=$2 server=$3 name=$4 type=$5 filt=()
	shift 5
	if [ "${1:-}" != "" ] && [[ $1 == *=* ]]; then
		while [ $# -gt 0 ] && [ "$1" != -- ]; do filt+=("$1"); shift; done
		shift
	fi
	tf_mark
	if dig_q "$ns" "$server" "$name" "$type" "$@" && [ -s "$T/dig.out" ]; then
		fail "$desc: the guest got an answer"
		dig_note
	else
		pass "$desc: the guest got no answer"
	fi
	expect_not_reached "$DNS_LOG" "query[$type] $name from $(guest_ip "$ns")" "$desc: did not reach dnsmasq"
	[ $ENFORCED = 1 ] && expect_event "${filt[@]}" -- "$desc: event ${filt[*]}"
	return 0
}

# conn_text HOST PORT NS: the listener's log line prefix for a connection from NS's guest.
conn_text() {
	case $1 in
	*:*) echo "tcp [$1]:$2 from [$(guest_ip6 "$3")]:" ;;
	*) echo "tcp $1:$2 from $(guest_ip "$3"):" ;;
	esac
}
guest_ip6() { case $1 in "$ga") echo fd00:a:1::2 ;; "$gb") echo fd00:a:2::2 ;; esac; }

# conn_ok DESC NS HOST PORT [FILTER...]: a new TCP connection gets the listener's reply, the
# listener logged it and (phase 2) an event matches FILTER.
conn_ok() {
	local desc=$1 ns=$2 host=$3 port=$4
	shift 4
	tf_mark
	if tcp_get "$ns" "$host" "$port"; then pass "$desc: client got the reply"; else fail "$desc: client got no reply"; probe_note; fi
	expect_reached "$L_INET" "$(conn_text "$host" "$port" "$ns")" "$desc: reached the listener"
	[ $ENFORCED = 1 ] && [ $# -gt 0 ] && expect_event "$@" -- "$desc: event $*"
	return 0
}

# conn_denied DESC NS HOST PORT [FILTER...]: the connection gets no reply, never reached the
# listener, and (phase 2) an event matches FILTER.
conn_denied() {
	local desc=$1 ns=$2 host=$3 port=$4
	shift 4
	tf_mark
	if tcp_get "$ns" "$host" "$port"; then fail "$desc: client got a reply"; probe_note; else pass "$desc: client got no reply"; fi
	expect_not_reached "$L_INET" "$(conn_text "$host" "$port" "$ns")" "$desc: did not reach the listener"
	[ $ENFORCED = 1 ] && [ $# -gt 0 ] && expect_event "$@" -- "$desc: event $*"
	return 0
}

# echo_client NS HOST PORT GOFILE OUT: the long-lived client (dnsprobe.py echo-client) in the
# background; sets ECHO_PID.
echo_client() {
	ip netns exec "$1" "$PY" "$TF_NETNS_DIR/dnsprobe.py" echo-client "$2" "$3" --go "$4" \
		--timeout "$TF_CONNECT_TIMEOUT" --wait 30 >"$5" 2>&1 &
	ECHO_PID=$!
	defer kill_pid "$ECHO_PID"
}

# spoof DESC ID NAME ADDR DPORT: a forged answer from the resolver's address to guest A, sent on ha
# from $host as an off-path host would. In phase 1 it must go out; in phase 2 tapfence's egress
# program may drop it inside the send (dnsprobe.py exits 3, ENOBUFS), which is noted, not failed:
# what counts is that it never reaches the guest's socket.
spoof() {
	local desc=$1 rc=0
	shift
	n "$host" "$PY" "$TF_NETNS_DIR/dnsprobe.py" spoof --iface ha --src-mac $A_GW_MAC --dst-mac $A_MAC \
		--src $RES_A --dst 10.10.1.2 --dport "$4" --id "$1" --name "$2" --addr "$3" >"$T/spoof1.out" 2>&1 || rc=$?
	cat "$T/spoof1.out" >>"$T/spoof.out"
	if [ $rc = 0 ] || { [ $rc = 3 ] && [ $ENFORCED = 1 ]; }; then
		note "$desc: $(tail -n 1 "$T/spoof1.out")"
	else
		fail "$desc: cannot inject: $(tail -n 1 "$T/spoof1.out")"
	fi
}

# spoof_round: guest A asks allowed.example.com from port $Q_SPORT with id $Q_ID while dnsmasq is
# stopped (so the query is outstanding), two forged answers are injected (a wrong id; the right id
# with another name), then dnsmasq answers. What guest A's socket received goes to $Q_LOG.
# dnsmasq stays stopped 2-3 s (at worst 9 s, when both event checks time out), under the daemon's
# default query timeout (limits.dns_query_timeout_s, 10 s) after which the real answer would be late.
Q_SPORT=45353 Q_ID=0x2b2b Q_BAD_ID=0x7171 Q_LOG=$T/query.log
spoof_round() {
	local qpid
	: >"$Q_LOG"
	rm -f "$T/query.sent"
	kill -STOP "$DNS_PID"
	ip netns exec "$ga" "$PY" "$TF_NETNS_DIR/dnsprobe.py" query $RES_A --src 10.10.1.2 \
		--sport $Q_SPORT --id $Q_ID --name allowed.example.com --sent "$T/query.sent" \
		--log "$Q_LOG" --listen 20 >>"$T/spoof.out" 2>&1 &
	qpid=$!
	defer kill_pid "$qpid"
	wait_for 10 test -e "$T/query.sent" || fail "spoof: guest A's query was not sent: $(tail -n 2 "$T/spoof.out")"
	tf_mark
	spoof "forged answer, wrong transaction id" $Q_BAD_ID denied.example.com 203.0.113.10 $Q_SPORT
	[ $ENFORCED = 1 ] && expect_event session=a direction=to_guest verdict=deny reason=dns_unmatched \
		src=$RES_A dport=$Q_SPORT -- "spoof, wrong transaction id: event dns_unmatched"
	tf_mark
	spoof "forged answer, right id and port, other name" $Q_ID denied.example.com 203.0.113.10 $Q_SPORT
	[ $ENFORCED = 1 ] && expect_event session=a direction=to_guest verdict=deny reason=dns_unmatched \
		src=$RES_A dport=$Q_SPORT -- "spoof, right id and port, other name: event dns_unmatched"
	sleep 0.5
	kill -CONT "$DNS_PID"
	wait_for 5 grep -q "id=$Q_ID qr=1 rcode=0 q=allowed.example.com an=A:198.51.100.10 from $RES_A:53" "$Q_LOG"
	sleep 0.3
	kill_pid "$qpid"
	sed 's/^/#   guest A received: /' "$Q_LOG"
}

# --- session show --json learned[] -----------------------------------------------------------
# lcheck DESC SESSION EXPR [ARG...]: PASS iff EXPR holds, with L the session's "learned" list,
# has(addr) its entry for addr (or None) and a the ARGs.
lcheck() {
	local desc=$1 sid=$2 expr=$3 why
	shift 3
	if ! tfc --json session show "$sid" >"$T/show.json" 2>&1; then
		fail "$desc (session show $sid: $(head -n 1 "$T/show.json"))"
		return
	fi
	if why=$(tfjson check --learned "$T/show.json" "$expr" "$@"); then pass "$desc"; else fail "$desc ($why)"; fi
}

# tcheck DESC: `top' counts session a's learnt addresses as `session show' lists them (unexpired).
tcheck() {
	local n
	n=$("$TF_BUILD/tapfence" --socket "$TF_SOCK" top --once --log "$TF_EVENTS" | awk '$1 == "a" { print $6 }')
	lcheck "$1 ($n)" a 'len(L) == int(a[0])' "$n"
}

# now_s: seconds since the epoch, with fractions; after_s T0 SECS: sleep until T0 + SECS.
now_s() { date +%s.%N; }
after_s() { sleep "$(awk -v t0="$1" -v s="$2" -v now="$(now_s)" 'BEGIN { r = t0 + s - now; if (r < 0) r = 0; printf "%.2f", r }')"; }

# --- phase 1: baseline ------------------------------------------------------------------------

note "phase 1: baseline, nothing enforces"
dns_ok "baseline: A A allowed.example.com" "$ga" $RES_A allowed.example.com A 198.51.100.10
dns_ok "baseline: A AAAA allowed.example.com" "$ga" $RES_A allowed.example.com AAAA 2001:db8:100::10
dns_ok "baseline: A TXT allowed.example.com" "$ga" $RES_A allowed.example.com TXT '"tapfence"'
dns_ok "baseline: A A www.example.org (CNAME)" "$ga" $RES_A www.example.org A 198.51.100.20
check "baseline: www.example.org answer carries the CNAME edge.example.net" grep -qxF edge.example.net. "$T/dig.out"
dns_ok "baseline: A A denied.example.com" "$ga" $RES_A denied.example.com A 203.0.113.10
dns_ok "baseline: A A example.org (apex of *.example.org)" "$ga" $RES_A example.org A 192.0.2.10
dns_ok "baseline: A A rebind.example.com" "$ga" $RES_A rebind.example.com A 10.1.2.3
dns_ok "baseline: A A meta.example.com" "$ga" $RES_A meta.example.com A 169.254.169.254
dns_ok "baseline: A A short.example.com" "$ga" $RES_A short.example.com A 198.51.100.40
dns_ok "baseline: A A ttl.example.org" "$ga" $RES_A ttl.example.org A 198.51.100.60
# The TTLs the guest is given, which phase 2 expects the learnt entries to follow.
for r in short.example.com:2 ttl.example.org:86400 allowed.example.com:300; do
	check "baseline: dnsmasq answers ${r%:*} with TTL ${r#*:}" dig_ttl_is "$ga" $RES_A "${r%:*}" "${r#*:}"
done
dns_ok "baseline: A A allowed.example.com over TCP" "$ga" $RES_A allowed.example.com A 198.51.100.10 +tcp
dns_ok "baseline: B A bee.example.net" "$gb" $RES_B bee.example.net A 203.0.113.20
dns_ok "baseline: B A allowed.example.com" "$gb" $RES_B allowed.example.com A 198.51.100.10
tf_mark
dig_q "$ga" 198.51.100.53 allowed.example.com A
expect_reached "$L_INET" "udp 198.51.100.53:53 from 10.10.1.2:" "baseline: A query to 198.51.100.53 (not its resolver) reached it"

conn_ok "baseline: A tcp 198.51.100.10:443" "$ga" 198.51.100.10 443
conn_ok "baseline: A tcp [2001:db8:100::10]:443" "$ga" 2001:db8:100::10 443
conn_ok "baseline: A tcp 198.51.100.20:443" "$ga" 198.51.100.20 443
conn_ok "baseline: A tcp 198.51.100.30:443" "$ga" 198.51.100.30 443
conn_ok "baseline: A tcp 203.0.113.10:443" "$ga" 203.0.113.10 443
conn_ok "baseline: A tcp 203.0.113.20:443" "$ga" 203.0.113.20 443
conn_ok "baseline: A tcp 10.1.2.3:443" "$ga" 10.1.2.3 443
conn_ok "baseline: A tcp 169.254.169.254:443" "$ga" 169.254.169.254 443
conn_ok "baseline: B tcp 198.51.100.10:443" "$gb" 198.51.100.10 443
conn_ok "baseline: B tcp 203.0.113.20:443" "$gb" 203.0.113.20 443

tf_mark
: >"$T/go.now"
echo_client "$ga" 198.51.100.40 443 "$T/go.now" "$T/echo.out"
if wait "$ECHO_PID"; then pass "baseline: A tcp 198.51.100.40:443 echoes twice"; else fail "baseline: A tcp 198.51.100.40:443 echo: $(tr '\n' ' ' <"$T/echo.out")"; fi
expect_reached "$L_ECHO" "tcp 198.51.100.40:443 from 10.10.1.2:" "baseline: A tcp 198.51.100.40:443 reached the echo server"

spoof_round
check "baseline: forged answer (wrong id) reached guest A's socket" \
	grep -q "id=$Q_BAD_ID qr=1 rcode=0 q=denied.example.com an=A:203.0.113.10 from $RES_A:53" "$Q_LOG"
check "baseline: forged answer (right id, other name) reached guest A's socket" \
	grep -q "id=$Q_ID qr=1 rcode=0 q=denied.example.com an=A:203.0.113.10 from $RES_A:53" "$Q_LOG"
check "baseline: the real answer reached guest A's socket" \
	grep -q "id=$Q_ID qr=1 rcode=0 q=allowed.example.com an=A:198.51.100.10 from $RES_A:53" "$Q_LOG"

if [ -n "${TF_BASELINE_ONLY:-}" ]; then
	tf_done
	exit
fi

# --- phase 2: tapfenced -----------------------------------------------------------------------

note "phase 2: tapfenced with sessions a and b"
ENFORCED=1
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" '"limits":{"dns_ttl_min_s":1,"dns_ttl_max_s":3600}'"${TF_ATTACH_MODE:+,\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"

session_spec "$T/a.json" a ha $A_MAC 10.10.1.2 fd00:a:1::2 $A_GW_MAC $RES_A fd00:a:1::1 '[
	{"host":"allowed.example.com","proto":"tcp","ports":[443],"tls":false},
	{"host":"*.example.org","proto":"tcp","ports":[443],"tls":false},
	{"host":"short.example.com","proto":"tcp","ports":[443],"tls":false},
	{"host":"rebind.example.com","proto":"tcp","ports":[443],"tls":false},
	{"host":"meta.example.com","proto":"tcp","ports":[443],"tls":false}]'
session_spec "$T/b.json" b hb $B_MAC 10.10.2.2 fd00:a:2::2 $B_GW_MAC $RES_B fd00:a:2::1 '[
	{"host":"bee.example.net","proto":"tcp","ports":[443],"tls":false}]'
sessions_add a b || { tf_done; exit 1; }

# Event filters for a new TCP connection from guest A (IPv4, IPv6) and guest B.
A4=(session=a direction=from_guest family=ipv4 proto=tcp)
A6=(session=a direction=from_guest family=ipv6 proto=tcp)
B4=(session=b direction=from_guest family=ipv4 proto=tcp)

note "a name must be asked before its address opens"
conn_denied "A tcp 198.51.100.10:443 before resolving" "$ga" 198.51.100.10 443 \
	"${A4[@]}" dst=198.51.100.10 dport=443 verdict=deny reason=no_rule
lcheck "session a: nothing learnt yet" a 'L == []'
dns_ok "A A allowed.example.com" "$ga" $RES_A allowed.example.com A 198.51.100.10
conn_ok "A tcp 198.51.100.10:443 after resolving" "$ga" 198.51.100.10 443 \
	"${A4[@]}" dst=198.51.100.10 dport=443 verdict=allow reason=allow_learned
lcheck "session a: learnt 198.51.100.10 for allowed.example.com, with a positive ttl_s" a \
	'(e := has("198.51.100.10")) and e["name"] == "allowed.example.com" and
	 e["rule"] == "allowed.example.com" and type(e["ttl_s"]) is int and 0 < e["ttl_s"] <= 300'
conn_denied "A tcp [2001:db8:100::10]:443 before its AAAA was asked" "$ga" 2001:db8:100::10 443 \
	"${A6[@]}" dst=2001:db8:100::10 dport=443 verdict=deny reason=no_rule
dns_ok "A AAAA allowed.example.com" "$ga" $RES_A allowed.example.com AAAA 2001:db8:100::10
conn_ok "A tcp [2001:db8:100::10]:443 after the AAAA" "$ga" 2001:db8:100::10 443 \
	"${A6[@]}" dst=2001:db8:100::10 dport=443 verdict=allow reason=allow_learned
lcheck "session a: learnt 2001:db8:100::10 for allowed.example.com" a \
	'(e := has("2001:db8:100::10")) and e["name"] == "allowed.example.com" and e["ttl_s"] > 0'

note "session b did not ask"
conn_denied "B tcp 198.51.100.10:443 after A learnt it" "$gb" 198.51.100.10 443 \
	"${B4[@]}" dst=198.51.100.10 dport=443 verdict=deny reason=no_rule
lcheck "session b: nothing learnt" b 'L == []'
dns_dropped "B A allowed.example.com (not B's name)" "$gb" $RES_B allowed.example.com A \
	session=b verdict=deny reason=dns_name_denied name=allowed.example.com --
dns_ok "B A bee.example.net" "$gb" $RES_B bee.example.net A 203.0.113.20
conn_ok "B tcp 203.0.113.20:443 after resolving its own name" "$gb" 203.0.113.20 443 \
	"${B4[@]}" dst=203.0.113.20 dport=443 verdict=allow reason=allow_learned
conn_denied "A tcp 203.0.113.20:443 (learnt by B only)" "$ga" 203.0.113.20 443 \
	"${A4[@]}" dst=203.0.113.20 dport=443 verdict=deny reason=no_rule

note "queries no rule allows never reach the resolver"
dns_dropped "A A denied.example.com" "$ga" $RES_A denied.example.com A \
	session=a direction=from_guest verdict=deny reason=dns_name_denied name=denied.example.com --
dns_dropped "A A example.org (the wildcard is strictly below)" "$ga" $RES_A example.org A \
	session=a direction=from_guest verdict=deny reason=dns_name_denied name=example.org --
dns_dropped "A TXT allowed.example.com" "$ga" $RES_A allowed.example.com TXT \
	session=a direction=from_guest verdict=deny reason=dns_qtype --
conn_denied "A tcp 203.0.113.10:443 (denied.example.com)" "$ga" 203.0.113.10 443 \
	"${A4[@]}" dst=203.0.113.10 dport=443 verdict=deny reason=no_rule
dns_dropped "A A allowed.example.com over TCP" "$ga" $RES_A allowed.example.com A \
	session=a direction=from_guest verdict=deny reason=dns_tcp proto=tcp dst=$RES_A dport=53 -- +tcp
tf_mark
if dig_q "$ga" 198.51.100.53 allowed.example.com A && [ -s "$T/dig.out" ]; then
	fail "A query to 198.51.100.53: the guest got an answer"
	dig_note
else
	pass "A query to 198.51.100.53: the guest got no answer"
fi
expect_not_reached "$L_INET" "udp 198.51.100.53:53 from 10.10.1.2:" "A query to 198.51.100.53: did not reach it"
expect_event session=a direction=from_guest verdict=deny reason=dns_not_resolver proto=udp \
	dst=198.51.100.53 dport=53 -- "A query to 198.51.100.53: event dns_not_resolver"

note "CNAME chain"
dns_ok "A A www.example.org" "$ga" $RES_A www.example.org A 198.51.100.20
check "A www.example.org answer carries the CNAME edge.example.net" grep -qxF edge.example.net. "$T/dig.out"
conn_ok "A tcp 198.51.100.20:443 (www.example.org -> edge.example.net)" "$ga" 198.51.100.20 443 \
	"${A4[@]}" dst=198.51.100.20 dport=443 verdict=allow reason=allow_learned
lcheck "session a: learnt 198.51.100.20 for www.example.org under *.example.org" a \
	'(e := has("198.51.100.20")) and e["name"] == "www.example.org" and e["rule"] == "*.example.org" and e["ttl_s"] > 0'
conn_denied "A tcp 198.51.100.30:443 (nobody resolved it)" "$ga" 198.51.100.30 443 \
	"${A4[@]}" dst=198.51.100.30 dport=443 verdict=deny reason=no_rule

note "TTL clamp"
dns_ok "A A ttl.example.org (TTL 86400)" "$ga" $RES_A ttl.example.org A 198.51.100.60
lcheck "session a: 198.51.100.60 learnt with ttl_s clamped to dns_ttl_max_s 3600" a \
	'(e := has("198.51.100.60")) and 3500 < e["ttl_s"] <= 3600'

note "rebinding answers are not learnt"
for r in rebind.example.com:10.1.2.3:floor_private meta.example.com:169.254.169.254:floor_metadata; do
	IFS=: read -r name addr floor <<<"$r"
	tf_mark
	dig_q "$ga" $RES_A "$name" A
	note "A A $name: dig said: $(tr '\n' ' ' <"$T/dig.out")"
	expect_reached "$DNS_LOG" "query[A] $name from 10.10.1.2" "A A $name: the query (a name A may ask) reached dnsmasq"
	expect_event session=a direction=to_guest reason=dns_rebind -- "A A $name: event dns_rebind"
	lcheck "session a: $addr ($name) not learnt" a 'has(a[0]) is None' "$addr"
	conn_denied "A tcp $addr:443 after resolving $name" "$ga" "$addr" 443 \
		"${A4[@]}" dst="$addr" dport=443 verdict=deny
	note "  its reason: $(grep -o '"reason":"[a-z_]*"' "$T/event.out" | head -n 1) (the floor, $floor, denies it anyway)"
done

note "forged answers are not learnt"
spoof_round
check_not "forged answer (wrong id) did not reach guest A's socket" grep -q "id=$Q_BAD_ID" "$Q_LOG"
check_not "forged answer (right id, other name) did not reach guest A's socket" \
	grep -q "q=denied.example.com" "$Q_LOG"
check "the real answer still reached guest A's socket after the forgeries" \
	grep -q "id=$Q_ID qr=1 rcode=0 q=allowed.example.com an=A:198.51.100.10 from $RES_A:53" "$Q_LOG"
lcheck "session a: 203.0.113.10 (forged) not learnt" a 'has("203.0.113.10") is None'
conn_denied "A tcp 203.0.113.10:443 after the forged answers" "$ga" 203.0.113.10 443 \
	"${A4[@]}" dst=203.0.113.10 dport=443 verdict=deny reason=no_rule

note "TTL expiry: new connections stop, an open one goes on"
rm -f "$T/go.short"
dns_ok "A A short.example.com (TTL 2 s)" "$ga" $RES_A short.example.com A 198.51.100.40
t0=$(now_s)
tf_mark
echo_client "$ga" 198.51.100.40 443 "$T/go.short" "$T/echo.out"
ECHO_LONG=$ECHO_PID
if wait_for 2 grep -q '^echo 1 ok' "$T/echo.out"; then
	pass "A tcp 198.51.100.40:443 within the TTL: connected, first echo"
else
	fail "A tcp 198.51.100.40:443 within the TTL: $(tr '\n' ' ' <"$T/echo.out")"
fi
expect_event "${A4[@]}" dst=198.51.100.40 dport=443 verdict=allow reason=allow_learned \
	-- "A tcp 198.51.100.40:443 within the TTL: event allow_learned"
lcheck "session a: learnt 198.51.100.40 for short.example.com with ttl_s <= 2" a \
	'(e := has("198.51.100.40")) and e["name"] == "short.example.com" and 0 <= e["ttl_s"] <= 2'
tcheck "top: session a's LEARNT is what session show lists"
after_s "$t0" 3.5
lcheck "session a: 198.51.100.40 gone once its TTL expired" a 'has("198.51.100.40") is None'
tcheck "top: session a's LEARNT leaves the expired 198.51.100.40 out"
tf_mark
: >"$T/go.now"
echo_client "$ga" 198.51.100.40 443 "$T/go.now" "$T/echo2.out"
if wait "$ECHO_PID"; then
	fail "A new tcp 198.51.100.40:443 after the TTL: connected ($(tr '\n' ' ' <"$T/echo2.out"))"
else
	pass "A new tcp 198.51.100.40:443 after the TTL: refused ($(head -n 1 "$T/echo2.out"))"
fi
expect_not_reached "$L_ECHO" "tcp 198.51.100.40:443 from 10.10.1.2:" \
	"A new tcp 198.51.100.40:443 after the TTL: did not reach the echo server"
expect_event "${A4[@]}" dst=198.51.100.40 dport=443 verdict=deny reason=no_rule \
	-- "A new tcp 198.51.100.40:443 after the TTL: event no_rule"
: >"$T/go.short"
if wait "$ECHO_LONG"; then
	pass "A's connection opened before the expiry still echoes after it"
else
	fail "A's connection opened before the expiry: $(tr '\n' ' ' <"$T/echo.out")"
fi

note "rule del ends what the rule learnt"
rule='{"host":"allowed.example.com","proto":"tcp","ports":[443],"tls":false}'
check "rule del a $rule" tfc rule del a "$rule"
conn_denied "A tcp 198.51.100.10:443 after rule del" "$ga" 198.51.100.10 443 \
	"${A4[@]}" dst=198.51.100.10 dport=443 verdict=deny
note "  its reason: $(grep -o '"reason":"[a-z_]*"' "$T/event.out" | head -n 1)"
conn_denied "A tcp [2001:db8:100::10]:443 after rule del" "$ga" 2001:db8:100::10 443 \
	"${A6[@]}" dst=2001:db8:100::10 dport=443 verdict=deny
lcheck "session a: allowed.example.com's addresses gone after rule del" a \
	'has("198.51.100.10") is None and has("2001:db8:100::10") is None'
conn_ok "A tcp 198.51.100.20:443 (another rule's learnt address) after rule del" "$ga" 198.51.100.20 443 \
	"${A4[@]}" dst=198.51.100.20 dport=443 verdict=allow reason=allow_learned
dns_dropped "A A allowed.example.com after rule del" "$ga" $RES_A allowed.example.com A \
	session=a verdict=deny reason=dns_name_denied name=allowed.example.com --

# A negative check means something only while the listener behind it is alive.
check "inet listener still running" kill -0 "$PID_INET"
check "echo server still running" kill -0 "$PID_ECHO"
check "dnsmasq still running" kill -0 "$DNS_PID"
check "tapfenced still running" kill -0 "$TFD_PID"

tf_unmark "$TF_EVENTS"
expect_event_schema "event log: every line is JSON with the common keys"
expect_no_event reason=allow_flow -- "event log: no allow_flow events"

tfd_log_tail 5
tf_done
