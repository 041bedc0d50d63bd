# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Test helpers shared by tests/netns/*.sh and tools/demo.sh: namespaces, links, listeners, bpffs,
# tapfenced, session specs, and a small assertion vocabulary printing "PASS: ..." / "FAIL: ...".
#
# Source it from a test script; the prologue is then:
#   tf_init                      # checks root; $T (scratch dir), $TF_SFX (PID suffix); cleanup() at exit
#   host=tf-host-$TF_SFX ...     # namespace names of this run
#   tf_need dnsmasq dig          # the tools the test runs, or a FAIL naming their package
#   setup ns_add "$host" ...     # namespaces, removed on exit; setup: a step that must work
#   ...
#   tf_done                      # prints "N passed, N failed" and returns non-zero on any failure
# cleanup() runs every `defer'red command, LIFO (tf_cleanup); a script that must undo more defines
# its own cleanup() after sourcing this file, calling tf_cleanup.
#
# Everything started here is recorded by PID and killed by PID; nothing touches the root namespace's
# links or routes. Only bash builtins and iproute2, plus /usr/bin/python3 for JSON and packets.

TF_ROOT=${TF_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TF_BUILD=${BUILD:-$TF_ROOT/build}
TF_NETNS_DIR=$TF_ROOT/tests/netns
PY=/usr/bin/python3 # Debian's python: the one that has scapy
TF_CONNECT_TIMEOUT=${TF_CONNECT_TIMEOUT:-2}

# tfjson CMD ARG...: tests/netns/tfjson.py, the JSON side of these helpers (events, specs, checks).
tfjson() { "$PY" "$TF_NETNS_DIR/tfjson.py" "$@"; }

tf_passed=0
tf_failed=0
tf_deferred=()
declare -A tf_mark_at=()

# --- plumbing ---------------------------------------------------------------------------------

tf_init() {
	[ "$(id -u)" -eq 0 ] || { echo "FAIL: $(basename "$0") must run as root"; exit 1; }
	# shellcheck disable=SC2034 # used by the sourcing script
	TF_SFX=$$
	T=$(mktemp -d /tmp/tapfence-netns.XXXXXX)
	chmod 755 "$T"
	trap cleanup EXIT
	# A fatal signal would end bash without its EXIT trap: turn it into an exit, so cleanup runs.
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
}

# cleanup: what runs at exit (tf_init's trap). A script may define its own after sourcing this file.
cleanup() { tf_cleanup; }

# setup CMD...: a set-up step; if it fails, the test ends with a FAIL line naming it.
setup() { "$@" || die "setup: $*"; }

# tf_need CMD...: each CMD is installed, else the test ends with a FAIL naming the package.
tf_need() {
	local c pkg
	for c in "$@"; do
		command -v "$c" >/dev/null && continue
		case $c in
		dnsmasq) pkg="tools/deps.sh: dnsmasq-base" ;;
		dig) pkg="tools/deps.sh: bind9-dnsutils" ;;
		valgrind | vgdb) pkg="tools/deps.sh: valgrind" ;;
		capsh) pkg="tools/deps.sh: libcap2-bin" ;;
		prlimit) pkg="util-linux" ;;
		rsyslogd) pkg="make deps" ;;
		*) pkg="tools/deps.sh: $c" ;;
		esac
		die "$c is not installed ($pkg)"
	done
}

# defer CMD...: run CMD at cleanup (last deferred runs first). Arguments are kept as words.
defer() {
	local q
	printf -v q '%q ' "$@"
	tf_deferred+=("$q")
}

