#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Connect latency that the SNI check adds on a TLS port: a real ClientHello sent through a session's
# host-side veth, with nothing enforcing, with tapfence and no SNI check, and with the SNI check,
# the hello in one segment and in two (a short gap apart, and back to back).
#
#  ┌─────────────────────────┐      ┌──────────────────────────────────┐      ┌──────────────────────┐
#  │ $guest                  │ veth │ $host (router)                   │ veth │ $server              │
#  │ g0 10.77.0.2/24         ├──────┤ t0 10.77.0.1/24  (no session)    │      │ s0 203.0.113.2/24    │
#  │ g1 10.77.1.2/24         ├──────┤ t1 10.77.1.1/24  <- session on   │      │   and .10 .. .16/32  │
#  │ ..                      │      │ ..                  t1 .. t6     │      │ tlsconn.py serve     │
#  │ g6 10.77.6.2/24         ├──────┤ t6 10.77.6.1/24    (tapfenced,TC)│      │   *:443              │
#  │ 203.0.113.1I via .I.1   │      │ h1 203.0.113.1/24 (forwarding)   ├──────┤ 10.77/16 via .1      │
#  │ tlsconn.py client       │      │                                  │      │                      │
#  └─────────────────────────┘      └──────────────────────────────────┘      └──────────────────────┘
#
# Every address lives in a namespace made here (private and documentation ranges only); the root
# namespace gets no link and no route. Configuration I (0..6) has its own guest link gI|tI and its
# own server address 203.0.113.1I, routed via tI, so all seven run in one client process,
# interleaved connection by connection in a shuffled order (a busy machine's slow spells, and what
# a connection follows, then hit every configuration alike). One tapfenced (attach_mode tc, no
# --verbose) holds one session per configuration but the first; each session allows
# {"cidr":"203.0.113.0/24","proto":"tcp","ports":[443]} (with or without "tls": true) and
# {"host":"www.example.com","proto":"tcp","ports":[443]} (the name the SNI check looks up):
#   none            t0: no session, nothing enforces
#   plain           t1: the CIDR rule without "tls": no SNI check (the baseline)
#   plain-2seg      t2: as plain, the hello in two writes: SPLIT bytes, then the rest GAP_MS later
#   sni-1seg        t3: the CIDR rule with "tls": true: the flow waits for the hello, which is
#                   whole in its one segment, judged and passed
#   sni-2seg        t4: as sni-1seg, the hello in two writes GAP_MS apart: tapfence holds the first
#                   segment's bytes and drops it, passes the second once the hello is whole, and
#                   the client's loss recovery resends the first
#   plain-2seg-b2b  t5, t6: as plain-2seg and sni-2seg, the two writes back to back: the first
#   sni-2seg-b2b    piece is then not older than the second by RACK's reordering window, so the
#                   client's stack waits for its reordering timer before it resends
# A connection (tools/bench/tlsconn.py): connect, send tests/tls/hellos/curl.bin (517 bytes, SNI
# www.example.com), read the server's one-byte answer (sent once it has read the whole hello),
# close; timed from connect() to the answer. N per configuration, after one untimed each; the
# sequence is cut into ROUNDS rounds for the spread. Each session's counters must then show that
# the path it is named after ran (allow_tls once per connection with the SNI check and never
# without; tls_pending at least once per connection for sni-2seg*, never for the others) or the
# run is an error. The client also records each connection's retransmitted segments and the
# namespace's loss-recovery counters (RACK/SACK recovery, tail loss probe, RTO).
#
# Usage: tls.sh OUT.json [N] [ROUNDS]   (raw runs as JSON; report.py sums up)
# TLS_GAP_MS (default 1): the gap between the two writes. TLS_CONFIG: members spliced into the
# daemon's config, e.g. '"limits":{"events_per_s":1,"events_burst":1}' to leave out most events.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/enforce.sh"

OUT=${1:?usage: tls.sh OUT.json [N] [ROUNDS]}
N=${2:-200}
ROUNDS=${3:-10}
CONFIGS=(none plain plain-2seg sni-1seg sni-2seg plain-2seg-b2b sni-2seg-b2b)
HELLO=$TF_ROOT/tests/tls/hellos/curl.bin
SPLIT=256 GAP_MS=${TLS_GAP_MS:-1}
CONN=$TF_ROOT/tools/bench/tlsconn.py

