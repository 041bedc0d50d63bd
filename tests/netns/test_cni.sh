#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfence-cni, chained after Debian's ptp as a runtime runs it, enforces from ADD on.
#
#  ┌──────────────────┐ ┌──────────────────┐ ┌──────────────────┐ ┌────────────────────────────┐
#  │ $s1 (container 1)│ │ $s2 (container 2)│ │ $s4 (other net)  │ │ $s3 (microVM sandbox)      │
#  │ eth0 10.77.0.x   │ │ eth0 10.77.0.y   │ │ eth1 10.78.0.z   │ │ eth0 10.77.0.w ⇄ tap0      │
#  │ (ptp, tfnet)     │ │ (ptp, tfnet)     │ │ (ptp, othernet)  │ │ tc matchall mirred, both   │
#  └────────┬─────────┘ └────────┬─────────┘ └────────┬─────────┘ │ ways; tapvmm.py on tap0    │
#           │ veth               │ veth               │ veth      └─────────────┬──────────────┘
#  ┌────────┴────────────────────┴────────────────────┴─────────────────────────┴──────────────┐
#  │ $host: the node as CNI sees it. tapfenced and every plugin run here (ptp's host veths and │
#  │ host routes, host-local's leases in $T/ipam); router; hi 10.99.0.1/30                      │
#  └────────────────────────────────────────────┬──────────────────────────────────────────────┘
#                                               │ veth
#  ┌────────────────────────────────────────────┴──────────────────────────────────────────────┐
#  │ $inet ii 10.99.0.2/30; on lo 198.51.100.10 (allowed), 203.0.113.10 (denied): tcp :80,    │
#  │ udp :7 listeners; routes back to 10.76/14 via $host                                        │
#  └───────────────────────────────────────────────────────────────────────────────────────────┘
#
# Each plugin is driven as a runtime does: CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME,
# CNI_PATH in a clean environment, the config on stdin, ptp's result chained in as prevResult.
# Nothing is done in the root namespace: ptp's routes and veths land in $host.
# TF_CNI=PATH runs that build of the plugin (a sanitized one). TF_KEEP=1 keeps $T.

# shellcheck disable=SC2016 # $names in single quotes are jq's variables
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

tf_init
host=tf-host-$TF_SFX s1=tf-s1-$TF_SFX s2=tf-s2-$TF_SFX s3=tf-s3-$TF_SFX s4=tf-s4-$TF_SFX
s5=tf-s5-$TF_SFX inet=tf-inet-$TF_SFX
CNI_BIN=/usr/lib/cni
PLUGIN=${TF_CNI:-$TF_BUILD/tapfence-cni}
NET=tfnet

tf_need jq
for p in ptp bridge host-local; do
	[ -x "$CNI_BIN/$p" ] || die "$CNI_BIN/$p is not installed (tools/deps.sh: containernetworking-plugins)"
done
[ -x "$PLUGIN" ] || die "$PLUGIN is not built (run make)"

# --- topology ---------------------------------------------------------------------------------

setup ns_add "$host" "$s1" "$s2" "$s3" "$s4" "$s5" "$inet"
setup ns_router "$host"
setup inet_link "$host" "$inet" 99 10.76.0.0/14 fd00:77::/64 198.51.100.0/24 203.0.113.0/24 -- \
	198.51.100.10 203.0.113.10
L_INET=$T/inet.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80 \
	udp:198.51.100.10:7 udp:203.0.113.10:7

# --- running plugins as a runtime does ----------------------------------------------------------

