#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that on TLS ports no byte reaches a real server unless the ClientHello names a host rule's name, and, for a learnt address, the name it was learnt for.
#
#  ┌──────────────────────────────────────────────┐
#  │ $ga (the guest)  ga 10.10.1.2/24 fd00:a:1::2 │
#  │ curl (by name: resolv.conf -> 10.10.1.1),    │
#  │ openssl s_client, python UDP                 │
#  └──────────────────────┬───────────────────────┘
#                         │ veth
#  ┌──────────────────────┴───────────────────────────────────────────────┐
#  │ $host  (router; tapfenced attaches to ha: session s)                 │
#  │ ha 10.10.1.1/24 fd00:a:1::1; dnsmasq on 10.10.1.1:53 only (the       │
#  │   session's resolver), no upstream, static records, query log        │
#  │ hi 10.99.0.1/30 fd00:99::1  routes 203.0.113/24 198.51.100/24        │
#  │                             2001:db8::/32                            │
#  └──────────────────────────────────┬───────────────────────────────────┘
#                                     │ veth
#  ┌──────────────────────────────────┴───────────────────────────────────┐
#  │ $inet  ii 10.99.0.2/30 fd00:99::2; on lo, one tlsserver.py (cert by  │
#  │ SNI; logs connections, first bytes, SNI, request lines, UDP, and     │
#  │ the IPv4 TCP segments arriving on ii):                               │
#  │   A 203.0.113.10:443  allowed.test + forbidden.test (one address)    │
#  │     + udp 203.0.113.10:443 (QUIC's port)                             │
#  │   A6 [2001:db8:113::10]:443  the same, over IPv6                     │
#  │   B 203.0.113.20:443  cdn2.test (and allowed.test)                   │
#  │   C 198.51.100.30:8443 api.test, forbidden.test, allowed.test        │
#  │   D 203.0.113.40:443  hrr.test, in a second tlsserver.py whose only  │
#  │     group is P-256: an X25519 key share gets a HelloRetryRequest     │
#  │ routes back to 10.10/16 (advmss 256 in the small-MSS part) and       │
#  │ fd00:a::/32 via $host                                                │
#  └──────────────────────────────────────────────────────────────────────┘
#
# dnsmasq: allowed.test A 203.0.113.10 AAAA 2001:db8:113::10; forbidden.test A 203.0.113.10;
# cdn2.test A 203.0.113.20; hrr.test A 203.0.113.40 (TTL 300 s).
# Certificates: a throwaway CA and one certificate per name, made with openssl in $T; curl checks
# them (--cacert), so a reply also proves which name the server answered as.
# Session s allows {"host":"allowed.test","proto":"any","ports":[443]} (TCP and UDP: UDP to a TLS
# port is refused as tls_udp, not as port_not_allowed), {"host":"cdn2.test","proto":"tcp",
# "ports":[443]}, {"host":"hrr.test","proto":"tcp","ports":[443]}, {"host":"api.test","proto":"tcp","ports":[8443]} and {"cidr":"198.51.100.0/24",
# "proto":"tcp","ports":[8443],"tls":true}; no rule names forbidden.test.
#
# Each probe leaves from its own local port ($LPORT, counted up), so the server's log lines and the
# feed's events are tied to the probe that caused them. Phase 1 (baseline, nothing enforces): every
# probe reaches the server and is logged there (its SNI, its bytes, its request), so the negative
# checks of phase 2 cannot pass because a probe was broken. Phase 2: tapfenced with session s.
# The small-MSS part makes the server advertise MSS 256 and the guest's stack hand the veth one
# segment per skb (gso_max_segs 1; otherwise one GSO skb carries the whole hello past tapfence, as
# a VM's virtio-net could), and checks on the server's capture that the hello arrived in several
# segments. TF_TLS_PARALLEL=N adds N concurrent small-MSS requests there: more than a session's hello
# buffers (limits.tls_pending, 16) checks that a handshake finding them all taken is delayed, not
# refused. TF_BASELINE_ONLY=1 stops after phase 1. TF_KEEP=1 keeps $T for inspection.
# TF_ATTACH_MODE=tc|xdp sets the daemon's attach_mode.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX inet=tf-inet-$TF_SFX