tf_cleanup() {
	local i
	set +e
	for ((i = ${#tf_deferred[@]} - 1; i >= 0; i--)); do
		eval "${tf_deferred[i]}" >/dev/null 2>&1
	done
	tf_deferred=()
	[ -n "${T:-}" ] && [ -d "$T" ] && [ -z "${TF_KEEP:-}" ] && rm -rf "$T"
}

# note MSG: a comment line in the output (not counted by tests/run.sh).
note() { echo "# $*"; }

die() {
	echo "FAIL: $*"
	exit 1
}

# n NS CMD...: run CMD inside namespace NS.
n() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# kill_pid PID: SIGTERM, wait up to 3 s, then SIGKILL; only this PID, only if it is our child.
kill_pid() {
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 30; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds; non-zero on timeout.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

# --- topology ---------------------------------------------------------------------------------

# ns_add NAME...: create namespaces (lo up), deleted at cleanup. IPv6 DAD is off in them: a
# link-local address still tentative delays the first neighbour exchange by a second or more.
ns_add() {
	local ns
	for ns in "$@"; do
		ip netns add "$ns" || return
		defer ip netns del "$ns"
		ip -n "$ns" link set lo up || return
		n "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 || return
	done
}

# ns_router NS: make NS forward IPv4 and IPv6, with reverse-path filtering off, so that only
# tapfence (not the kernel) stands between a spoofed source and the network.
ns_router() {
	local ns=$1
	n "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}

# veth_pair NS1 IF1 NS2 IF2: a veth pair with one end in each namespace (never in the root one).
veth_pair() {
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3"
}

# guest_link GUESTNS GIF GMAC G4/LEN G6/LEN HOSTNS HIF HMAC H4/LEN H6/LEN
# A guest's interface: veth GIF in GUESTNS (default routes via the host side) and HIF in HOSTNS,
# which is where tapfence attaches. Addresses without DAD so the test does not wait for it.
guest_link() {
	local gns=$1 gif=$2 gmac=$3 g4=$4 g6=$5 hns=$6 hif=$7 hmac=$8 h4=$9 h6=${10}
	veth_pair "$gns" "$gif" "$hns" "$hif"
	ip -n "$gns" link set "$gif" address "$gmac"
	ip -n "$hns" link set "$hif" address "$hmac"
	ip -n "$gns" addr add "$g4" dev "$gif"
	ip -n "$gns" addr add "$g6" dev "$gif" nodad
	ip -n "$hns" addr add "$h4" dev "$hif"
	ip -n "$hns" addr add "$h6" dev "$hif" nodad
	ip -n "$gns" link set "$gif" up
	ip -n "$hns" link set "$hif" up
	ip -n "$gns" route add default via "${h4%/*}" dev "$gif"
	ip -n "$gns" -6 route add default via "${h6%/*}" dev "$gif"
}

# tap_link NS IF MAC H4/LEN H6/LEN GUEST_MAC GUEST4 GUEST6
# A persistent tap in NS, as a VMM would have it, with static neighbours for the guest so the host
# needs no ARP/ND to reach it. tapvmm.py attaches to it to play the guest.
tap_link() {
	local ns=$1 dev=$2 mac=$3 h4=$4 h6=$5 gmac=$6 g4=$7 g6=$8
	ip -n "$ns" tuntap add dev "$dev" mode tap
	ip -n "$ns" link set "$dev" address "$mac"
	ip -n "$ns" addr add "$h4" dev "$dev"
	ip -n "$ns" addr add "$h6" dev "$dev" nodad
	ip -n "$ns" link set "$dev" up
	ip -n "$ns" neigh replace "$g4" lladdr "$gmac" dev "$dev" nud permanent
	ip -n "$ns" neigh replace "$g6" lladdr "$gmac" dev "$dev" nud permanent
}

# inet_link HOSTNS INETNS N GUESTS4 GUESTS6 DST... -- ADDR...
# The fake internet behind the router: a veth hi|ii on 10.N.0.0/30 and fd00:N::/64 (.1 and ::1 on
# the host side), a host route via it for each DST (IPv4 or IPv6 CIDR), the return routes for the
# guests' ranges GUESTS4 and GUESTS6, and each ADDR (a bare address) on INETNS's lo.
inet_link() {
	local hns=$1 ins=$2 n=$3 g4=$4 g6=$5 a
	shift 5
	veth_pair "$hns" hi "$ins" ii || return
	ip -n "$hns" addr add 10.$n.0.1/30 dev hi || return
	ip -n "$hns" addr add fd00:$n::1/64 dev hi nodad || return
	ip -n "$ins" addr add 10.$n.0.2/30 dev ii || return
	ip -n "$ins" addr add fd00:$n::2/64 dev ii nodad || return
	ip -n "$hns" link set hi up || return
	ip -n "$ins" link set ii up || return
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		case $1 in
		*:*) ip -n "$hns" -6 route add "$1" via fd00:$n::2 dev hi || return ;;
		*) ip -n "$hns" route add "$1" via 10.$n.0.2 dev hi || return ;;
		esac
		shift
	done
	[ "${1:-}" = -- ] && shift
	for a in "$@"; do
		case $a in
		*:*) ip -n "$ins" addr add "$a/128" dev lo nodad || return ;;
		*) ip -n "$ins" addr add "$a/32" dev lo || return ;;
		esac
	done
	ip -n "$ins" route add "$g4" via 10.$n.0.1 dev ii || return
	ip -n "$ins" -6 route add "$g6" via fd00:$n::1 dev ii
}

# --- listeners and clients --------------------------------------------------------------------

# listener_start NS LOG SPEC...: SPEC is tcp:ADDR:PORT or udp:ADDR:PORT (IPv6 as udp:[ADDR]:PORT).
# Sets LISTENER_PID; the listener is killed at cleanup. LOG collects one line per connection/datagram.
listener_start() {
	local ns=$1 log=$2 spec args=()
	shift 2
	for spec in "$@"; do
		args+=("--${spec%%:*}" "${spec#*:}")
	done
	local ready=$T/listener.$RANDOM.ready
	: >"$log"
	# ip netns exec directly, not through n(): a backgrounded function would be a subshell, and
	# $! its PID rather than the listener's (ip netns exec execs the command in place).
	ip netns exec "$ns" "$PY" "$TF_NETNS_DIR/listener.py" serve --log "$log" --ready "$ready" "${args[@]}" \
		>>"$T/listeners.out" 2>&1 &
	LISTENER_PID=$!
	defer kill_pid "$LISTENER_PID"
	wait_for 5 test -e "$ready" || die "listener in $ns did not start: $(tail -n 3 "$T/listeners.out")"
	[ "$(cat "$ready")" = "$LISTENER_PID" ] || die "listener in $ns runs as PID $(cat "$ready"), not $LISTENER_PID"
	tf_watch "$log"
}

# flowpeer_bg MODE WHAT NS LOG ARG...: flowpeer.py MODE in NS in the background, logging to LOG
# (watched), killed at cleanup; returns once it says it is ready, or dies saying WHAT did not.
flowpeer_bg() {
	local mode=$1 what=$2 ns=$3 log=$4 ready=$T/flowpeer.$RANDOM.ready
	shift 4
	: >"$log"
	ip netns exec "$ns" "$PY" "$TF_NETNS_DIR/flowpeer.py" "$mode" --log "$log" --ready "$ready" "$@" \
		>>"$T/flowpeer.out" 2>&1 &
	defer kill_pid $!
	wait_for 5 test -e "$ready" ||
		die "$what in $ns: $(tail -n 3 "$T/flowpeer.out" "$log" 2>/dev/null | grep -v '^==' | tail -n 3)"
	tf_watch "$log"
}

# flowpeer_start NS LOG ARG...: flowpeer.py serve (an echo server for long-lived flows) in NS with
# its --tcp/--udp ARGs, logging to LOG (watched); killed at cleanup.
flowpeer_start() { flowpeer_bg serve "flowpeer did not start" "$@"; }

# flowpeer_stream NS LOG ARG...: flowpeer.py stream in NS (one connection kept busy; ARGs: --tcp
# HOST:PORT, --sport, --tag, --stop FILE...), logging to LOG (watched); returns once connected.
flowpeer_stream() { flowpeer_bg stream "the stream did not connect" "$@"; }

# tcp_get NS [--src ADDR] HOST PORT: an HTTP GET with curl; 0 iff the listener's reply came back.
# The reply body goes to $T/client.out.
tcp_get() {
	local ns=$1 src=() host port url
	shift
	[ "$1" = --src ] && { src=(--interface "$2"); shift 2; }
	host=$1 port=$2
	case $host in *:*) url="http://[$host]:$port/" ;; *) url="http://$host:$port/" ;; esac
	n "$ns" timeout 10 curl -gsS --noproxy '*' --connect-timeout "$TF_CONNECT_TIMEOUT" \
		--max-time $((TF_CONNECT_TIMEOUT + 1)) "${src[@]}" "$url" >"$T/client.out" 2>&1
	grep -q '^tapfence-listener' "$T/client.out"
}

