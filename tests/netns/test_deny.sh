#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Deny rules (docs/deny.md): "action": "deny" wins over every allow of the session, whatever the
# order and the lengths. "Allow 0.0.0.0/0 except this range" (IPv4 and IPv6), a deny of some
# ports inside an allowed range, "allow *.app.test except gist.app.test" (a lookup refused, the
# names below it still resolving), a CIDR deny over an address a host rule learnt, a deny added
# live cutting an established connection and deleted again, a host deny added live taking back an
# address learnt through a wildcard; session show says the precedence.
#
#   guest ga 10.10.1.2 ─ ha ─ host (router, tapfenced, dnsmasq 10.10.1.1) ─ inet: 198.51.100.10
#   fd00:a:1::2                                          (tcp 80, 8080, 7001), 203.0.113.10 (tcp 80),
#                                                        2001:db8:99::10, 2001:db8:98::10 (tcp 80)
set -u
. "$(dirname "$0")/lib.sh"
tf_init

host=tf-dnh-$TF_SFX guest=tf-dng-$TF_SFX inet=tf-dni-$TF_SFX
tf_need dnsmasq curl
one_guest "$host" "$guest" "$inet"
OK=198.51.100.10 FAR=203.0.113.10 V6A=2001:db8:99::10 V6B=2001:db8:98::10
for a in $V6A $V6B; do
	setup ip -n "$host" -6 route add $a/128 via fd00:99::2 dev hi
	setup ip -n "$inet" addr add $a/128 dev lo nodad
done
L2=$T/inet2.log
listener_start "$inet" "$L2" tcp:$OK:8080 "tcp:[$V6A]:80" "tcp:[$V6B]:80"
FP=$TF_NETNS_DIR/flowpeer.py L_FP=$T/fp.log
flowpeer_start "$inet" "$L_FP" --tcp $OK:7001
DNS_LOG=$T/dns.log
dnsmasq_start "$host" "$DNS_LOG" 10.10.1.1 --host-record=www.app.test,$OK \
	--host-record=gist.app.test,$OK --host-record=x.gist.app.test,$OK --host-record=cdn.app.test,$FAR
printf 'nameserver 10.10.1.1\noptions timeout:1 attempts:1\n' >"$T/resolv.conf"
get_name() { n_resolv "$guest" "$T/resolv.conf" timeout 10 curl -sS --noproxy '*' \
	--connect-timeout 2 --max-time 3 "http://$1/" >"$T/client.out" 2>&1; }

bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
tfd_start "$host"
# The deny rules first and last: the order of the rules means nothing.
session_spec "$T/a.json" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
	fd00:a:1::1 '[{"cidr":"203.0.113.0/24","action":"deny"},
	{"cidr":"0.0.0.0/0","proto":"tcp"},{"cidr":"::/0","proto":"tcp"},
	{"cidr":"198.51.100.10","proto":"tcp","ports":[8080],"action":"deny"},
	{"host":"*.app.test","proto":"tcp","ports":[80]},{"host":"cdn.app.test","proto":"tcp","ports":[80]},
	{"cidr":"2001:db8:99::/48","action":"deny"},
	{"host":"gist.app.test","action":"deny"}]'
sessions_add a
tfc --json session show a >"$T/show.json" 2>&1
check "session show: the precedence, and the deny rules as given" tfjson check "$T/show.json" \
	'd["session"]["precedence"] == "the floor, then deny rules, then allow rules" and
	 sum(r.get("action") == "deny" for r in d["session"]["spec"]["allow"]) == 4'