tf_need dnsmasq openssl curl

G=10.10.1.2 G6=fd00:a:1::2 RES=10.10.1.1
A=203.0.113.10 A6=2001:db8:113::10 B=203.0.113.20 C=198.51.100.30 D=203.0.113.40
G_MAC=02:00:00:00:0a:02 GW_MAC=02:00:00:00:0a:01

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$ga" "$inet"
setup ns_router "$host"
setup guest_link "$ga" ga $G_MAC $G/24 $G6/64 "$host" ha $GW_MAC $RES/24 fd00:a:1::1/64
setup inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 203.0.113.0/24 198.51.100.0/24 2001:db8::/32 -- \
	$A $A6 $B $C $D

# --- certificates, resolver, server ------------------------------------------------------------

setup tls_certs "$T" allowed.test forbidden.test cdn2.test api.test hrr.test
echo "nameserver $RES" >"$T/resolv.conf"

DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$host" "$DNS_LOG" "$RES" --local=/test/ --host-record=allowed.test,$A,$A6,300 \
	--host-record=forbidden.test,$A,300 --host-record=cdn2.test,$B,300 \
	--host-record=hrr.test,$D,300

SLOG=$T/tlsserver.log
certs=()
for name in allowed.test forbidden.test cdn2.test api.test; do
	certs+=(--cert "$name:$T/$name.pem:$T/$name.key")
done
tlsserver_start "$inet" "$SLOG" "${certs[@]}" --tcp $A:443 --tcp "[$A6]:443" --tcp $B:443 --tcp $C:8443 \
	--udp $A:443 --capture ii
SERVER_PID=$TLSSERVER_PID
HLOG=$T/hrrserver.log
tlsserver_start "$inet" "$HLOG" --cert "hrr.test:$T/hrr.test.pem:$T/hrr.test.key" --groups prime256v1 \
	--tcp $D:443 --capture ii
HRR_PID=$TLSSERVER_PID

# --- probes -----------------------------------------------------------------------------------

ENFORCED=0 # set in phase 2: probes then also expect their events
SID=s
CURL_MAX=4 # seconds a refused curl waits; a retransmitted hello is long judged by then
LPORT=41000

# g CMD...: CMD in the guest, resolving through the session's resolver.
g() { n_resolv "$ga" "$T/resolv.conf" "$@"; }

# hp ADDR PORT: how the server's log writes an address and port.
hp() { case $1 in *:*) echo "[$1]:$2" ;; *) echo "$1:$2" ;; esac; }

# next_port [ADDR]: the next probe's local port ($LPORT), and its text in the server's log ($FROM)
# for a probe to ADDR (IPv6: from the guest's IPv6 address).
next_port() {
	LPORT=$((LPORT + 1))
	case ${1:-} in *:*) FROM="from [$G6]:$LPORT" ;; *) FROM="from $G:$LPORT" ;; esac
}


# https_get FAMILY NAME PORT [ADDR]: curl -FAMILY (4 or 6) https://NAME:PORT/ from the guest, from
# local port $LPORT (call next_port first), by name through the resolver or with --resolve
# NAME:PORT:ADDR; checks the certificate against our CA. curl's exit status; output in $T/client.out.
https_get() {
	local fam=$1 name=$2 port=$3 addr=${4:-} res=()
	case $addr in
	*:*) res=(--resolve "$name:$port:[$addr]") ;;
	?*) res=(--resolve "$name:$port:$addr") ;;
	esac
	g timeout 15 curl -"$fam" -sS --noproxy '*' --cacert "$T/ca.pem" --local-port "$LPORT" \
		--connect-timeout 3 --max-time $CURL_MAX "${res[@]}" "https://$name:$port/" >"$T/client.out" 2>&1
}

# Event filter: the guest's TCP probe from $LPORT to DST:DPORT.
probe_filter() {
	case $1 in
	*:*) echo "session=$SID direction=from_guest family=ipv6 proto=tcp src=$G6 sport=$LPORT dst=$1 dport=$2" ;;
	*) echo "session=$SID direction=from_guest family=ipv4 proto=tcp src=$G sport=$LPORT dst=$1 dport=$2" ;;
	esac
}