# udp_echo NS [--src ADDR] HOST PORT: one datagram; 0 iff its echo came back.
udp_echo() {
	local ns=$1 src=()
	shift
	[ "$1" = --src ] && { src=(--src "$2"); shift 2; }
	n "$ns" timeout 10 "$PY" "$TF_NETNS_DIR/listener.py" udp "${src[@]}" \
		--timeout "$TF_CONNECT_TIMEOUT" "$1" "$2" >"$T/client.out" 2>&1
}

# n_resolv NS RESOLV_CONF CMD...: run CMD inside NS with the file RESOLV_CONF as /etc/resolv.conf, so
# getaddrinfo() (curl by name) asks the session's resolver. The bind mount lives in the private mount
# namespace `ip netns exec' creates (/ is made a slave there) and ends with CMD: nothing outside changes.
n_resolv() {
	local ns=$1 conf=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by sh -c
	ip netns exec "$ns" /bin/sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$conf" "$@"
}

# dnsmasq_start NS LOG ADDR[,ADDR...] OPTION...: a resolver in NS on port 53 of each ADDR only: no
# upstream (--no-resolv), no /etc/hosts, no config file, no DHCP, not on loopback (with
# --listen-address and no --interface it is not added). It logs every query to LOG (emptied first,
# watched). The OPTIONs are its records (--local, --host-record, --cname ...). Sets DNS_PID; the
# resolver is killed at cleanup. Returns once every ADDR:53 is bound.
dnsmasq_start() {
	local ns=$1 log=$2 a listen=()
	IFS=, read -ra DNS_ADDRS <<<"$3"
	shift 3
	for a in "${DNS_ADDRS[@]}"; do listen+=("--listen-address=$a"); done
	: >"$log"
	ip netns exec "$ns" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
		--bind-interfaces "${listen[@]}" --port=53 --user=root --group=root \
		--pid-file="$T/dnsmasq.pid" --log-queries --log-facility="$log" "$@" >"$T/dnsmasq.out" 2>&1 &
	DNS_PID=$!
	DNS_NS=$ns
	defer kill_pid "$DNS_PID"
	wait_for 5 dns_bound ||
		die "dnsmasq did not bind ${DNS_ADDRS[*]} (port 53): $(tail -n 3 "$T/dnsmasq.out" "$log")"
	kill -0 "$DNS_PID" 2>/dev/null || die "dnsmasq exited: $(tail -n 3 "$T/dnsmasq.out")"
	tf_watch "$log"
}