note "CIDR deny rules"
probe_tcp "0.0.0.0/0 allows $OK:80" "$L_INET" "$guest" 10.10.1.2 $OK 80 reached
probe_tcp "... except 203.0.113.0/24: $FAR:80" "$L_INET" "$guest" 10.10.1.2 $FAR 80 blocked
expect_event session=a verdict=deny reason=deny_rule dst=$FAR dport=80 -- "$FAR:80 is deny_rule"
probe_tcp "a deny of port 8080 on an allowed address: $OK:8080" "$L2" "$guest" 10.10.1.2 $OK 8080 blocked
expect_event session=a verdict=deny reason=deny_rule dst=$OK dport=8080 -- "$OK:8080 is deny_rule"
tf_mark
check "::/0 allows [$V6B]:80" tcp_get "$guest" $V6B 80
expect_reached "$L2" "tcp [$V6B]:80 from [fd00:a:1::2]:" "[$V6B]:80 reached"
check_not "... except 2001:db8:99::/48: [$V6A]:80" tcp_get "$guest" $V6A 80
expect_not_reached "$L2" "tcp [$V6A]:80 from" "[$V6A]:80 never reached"
expect_event session=a verdict=deny reason=deny_rule family=ipv6 dport=80 -- "[$V6A]:80 is deny_rule"

note "host deny rules"
tf_mark
check "*.app.test allows www.app.test" get_name www.app.test
expect_reached "$L_INET" "tcp $OK:80 from 10.10.1.2:" "www.app.test reached"
check_not "... except gist.app.test: its lookup is refused" get_name gist.app.test
expect_event session=a verdict=deny reason=dns_name_denied name=gist.app.test -- \
	"gist.app.test's lookup is dns_name_denied"
check "a deny of gist.app.test is not of x.gist.app.test, below it" get_name x.gist.app.test
tf_mark
check "cdn.app.test resolves (a host rule allows it)" n_resolv "$guest" "$T/resolv.conf" \
	sh -c 'getent ahostsv4 cdn.app.test >/dev/null'
check_not "... but a CIDR deny covers its address: the GET fails" get_name cdn.app.test
expect_not_reached "$L_INET" "tcp $FAR:80 from" "cdn.app.test's address never reached"
expect_event session=a verdict=deny reason=deny_rule dst=$FAR -- "the learnt address is deny_rule"

note "a deny rule added live cuts an established connection"
flowpeer_stream "$guest" "$T/st.log" --tcp $OK:7001 --sport 42001 --tag st --stop "$T/stop"
sleep 1
tf_mark
sleep 1
expect_reached "$L_FP" "from 10.10.1.2:42001 msg st" "the stream reaches its server"
DENY='{"cidr":"198.51.100.10","proto":"tcp","ports":[7001],"action":"deny"}'
tf_mark
check "rule add a (a deny of $OK:7001)" tfc rule add a "$DENY"
expect_event session=a verdict=deny reason=revoked -- "the stream's packets are revoked"
sleep 0.5
tf_mark
sleep 1.5
expect_not_reached "$L_FP" "from 10.10.1.2:42001 msg" "the stream is cut"
touch "$T/stop"
check_not "a new connection to $OK:7001 fails" n "$guest" "$PY" "$FP" once --tcp $OK:7001 --sport 42002 \
	--tag once
check "rule del a (the deny)" tfc rule del a "$DENY"
check "a new connection to $OK:7001 works again" n "$guest" "$PY" "$FP" once --tcp $OK:7001 --sport 42003 --tag once

note "a host deny rule added live reaches an address already learnt through a wildcard"
tfc session del a >/dev/null 2>&1
session_spec "$T/b.json" b ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
	fd00:a:1::1 '[{"host":"*.app.test","proto":"tcp","ports":[80]}]'
sessions_add b
check "b: GET http://www.app.test/ (learnt through *.app.test)" get_name www.app.test
probe_tcp "b: $OK:80 by address, learnt for www.app.test" "$L_INET" "$guest" 10.10.1.2 $OK 80 reached
check "rule add b (a deny of www.app.test)" tfc rule add b '{"host":"www.app.test","action":"deny"}'
probe_tcp "b: $OK:80 by address after the deny" "$L_INET" "$guest" 10.10.1.2 $OK 80 blocked
check_not "b: GET http://www.app.test/ after the deny" get_name www.app.test
tfc --json session show b >"$T/show.json" 2>&1
check "b: nothing learnt for www.app.test is left" tfjson check --learned "$T/show.json" \
	'not any(e.get("name") == "www.app.test" for e in L)'

tf_done