# tls_ok DESC NAME ADDR PORT BY [SYN_REASON]: the request for https://NAME:PORT/ (BY: "name" through
# the resolver, or "resolve" to ADDR) completes: curl exits 0 with the reply of the server at
# ADDR:PORT for NAME, the server logged the SNI and the request line, and (phase 2) the feed has
# the SYN allowed as SYN_REASON and allow_tls naming NAME.
tls_ok() {
	local desc=$1 name=$2 addr=$3 port=$4 by=$5 syn=${6:-} rc=0 f to fam=4
	to=$(hp "$addr" "$port")
	case $addr in *:*) fam=6 ;; esac
	next_port "$addr"
	tf_mark
	if [ "$by" = name ]; then https_get $fam "$name" "$port" || rc=$?; else https_get $fam "$name" "$port" "$addr" || rc=$?; fi
	if [ $rc = 0 ] && grep -qxF "tlsserver $name $to" "$T/client.out"; then
		pass "$desc: curl exited 0 with the reply of $name at $to"
	else
		fail "$desc: curl exited $rc without the reply of $name at $to"
		probe_note
	fi
	expect_reached "$SLOG" "sni $to $FROM $name" "$desc: the server saw SNI $name"
	expect_reached "$SLOG" "request $to $FROM sni $name line GET / HTTP/1.1 host $name" \
		"$desc: the server got the request"
	if [ $ENFORCED = 1 ]; then
		read -ra f <<<"$(probe_filter "$addr" "$port")"
		expect_event "${f[@]}" verdict=allow reason="$syn" -- "$desc: event $syn (the SYN)"
		expect_event "${f[@]}" verdict=allow reason=allow_tls name="$name" -- "$desc: event allow_tls name=$name"
	fi
	return 0
}

# tls_refused DESC NAME ADDR PORT BY SYN_REASON REASON: the connection opens (the SYN passes as
# SYN_REASON and the server accepts it) but curl fails, no byte of the hello reached the server (no
# first bytes, no SNI, no request logged), the feed has REASON naming NAME and no allow_tls.
tls_refused() {
	local desc=$1 name=$2 addr=$3 port=$4 by=$5 syn=$6 reason=$7 rc=0 f to fam=4
	to=$(hp "$addr" "$port")
	case $addr in *:*) fam=6 ;; esac
	next_port "$addr"
	tf_mark
	if [ "$by" = name ]; then https_get $fam "$name" "$port" || rc=$?; else https_get $fam "$name" "$port" "$addr" || rc=$?; fi
	if [ $rc != 0 ] && ! grep -q '^tlsserver' "$T/client.out"; then
		pass "$desc: curl failed (exit $rc: $(head -n 1 "$T/client.out"))"
	else
		fail "$desc: curl exited $rc"
		probe_note
	fi
	expect_reached "$SLOG" "conn $to $FROM" "$desc: the TCP connection reached the server"
	expect_not_reached "$SLOG" "data $to $FROM" "$desc: no byte reached the server"
	expect_not_reached "$SLOG" "sni $to $FROM" "$desc: the server never saw the SNI"
	expect_not_reached "$SLOG" "request $to $FROM" "$desc: the server got no request"
	read -ra f <<<"$(probe_filter "$addr" "$port")"
	expect_event "${f[@]}" verdict=allow reason="$syn" -- "$desc: event $syn (the SYN)"
	expect_event "${f[@]}" verdict=deny reason="$reason" name="$name" -- "$desc: event $reason name=$name"
	expect_no_event "${f[@]}" reason=allow_tls -- "$desc: no allow_tls"
}

# sclient_nosni: openssl s_client to A:443 without SNI (-noservername), from $LPORT.
sclient_nosni() {
	next_port
	g timeout $CURL_MAX openssl s_client -connect $A:443 -bind $G:$LPORT -noservername \
		-CAfile "$T/ca.pem" </dev/null >"$T/client.out" 2>&1
}

# plain_http: curl http://allowed.test:443/ (by name): bytes that are not TLS, to a TLS port.
plain_http() {
	next_port
	g timeout 15 curl -4 -sS --noproxy '*' --local-port "$LPORT" --connect-timeout 3 --max-time $CURL_MAX \
		http://allowed.test:443/ >"$T/client.out" 2>&1
}