# cni PLUGIN COMMAND CID NS IFNAME CONF: run PLUGIN in $host with CONF on stdin; its stdout in
# $T/cni.out (stderr in $T/cni.err); its exit status. "-" for CID, NS or IFNAME leaves it unset.
cni() {
	local plugin=$1 cmd=$2 cid=$3 ns=$4 ifname=$5 conf=$6 envs=()
	envs=(CNI_COMMAND="$cmd" CNI_PATH="$CNI_BIN")
	[ "$cid" != - ] && envs+=(CNI_CONTAINERID="$cid")
	[ "$ns" != - ] && envs+=(CNI_NETNS="/run/netns/$ns")
	[ "$ifname" != - ] && envs+=(CNI_IFNAME="$ifname")
	ip netns exec "$host" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${envs[@]}" "$plugin" \
		<"$conf" >"$T/cni.out" 2>"$T/cni.err"
}

# ptp_conf FILE NET SUBNET: ptp's entry of the conflist (cniVersion 1.0.0: Debian's ptp refuses
# 1.1.0), leases kept under $T.
ptp_conf() {
	printf '{"cniVersion":"1.0.0","name":"%s","type":"ptp","ipMasq":false,"ipam":{"type":"host-local","subnet":"%s","dataDir":"%s","routes":[{"dst":"0.0.0.0/0"}]}}\n' \
		"$2" "$3" "$T/ipam" >"$1"
}

# ptp_add CID NS IFNAME NET SUBNET: ptp ADD; its result in $T/ptp-CID-IFNAME.json.
ptp_add() {
	local cid=$1 ns=$2 ifname=$3 net=$4 subnet=$5 out=$T/ptp-$1-$3.json
	ptp_conf "$T/ptp-$net.conf" "$net" "$subnet"
	if cni "$CNI_BIN/ptp" ADD "$cid" "$ns" "$ifname" "$T/ptp-$net.conf"; then
		cp "$T/cni.out" "$out"
		defer cni "$CNI_BIN/ptp" DEL "$cid" "$ns" "$ifname" "$T/ptp-$net.conf"
		return 0
	fi
	echo "ptp ADD $cid: $(head -c 300 "$T/cni.out" "$T/cni.err")"
	return 1
}

# tf_conf FILE NET PREV [MEMBERS] [VERSION]: tapfence-cni's entry as the runtime hands it over: the
# plugin's own keys (socket, allow, ... in MEMBERS), the list's name and cniVersion, and PREV (a
# result file, or "-") as prevResult.
tf_conf() {
	local file=$1 net=$2 prev=$3 members=${4:-} version=${5:-1.0.0}
	{
		printf '{"cniVersion":"%s","name":"%s","type":"tapfence-cni","socket":"%s"' \
			"$version" "$net" "$TF_SOCK"
		[ -n "$members" ] && printf ',%s' "$members"
		[ "$prev" != - ] && printf ',"prevResult":%s' "$(cat "$prev")"
		printf '}\n'
	} >"$file"
	jq . "$file" >/dev/null || die "bad plugin config $file"
}

# sid NET CID IFNAME: the session id tapfence-cni derives (docs/integration.md).
sid() {
	local n a
	n=$(printf 'tapfence-cni network\0%s\0' "$1" | sha256sum)
	a=$(printf 'tapfence-cni attachment\0%s\0%s\0%s\0' "$1" "$2" "$3" | sha256sum)
	echo "cni-${n:0:10}-${a:0:24}"
}

# tfc_q ARG...: tfc, its output in $T/cli.out.
tfc_q() { tfc "$@" >"$T/cli.out" 2>&1; }

# has_session ID: the daemon lists session ID.
has_session() {
	[ "$(tfc --json session list | jq --arg id "$1" 'any(.sessions[]; .id == $id)')" = true ]
}

# jqt ARG...: 0 iff jq's one output is true (jq 1.6's -e says 0 for an empty input).
jqt() { [ "$(jq "$@" 2>/dev/null)" = true ]; }

# cni_error CODE TEXT: $T/cni.out is CNI's error object with that code and TEXT in its msg.
cni_error() {
	jqt --argjson code "$1" --arg text "$2" \
		'.code == $code and (.msg | contains($text)) and (.cniVersion | type == "string")' \
		"$T/cni.out"
}