# dns_bound: dnsmasq_start's resolver listens on every one of its addresses.
dns_bound() {
	local l a
	l=$(n "$DNS_NS" ss -Hlun 'sport = :53')
	for a in "${DNS_ADDRS[@]}"; do
		[[ $l == *"$a:53"* ]] || return 1
	done
}

# tls_certs DIR NAME...: a throwaway CA (DIR/ca.pem) and, for each NAME, DIR/NAME.pem and DIR/NAME.key
# signed by it for DNS:NAME (P-256, valid 2 days), made with openssl in DIR.
tls_certs() {
	local dir=$1 name
	shift
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=tapfence-test-ca -keyout "$dir/ca.key" -out "$dir/ca.pem" >>"$dir/openssl.out" 2>&1 || return
	for name in "$@"; do
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
			-keyout "$dir/$name.key" -out "$dir/$name.csr" >>"$dir/openssl.out" 2>&1 || return
		printf 'subjectAltName=DNS:%s\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' \
			"$name" >"$dir/$name.ext"
		openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
			-days 2 -extfile "$dir/$name.ext" -out "$dir/$name.pem" >>"$dir/openssl.out" 2>&1 || return
	done
}

# tlsserver_start NS LOG ARG...: tlsserver.py (a TLS server choosing its certificate by SNI, see its
# header) inside NS, logging to LOG; ARGs are its --cert/--tcp/--udp/--capture options. Sets
# TLSSERVER_PID; the server is killed at cleanup.
tlsserver_start() {
	local ns=$1 log=$2 ready=$T/tlsserver.$RANDOM.ready
	shift 2
	: >"$log"
	ip netns exec "$ns" "$PY" "$TF_NETNS_DIR/tlsserver.py" --log "$log" --ready "$ready" "$@" \
		>>"$T/tlsserver.out" 2>&1 &
	TLSSERVER_PID=$!
	defer kill_pid "$TLSSERVER_PID"
	wait_for 5 test -e "$ready" || die "tlsserver in $ns did not start: $(tail -n 3 "$T/tlsserver.out")"
	[ "$(cat "$ready")" = "$TLSSERVER_PID" ] || die "tlsserver in $ns runs as PID $(cat "$ready"), not $TLSSERVER_PID"
	tf_watch "$log"
}

