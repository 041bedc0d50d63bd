#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Learnt names never mix between sessions in two namespaces that look the same (docs/netns.md):
# two per-VM namespaces V1, V2, each holding a host-side veth `vh' at the same ifindex to a
# guest with the same MAC and address (10.0.3.2), each with its own resolver on 10.0.3.1 that
# answers app.test differently (V1: 198.51.100.10, V2: 203.0.113.10). Both sessions allow the host
# app.test. Each guest reaches the address its own resolver gave, and not the other's, though the
# other session learnt it.
#
#   G1 ─ ga|vh (V1, resolver 10.0.3.1) ─ up1|h1 ┐
#   G2 ─ ga|vh (V2, resolver 10.0.3.1) ─ up1|h2 ┴ H (daemon) ─ INET: 198.51.100.10, 203.0.113.10 :80
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-dh-$TF_SFX inet=tf-di-$TF_SFX
v1=tf-dv1-$TF_SFX v2=tf-dv2-$TF_SFX g1=tf-dg1-$TF_SFX g2=tf-dg2-$TF_SFX
GMAC=02:fd:00:00:00:05 TMAC=02:fd:00:00:00:01
tf_need dnsmasq curl nft
setup ns_add "$host" "$inet" "$v1" "$v2" "$g1" "$g2"
setup ns_router "$host"
setup inet_link "$host" "$inet" 96 10.202.0.0/16 fd00:ca::/32 198.51.100.0/24 203.0.113.0/24 -- \
	198.51.100.10 203.0.113.10
L_INET=$T/inet.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80

vm_ns() { # vm_ns NS N GUEST ANSWER
	local ns=$1 i=$2 g=$3
	guest_link "$g" ga "$GMAC" 10.0.3.2/24 fd00:0:0:3::2/64 "$ns" vh "$TMAC" 10.0.3.1/24 \
		fd00:0:0:3::1/64 || return
	veth_pair "$ns" up1 "$host" "h$i" || return
	ip -n "$ns" addr add "10.202.$i.2/30" dev up1 && ip -n "$ns" link set up1 up || return
	ip -n "$host" addr add "10.202.$i.1/30" dev "h$i" && ip -n "$host" link set "h$i" up || return
	ip -n "$ns" route add default via "10.202.$i.1" || return
	ns_router "$ns" || return
	n "$ns" nft 'table ip nat { chain post { type nat hook postrouting priority 100; oifname "up1" masquerade; }; }'
}
setup vm_ns "$v1" 1 "$g1"
setup vm_ns "$v2" 2 "$g2"
check "both vh at the same ifindex" \
	test "$(ip -n "$v1" -o link show vh | cut -d: -f1)" = "$(ip -n "$v2" -o link show vh | cut -d: -f1)"
dnsmasq_start "$v1" "$T/dns1.log" 10.0.3.1 --host-record=app.test,198.51.100.10
dnsmasq_start "$v2" "$T/dns2.log" 10.0.3.1 --host-record=app.test,203.0.113.10
printf 'nameserver 10.0.3.1\noptions timeout:1 attempts:1\n' >"$T/resolv.conf"

get_name() { n_resolv "$1" "$T/resolv.conf" timeout 10 curl -sS --noproxy '*' \
	--connect-timeout 2 --max-time 3 http://app.test/ >"$T/client.out" 2>&1; }

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
for i in 1 2; do
	ns=$v1
	[ "$i" = 2 ] && ns=$v2
	tfjson session-spec --netns "/run/netns/$ns" "$T/s$i.json" "s$i" vh "$GMAC" 10.0.3.2 \
		fd00:0:0:3::2 "$TMAC" 10.0.3.1 fd00:0:0:3::1 '[{"host":"app.test","proto":"tcp","ports":[80]}]' ||
		die "spec s$i"
done
sessions_add s1 s2

tf_mark
check "g1 resolves app.test through its resolver and reaches it" get_name "$g1"
expect_reached "$L_INET" "tcp 198.51.100.10:80 from 10.202.1.2:" "g1's app.test is 198.51.100.10 (V1's answer)"
tf_mark
check "g2 resolves app.test through its resolver and reaches it" get_name "$g2"
expect_reached "$L_INET" "tcp 203.0.113.10:80 from 10.202.2.2:" "g2's app.test is 203.0.113.10 (V2's answer)"
tfc --json session show s1 >"$T/s1.show" 2>&1
tfc --json session show s2 >"$T/s2.show" 2>&1
check "s1 learnt only 198.51.100.10" tfjson check --learned "$T/s1.show" \
	'has("198.51.100.10") and not has("203.0.113.10")'
check "s2 learnt only 203.0.113.10" tfjson check --learned "$T/s2.show" \
	'has("203.0.113.10") and not has("198.51.100.10")'
probe_tcp "g1 to 203.0.113.10, which s2 learnt, not s1" "$L_INET" "$g1" 10.202.1.2 203.0.113.10 80 blocked
probe_tcp "g2 to 198.51.100.10, which s1 learnt, not s2" "$L_INET" "$g2" 10.202.2.2 198.51.100.10 80 blocked

tf_done