tf_init
guest=tfb-guest-$TF_SFX
host=tfb-host-$TF_SFX
server=tfb-server-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

setup() { "$@" || die "setup: $*"; }

[ -f "$HELLO" ] || die "$HELLO is missing"
if [ "$ROUNDS" -lt 1 ] || [ "$N" -lt "$ROUNDS" ]; then
	die "N ($N) must be at least ROUNDS ($ROUNDS), which must be at least 1"
fi

PORT=443
setup ns_add "$guest" "$host" "$server"
setup ns_router "$host"
# IPv4 only on the guest links: their IPv6 chatter (MLD reports with a hop-by-hop header, either
# way) would count as denials in the sessions, which must show only what the connections caused.
for ns in "$guest" "$host"; do
	setup n "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
setup veth_pair "$host" h1 "$server" s0
setup ip -n "$host" addr add 203.0.113.1/24 dev h1
setup ip -n "$server" addr add 203.0.113.2/24 dev s0
setup ip -n "$host" link set h1 up
setup ip -n "$server" link set s0 up
setup ip -n "$server" route add 10.77.0.0/16 via 203.0.113.1 dev s0

# conf_link I: guest link gI|tI, the server's address 203.0.113.1I, the guest's route to it via tI.
conf_link() {
	local i=$1
	veth_pair "$guest" g"$i" "$host" t"$i" || return
	ip -n "$guest" link set g"$i" address 02:00:00:00:77:"$i"2 || return
	ip -n "$host" link set t"$i" address 02:00:00:00:77:"$i"1 || return
	ip -n "$guest" addr add 10.77."$i".2/24 dev g"$i" || return
	ip -n "$host" addr add 10.77."$i".1/24 dev t"$i" || return
	ip -n "$guest" link set g"$i" up || return
	ip -n "$host" link set t"$i" up || return
	ip -n "$server" addr add 203.0.113.1"$i"/32 dev s0 || return
	ip -n "$guest" route add 203.0.113.1"$i"/32 via 10.77."$i".1 dev g"$i"
}

targets=()
for i in "${!CONFIGS[@]}"; do
	setup conf_link "$i"
	case ${CONFIGS[i]} in
	*-2seg) split=$SPLIT:$GAP_MS ;;
	*-2seg-b2b) split=$SPLIT:0 ;;
	*) split=0:0 ;;
	esac
	targets+=(--target "${CONFIGS[i]}:203.0.113.1$i:$split")
done

bpffs_mount "$T/bpffs"
SLOG=$T/server.log
: >"$SLOG"
ip netns exec "$server" "$PY" "$CONN" serve --addr 0.0.0.0 --port $PORT --ready "$T/server.ready" \
	--log "$SLOG" >"$T/server.out" 2>&1 &
SERVER_PID=$!
defer kill_pid "$SERVER_PID"
wait_for 5 test -e "$T/server.ready" || die "server did not start: $(tail -n 3 "$T/server.out")"
[ "$(cat "$T/server.ready")" = "$SERVER_PID" ] || die "server runs as PID $(cat "$T/server.ready"), not $SERVER_PID"

