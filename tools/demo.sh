#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that tapfence works end to end, as a demo: two guests, two allowlists, probes that must get
# through or be blocked, by address, by name through the session's resolver and by TLS server
# name, then the event feed and the counters. Run by `make demo'; exits 0 only if every probe
# behaved as expected (its result, and the reasons it must leave in the feed), so it doubles as a
# smoke test.
#
#  ┌────────────────────┐   ┌────────────────────┐
#  │ $alpha (guest)     │   │ $beta (guest)      │
#  │ 10.30.1.2/24       │   │ 10.30.2.2/24       │
#  │ listener :8080     │   │                    │
#  └─────────┬──────────┘   └─────────┬──────────┘
#            │ veth (a VM's tap)      │ veth
#  ┌─────────┴────────────────────────┴──────────┐
#  │ $host: router; tapfenced on ha and hb,      │
#  │ sessions "alpha" and "beta"; dnsmasq on     │
#  │ 10.30.1.1:53 and 10.30.2.1:53 only (each    │
#  │ guest's gateway is its resolver), no        │
#  │ upstream, two records: www.allowed.test and │
#  │ forbidden.test, both A 198.51.100.20        │
#  └──────────────────────┬──────────────────────┘
#                         │ veth
#  ┌──────────────────────┴──────────────────────┐
#  │ $inet: fake internet; web servers on        │
#  │ 198.51.100.10:80 and 203.0.113.10:80, a TLS │
#  │ server on 198.51.100.20:443 (reads a whole  │
#  │ ClientHello, answers one byte), a fake      │
#  │ metadata server on 169.254.169.254:80       │
#  └─────────────────────────────────────────────┘
#
# alpha's allowlist has a host rule, tcp/443 to www.allowed.test: alpha resolves the name, reaches
# the address it learnt with a ClientHello naming it, and is refused a query for forbidden.test and
# a ClientHello naming forbidden.test sent to that same address. The guests' clients: busybox
# wget and nslookup and tfprobe (tools/vm/tfprobe.c) in a microVM; curl, dig and tfprobe (built
# here) in a namespace.
#
# Where QEMU and busybox-static are installed (make deps), alpha and beta are real microVMs
# instead (tests/vm/lib.sh: QEMU's microvm machine, a Debian cloud kernel, a busybox initramfs)
# on taps named ha and hb in $host, and the probes run inside them over their serial consoles; a
# guest whose VM does not boot (twice) falls back to its namespace. TF_DEMO_VM=0 uses namespaces
# only.
#
# Everything lives in namespaces and a scratch directory made here, and is removed on exit; the
# processes (QEMU, dnsmasq, the servers, tapfenced) are started here and killed by PID.
# TF_KEEP=1 keeps the scratch directory (daemon log, event log) for a look afterwards.

set -uo pipefail
TF_CONNECT_TIMEOUT=${TF_CONNECT_TIMEOUT:-1}
# shellcheck source-path=SCRIPTDIR source=../tests/netns/lib.sh
source "$(dirname "$0")/../tests/netns/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../tests/vm/lib.sh
source "$(dirname "$0")/../tests/vm/lib.sh"

tf_init
host=tf-demo-host-$TF_SFX
alpha=tf-demo-alpha-$TF_SFX
beta=tf-demo-beta-$TF_SFX
inet=tf-demo-inet-$TF_SFX

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	tf_cleanup
	echo "(cleaned up: namespaces, bpffs, pins, processes)"
}

heading() { printf '\n== %s\n' "$*"; }
setup() { "$@" >/dev/null 2>&1 || die "setup: $*"; }
indent() { sed 's/^/    /'; }
# shown CMD...: print a CLI command, then run it with its output indented.
shown() {
	echo "  \$ tapfence $*"
	tfc "$@" 2>&1 | indent
	return "${PIPESTATUS[0]}"
}

# --- topology ---------------------------------------------------------------------------------

heading "Setting up: two guests, a host, a fake internet"
command -v dnsmasq >/dev/null || die "dnsmasq is not installed (tools/deps.sh: dnsmasq-base)"
setup ns_add "$host" "$inet"
setup ns_router "$host"
A_MAC=02:00:00:00:1e:02 A_GW=02:00:00:00:1e:01
B_MAC=02:00:00:00:1f:02 B_GW=02:00:00:00:1f:01