# says DESC CODE TEXT: the last plugin run failed (exit 1) with CNI's error CODE naming TEXT.
says() {
	if [ "$rc" = 1 ] && cni_error "$2" "$3"; then
		pass "$1"
	else
		fail "$1 (exit $rc, want 1 and code $2 with \`$3'): $(head -c 400 "$T/cni.out")"
	fi
}

# succeeds DESC: the last plugin run exited 0 and printed nothing (DEL, CHECK, GC, STATUS).
succeeds() {
	if [ "$rc" = 0 ] && [ ! -s "$T/cni.out" ]; then
		pass "$1"
	else
		fail "$1 (exit $rc): $(head -c 400 "$T/cni.out")"
	fi
}


# cprobe DESC NS SRC DST reached|blocked: tcp :80 from NS (address SRC) to the listener at DST.
cprobe() { probe_tcp "$1" "$L_INET" "$2" "$3" "$4" 80 "$5"; }


# same_json A B: the files hold the same JSON value.
same_json() { diff <(jq -S . "$1") <(jq -S . "$2") >/dev/null; }

# --- ptp alone: the baseline --------------------------------------------------------------------

note "ptp ADD for containers 1 and 2 (network $NET) and 4 (othernet)"
check "ptp ADD c1" ptp_add c1 "$s1" eth0 $NET 10.77.0.0/24
check "ptp ADD c2" ptp_add c2 "$s2" eth0 $NET 10.77.0.0/24
check "ptp ADD c4" ptp_add c4 "$s4" eth1 othernet 10.78.0.0/24
P1=$T/ptp-c1-eth0.json P2=$T/ptp-c2-eth0.json P4=$T/ptp-c4-eth1.json
for p in "$P1" "$P2" "$P4"; do
	[ -s "$p" ] || die "ptp did not set the containers up"
done
IP1=$(jq -r '.ips[0].address | split("/")[0]' "$P1")
IP2=$(jq -r '.ips[0].address | split("/")[0]' "$P2")
HV1=$(jq -r '.interfaces[] | select(.sandbox == null) | .name' "$P1")
ID1=$(sid $NET c1 eth0) ID2=$(sid $NET c2 eth0) ID4=$(sid othernet c4 eth1)
note "c1 is $IP1 behind $HV1 (session $ID1), c2 $IP2 (session $ID2)"

cprobe "baseline: c1 to the allowed address" "$s1" "$IP1" 198.51.100.10 reached
cprobe "baseline: c1 to the address no rule allows" "$s1" "$IP1" 203.0.113.10 reached

setup tfd_config "$T/tf.json"
setup bpffs_mount "$T/bpffs"
tfd_start "$host"

ALLOW='"allow":[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]},{"cidr":"198.51.100.0/24","proto":"udp","ports":[7]}]'

# --- VERSION, STATUS ------------------------------------------------------------------------------

note "VERSION and STATUS"
echo '{"cniVersion":"1.1.0"}' >"$T/version.conf"
cni "$PLUGIN" VERSION - - - "$T/version.conf"
rc=$?
check "VERSION lists 1.0.0 and 1.1.0 (exit $rc)" jqt \
	'.cniVersion == "1.1.0" and (.supportedVersions | index("1.0.0") and index("1.1.0"))' "$T/cni.out"
tf_conf "$T/status.conf" $NET - "" 1.1.0
cni "$PLUGIN" STATUS - - - "$T/status.conf"
rc=$?
succeeds "STATUS with tapfenced up: success, no output"

# --- ADD, enforcement -----------------------------------------------------------------------------