# tapvmm NS DEV GUEST_MAC GUEST_IP GW_MAC CMD...: play the guest on a tap (see tapvmm.py).
tapvmm() {
	local ns=$1 dev=$2 gmac=$3 gip=$4 gwmac=$5
	shift 5
	n "$ns" timeout 15 "$PY" "$TF_NETNS_DIR/tapvmm.py" --dev "$dev" --guest-mac "$gmac" \
		--guest-ip "$gip" --gw-mac "$gwmac" --timeout "$TF_CONNECT_TIMEOUT" "$@" >"$T/client.out" 2>&1
}

# one_guest HOST GUEST INET: the smallest whole topology, in those three namespaces:
#   GUEST ─ veth ga|ha ─ HOST (router) ─ INET: 198.51.100.10, 203.0.113.10, tcp :80 listeners
#   10.10.1.2 fd00:a:1::2  10.10.1.1             logging to $L_INET
# one_guest_spec FILE writes its session "a" (on ha), allowing tcp/80 to 198.51.100.0/24, and
# guest_probe DESC HOST reached|blocked is probe_tcp from the guest to HOST:80.
one_guest() {
	local hns=$1 ins=$3
	TF_GUEST_NS=$2
	setup ns_add "$hns" "$TF_GUEST_NS" "$ins"
	setup ns_router "$hns"
	setup guest_link "$TF_GUEST_NS" ga 02:00:00:00:1a:02 10.10.1.2/24 fd00:a:1::2/64 \
		"$hns" ha 02:00:00:00:1a:01 10.10.1.1/24 fd00:a:1::1/64
	inet_link "$hns" "$ins" 99 10.10.0.0/16 fd00:a::/32 198.51.100.0/24 203.0.113.0/24 -- \
		198.51.100.10 203.0.113.10 || die "cannot build the fake internet"
	L_INET=$T/inet.log
	listener_start "$ins" "$L_INET" tcp:198.51.100.10:80 tcp:203.0.113.10:80
}

one_guest_spec() {
	session_spec "$1" a ha 02:00:00:00:1a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:1a:01 10.10.1.1 \
		fd00:a:1::1 '[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
}

guest_probe() { probe_tcp "$1" "$L_INET" "$TF_GUEST_NS" 10.10.1.2 "$2" 80 "$3"; }

# --- bpffs, tapfenced, CLI, session specs -----------------------------------------------------

# bpffs_mount DIR: a private bpffs for pins, in the root mount namespace (ip netns exec copies it).
bpffs_mount() {
	mkdir -p "$1"
	mount -t bpf bpf "$1"
	defer umount -l "$1"
}

# tfd_config FILE [JSON-MEMBERS]: a tapfenced config under $T; extra members are spliced in,
# e.g. tfd_config $T/tf.json '"attach_mode":"xdp","floor":{"extra_deny":["192.0.2.0/24"]}'
tfd_config() {
	local file=$1 extra=${2:-}
	TFD_CONFIG=$file
	TF_SOCK=$T/control.sock
	TF_PIN_DIR=$T/bpffs/tapfence
	TF_EVENTS=$T/events.jsonl
	{
		printf '{"control_socket":"%s","pin_dir":"%s","state_dir":"%s","event_log":"%s"' \
			"$TF_SOCK" "$TF_PIN_DIR" "$T/state" "$TF_EVENTS"
		[ -n "$extra" ] && printf ',%s' "$extra"
		printf '}\n'
	} >"$file"
	tfjson valid "$file" || die "bad config $file"
}

# tfd_start NS: start tapfenced with $TFD_CONFIG inside NS, wait up to $TFD_START_WAIT s (default 10)
# for its socket. The event log is emptied first unless TFD_KEEP_LOG is set. Sets TFD_PID; output goes to $T/tapfenced.log. TFD_WRAP, an array a script may set,
# is put before the daemon's command: a tool that runs it in the same process (valgrind, for
# test_soak.sh), so TFD_PID is still the daemon's. Unset, nothing changes.
tfd_start() {
	local ns=$1 wait=${TFD_START_WAIT:-10}
	[ -x "$TF_BUILD/tapfenced" ] || die "$TF_BUILD/tapfenced is not built (run make)"
	[ -n "${TFD_KEEP_LOG:-}" ] || : >"$TF_EVENTS"
	tf_watch "$TF_EVENTS"
	# A daemon running as a dedicated user leaves its socket behind (it cannot unlink it in a
	# root-owned directory): the wait below must see the new daemon's socket, not that one.
	rm -f "$TF_SOCK"
	TFD_NS=$ns
	ip netns exec "$ns" ${TFD_WRAP[@]+"${TFD_WRAP[@]}"} "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" \
		--foreground -v >>"$T/tapfenced.log" 2>&1 &
	TFD_PID=$!
	defer tfd_stop
	if ! wait_for "$wait" test -S "$TF_SOCK"; then
		tfd_log_tail 20
		die "tapfenced did not open $TF_SOCK within $wait s"
	fi
	kill -0 "$TFD_PID" 2>/dev/null || { tfd_log_tail 20; die "tapfenced exited at start"; }
}

