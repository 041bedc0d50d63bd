#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The name path end to end (issue 17): from a guest's DNS query to the first byte from the server at
# the address it got, and whether the first SYN after the answer is ever dropped, for tapfence
# (a host rule) and for what a user would pick instead, nftables fed by `dnsmasq --nftset'.
#
#  ┌─────────────────────────┐      ┌───────────────────────────────────────┐      ┌────────────────────────┐
#  │ $guest                  │ veth │ $host (router)                        │ veth │ $server                │
#  │ g0 10.77.0.2/24         ├──────┤ t0 10.77.0.1  dnsmasq (none)          │      │ ii 10.99.0.2/30        │
#  │ g1 10.77.1.2/24         ├──────┤ t1 10.77.1.1  dnsmasq <- tapfenced,TC │      │ dnsmasq :53 (upstream: │
#  │ g2 10.77.2.2/24         ├──────┤ t2 10.77.2.1  dnsmasq --nftset, nft   │      │   the names' A records)│
#  │ 192.0.2/24 via .0.1     │      │ hi 10.99.0.1/30 (forwarding)          ├──────┤ local 192.0.2/24,      │
#  │ 198.51.100/24 via .1.1  │      │   192.0.2/24 198.51.100/24            │      │   198.51.100/24,       │
#  │ 203.0.113/24 via .2.1   │      │   203.0.113/24 via 10.99.0.2          │      │   203.0.113/24 (lo)    │
#  │ nameconn.py client      │      │                                       │      │ nameconn.py serve *:80 │
#  └─────────────────────────┘      └───────────────────────────────────────┘      └────────────────────────┘
#
# Every address lives in a namespace made here (private and documentation ranges only); the root
# namespace gets no link and no route. Configuration I has its own guest link gI|tI, its own
# resolver (a dnsmasq on 10.77.I.1, the link's gateway, forwarding to the upstream dnsmasq in
# $server, default cache) and its own /24 of server addresses, routed via tI:
#   none      t0: nothing enforces (the floor)
#   tapfence  t1: tapfenced (attach_mode tc, no --verbose, events not rate limited) with a session
#             on t1 allowing {"host":"*.bench.example","proto":"tcp","ports":[80]}; its resolver
#             is t1's dnsmasq
#   nftset    t2: t2's dnsmasq runs with --nftset=/bench.example/4#inet#tfbench#allow4, and the
#             forward chain of $host judges what t2 forwards: source check, conntrack, the hard
#             floor, new TCP to port 80 of an address in @allow4 accepted, the rest dropped
# Trial i (1..N) of configuration C asks for nI.C.bench.example, a name nobody asked before, whose
# one A record (TTL 300 s) is address i of C's /24, an address nothing has opened yet; so N <= 254.
# All three configurations run in one client process (tools/bench/nameconn.py), interleaved trial by
# trial in a shuffled order; the N trials are cut into ROUNDS rounds for the spread. A trial: the A
# query sent by hand over UDP to the configuration's resolver, the answer read, connect() to its
# address at once, the server's byte read (it writes one on accept); timed from the query. Its first
# SYN was dropped if the socket retransmitted before connecting (TCP_INFO) or connect() took over
# 200 ms. Then the enforcers' own counters must show that they judged the trials (tapfence: one
# allow_dns and one allow_dns_answer per trial; nftables: at least N new flows accepted or dropped),
# and are kept beside the client's view: the session's counters and every deny event, with
# allow_learned once per connection; the accept and drop rules' counters and @allow4's size.
#
# tapfenced's CPU time over the client's run (its threads' schedstat) is kept too: on a small
# machine the daemon's work on each event (drained, sealed, written) competes with the trials.
#
# Usage: names.sh OUT.json [N] [ROUNDS]   (raw trials as JSON; report.py sums up)
# NAMES_LIMITS (default '"events_per_s":0', every event written, as at ordinary rates): the
# daemon's "limits", e.g. '"events_per_s":1,"events_burst":1' to leave out most events.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/../../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/enforce.sh"