note "tapfence-cni ADD for c1, chained after ptp"
tf_conf "$T/c1.conf" $NET "$P1" "$ALLOW"
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/c1.conf"
rc=$?
check "ADD c1 succeeds (exit $rc: $(head -c 200 "$T/cni.out"))" test "$rc" = 0
check "... its result is ptp's, unchanged" same_json "$T/cni.out" "$P1"
check "... the session is $ID1 (network, container, ifname)" has_session "$ID1"
tfc --json session show "$ID1" >"$T/show1.json"
check "... on ptp's host veth $HV1, for c1's MAC and address, the gateway's" jqt \
	--arg dev "$HV1" --arg ip "$IP1" --arg mac "$(jq -r '.interfaces[] | select(.sandbox) | .mac' "$P1")" \
	--arg gw "$(jq -r '.ips[0].gateway' "$P1")" \
	--arg gwmac "$(jq -r '.interfaces[] | select(.sandbox == null) | .mac' "$P1")" \
	'.session.spec | .ifname == $dev and .guest.ipv4 == $ip and .guest.mac == $mac and
	 .gateway.ipv4 == $gw and .gateway.mac == $gwmac' "$T/show1.json"
cprobe "enforced: c1 to the allowed address" "$s1" "$IP1" 198.51.100.10 reached
cprobe "enforced: c1 to the address no rule allows" "$s1" "$IP1" 203.0.113.10 blocked
expect_event session="$ID1" verdict=deny reason=no_rule dst=203.0.113.10 -- "enforced: the denial is c1's session's no_rule"

note "CHECK after ADD"
cni "$PLUGIN" CHECK c1 "$s1" eth0 "$T/c1.conf"
rc=$?
succeeds "CHECK c1 passes: the session is in force and tapfence first on $HV1"
n "$host" "$TF_BUILD/tests/tools/tcx_ahead" "$HV1" "$T/bpffs/ahead" 2>"$T/ahead.err"
defer rm -f "$T/bpffs/ahead"
check "a no-op attached ahead of tapfence on $HV1 ($(cat "$T/ahead.err"))" test -e "$T/bpffs/ahead"
cni "$PLUGIN" CHECK c1 "$s1" eth0 "$T/c1.conf"
rc=$?
says "CHECK c1 fails: tapfence is not first" 101 "tapfence's programs are not first on \`$HV1'"
rm -f "$T/bpffs/ahead"
cni "$PLUGIN" CHECK c1 "$s1" eth0 "$T/c1.conf"
rc=$?
succeeds "CHECK c1 passes again once it is gone"

# --- GC -----------------------------------------------------------------------------------------

note "GC: c2's attachment is stale, c1's valid, c4's another network's"
tf_conf "$T/c2.conf" $NET "$P2" "$ALLOW"
cni "$PLUGIN" ADD c2 "$s2" eth0 "$T/c2.conf"
check "ADD c2" test $? = 0
tf_conf "$T/c4.conf" othernet "$P4" "$ALLOW"
cni "$PLUGIN" ADD c4 "$s4" eth1 "$T/c4.conf"
check "ADD c4 (othernet)" test $? = 0
check "... session $ID2 exists" has_session "$ID2"
check "... session $ID4 exists" has_session "$ID4"
tf_conf "$T/gc.conf" $NET - '"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"eth0"},{"containerID":"c9","ifname":"eth0"}]' 1.1.0
cni "$PLUGIN" GC - - - "$T/gc.conf"
rc=$?
succeeds "GC succeeds"
check_not "... c2's session (stale) is gone" has_session "$ID2"
check "... c1's session (valid) is kept" has_session "$ID1"
check "... c4's session (another network) is kept" has_session "$ID4"
tf_conf "$T/gc-none.conf" $NET - "" 1.1.0
cni "$PLUGIN" GC - - - "$T/gc-none.conf"
rc=$?
says "GC without cni.dev/valid-attachments is refused" 7 "cni.dev/valid-attachments: missing"
check "... and deletes nothing" has_session "$ID1"

# --- DEL ----------------------------------------------------------------------------------------

