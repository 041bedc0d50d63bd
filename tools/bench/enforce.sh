# shellcheck shell=bash disable=SC2154 # $host and the rest: the sourcing script's
# SPDX-License-Identifier: GPL-2.0
# Sourced by the bench parts (throughput.sh, pps.sh, conn.sh compare enforcers on one session's
# traffic; tls.sh, names.sh and ctl.sh start the daemon as they do): the session's policy as tapfence runs it and as an nftables ruleset, switched on and
# off in the router namespace $host, and what each enforcer counted. Needs tests/netns/lib.sh,
# $host and the session's spec in $T/session.json.
#   none  nothing enforces            tc   tapfenced, attach_mode tc (tcx on the guest's device)
#   xdp   tapfenced, attach_mode xdp  nft  the session's policy as an nftables ruleset on $host

# The allowlist every comparison's session has; nft_ruleset says the same.
# shellcheck disable=SC2034 # used by the scripts that source this one
BENCH_ALLOW='[{"cidr":"203.0.113.2/32","proto":"tcp","ports":[80,5201]},
        {"cidr":"198.51.100.0/24","proto":"tcp","ports":[80,443]},
        {"cidr":"192.0.2.0/24","proto":"udp","ports":[5000]}]'

# nft_ruleset FILE GIF GIP: BENCH_ALLOW for guest GIP behind device GIF as table inet tfbench:
# tapfence's hard floor (IPv4 part), the allowlist as concatenated sets, state from conntrack.
nft_ruleset() {
	cat >"$1" <<-NFT
	table inet tfbench {
		set floor4 {
			type ipv4_addr; flags interval
			elements = { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16,
				     172.16.0.0/12, 192.168.0.0/16, 224.0.0.0/4, 240.0.0.0/4 }
		}
		set allow4_tcp {
			type ipv4_addr . inet_service; flags interval
			elements = { 203.0.113.2 . 80, 203.0.113.2 . 5201, 198.51.100.0/24 . 80,
				     198.51.100.0/24 . 443 }
		}
		set allow4_udp {
			type ipv4_addr . inet_service; flags interval
			elements = { 192.0.2.0/24 . 5000 }
		}
		chain forward {
			type filter hook forward priority filter; policy accept;
			iifname "$2" jump from_guest
			oifname "$2" jump to_guest
		}
		chain from_guest {
			ip saddr != $3 drop
			ct state established,related counter accept
			ip daddr @floor4 drop
			ct state new ip daddr . tcp dport @allow4_tcp counter accept
			ct state new ip daddr . udp dport @allow4_udp counter accept
			drop
		}
		chain to_guest {
			ct state established,related accept
			drop
		}
	}
	NFT
}

# enforcer_judged CFG [new]: how many packets the enforcer counted as belonging to allowed flows
# (each flow's first packet included); with "new", how many new flows it allowed.
enforcer_judged() {
	case $1 in
	tc | xdp)
		tfc --json stats | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["stats"]["counters"]
print(c.get("allow_rule", 0) + (0 if sys.argv[1] == "new" else c.get("allow_flow", 0)))' "${2:-}" ;;
	nft)
		n "$host" nft -j list chain inet tfbench from_guest | "$PY" -c '
import json, sys
print(sum(e["counter"]["packets"] for r in json.load(sys.stdin)["nftables"] if "rule" in r
          for e in r["rule"]["expr"] if "counter" in e
          if sys.argv[1] != "new" or "\"new\"" in json.dumps(r["rule"]["expr"])))' "${2:-}" ;;
	*) echo 0 ;;
	esac
}

# bench_topology: $guest (g0 10.77.0.2, MAC $G_MAC) --veth-- $host (router; t0 10.77.0.1, MAC
# $GW_MAC, where tapfenced attaches; h1 203.0.113.1) --veth-- $server (s0 $SERVER/24, 10.77.0.0/24
# via 203.0.113.1): throughput.sh's drawing. The root namespace gets no link and no route.
bench_topology() {
	setup ns_add "$guest" "$host" "$server"
	setup ns_router "$host"
	setup guest_link "$guest" g0 "$G_MAC" 10.77.0.2/24 fd00:77::2/64 "$host" t0 "$GW_MAC" 10.77.0.1/24 fd00:77::1/64
	setup veth_pair "$host" h1 "$server" s0
	setup ip -n "$host" addr add 203.0.113.1/24 dev h1
	setup ip -n "$server" addr add "$SERVER/24" dev s0
	setup ip -n "$host" link set h1 up
	setup ip -n "$server" link set s0 up
	setup ip -n "$server" route add 10.77.0.0/24 via 203.0.113.1 dev s0
}

# tfd_start_quiet NS [WAIT]: tapfenced in NS on $TFD_CONFIG with tfd_start's bookkeeping, but
# without its --verbose, whose debug logging would sit beside the measured path.
tfd_start_quiet() {
	: >"$TF_EVENTS"
	TFD_NS=$1
	ip netns exec "$1" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" >>"$T/tapfenced.log" 2>&1 &
	TFD_PID=$!
	defer tfd_stop # idempotent: the run's own stop comes first
	wait_for "${2:-10}" test -S "$TF_SOCK" || { tfd_log_tail 20; die "tapfenced did not open $TF_SOCK"; }
}

# enforce_on CFG [MEMBERS]: CFG's enforcer on; MEMBERS are spliced into tapfenced's config.
enforce_on() {
	case $1 in
	tc | xdp)
		tfd_config "$T/tapfenced-$1.json" "\"attach_mode\":\"$1\"${2:+,$2}"
		tfd_start_quiet "$host"
		tfc session add "$T/session.json" >"$T/cli.out" 2>&1 || { tfd_log_tail 10; die "session add ($1): $(cat "$T/cli.out")"; } ;;
	nft)
		n "$host" nft -f "$T/nft.conf" || die "nft -f $T/nft.conf" ;;
	esac
}

enforce_off() {
	case $1 in
	tc | xdp) tfd_stop ;;
	nft) n "$host" nft delete table inet tfbench ;;
	esac
}