tfd_config "$T/tapfenced.json" "\"attach_mode\":\"tc\"${TLS_CONFIG:+,$TLS_CONFIG}"
tfd_start_quiet "$host"
for i in "${!CONFIGS[@]}"; do
	cfg=${CONFIGS[i]}
	[ "$cfg" = none ] && continue
	flag=
	[[ $cfg == sni-* ]] && flag=',"tls":true'
	# The spec names IPv6 addresses (session_spec wants them); the links have none.
	session_spec "$T/$cfg.json" "$cfg" t"$i" 02:00:00:00:77:"$i"2 10.77."$i".2 fd00:77:"$i"::2 \
		02:00:00:00:77:"$i"1 10.77."$i".1 fd00:77:"$i"::1 \
		"[{\"cidr\":\"203.0.113.0/24\",\"proto\":\"tcp\",\"ports\":[443]$flag},
		  {\"host\":\"www.example.com\",\"proto\":\"tcp\",\"ports\":[443]}]"
	tfc session add "$T/$cfg.json" >"$T/cli.out" 2>&1 || { tfd_log_tail 10; die "session add $cfg: $(cat "$T/cli.out")"; }
done

n "$guest" timeout 600 "$PY" "$CONN" client "${targets[@]}" --port $PORT --hello "$HELLO" --n "$N" \
	--rounds "$ROUNDS" --warmup 1 >"$T/client.json" 2>"$T/client.err" ||
	die "client exited $?: $(head -c 300 "$T/client.err")"

conns=$((N + 1))
hellos=$(grep -c '^hello ' "$SLOG")
[ "$hellos" -eq $((conns * ${#CONFIGS[@]})) ] ||
	die "the server read $hellos whole hellos for $((conns * ${#CONFIGS[@]})) connections: $(grep -v '^hello ' "$SLOG" | tail -n 2)"

# Each session's non-zero reason counters, as {"config": {reason: count}}; then: did the path
# named by each configuration run, once per connection?
for cfg in "${CONFIGS[@]:1}"; do
	tfc --json session show "$cfg" >"$T/show-$cfg.json" 2>&1 || die "session show $cfg: $(head -c 300 "$T/show-$cfg.json")"
done
"$PY" - "$T" "$conns" "${CONFIGS[@]:1}" >"$T/counters.json" <<-'EOF' || die "the run is not what it is named after"
	import json, sys
	t, conns, cfgs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
	out, bad = {}, []
	for cfg in cfgs:
	    c = {k: v for k, v in json.load(open(f"{t}/show-{cfg}.json"))["session"]["counters"].items() if v}
	    out[cfg] = c
	    tls, pending = c.get("allow_tls", 0), c.get("tls_pending", 0)
	    denied = {k: v for k, v in c.items() if not k.startswith("allow") and k != "tls_pending"}
	    if cfg.startswith("sni"):
	        if tls != conns:
	            bad.append(f"{cfg}: allow_tls {tls}, not {conns} (one per connection)")
	        if cfg.startswith("sni-2seg") and pending < conns:
	            bad.append(f"{cfg}: tls_pending {pending} < {conns}: the hello was not held in pieces")
	        if cfg == "sni-1seg" and pending:
	            bad.append(f"{cfg}: tls_pending {pending}: a hello took more than one segment")
	    elif tls or pending:
	        bad.append(f"{cfg}: allow_tls {tls}, tls_pending {pending}: the SNI path ran without \"tls\"")
	    if denied:
	        bad.append(f"{cfg}: other reasons counted: {denied}")
	    print(f"  tls {cfg:<14} counters: " + " ".join(f"{k}={v}" for k, v in sorted(c.items())),
	          file=sys.stderr)
	for b in bad:
	    print(f"FAIL: {b}", file=sys.stderr)
	print(json.dumps(out))
	sys.exit(1 if bad else 0)
EOF

"$PY" - "$T/client.json" "$T/counters.json" "$OUT" "$N" "$ROUNDS" "$HELLO" "$SPLIT" "$GAP_MS" <<'EOF' || die "cannot write $OUT"
import json, math, os, statistics, sys
runs, counters = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
out, n, rounds, hello, split, gap = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7]), float(sys.argv[8])
by = {}
for r in runs:
    by.setdefault(r["config"], []).append(r)
for cfg, rs in by.items():
    lat = sorted(x for r in rs for x in r["lat_us"])
    print(f"  tls {cfg:<14} p50 {statistics.median(lat):7.1f} us, p99 {lat[math.ceil(0.99 * len(lat)) - 1]:7.1f} us, "
          f"mean {statistics.fmean(lat):7.1f} us, {sum(sum(r['retrans']) for r in rs)} retransmits, "
          f"{len(lat)} connections", file=sys.stderr)
json.dump({"tool": "tls", "connections": n, "rounds": rounds, "hello": os.path.basename(hello),
           "hello_bytes": os.path.getsize(hello), "split": split, "gap_ms": gap, "attach_mode": "tc",
           "interleaved": True, "counters": counters, "runs": runs}, open(out, "w"), indent=1)
EOF