# --- the guests: microVMs where they boot, namespaces where not (tests/vm/lib.sh) -------------
declare -A guest_kind=([alpha]=netns [beta]=netns)
# guest_netns NAME: NAME as a namespace on a veth (ha or hb in $host), as without QEMU.
guest_netns() {
	case $1 in
	alpha)
		setup ns_add "$alpha"
		setup guest_link "$alpha" alpha $A_MAC 10.30.1.2/24 fd00:1e:1::2/64 "$host" ha $A_GW 10.30.1.1/24 fd00:1e:1::1/64
		;;
	beta)
		setup ns_add "$beta"
		setup guest_link "$beta" beta $B_MAC 10.30.2.2/24 fd00:1e:2::2/64 "$host" hb $B_GW 10.30.2.1/24 fd00:1e:2::1/64
		;;
	esac
	guest_kind[$1]=netns
}
if [ "${TF_DEMO_VM:-1}" = 0 ]; then
	echo "  TF_DEMO_VM=0: the guests are network namespaces"
	guest_netns alpha
	guest_netns beta
elif ! vm_prereqs; then
	echo "  no microVMs (missing:$VM_MISSING; make deps installs them): the guests are network namespaces"
	guest_netns alpha
	guest_netns beta
elif ! vm_image >"$T/vm-image.out"; then
	echo "  the microVM image did not build: the guests are network namespaces"
	indent <"$T/vm-image.out"
	guest_netns alpha
	guest_netns beta
else
	indent <"$T/vm-image.out"
	echo "  booting alpha and beta as microVMs (QEMU microvm, kernel $(cat "$VM_DIR/kernel/release"), busybox)"
	setup tap_link "$host" ha $A_GW 10.30.1.1/24 fd00:1e:1::1/64 $A_MAC 10.30.1.2 fd00:1e:1::2
	setup tap_link "$host" hb $B_GW 10.30.2.1/24 fd00:1e:2::1/64 $B_MAC 10.30.2.2 fd00:1e:2::2
	vm_start alpha "$host" ha $A_MAC 10.30.1.2/24 10.30.1.1 fd00:1e:1::2/64 fd00:1e:1::1 8080 >/dev/null
	vm_start beta "$host" hb $B_MAC 10.30.2.2/24 10.30.2.1 fd00:1e:2::2/64 fd00:1e:2::1 >/dev/null
	for g in alpha beta; do
		if vm_ready $g >"$T/vm-ready.out"; then
			guest_kind[$g]=vm
			echo "  $g: a microVM on tap h${g:0:1}, booted in ${VM_READY_S} s (QEMU pid ${vm_pid[$g]}, accel $VM_ACCEL)"
		else
			echo "  $g: the microVM did not boot; $g is a network namespace instead"
			indent <"$T/vm-ready.out"
			vm_stop $g
			setup ip -n "$host" link del "h${g:0:1}"
			guest_netns $g
		fi
	done
fi
# --- end of the guests -------------------------------------------------------------------------
# A namespace guest runs tfprobe for its TLS probes (a microVM has the static one in its image).
if [ "${guest_kind[alpha]}" = netns ] || [ "${guest_kind[beta]}" = netns ]; then
	command -v dig >/dev/null || die "dig is not installed (tools/deps.sh: bind9-dnsutils)"
	cc -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE "$TF_ROOT/tools/vm/tfprobe.c" \
		-o "$T/tfprobe" >"$T/tfprobe.cc.out" 2>&1 || die "cannot build tfprobe: $(head -n 3 "$T/tfprobe.cc.out")"
fi
setup inet_link "$host" "$inet" 97 10.30.0.0/16 fd00:1e::/32 \
	198.51.100.0/24 203.0.113.0/24 169.254.169.254/32 -- \
	198.51.100.10 198.51.100.20 203.0.113.10 169.254.169.254

# The resolver: dnsmasq in $host on the two gateway addresses only (as in tests/netns/test_dns.sh):
# no upstream, no /etc/hosts, no config file, no DHCP, static records, a query log.
DNS_LOG=$T/dnsmasq.log
dnsmasq_start "$host" "$DNS_LOG" "10.30.1.1,10.30.2.1" --local=/test/ \
	--host-record=www.allowed.test,198.51.100.20,300 \
	--host-record=forbidden.test,198.51.100.20,300

# The TLS server: tools/bench/tlsconn.py's, which reads one whole ClientHello per connection,
# answers one byte and logs "hello PEER BYTES" (or "error PEER ..."). It takes connections one at
# a time; tfprobe resets a connection whose hello went unanswered, which frees it at once.
L_TLS=$T/tls.log
: >"$L_TLS"
ip netns exec "$inet" "$PY" "$TF_ROOT/tools/bench/tlsconn.py" serve --addr 198.51.100.20 --port 443 \
	--ready "$T/tls.ready" --log "$L_TLS" >"$T/tlsconn.out" 2>&1 &