OUT=${1:?usage: names.sh OUT.json [N] [ROUNDS]}
N=${2:-200}
ROUNDS=${3:-10}
CONFIGS=(none tapfence nftset)
PREFIXES=(192.0.2 198.51.100 203.0.113)
CONN=$TF_ROOT/tools/bench/nameconn.py
PORT=80 UPSTREAM=10.99.0.2

tf_init
guest=tfb-guest-$TF_SFX
host=tfb-host-$TF_SFX
server=tfb-server-$TF_SFX
cleanup() { tf_cleanup; }
trap cleanup EXIT

setup() { "$@" || die "setup: $*"; }

tf_need dnsmasq nft
if [ "$ROUNDS" -lt 1 ] || [ "$N" -lt "$ROUNDS" ] || [ "$N" -gt 254 ]; then
	die "N ($N) must be at least ROUNDS ($ROUNDS), which must be at least 1, and at most 254"
fi

setup ns_add "$guest" "$host" "$server"
setup ns_router "$host"
setup inet_link "$host" "$server" 99 10.77.0.0/16 fd00:77::/32 192.0.2.0/24 198.51.100.0/24 203.0.113.0/24 --
# IPv4 only on the guest links (made below): their IPv6 chatter would count as denials (tapfence's
# session, the nftables drop rule), which must show only what the trials caused.
setup n "$guest" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
setup n "$host" sysctl -qw net.ipv6.conf.default.disable_ipv6=1

# conf_link I: guest link gI|tI, the guest's route to configuration I's /24 via tI, which the
# server takes as local (every address of it, to the listener on 0.0.0.0).
conf_link() {
	local i=$1
	veth_pair "$guest" g"$i" "$host" t"$i" || return
	ip -n "$guest" link set g"$i" address 02:00:00:00:77:"$i"2 || return
	ip -n "$host" link set t"$i" address 02:00:00:00:77:"$i"1 || return
	ip -n "$guest" addr add 10.77."$i".2/24 dev g"$i" || return
	ip -n "$host" addr add 10.77."$i".1/24 dev t"$i" || return
	ip -n "$guest" link set g"$i" up || return
	ip -n "$host" link set t"$i" up || return
	ip -n "$guest" route add "${PREFIXES[i]}".0/24 via 10.77."$i".1 dev g"$i" || return
	ip -n "$server" route add local "${PREFIXES[i]}".0/24 dev lo
}

: >"$T/names.hosts"
targets=()
for i in "${!CONFIGS[@]}"; do
	setup conf_link "$i"
	for ((k = 1; k <= N; k++)); do
		echo "${PREFIXES[i]}.$k n$k.${CONFIGS[i]}.bench.example" >>"$T/names.hosts"
	done
	targets+=(--target "${CONFIGS[i]}:10.77.$i.1:${CONFIGS[i]}.bench.example")
done

# nftset's ruleset on $host, before its dnsmasq (which adds to @allow4) starts.
cat >"$T/nft.conf" <<EOF
table inet tfbench {
	set floor4 {
		type ipv4_addr; flags interval
		elements = { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16,
			     172.16.0.0/12, 192.168.0.0/16, 224.0.0.0/4, 240.0.0.0/4 }
	}
	set allow4 {
		type ipv4_addr
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "t2" jump from_guest
		oifname "t2" jump to_guest
	}
	chain from_guest {
		ip saddr != 10.77.2.2 drop
		ct state established,related accept
		ip daddr @floor4 drop
		ct state new tcp dport $PORT ip daddr @allow4 counter accept
		counter drop
	}
	chain to_guest {
		ct state established,related accept
		drop
	}
}
EOF
setup n "$host" nft -f "$T/nft.conf"