note "DEL, twice"
cni "$PLUGIN" DEL c1 "$s1" eth0 "$T/c1.conf"
rc=$?
succeeds "DEL c1 succeeds"
check_not "... its session is gone" has_session "$ID1"
# DEL never releases: the device is left denying everything (docs/guard.md), not unfiltered.
cprobe "... and c1's device is left denying (the guard)" "$s1" "$IP1" 203.0.113.10 blocked
cni "$PLUGIN" DEL c1 "$s1" eth0 "$T/c1.conf"
rc=$?
succeeds "a second DEL c1 succeeds too"
tf_conf "$T/c2-noprev.conf" $NET - "$ALLOW"
cni "$PLUGIN" DEL c2 - eth0 "$T/c2-noprev.conf"
rc=$?
succeeds "DEL without CNI_NETNS or prevResult, of a session GC removed, succeeds"

note "CHECK after the session was deleted behind the plugin's back"
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/c1.conf"
check "ADD c1 again" test $? = 0
check "... tfc session del $ID1" tfc_q session del "$ID1"
cni "$PLUGIN" CHECK c1 "$s1" eth0 "$T/c1.conf"
rc=$?
says "CHECK c1 fails: no session" 101 "session \`$ID1' is not in force"

# --- configs --------------------------------------------------------------------------------------

note "a config tapfenced refuses"
tf_conf "$T/bad.conf" $NET "$P1" '"allow":[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80,70000]}]'
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/bad.conf"
rc=$?
says "ADD with port 70000: CNI error 7 naming allow[0].ports[1]" 7 "allow[0].ports[1]"
check "... the message quotes the value ($(jq -r .msg "$T/cni.out"))" jqt '.msg | contains("70000")' "$T/cni.out"
check_not "... no session is left" has_session "$ID1"
cprobe "... c1's device still denies everything" "$s1" "$IP1" 203.0.113.10 blocked

tf_conf "$T/bad-rc.conf" $NET "$P1" "$ALLOW"',"runtimeConfig":{"tapfenceAllow":[{"cidr":"10.0.0.1/8"}]}'
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/bad-rc.conf"
rc=$?
says "a bad rule from the runtime is named as runtimeConfig.tapfenceAllow[0].cidr" 7 \
	"runtimeConfig.tapfenceAllow[0].cidr"
tf_conf "$T/typo.conf" $NET "$P1" '"alow":[]'
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/typo.conf"
rc=$?
says "an unknown key is refused (code 2), not ignored" 2 "unknown field \`alow'"

note "spec file merged under the config; runtimeConfig.tapfenceAllow over allow"
GW1=$(jq -r '.ips[0].gateway' "$P1")
printf '{"resolver":{"ipv4":"%s"},"allow":[{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}]}\n' \
	"$GW1" >"$T/spec-file.json"
tf_conf "$T/file.conf" $NET "$P1" "$ALLOW,\"spec\":\"$T/spec-file.json\""
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/file.conf"
check "ADD c1 with a spec file" test $? = 0
tfc --json session show "$ID1" >"$T/show-file.json"
check "... the resolver is the file's, the rules the config's" jqt --arg gw "$GW1" \
	'.session.spec | .resolver.ipv4 == $gw and (.allow | length == 2) and
	 all(.allow[]; .cidr == "198.51.100.0/24")' "$T/show-file.json"
cni "$PLUGIN" DEL c1 "$s1" eth0 "$T/file.conf"
check "DEL c1" test $? = 0
tf_conf "$T/rc.conf" $NET "$P1" "$ALLOW"',"runtimeConfig":{"tapfenceAllow":[{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80]}]}'
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/rc.conf"
check "ADD c1 with runtimeConfig.tapfenceAllow" test $? = 0
cprobe "runtimeConfig's rules: c1 to 203.0.113.10" "$s1" "$IP1" 203.0.113.10 reached
cprobe "runtimeConfig's rules: c1 to 198.51.100.10 (the config's rule)" "$s1" "$IP1" 198.51.100.10 blocked
cni "$PLUGIN" DEL c1 "$s1" eth0 "$T/rc.conf"
check "DEL c1" test $? = 0