TLS_PID=$!
defer kill_pid "$TLS_PID"
wait_for 5 test -e "$T/tls.ready" || die "the TLS server did not start: $(tail -n 3 "$T/tlsconn.out")"
tf_watch "$L_TLS"

L_INET=$T/inet.log L_ALPHA=$T/alpha.log
listener_start "$inet" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80 tcp:169.254.169.254:80
if [ "${guest_kind[alpha]}" = vm ]; then
	# alpha's own listener (tfprobe serve 8080) prints "HIT tcp 8080 from PEER" on its console.
	L_ALPHA=${vm_con[alpha]}
else
	listener_start "$alpha" "$L_ALPHA" tcp:10.30.1.2:8080
fi
echo "  alpha 10.30.1.2 (${guest_kind[alpha]}) and beta 10.30.2.2 (${guest_kind[beta]}), each on its own link"
echo "  into the host, which routes to web servers at 198.51.100.10 and 203.0.113.10, a TLS"
echo "  server at 198.51.100.20:443 and a metadata server at 169.254.169.254; each guest's"
echo "  resolver (dnsmasq) is its gateway, where www.allowed.test and forbidden.test both"
echo "  resolve to 198.51.100.20"

# --- probes -----------------------------------------------------------------------------------
# A probe runs a client in a guest and is judged by what the other end saw: "reached" means the
# client got its reply and the server logged it, "blocked" that neither happened.
#   http GUEST HOST PORT       an HTTP GET; the web server's log (alpha's console, for alpha's
#                              listener in a microVM) shows the connection
#   dns GUEST NAME             an A query to GUEST's resolver; the reply holds an address, and
#                              dnsmasq's query log shows the query
#   tls GUEST SNI HOST PORT    a ClientHello naming SNI (tfprobe tls); the server's one-byte
#                              answer came back, and its log shows the hello

declare -A guest_ns=([alpha]=$alpha [beta]=$beta) guest_ip=([alpha]=10.30.1.2 [beta]=10.30.2.2) \
	guest_res=([alpha]=10.30.1.1 [beta]=10.30.2.1)
probes_ok=0 probes_bad=0

# guest_run KIND GUEST ARG...: the probe's client, in GUEST's microVM (over its console) or its
# namespace; 0 iff its reply came back. A dns probe sets PROBE_ANSWER to the first address.
guest_run() {
	local kind=$1 g=$2
	shift 2
	if [ "${guest_kind[$g]}" = vm ]; then
		case $kind in
		http) vm_run "$g" get "$1" "$2" ;; # busybox wget
		tls) vm_run "$g" tls "$1" "$2" "$3" ;; # tfprobe tls -w 2
		dns) # busybox nslookup, "ANSWER ADDR" lines
			vm_run "$g" dns "$1" "${guest_res[$g]}"
			PROBE_ANSWER=$(awk '$1 == "ANSWER" { print $2; exit }' "$VM_OUT")
			[ -n "$PROBE_ANSWER" ]
			;;
		esac
	else
		case $kind in
		http) tcp_get "${guest_ns[$g]}" "$1" "$2" ;;
		tls) n "${guest_ns[$g]}" timeout 5 "$T/tfprobe" tls -w 2 "$1" "$2" "$3" >"$T/client.out" 2>&1 ;;
		dns)
			n "${guest_ns[$g]}" timeout 5 dig @"${guest_res[$g]}" +time=2 +tries=1 +short "$1" A \
				>"$T/client.out" 2>&1
			PROBE_ANSWER=$(grep -m 1 -E '^[0-9]+(\.[0-9]+){3}$' "$T/client.out")
			[ -n "$PROBE_ANSWER" ]
			;;
		esac
	fi
}

# run_probe KIND GUEST ARG...: one probe (see above); sets PROBE_RESULT to reached, blocked or
# "half-way (...)", and PROBE_ANSWER for dns.
run_probe() {
	local kind=$1 g=$2 log text got=0 logged=0
	shift 2
	case $kind in
	http)
		log=$L_INET text="tcp $1:$2 from ${guest_ip[$g]}:"
		if [ "$1" = 10.30.1.2 ]; then
			log=$L_ALPHA
			[ "${guest_kind[alpha]}" = vm ] && text="HIT tcp $2 from ${guest_ip[$g]}:"
		fi
		;;
	dns) log=$DNS_LOG text="query[A] $1 from ${guest_ip[$g]}" ;;
	tls) log=$L_TLS text="hello ${guest_ip[$g]}:" ;;
	esac
	PROBE_ANSWER=
	tf_mark
	guest_run "$kind" "$g" "$@" && got=1
	if [ $got = 1 ]; then
		wait_for 2 grep_since "$log" "$text" && logged=1
	else
		sleep 0.3
		grep_since "$log" "$text" && logged=1
	fi
	if [ $got = 1 ] && [ $logged = 1 ]; then PROBE_RESULT=reached
	elif [ $got = 0 ] && [ $logged = 0 ]; then PROBE_RESULT=blocked
	else PROBE_RESULT="half-way (reply: $got, server saw it: $logged)"
	fi
}