# tfd_stop: kill tapfenced by PID, then `tapfenced --cleanup' with the same config (idempotent).
tfd_stop() {
	[ -n "${TFD_PID:-}" ] || return 0
	kill_pid "$TFD_PID"
	TFD_PID=
	n "$TFD_NS" "$TF_BUILD/tapfenced" --config "$TFD_CONFIG" --cleanup >>"$T/tapfenced.log" 2>&1
}

tfd_log_tail() {
	[ -f "$T/tapfenced.log" ] && sed 's/^/# tapfenced: /' <(tail -n "${1:-20}" "$T/tapfenced.log")
	return 0
}

# link_pin ID DIR: the path of session ID's pinned tcx link (DIR in or out), pinned as
# <id>-<namespace cookie>-DIR ('.' in ids as ','); the unmatched pattern itself if there is none.
link_pin() {
	local f
	for f in "$TF_PIN_DIR/links/$1"-*-"$2"; do
		echo "$f"
		return
	done
}

# tfc ARGS...: the tapfence CLI on our control socket (from the root namespace: it is a unix socket).
tfc() {
	"$TF_BUILD/tapfence" --socket "$TF_SOCK" "$@"
}

# sessions_add ID...: `session add $T/ID.json' for each ID, one check each; non-zero if any failed.
sessions_add() {
	local s ret=0
	for s in "$@"; do
		if tfc session add "$T/$s.json" >"$T/cli.out" 2>&1; then
			pass "session add $s"
		else
			fail "session add $s: $(head -n 2 "$T/cli.out")"
			ret=1
		fi
	done
	return "$ret"
}

# session_spec FILE ID IFNAME GUEST_MAC GUEST4 GUEST6 GW_MAC GW4 GW6 ALLOW_JSON_ARRAY
# The resolver is the gateway's IPv4, port 53.
session_spec() {
	local file=$1
	shift
	tfjson session-spec "$file" "$@" || die "cannot write session spec $file"
}

# --- assertions -------------------------------------------------------------------------------

pass() {
	echo "PASS: $*"
	tf_passed=$((tf_passed + 1))
}

fail() {
	echo "FAIL: $*"
	tf_failed=$((tf_failed + 1))
}

# check DESC CMD...: PASS iff CMD succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

# check_not DESC CMD...: PASS iff CMD fails.
check_not() {
	local desc=$1
	shift
	if "$@"; then fail "$desc"; else pass "$desc"; fi
}

# check_says DESC WANT_RC TEXT CMD...: PASS iff CMD exits WANT_RC and its output (stdout and
# stderr, kept in $T/says.out) contains TEXT.
check_says() {
	local desc=$1 want=$2 text=$3 rc
	shift 3
	"$@" >"$T/says.out" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ] && grep -qF -- "$text" "$T/says.out"; then
		pass "$desc"
	else
		fail "$desc (exit $rc, want $want with \`$text'): $(head -c 300 "$T/says.out")"
	fi
}

# tf_watch FILE: FILE takes part in tf_mark; expectations on it only look at what came after. A
# file nobody watches cannot be looked at by since() or the expectations below: a line an earlier
# probe left there must never count for a later one. listener_start, tlsserver_start and tfd_start
# watch their logs; a script watches any other log it checks (dnsmasq's, a sniffer's).
tf_watch() {
	tf_mark_at[$1]=0
}

# tf_mark: remember the current size of every watched file (call it before each probe).
tf_mark() {
	local f
	for f in "${!tf_mark_at[@]}"; do
		tf_mark_at[$f]=$(stat -c %s "$f" 2>/dev/null || echo 0)
	done
}