# --- bridge: the veth, not the bridge; the bridge's MAC is the gateway's -------------------------

note "bridge instead of ptp: the host side is a bridge and a veth on it"
printf '{"cniVersion":"1.0.0","name":"brnet","type":"bridge","bridge":"tfbr0","isGateway":true,"ipMasq":false,"ipam":{"type":"host-local","subnet":"10.79.0.0/24","dataDir":"%s","routes":[{"dst":"0.0.0.0/0"}]}}\n' \
	"$T/ipam" >"$T/bridge.conf"
if cni "$CNI_BIN/bridge" ADD c5 "$s5" eth0 "$T/bridge.conf"; then
	cp "$T/cni.out" "$T/bridge-c5.json"
	defer cni "$CNI_BIN/bridge" DEL c5 "$s5" eth0 "$T/bridge.conf"
	defer ip -n "$host" link del tfbr0
	pass "bridge ADD c5"
else
	fail "bridge ADD c5: $(head -c 300 "$T/cni.out")"
fi
P5=$T/bridge-c5.json
IP5=$(jq -r '.ips[0].address | split("/")[0]' "$P5")
HV5=$(jq -r '.interfaces[] | select(.sandbox == null and .name != "tfbr0") | .name' "$P5")
ID5=$(sid brnet c5 eth0)
cprobe "bridge, baseline: c5 to the address no rule allows" "$s5" "$IP5" 203.0.113.10 reached
tf_conf "$T/c5.conf" brnet "$P5" "$ALLOW"
cni "$PLUGIN" ADD c5 "$s5" eth0 "$T/c5.conf"
rc=$?
check "ADD c5 after bridge (exit $rc: $(head -c 200 "$T/cni.out"))" test "$rc" = 0
tfc --json session show "$ID5" >"$T/show5.json" 2>"$T/cli.err"
check "... on the veth $HV5, the bridge's MAC the gateway's" jqt --arg dev "$HV5" \
	--arg gwmac "$(ip -n "$host" -j link show tfbr0 | jq -r '.[0].address')" \
	'.session.spec | .ifname == $dev and .gateway.mac == $gwmac' "$T/show5.json"
cprobe "bridge, enforced: c5 to the allowed address" "$s5" "$IP5" 198.51.100.10 reached
cprobe "bridge, enforced: c5 to the address no rule allows" "$s5" "$IP5" 203.0.113.10 blocked
cni "$PLUGIN" DEL c5 "$s5" eth0 "$T/c5.conf"
rc=$?
succeeds "DEL c5"

# --- the daemon down ------------------------------------------------------------------------------

note "tapfenced down"
tfd_stop
cni "$PLUGIN" ADD c1 "$s1" eth0 "$T/c1.conf"
rc=$?
says "ADD fails with the daemon down (try again later)" 11 "tapfenced"
check_not "... and prints no result: the runtime must not start the sandbox" jqt '.interfaces' "$T/cni.out"
cni "$PLUGIN" STATUS - - - "$T/status.conf"
rc=$?
says "STATUS says plugin not available (50)" 50 "tapfenced does not answer"
cni "$PLUGIN" DEL c1 "$s1" eth0 "$T/c1.conf"
rc=$?
says "DEL fails too: whether a session is still in force is unknown" 11 "tapfenced"
TFD_KEEP_LOG=1 tfd_start "$host"
check_not "restarted, tapfenced has no session for c1" has_session "$ID1"
cprobe "... and nothing judges c1's traffic" "$s1" "$IP1" 203.0.113.10 reached

# --- a tap in the sandbox (tc-redirect-tap's wiring) -------------------------------------------