# feed_reasons GUEST: the reasons of GUEST's session's events since tf_mark (tapfenced's event
# log, the same lines as the feed), each once, in order.
feed_reasons() {
	since "$TF_EVENTS" | grep -F "\"session\":\"$1\"," | grep -o '"reason":"[a-z0-9_]*"' |
		cut -d'"' -f4 | awk '!seen[$0]++' | paste -sd ' '
}
# shellcheck disable=SC2317 # run by wait_for
feed_has() { [[ " $(feed_reasons "$1") " == *" $2 "* ]]; }

# judge GUEST WHAT WHY WANT [REASON...]: print the probe's line and count it as expected or not.
# WANT is reached or blocked; every REASON must be in GUEST's feed since the probe began (the
# daemon writes it at least every 250 ms). The line shows every reason the feed gave.
judge() {
	local g=$1 what=$2 why=$3 want=$4 missing='' r line
	shift 4
	for r in "$@"; do
		wait_for 2 feed_has "$g" "$r" || missing+=" $r"
	done
	line=$(printf '  %-5s %s (%s): %s' "$g" "$what" "$why" "$PROBE_RESULT")
	[ "$PROBE_RESULT" = reached ] && [ -n "$PROBE_ANSWER" ] && line+=" $PROBE_ANSWER"
	line+="; feed: $(feed_reasons "$g")"
	if [ "$PROBE_RESULT" = "$want" ] && [ -z "$missing" ]; then
		echo "$line"
		probes_ok=$((probes_ok + 1))
	else
		echo "$line   <-- UNEXPECTED, wanted $want${missing:+ and in the feed:$missing}"
		probes_bad=$((probes_bad + 1))
	fi
}

# probe GUEST HOST PORT WHY WANT [REASON...]: an HTTP probe, judged.
probe() {
	run_probe http "$1" "$2" "$3"
	judge "$1" "-> $2:$3" "$4" "$5" "${@:6}"
}
# probe_dns GUEST NAME WHY WANT [REASON...]: an A query for NAME at GUEST's resolver, judged.
probe_dns() {
	run_probe dns "$1" "$2"
	judge "$1" "asks for $2" "$3" "$4" "${@:5}"
}
# probe_tls GUEST SNI HOST PORT WHY WANT [REASON...]: a ClientHello naming SNI, judged.
probe_tls() {
	run_probe tls "$1" "$2" "$3" "$4"
	judge "$1" "-> $3:$4 SNI $2" "$5" "$6" "${@:7}"
}

heading "Before tapfence: every guest reaches everything"
baseline=("http alpha 198.51.100.10 80" "http alpha 203.0.113.10 80" "http alpha 169.254.169.254 80"
	"http beta 203.0.113.10 80" "http beta 198.51.100.10 80" "http beta 169.254.169.254 80"
	"http beta 10.30.1.2 8080" "dns alpha www.allowed.test" "dns alpha forbidden.test"
	"tls alpha www.allowed.test 198.51.100.20 443" "tls alpha forbidden.test 198.51.100.20 443"
	"tls beta www.allowed.test 198.51.100.20 443")
baseline_bad=0
for p in "${baseline[@]}"; do
	# shellcheck disable=SC2086 # a probe's words
	run_probe $p
	[ "$PROBE_RESULT" = reached ] || { echo "  baseline: $p: $PROBE_RESULT"; baseline_bad=$((baseline_bad + 1)); }
done
[ $baseline_bad = 0 ] || die "the network does not work without tapfence; a demo would show nothing"
echo "  ${#baseline[@]} of ${#baseline[@]} probes reached their server: the metadata server too, both names"
echo "  resolve, and the TLS server answers a ClientHello naming either"
# For a second or two after a link comes up, the host announces its IPv6 multicast groups (MLD
# reports, which tapfence denies towards the guest). Let that settle, so the feed shows the probes.
sleep 2