# tf_unmark FILE: expectations on FILE look at all of it again, until the next tf_mark.
tf_unmark() {
	tf_mark_at[$1]=0
}

# since FILE: what was appended to FILE after the last tf_mark (a FAIL line if FILE is not watched).
since() {
	if [ -z "${tf_mark_at[$1]+set}" ]; then
		echo "FAIL: since $1: not watched (tf_watch it), so older lines would count" >&2
		return 1
	fi
	tail -c +$((tf_mark_at[$1] + 1)) "$1" 2>/dev/null
}

# watched FILE DESC: FILE is watched, else a FAIL for DESC saying so.
watched() {
	[ -n "${tf_mark_at[$1]+set}" ] && return 0
	fail "$2 ($(basename "$1") is not watched: tf_watch it, so that only lines after tf_mark count)"
	return 1
}

# expect_reached LOG TEXT DESC: the listener logged a line containing TEXT (fixed string) since tf_mark.
expect_reached() {
	local log=$1 pat=$2 desc=$3
	watched "$log" "$desc" || return 0
	if wait_for 2 grep_since "$log" "$pat"; then
		pass "$desc"
	else
		fail "$desc (no \`$pat' in $(basename "$log"))"
	fi
}

# expect_not_reached LOG TEXT DESC: no line containing TEXT was logged since tf_mark.
# Call it after the client has given up (its connect timeout is longer than any in-flight delay),
# and only for a listener that a baseline probe showed does log this very probe.
expect_not_reached() {
	local log=$1 pat=$2 desc=$3
	watched "$log" "$desc" || return 0
	sleep 0.3
	if grep_since "$log" "$pat"; then
		fail "$desc (listener logged: $(since "$log" | grep -F -- "$pat" | head -n 1))"
	else
		pass "$desc"
	fi
}

# probe_tcp DESC LOG NS SRC DST PORT reached|blocked: an HTTP GET from NS (whose address is SRC) to
# the listener at DST:PORT that logs to LOG: the reply came back and the listener logged the
# connection, or neither happened.
probe_tcp() {
	local desc=$1 log=$2 ns=$3 src=$4 dst=$5 port=$6 want=$7
	tf_mark
	if [ "$want" = reached ]; then
		check "$desc: the client got the reply" tcp_get "$ns" "$dst" "$port"
		expect_reached "$log" "tcp $dst:$port from $src:" "$desc: reached the listener"
	else
		check_not "$desc: the client got no reply" tcp_get "$ns" "$dst" "$port"
		expect_not_reached "$log" "tcp $dst:$port from $src:" "$desc: never reached the listener"
	fi
}

grep_since() {
	watched "$1" "grep_since \`$2'" || return 1	# a FAIL counted even under check_not
	since "$1" | grep -qF -- "$2"
}

# --- the probe table --------------------------------------------------------------------------

# probe NAME VERDICT REASON "EVENT FILTER" LOG TEXT "DESC" [-] -- CLIENT...
#   One row of a script's probe table, run by run_probe. VERDICT/REASON: what tapfence must decide
#   once it enforces ("-" REASON: no event to look for). EVENT FILTER: KEY=VALUE words the event
#   must also carry. LOG/TEXT: the listener log and the line the probe leaves there ("-" LOG when
#   the only evidence is the client's reply, as for ARP). CLIENT: a command that exits 0 iff the
#   reply came back, and 125 if it could not run (it says why); "-" before the "--": its exit
#   status says nothing (a query to a UDP echo), only the log does.
probes=()
declare -A p_verdict p_reason p_ev p_log p_text p_desc p_client p_judge_client
probe() {
	local name=$1
	probes+=("$name")
	p_verdict[$name]=$2 p_reason[$name]=$3 p_ev[$name]=$4 p_log[$name]=$5 p_text[$name]=$6 p_desc[$name]=$7
	shift 7
	p_judge_client[$name]=1
	[ "$1" = - ] && { p_judge_client[$name]=0; shift; }
	shift # --
	printf -v "p_client[$name]" '%q ' "$@"
}

# probe_note: what the client printed, as comments, for a failed check (a script may redefine it).
probe_note() { sed 's/^/#   client: /' <(head -n 4 "$T/client.out"); }