note "a microVM sandbox: ptp's eth0 redirected to and from tap0, as tc-redirect-tap does"
check "ptp ADD c3" ptp_add c3 "$s3" eth0 $NET 10.77.0.0/24
P3=$T/ptp-c3-eth0.json
[ -s "$P3" ] || die "ptp did not set c3 up"
IP3=$(jq -r '.ips[0].address | split("/")[0]' "$P3")
MAC3=$(jq -r '.interfaces[] | select(.sandbox) | .mac' "$P3")
GWMAC3=$(jq -r '.interfaces[] | select(.sandbox == null) | .mac' "$P3")
ID3=$(sid $NET c3 eth0)
setup ip -n "$s3" tuntap add dev tap0 mode tap
setup ip -n "$s3" link set tap0 up
# redirect FROM TO: every frame FROM receives leaves by TO, through a match-everything filter:
# matchall, or u32 on a kernel without cls_matchall (CONFIG_NET_CLS_MATCHALL, as this VM's).
redirect() {
	ip netns exec "$s3" tc qdisc add dev "$1" ingress || return
	ip netns exec "$s3" tc filter add dev "$1" ingress matchall \
		action mirred egress redirect dev "$2" 2>/dev/null ||
		ip netns exec "$s3" tc filter add dev "$1" ingress protocol all u32 match u32 0 0 \
			action mirred egress redirect dev "$2"
}
setup redirect eth0 tap0
setup redirect tap0 eth0
# tc-redirect-tap's result: ptp's, with the tap appended as an interface of the sandbox.
jq --arg ns "/run/netns/$s3" --arg mac "$(ip -n "$s3" -j link show tap0 | jq -r '.[0].address')" \
	'.interfaces += [{"name":"tap0","mac":$mac,"sandbox":$ns}]' "$P3" >"$T/redirect-c3.json"

vm() { tapvmm "$s3" tap0 "$MAC3" "$IP3" "$GWMAC3" udp "$1" 7; }
vm_probe() { # DESC DST reached|blocked
	tf_mark
	if [ "$3" = reached ]; then
		check "$1: the guest gets the echo" vm "$2"
		expect_reached "$L_INET" "udp $2:7 from $IP3:" "$1: reached the listener"
	else
		check_not "$1: the guest gets no echo" vm "$2"
		expect_not_reached "$L_INET" "udp $2:7 from $IP3:" "$1: never reached the listener"
	fi
}
vm_probe "baseline: the VM to the allowed address" 198.51.100.10 reached
vm_probe "baseline: the VM to the address no rule allows" 203.0.113.10 reached

tf_conf "$T/c3.conf" $NET "$T/redirect-c3.json" "$ALLOW"
cni "$PLUGIN" ADD c3 "$s3" eth0 "$T/c3.conf"
rc=$?
check "ADD c3 succeeds (exit $rc: $(head -c 300 "$T/cni.out"))" test "$rc" = 0
tfc --json session show "$ID3" >"$T/show3.json" 2>"$T/cli.err"
check "... the session is on tap0 in the sandbox's namespace" jqt --arg ns "/run/netns/$s3" \
	'.session.spec | .ifname == "tap0" and .netns == $ns' "$T/show3.json"
check "... tapfenced says its programs head tap0's chains" jqt '.session.first' "$T/show3.json"
vm_probe "enforced: the VM to the allowed address" 198.51.100.10 reached
vm_probe "enforced: the VM to the address no rule allows" 203.0.113.10 blocked
expect_event session="$ID3" verdict=deny reason=no_rule dst=203.0.113.10 -- "enforced: the denial is c3's session's"
cni "$PLUGIN" CHECK c3 "$s3" eth0 "$T/c3.conf"
rc=$?
succeeds "CHECK c3 passes"
cni "$PLUGIN" DEL c3 "$s3" eth0 "$T/c3.conf"
rc=$?
succeeds "DEL c3"
check_not "... its session is gone" has_session "$ID3"

tf_done