# The resolvers: the upstream in $server (the names' records), one forwarder per configuration.
dnsmasq_start "$server" "$T/dns-upstream.log" $UPSTREAM --local=/bench.example/ \
	--addn-hosts="$T/names.hosts" --local-ttl=300
dnsmasq_start "$host" "$T/dns-none.log" 10.77.0.1 --server=$UPSTREAM
dnsmasq_start "$host" "$T/dns-tapfence.log" 10.77.1.1 --server=$UPSTREAM
dnsmasq_start "$host" "$T/dns-nftset.log" 10.77.2.1 --server=$UPSTREAM \
	--nftset=/bench.example/4#inet#tfbench#allow4

bpffs_mount "$T/bpffs"
SLOG=$T/server.log
: >"$SLOG"
ip netns exec "$server" "$PY" "$CONN" serve --port $PORT --ready "$T/server.ready" --log "$SLOG" \
	>"$T/server.out" 2>&1 &
SERVER_PID=$!
defer kill_pid "$SERVER_PID"
wait_for 5 test -e "$T/server.ready" || die "server did not start: $(tail -n 3 "$T/server.out")"
[ "$(cat "$T/server.ready")" = "$SERVER_PID" ] || die "server runs as PID $(cat "$T/server.ready"), not $SERVER_PID"

# Events are not rate limited (unless NAMES_LIMITS says otherwise), so that a denial, if any, is
# logged, and each trial costs the daemon what a connection at ordinary rates does.
tfd_config "$T/tapfenced.json" "\"attach_mode\":\"tc\",\"limits\":{${NAMES_LIMITS:-\"events_per_s\":0}}"
tfd_start_quiet "$host"
# The spec names IPv6 addresses (session_spec wants them); the link has none.
session_spec "$T/tapfence.json" tapfence t1 02:00:00:00:77:12 10.77.1.2 fd00:77:1::2 \
	02:00:00:00:77:11 10.77.1.1 fd00:77:1::1 '[{"host":"*.bench.example","proto":"tcp","ports":[80]}]'
tfc session add "$T/tapfence.json" >"$T/cli.out" 2>&1 || { tfd_log_tail 10; die "session add: $(cat "$T/cli.out")"; }