# --- tapfenced --------------------------------------------------------------------------------

heading "Starting tapfenced in the host namespace"
bpffs_mount "$T/bpffs"
tfd_config "$T/tapfenced.json"
tfd_start "$host"
echo "  config $TFD_CONFIG: control socket, pins (a private bpffs) and state all under $T"
# The feed, from now on (shown at the end).
"$TF_BUILD/tapfence" --socket "$TF_SOCK" events --follow >"$T/feed.txt" 2>&1 &
FEED_PID=$!
defer kill_pid "$FEED_PID"

heading "Pushing two allowlists through the CLI"
session_spec "$T/alpha.json" alpha ha $A_MAC 10.30.1.2 fd00:1e:1::2 $A_GW 10.30.1.1 fd00:1e:1::1 \
	'[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]},
	  {"host":"www.allowed.test","proto":"tcp","ports":[443]}]'
session_spec "$T/beta.json" beta hb $B_MAC 10.30.2.2 fd00:1e:2::2 $B_GW 10.30.2.1 fd00:1e:2::1 \
	'[{"cidr":"203.0.113.0/24","proto":"tcp","ports":[80,443]}]'
echo "  alpha may open tcp to 198.51.100.0/24 port 80, and tcp to www.allowed.test port 443: to"
echo "        the addresses its resolver gives for that name, with a ClientHello naming it"
echo "  beta  may open tcp to 203.0.113.0/24 ports 80 and 443"
echo "  (each session's resolver is its gateway, 10.30.1.1 and 10.30.2.1: see the specs)"
shown session add "$T/alpha.json" || die "session add alpha failed"
shown session add "$T/beta.json" || die "session add beta failed"
shown session list

heading "Probes with tapfence"
probe alpha 198.51.100.10 80 "allowed by rule" reached allow_rule
probe alpha 203.0.113.10 80 "not in alpha's allowlist" blocked no_rule
probe alpha 169.254.169.254 80 "metadata" blocked floor_metadata
probe beta 203.0.113.10 80 "allowed by rule" reached allow_rule
probe beta 198.51.100.10 80 "not in beta's allowlist" blocked no_rule
probe beta 169.254.169.254 80 "metadata" blocked floor_metadata
probe beta 10.30.1.2 8080 "another guest" blocked other_session

heading "Probes by name: DNS through the session's resolver, the TLS server name on 443"
probe_dns alpha www.allowed.test "alpha's host rule" reached allow_dns allow_dns_answer
# The address alpha was given (198.51.100.20), now learnt for www.allowed.test.
probe_tls alpha www.allowed.test "${PROBE_ANSWER:-198.51.100.20}" 443 "the address it learnt" reached \
	allow_learned allow_tls
probe_dns alpha forbidden.test "no rule names it" blocked dns_name_denied
probe_tls alpha forbidden.test 198.51.100.20 443 "learnt for www.allowed.test" blocked \
	tls_sni_denied
probe_tls beta www.allowed.test 198.51.100.20 443 "no rule of beta's" blocked no_rule
echo "  (on 443 the ClientHello's server name must be one a host rule allows, and one the"
echo "  address was learnt for: an allowed address does not carry a forbidden name)"

heading "Changing beta's allowlist live"
shown rule add beta '{"cidr":"198.51.100.10/32","proto":"tcp","ports":[80]}' ||
	probes_bad=$((probes_bad + 1))
probe beta 198.51.100.10 80 "after rule add" reached allow_rule
probe beta 169.254.169.254 80 "metadata" blocked floor_metadata
echo "  (a rule cannot open the metadata server: the floor of always-denied ranges comes first)"
shown rule add beta '{"cidr":"169.254.169.254/32","proto":"tcp","ports":[80]}' # refused or not, it must not open
probe beta 169.254.169.254 80 "metadata, with a rule for it" blocked floor_metadata

# --- feed and counters ------------------------------------------------------------------------

heading "The event feed (tapfence events --follow, one line per decision worth reporting)"
sleep 0.3
kill_pid "$FEED_PID"
if [ -s "$T/feed.txt" ]; then
	indent <"$T/feed.txt"
else
	echo "    (no events arrived)"
fi

heading "Counters per session"
shown session show alpha
shown session show beta

# --- verdict ----------------------------------------------------------------------------------

heading "Result"
if [ $probes_bad -eq 0 ]; then
	echo "  all $probes_ok probes behaved as expected"
	exit 0
fi
echo "  $probes_bad of $((probes_ok + probes_bad)) probes did NOT behave as expected"
tfd_log_tail 10
exit 1