# udp_443: one datagram (12 bytes) to A:443/udp from $LPORT, as a QUIC client would start.
udp_443() {
	next_port
	g "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.sendto(b"quic-initial", (sys.argv[3], 443))' $G $LPORT $A >"$T/client.out" 2>&1
}

# mss_small on|off: the server advertises MSS 256 to the guest (its route back, advmss), and the
# guest's TCP builds one segment per skb (gso_max_segs 1), so the hello crosses tapfence in pieces.
mss_small() {
	if [ "$1" = on ]; then
		ip -n "$inet" route change 10.10.0.0/16 via 10.99.0.1 dev ii advmss 256 &&
			ip -n "$ga" link set ga gso_max_segs 1
	else
		ip -n "$inet" route change 10.10.0.0/16 via 10.99.0.1 dev ii &&
			ip -n "$ga" link set ga gso_max_segs 65535
	fi
}

# hello_split DESC ADDR:PORT: the server's capture shows the hello of the last probe ($FROM) in at
# least two TCP segments (distinct offsets below the hello's end), none over 256 bytes of payload.
hello_split() {
	local desc=$1 to=$2 why
	if why=$(since "$SLOG" | "$PY" -c '
import sys
key, hello, offs, big = sys.argv[1], None, set(), 0
for line in sys.stdin:
    if not line.startswith(key):
        continue
    w = line.split()
    off, ln = int(w[w.index("off") + 1]), int(w[w.index("len") + 1])
    if "hello" in w:
        hello = int(w[w.index("hello") + 1])
    offs.add((off, ln))
    big = max(big, ln)
if hello is None:
    print("no segment at offset 0 captured"); sys.exit(1)
pieces = sorted(o for o in offs if o[0] < hello)
msg = f"hello {hello} bytes in segments (offset, length) {pieces}, largest payload {big}"
print(msg)
sys.exit(0 if len({o for o, _ in pieces}) >= 2 and big <= 256 else 1)
' "seg $to $FROM "); then
		pass "$desc: $why"
	else
		fail "$desc: $why"
	fi
}

# counter REASON: session $SID's counter for REASON (0 if none); empty if session show failed.
counter() {
	tfc --json session show $SID 2>/dev/null |
		"$PY" -c 'import json, sys; print(json.load(sys.stdin)["session"]["counters"].get(sys.argv[1], 0))' "$1"
}

# pending_mark, then pending_grew DESC: tls_pending, which counts each held piece of a hello (these
# denies are counted, not reported in the feed), grew by at least 2 in between: the first two of
# the hello's three segments were held before the third completed it.
pending_mark() { PENDING0=$(counter tls_pending); }
pending_grew() {
	local now
	now=$(counter tls_pending)
	if [ -n "$now" ] && [ -n "$PENDING0" ] && [ $((now - PENDING0)) -ge 2 ]; then
		pass "$1: tapfence held $((now - PENDING0)) pieces of the hello (counter tls_pending $PENDING0 -> $now)"
	else
		fail "$1: counter tls_pending went from '$PENDING0' to '$now', not up by 2 or more"
	fi
}

# reached_re LOG ERE DESC / not_reached_re LOG ERE DESC: like expect_reached / expect_not_reached,
# for an extended regular expression.
reached_re() {
	if wait_for 2 sh -c 'tail -c +"$1" "$2" | grep -qE -- "$3"' _ $((${tf_mark_at[$1]:-0} + 1)) "$1" "$2"; then
		pass "$3"
	else
		fail "$3 (no /$2/ in $(basename "$1"))"
	fi
}
not_reached_re() {
	sleep 0.3
	if since "$1" | grep -qE -- "$2"; then
		fail "$3 (logged: $(since "$1" | grep -E -- "$2" | head -n 1))"
	else
		pass "$3"
	fi
}

# hrr_ok DESC: curl https://hrr.test/ by name offering X25519 first; D's server has P-256 only, so
# it answers the first ClientHello with a HelloRetryRequest and the client sends a second one on
# the same connection. The request completes, D's capture shows both hellos naming hrr.test, and
# (phase 2) both were allowed (allow_tls twice).
hrr_ok() {
	local desc=$1 rc=0 f
	next_port
	tf_mark
	g timeout 15 curl -4 -sS --noproxy '*' --cacert "$T/ca.pem" --local-port "$LPORT" --connect-timeout 3 \
		--max-time $CURL_MAX --curves X25519:P-256 https://hrr.test/ >"$T/client.out" 2>&1 || rc=$?
	if [ $rc = 0 ] && grep -qxF "tlsserver hrr.test $D:443" "$T/client.out"; then
		pass "$desc: curl exited 0 with the reply of hrr.test at $D:443"
	else
		fail "$desc: curl exited $rc without the reply of hrr.test"
		probe_note
	fi
	expect_reached "$HLOG" "hello-sni $D:443 $FROM off 0 hrr.test" "$desc: the first hello reached the server"
	reached_re "$HLOG" "hello-sni $D:443 $FROM off [1-9][0-9]* hrr.test" \
		"$desc: a second hello (after the HelloRetryRequest) reached it"
	expect_reached "$HLOG" "request $D:443 $FROM sni hrr.test line GET / HTTP/1.1 host hrr.test" \
		"$desc: the server got the request"
	if [ $ENFORCED = 1 ]; then
		read -ra f <<<"$(probe_filter $D 443)"
		expect_event "${f[@]}" verdict=allow reason=allow_tls name=hrr.test -- "$desc: event allow_tls"
		if [ "$(events_match "$TF_EVENTS" "${tf_mark_at[$TF_EVENTS]:-0}" 1 1 "${f[@]}" \
			reason=allow_tls | wc -l)" = 2 ]; then
			pass "$desc: two allow_tls events: the second hello was judged too"
		else
			fail "$desc: not two allow_tls events"
			events_since_mark
		fi
	fi
}

# second_hello: tlsclient.py second: an allowed hello for allowed.test to $A:443, the server's
# first flight read, then a second ClientHello naming forbidden.test on the same connection.
second_hello() {
	next_port
	g timeout 15 "$PY" "$TF_NETNS_DIR/tlsclient.py" second $A 443 --sni allowed.test --second forbidden.test \
		--cafile "$T/ca.pem" --bind $G:$LPORT --timeout 3 >"$T/client.out" 2>&1
}

# trickle: tlsclient.py trickle: a real handshake for allowed.test to $A:443 whose hello's first
# 120 bytes go one byte per TCP segment, 3 ms apart, then the rest, then a GET, from $LPORT (call
# next_port first: it may run in the background, in a subshell).
trickle() {
	g timeout 20 "$PY" "$TF_NETNS_DIR/tlsclient.py" trickle $A 443 --sni allowed.test \
		--cafile "$T/ca.pem" --bind $G:$LPORT --timeout 8 >"$T/client.out" 2>&1
}

# --- phase 1: baseline ------------------------------------------------------------------------

note "phase 1: baseline, nothing enforces"
tls_ok "baseline: https://allowed.test/ by name" allowed.test $A 443 name
expect_reached "$DNS_LOG" "query[A] allowed.test from $G" "baseline: the guest's query reached dnsmasq"
tls_ok "baseline: https://forbidden.test/ at $A" forbidden.test $A 443 resolve
tls_ok "baseline: https://cdn2.test/ by name" cdn2.test $B 443 name
tls_ok "baseline: https://allowed.test/ at $B (cdn2.test's address)" allowed.test $B 443 resolve
tls_ok "baseline: https://allowed.test/ over IPv6, by name" allowed.test $A6 443 name
tls_ok "baseline: https://forbidden.test/ at $A6" forbidden.test $A6 443 resolve

tf_mark
sclient_nosni
expect_reached "$SLOG" "sni $A:443 $FROM -" "baseline: s_client -noservername: the server saw a hello without SNI"
tf_mark
plain_http
expect_reached "$SLOG" "data $A:443 $FROM first 474554" "baseline: plain HTTP to $A:443: the server got \"GET\""
tf_mark
udp_443
expect_reached "$SLOG" "udp $A:443 $FROM len 12" "baseline: UDP to $A:443 reached the UDP listener"

tls_ok "baseline: https://api.test:8443/ at $C" api.test $C 8443 resolve
tls_ok "baseline: https://forbidden.test:8443/ at $C" forbidden.test $C 8443 resolve
tls_ok "baseline: https://allowed.test:8443/ at $C" allowed.test $C 8443 resolve

note "baseline: small MSS"
setup mss_small on
tls_ok "baseline, MSS 256: https://allowed.test/ by name" allowed.test $A 443 name
hello_split "baseline, MSS 256: allowed.test's hello" $A:443
tls_ok "baseline, MSS 256: https://forbidden.test/ at $A" forbidden.test $A 443 resolve
hello_split "baseline, MSS 256: forbidden.test's hello" $A:443
setup mss_small off

note "baseline: a second ClientHello"
hrr_ok "baseline: HelloRetryRequest"
tf_mark
if second_hello; then pass "baseline: the second hello got an answer"; else fail "baseline: second hello: $(tail -n 1 "$T/client.out")"; fi
reached_re "$SLOG" "hello-sni $A:443 $FROM off [1-9][0-9]* forbidden.test" \
	"baseline: a second hello naming forbidden.test on an allowed connection reached the server"
note "baseline: a hello trickled one byte per segment"
tf_mark
next_port
if trickle; then pass "baseline: trickled hello: $(head -n 1 "$T/client.out")"; else fail "baseline: trickled hello: $(tail -n 2 "$T/client.out")"; fi
expect_reached "$SLOG" "request $A:443 $FROM sni allowed.test" "baseline: trickled hello: the server got the request"

if [ -n "${TF_BASELINE_ONLY:-}" ]; then
	tf_done
	exit
fi

# --- phase 2: tapfenced -----------------------------------------------------------------------

note "phase 2: tapfenced with session s"
ENFORCED=1
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json" "${TF_ATTACH_MODE:+\"attach_mode\":\"$TF_ATTACH_MODE\"}"
tfd_start "$host"
session_spec "$T/s.json" $SID ha $G_MAC $G fd00:a:1::2 $GW_MAC $RES fd00:a:1::1 '[
	{"host":"allowed.test","proto":"any","ports":[443]},
	{"host":"cdn2.test","proto":"tcp","ports":[443]},
	{"host":"hrr.test","proto":"tcp","ports":[443]},
	{"host":"api.test","proto":"tcp","ports":[8443]},
	{"cidr":"198.51.100.0/24","proto":"tcp","ports":[8443],"tls":true}]'
if tfc session add "$T/s.json" >"$T/cli.out" 2>&1; then
	pass "session add $SID"
else
	fail "session add $SID: $(head -n 2 "$T/cli.out")"
	tf_done
	exit 1
fi
note "session $SID attached as: $(tfc --json session show $SID 2>&1 | tfjson get session.attach 2>&1)"
SLOG_PHASE2=$(stat -c %s "$SLOG")

note "a host rule's name, to the address learnt for it"
tls_ok "https://allowed.test/ by name" allowed.test $A 443 name allow_learned
expect_reached "$DNS_LOG" "query[A] allowed.test from $G" "allowed.test: the guest's query reached dnsmasq"
expect_event session=$SID verdict=allow reason=allow_dns name=allowed.test -- "allowed.test: event allow_dns"

note "a name no rule allows, on the same address"
tls_refused "https://forbidden.test/ at $A (learnt for allowed.test)" forbidden.test $A 443 resolve \
	allow_learned tls_sni_denied

note "an allowed name, to an address learnt for another name"
tls_ok "https://cdn2.test/ by name" cdn2.test $B 443 name allow_learned
tls_refused "https://allowed.test/ at $B (learnt for cdn2.test)" allowed.test $B 443 resolve \
	allow_learned tls_sni_mismatch

note "IPv6"
tls_ok "https://allowed.test/ over IPv6, by name" allowed.test $A6 443 name allow_learned
expect_event session=$SID verdict=allow reason=allow_dns name=allowed.test -- "allowed.test over IPv6: event allow_dns"
tls_refused "https://forbidden.test/ at $A6 (learnt for allowed.test)" forbidden.test $A6 443 resolve \
	allow_learned tls_sni_denied

note "no SNI, not TLS, UDP"
# raw_refused DESC REASON CLIENT: CLIENT (a function sending from $LPORT to $A:443) fails; its
# connection reaches the server, none of its bytes do, and the feed has REASON.
raw_refused() {
	local desc=$1 reason=$2 f
	tf_mark
	if "$3"; then fail "$desc: the client got through"; else pass "$desc: the client failed"; fi
	read -ra f <<<"$(probe_filter $A 443)"
	expect_reached "$SLOG" "conn $A:443 $FROM" "$desc: the TCP connection reached the server"
	expect_not_reached "$SLOG" "data $A:443 $FROM" "$desc: no byte reached the server"
	expect_event "${f[@]}" verdict=deny reason="$reason" -- "$desc: event $reason"
}
raw_refused "s_client -noservername to $A:443" tls_no_sni sclient_nosni
raw_refused "plain HTTP to $A:443" tls_not_tls plain_http

tf_mark
udp_443
expect_not_reached "$SLOG" "udp $A:443 $FROM" "UDP to $A:443 (allowed.test allows udp/443): did not reach the UDP listener"
expect_event session=$SID direction=from_guest proto=udp src=$G sport=$LPORT dst=$A dport=443 \
	verdict=deny reason=tls_udp -- "UDP to $A:443: event tls_udp"

note "a CIDR rule with \"tls\": true"
tls_ok "https://api.test:8443/ at $C" api.test $C 8443 resolve allow_rule
tls_refused "https://forbidden.test:8443/ at $C" forbidden.test $C 8443 resolve allow_rule tls_sni_denied
tls_refused "https://allowed.test:8443/ at $C (allowed.test's rule is for 443)" allowed.test $C 8443 resolve \
	allow_rule tls_sni_denied

note "small MSS: the hello in several segments"
setup mss_small on
pending_mark
tls_ok "MSS 256: https://allowed.test/ by name" allowed.test $A 443 name allow_learned
hello_split "MSS 256: allowed.test's hello" $A:443
pending_grew "MSS 256: allowed.test"
pending_mark
tls_refused "MSS 256: https://forbidden.test/ at $A" forbidden.test $A 443 resolve allow_learned tls_sni_denied
pending_grew "MSS 256: forbidden.test"
if [ -n "${TF_TLS_PARALLEL:-}" ]; then
	# Opt-in: more handshakes at once than a session has hello buffers (limits.tls_pending, 16).
	note "$TF_TLS_PARALLEL concurrent requests for https://allowed.test/, MSS 256"
	pids=()
	table_full0=$(counter tls_table_full)
	for ((i = 1; i <= TF_TLS_PARALLEL; i++)); do
		# n_resolv's command, run directly: $! is then the client's PID, not a subshell's.
		# shellcheck disable=SC2016 # expanded by sh -c
		ip netns exec "$ga" /bin/sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$T/resolv.conf" \
			timeout 20 curl -4 -sS --noproxy '*' --cacert "$T/ca.pem" --local-port $((43000 + i)) \
			--max-time 15 https://allowed.test/ >"$T/par.$i" 2>&1 &
		pids+=($!)
		defer kill_pid $!
	done
	par_ok=0
	for p in "${pids[@]}"; do wait "$p" && par_ok=$((par_ok + 1)); done
	if [ $par_ok = "$TF_TLS_PARALLEL" ]; then
		pass "$TF_TLS_PARALLEL concurrent requests: all completed"
	else
		fail "$TF_TLS_PARALLEL concurrent requests: $par_ok completed (tls_table_full $table_full0 -> $(counter tls_table_full), tls_reassembly $(counter tls_reassembly); $(cat "$T"/par.* | grep -m1 curl:))"
	fi
fi
setup mss_small off

note "a second ClientHello"
hrr_ok "HelloRetryRequest"
tf_mark
if second_hello; then fail "second hello naming forbidden.test: it got an answer"; else pass "second hello naming forbidden.test: no answer"; fi
not_reached_re "$SLOG" "hello-sni $A:443 $FROM .*forbidden.test" \
	"second hello naming forbidden.test on an allowed connection: never reached the server"
read -ra f <<<"$(probe_filter $A 443)"
expect_event "${f[@]}" verdict=allow reason=allow_tls name=allowed.test -- "second hello: the first was allowed"
expect_event "${f[@]}" verdict=deny reason=tls_second_hello name=forbidden.test -- \
	"second hello: event tls_second_hello name=forbidden.test"

note "a hello trickled one byte per segment"
# The guest's TCP sends 10 one-byte segments (its initial window), all held; then only resends
# from the first byte after retransmission timeouts: refused at the second (tls_fragmented).
tf_mark
next_port
read -ra f <<<"$(probe_filter $A 443)"
trickle_seen() { events_match "$TF_EVENTS" "${tf_mark_at[$TF_EVENTS]:-0}" 0 1 "${f[@]}" "$@" >/dev/null; }
trickle_t0=$(date +%s%N)
trickle &
trickle_pid=$!
if wait_for 6 trickle_seen verdict=deny reason=tls_fragmented; then
	pass "trickled hello: refused with an event (tls_fragmented) $(( ($(date +%s%N) - trickle_t0) / 1000000 )) ms after it started, not a silent hang"
else
	fail "trickled hello: no tls_fragmented event within 6 s"
	events_since_mark
fi
if wait "$trickle_pid"; then fail "trickled hello: the client got a reply"; else pass "trickled hello: the client failed ($(tail -n 1 "$T/client.out"))"; fi
expect_not_reached "$SLOG" "data $A:443 $FROM" "trickled hello: no byte of it reached the server"
expect_no_event "${f[@]}" reason=allow_tls -- "trickled hello: no allow_tls"

note "the whole of phase 2"
tf_mark_at[$SLOG]=$SLOG_PHASE2
expect_not_reached "$SLOG" " forbidden.test" "the server never saw forbidden.test (SNI or request) under tapfence"
counters_ok() {
	tfc --json session show $SID >"$T/show.json" 2>&1 || return 1
	"$PY" -c '
import json, sys
c = json.load(open(sys.argv[1]))["session"]["counters"]
want = sys.argv[2:]
print("# counters: " + " ".join(f"{k}={v}" for k, v in sorted(c.items()) if "tls" in k))
missing = [k for k in want if not c.get(k)]
if missing:
    print("# zero: " + " ".join(missing))
sys.exit(1 if missing else 0)
' "$T/show.json" allow_tls tls_pending tls_sni_denied tls_sni_mismatch tls_no_sni tls_not_tls tls_udp \
	tls_second_hello tls_fragmented
}
check "session show $SID: every TLS reason seen is counted" counters_ok
check "tlsserver still running" kill -0 "$SERVER_PID"
check "the HelloRetryRequest tlsserver still running" kill -0 "$HRR_PID"
check "dnsmasq still running" kill -0 "$DNS_PID"
check "tapfenced still running" kill -0 "$TFD_PID"
tf_unmark "$TF_EVENTS"
expect_event_schema "event log: every line is JSON with the common keys"

# --- phase 3: no daemon -------------------------------------------------------------------------

note "phase 3: tapfenced killed (-9): reassembly, SNI checks and DNS learning go on in the kernel"
kill -9 "$TFD_PID"
wait "$TFD_PID" 2>/dev/null
TFD_PID=
ENFORCED=0
tls_ok "outage: https://cdn2.test/ by name (resolved again during the outage)" cdn2.test $B 443 name
next_port "$A"
tf_mark
if https_get 4 forbidden.test 443 "$A"; then
	fail "outage: https://forbidden.test/ at $A: curl completed"
else
	pass "outage: https://forbidden.test/ at $A: curl failed"
fi
expect_not_reached "$SLOG" "data $A:443 $FROM" "outage: no byte of forbidden.test's hello reached the server"
expect_not_reached "$SLOG" "sni $A:443 $FROM" "outage: the server never saw its SNI"
OUTAGE_PORT=$LPORT
tfd_start "$host"
expect_event session=$SID sport=$OUTAGE_PORT verdict=deny reason=tls_sni_denied name=forbidden.test -- \
	"restart: the outage's refusal is drained into the feed"
check "restart: session $SID re-adopted" sh -c "'$TF_BUILD/tapfence' --socket '$TF_SOCK' session list | grep -q '^$SID '"

tfd_log_tail 5
tf_done