# tfd_cpu_ns: the CPU time tapfenced's threads have had so far, in ns (%.0f: mawk's %d stops at
# 2^31 - 1, 2.1 s, which a start that loads the programs passes on some kernels).
tfd_cpu_ns() { cat /proc/"$TFD_PID"/task/*/schedstat | awk '{ ns += $1 } END { printf "%.0f\n", ns }'; }

cpu0=$(tfd_cpu_ns)
n "$guest" timeout 900 "$PY" "$CONN" client "${targets[@]}" --port $PORT --n "$N" --rounds "$ROUNDS" \
	>"$T/client.json" 2>"$T/client.err" || die "client exited $?: $(head -c 300 "$T/client.err")"
cpu_ns=$(($(tfd_cpu_ns) - cpu0))

# The enforcers' view: tapfence's session counters and every event that is not an allow; the
# nftables counters (accept, drop) and @allow4's size. Did each enforcer judge every trial?
tfc --json session show tapfence >"$T/show.json" 2>&1 || die "session show: $(head -c 300 "$T/show.json")"
n "$host" nft -j list table inet tfbench >"$T/nft.json" || die "nft list table inet tfbench"
"$PY" - "$T" "$N" >"$T/enforcers.json" <<-'EOF' || die "the run is not what it is named after"
	import json, sys
	t, n = sys.argv[1], int(sys.argv[2])
	bad = []
	c = {k: v for k, v in json.load(open(f"{t}/show.json"))["session"]["counters"].items() if v}
	denied = {k: v for k, v in c.items() if not k.startswith("allow")}
	events = []
	for line in open(f"{t}/events.jsonl"):
	    e = json.loads(line)
	    if e.get("verdict") in ("deny", "audit"):
	        events.append(e)
	for k in ("allow_dns", "allow_dns_answer"):
	    if c.get(k, 0) != n:
	        bad.append(f"tapfence: {k} {c.get(k, 0)}, not {n}: it did not judge each query and answer")
	nft = json.load(open(f"{t}/nft.json"))["nftables"]
	accepted = dropped = None
	allow4 = []
	for o in nft:
	    if o.get("set", {}).get("name") == "allow4":
	        allow4 = o["set"].get("elem", [])
	    exprs = o.get("rule", {}).get("expr", [])
	    counter = next((e["counter"]["packets"] for e in exprs if "counter" in e), None)
	    if counter is not None and any("accept" in e for e in exprs):
	        accepted = counter
	    elif counter is not None and any("drop" in e for e in exprs):
	        dropped = counter
	if (accepted or 0) + (dropped or 0) < n:
	    bad.append(f"nftset: {accepted} new flows accepted and {dropped} dropped: fewer than the {n} trials")
	print(f"  names tapfence counters: " + " ".join(f"{k}={v}" for k, v in sorted(c.items())), file=sys.stderr)
	print(f"  names nftset   counters: accept={accepted} drop={dropped} @allow4={len(allow4)}", file=sys.stderr)
	for e in events[:5]:
	    print(f"  names tapfence event: {json.dumps(e)}", file=sys.stderr)
	for b in bad:
	    print(f"FAIL: {b}", file=sys.stderr)
	print(json.dumps({"tapfence": {"counters": c, "denied": denied, "deny_events": events},
	                  "nftset": {"accepted": accepted, "dropped": dropped, "allow4": len(allow4)}}))
	sys.exit(1 if bad else 0)
EOF

conns=$(grep -c '^conn ' "$SLOG")
"$PY" - "$T/client.json" "$T/enforcers.json" "$OUT" "$N" "$ROUNDS" "$conns" "$cpu_ns" \
	"$TFD_CONFIG" <<'EOF' || die "cannot write $OUT"
import json, math, statistics, subprocess, sys
trials, enforcers = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
out, n, rounds, conns, cpu_ns = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
limits = json.load(open(sys.argv[8]))["limits"]
by = {}
for t in trials:
    by.setdefault(t["config"], []).append(t)
for cfg, ts in sorted(by.items(), key=lambda kv: ("none", "tapfence", "nftset").index(kv[0])):
    ok = [t for t in ts if not t["error"]]
    fb = sorted(t["first_byte_us"] for t in ok) or [math.nan]
    dns = [t["dns_us"] for t in ok] or [math.nan]
    print(f"  names {cfg:<8} first byte p50 {statistics.median(fb):8.1f} us, p99 "
          f"{fb[math.ceil(0.99 * len(fb)) - 1]:8.1f} us; dns p50 {statistics.median(dns):7.1f} us; "
          f"first SYN dropped {sum(bool(t['syn_dropped']) for t in ts)} of {len(ts)}; "
          f"{len(ts) - len(ok)} failed", file=sys.stderr)
    for t in ts:
        if t["error"] or t["syn_dropped"]:
            print(f"  names {cfg:<8} trial {t['i']}: {t['name']} -> {t['addr']}: connect "
                  f"{t['connect_us']} us, {t['syn_retrans']} SYN retransmits, {t['error'] or ''}",
                  file=sys.stderr)
version = subprocess.run(["dnsmasq", "--version"], capture_output=True, text=True).stdout.split("  Copyright")[0]
print(f"  names tapfenced CPU {cpu_ns / 1000 / n:.1f} us per tapfence trial (limits {json.dumps(limits)})",
      file=sys.stderr)
json.dump({"tool": "names", "trials_per_config": n, "rounds": rounds, "attach_mode": "tc",
           "limits": limits, "interleaved": True, "dnsmasq": version, "server_connections": conns,
           "tapfenced_cpu_ns": cpu_ns, "enforcers": enforcers, "trials": trials}, open(out, "w"), indent=1)
EOF
