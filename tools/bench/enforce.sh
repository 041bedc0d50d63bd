# shellcheck shell=bash disable=SC2154 # $host: the sourcing script's router namespace
# SPDX-License-Identifier: GPL-2.0
# Sourced by the bench parts that compare enforcers on one session's traffic (throughput.sh,
# pps.sh, conn.sh): the session's policy as tapfence runs it and as an nftables ruleset, switched on and
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

# enforce_on CFG [MEMBERS]: CFG's enforcer on; MEMBERS are spliced into tapfenced's config.
enforce_on() {
	case $1 in
	tc | xdp)
		tfd_config "$T/tapfenced-$1.json" "\"attach_mode\":\"$1\"${2:+,$2}"
		tfd_start "$host"
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