# run_probe NAME PHASE: PHASE "enforced" expects VERDICT and its event; any other phase (baseline,
# after-cleanup) expects the probe through. Every expectation looks only at what came after the
# probe started (tf_mark).
run_probe() {
	local name=$1 phase=$2 rc want desc log text
	desc=${p_desc[$name]} log=${p_log[$name]} text=${p_text[$name]}
	want=${p_verdict[$name]}
	[ "$phase" = enforced ] || want=allow
	tf_mark
	eval "${p_client[$name]}"
	rc=$?
	if [ "$rc" = 125 ]; then
		fail "$phase: $desc: the client could not run"
	elif [ "${p_judge_client[$name]}" = 1 ]; then
		if [ "$want" = allow ] && [ "$rc" = 0 ]; then
			pass "$phase: $desc: the client got the reply"
		elif [ "$want" = allow ]; then
			fail "$phase: $desc: the client got no reply"
			probe_note
		elif [ "$rc" != 0 ]; then
			pass "$phase: $desc: the client got no reply"
		else
			fail "$phase: $desc: the client got a reply"
			probe_note
		fi
	fi
	if [ "$log" != - ] && [ "$want" = allow ]; then
		expect_reached "$log" "$text" "$phase: $desc: reached $(basename "$log")"
	elif [ "$log" != - ]; then
		expect_not_reached "$log" "$text" "$phase: $desc: did not reach $(basename "$log")"
	fi
	[ "$phase" = enforced ] && [ "${p_reason[$name]}" != - ] || return 0
	# shellcheck disable=SC2086 # the filter is a list of words
	expect_event ${p_ev[$name]} verdict="${p_verdict[$name]}" reason="${p_reason[$name]}" \
		-- "$phase: $desc: event ${p_verdict[$name]}/${p_reason[$name]}"
}

# Events: JSON lines in $TF_EVENTS. A FILTER is KEY=VALUE words, all of which must equal the
# event's fields (compared as text: dport=80 matches 80).

# events_match FILE OFFSET TIMEOUT WANT FILTER...: the events of FILE after byte OFFSET matching
# FILTER, printed; 0 iff some matched (WANT 1, waiting up to TIMEOUT s for one) or none did (WANT 0).
events_match() { tfjson events "$@"; }

# expect_event FILTER... -- DESC: an event matching FILTER was logged since tf_mark (waits up to 3 s).
expect_event() {
	local filt=() desc
	while [ $# -gt 0 ] && [ "$1" != -- ]; do filt+=("$1"); shift; done
	shift
	desc=$*
	watched "$TF_EVENTS" "$desc" || return 0
	if events_match "$TF_EVENTS" "${tf_mark_at[$TF_EVENTS]:-0}" 3 1 "${filt[@]}" >"$T/event.out"; then
		pass "$desc"
	else
		fail "$desc (no event with ${filt[*]})"
		events_since_mark
	fi
}

# expect_no_event FILTER... -- DESC: no event matching FILTER since tf_mark (looks for 1 s).
expect_no_event() {
	local filt=() desc
	while [ $# -gt 0 ] && [ "$1" != -- ]; do filt+=("$1"); shift; done
	shift
	desc=$*
	watched "$TF_EVENTS" "$desc" || return 0
	if events_match "$TF_EVENTS" "${tf_mark_at[$TF_EVENTS]:-0}" 1 0 "${filt[@]}" >"$T/event.out"; then
		pass "$desc"
	else
		fail "$desc (unexpected: $(head -n 1 "$T/event.out"))"
	fi
}

# expect_event_schema DESC: every line since tf_mark is a JSON object with the feed's common keys
# (the sealed log's own lines have their own: tfjson.py's LOG_KINDS).
expect_event_schema() {
	local bad
	bad=$(since "$TF_EVENTS" | tfjson schema)
	if [ -z "$bad" ]; then pass "$*"; else fail "$* (missing $bad)"; fi
}

# events_since_mark: print the events logged since tf_mark as comments (for diagnosing a FAIL).
events_since_mark() {
	local ev
	ev=$(since "$TF_EVENTS" | head -n 8)
	if [ -n "$ev" ]; then
		sed 's/^/#   event: /' <<<"$ev"
	else
		note "  no events since the probe started"
	fi
}

# tf_done: the closing line; non-zero if anything failed or nothing was checked.
tf_done() {
	note "$(basename "$0"): $tf_passed passed, $tf_failed failed"
	[ "$tf_failed" -eq 0 ] && [ "$tf_passed" -gt 0 ]
}
