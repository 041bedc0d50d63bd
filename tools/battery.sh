#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The isolation battery (docs/attest.md#the-isolation-battery): the product's isolation probes run
# against this build and this kernel, in throwaway namespaces, each judged on the far side (a real
# listener, resolver or TLS server logs what reached it), each first run with nothing enforcing to
# show that it can see its own escape (a probe that cannot is a broken probe, never a pass).
# Writes a JSON report (probe, vector, severity, verdict, evidence) that `tapfence attest' binds
# when it is at <state_dir>/battery.json. Usage: tools/battery.sh [--out FILE]   (make battery)
#
#   ns ga (guest a) ─ veth ─ ns host (router, tapfenced, dnsmasq, a listener on its own 203.0.113.1)
#   ns gb (guest b) ─ veth ─┘   │ veth
#                               ns inet: 198.51.100.10 (allowed: :80, TLS :443 for allowed.test and
#                               forbidden.test), 203.0.113.66 (open internet), 169.254.169.254,
#                               10.20.30.40, 100.64.1.1, a resolver that is not the session's on
#                               198.51.100.53, a client for inbound probes
set -u
TF_ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/netns/lib.sh
. "$TF_ROOT/tests/netns/lib.sh"
OUT=$TF_BUILD/battery.json
[ "${1:-}" = --out ] && { OUT=$2; shift 2; }
[ $# -eq 0 ] || { echo "usage: tools/battery.sh [--out FILE]" >&2; exit 2; }
tf_init
cleanup() { tf_cleanup; }
trap cleanup EXIT
command -v dnsmasq >/dev/null && command -v dig >/dev/null && command -v curl >/dev/null ||
	die "the battery needs dnsmasq, dig and curl (make deps)"

host=tf-host-$TF_SFX ga=tf-ga-$TF_SFX gb=tf-gb-$TF_SFX inet=tf-inet-$TF_SFX
ns_add "$host" "$ga" "$gb" "$inet"
ns_router "$host"
guest_link "$ga" ga 02:00:00:00:0a:02 10.10.1.2/24 fd00:a:1::2/64 "$host" ha 02:00:00:00:0a:01 10.10.1.1/24 fd00:a:1::1/64
guest_link "$gb" gb 02:00:00:00:0b:02 10.10.2.2/24 fd00:a:2::2/64 "$host" hb 02:00:00:00:0b:01 10.10.2.1/24 fd00:a:2::1/64
inet_link "$host" "$inet" 99 10.10.0.0/16 fd00:a::/32 198.51.100.0/24 203.0.113.64/26 169.254.169.254/32 \
	10.20.30.0/24 100.64.0.0/10 -- 198.51.100.10 198.51.100.53 203.0.113.66 169.254.169.254 10.20.30.40 \
	100.64.1.1 || die "cannot build the fake internet"
# The host's own address, and its loopback reachable from outside as a careless host would have it.
ip -n "$host" addr add 203.0.113.1/32 dev hi
n "$host" sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf.ha.route_localnet=1
# The spoofing probe's source, on the guest itself (tapfence knows only 10.10.1.2 as the guest's).
ip -n "$ga" addr add 10.10.1.99/32 dev ga

tls_certs "$T" allowed.test forbidden.test || die "cannot make test certificates"
SLOG=$T/tls.log L=$T/listen.log LH=$T/host.log LB=$T/guestb.log LG=$T/guesta.log
tlsserver_start "$inet" "$SLOG" --cert "allowed.test:$T/allowed.test.pem:$T/allowed.test.key" \
	--cert "forbidden.test:$T/forbidden.test.pem:$T/forbidden.test.key" --tcp 198.51.100.10:443
listener_start "$inet" "$L" tcp:198.51.100.10:80 tcp:203.0.113.66:8080 tcp:169.254.169.254:80 \
	tcp:10.20.30.40:80 tcp:100.64.1.1:80 udp:198.51.100.53:53 udp:198.51.100.10:5000
listener_start "$host" "$LH" tcp:203.0.113.1:80 udp:127.0.0.1:9
listener_start "$gb" "$LB" tcp:10.10.2.2:80
listener_start "$ga" "$LG" tcp:10.10.1.2:8000
DNS_LOG=$T/dnsmasq.log
: >"$DNS_LOG"
ip netns exec "$host" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
	--bind-interfaces --listen-address=10.10.1.1 --port=53 --user=root --group=root \
	--pid-file="$T/dnsmasq.pid" --log-queries --log-facility="$DNS_LOG" --local=/test/ \
	--host-record=allowed.test,198.51.100.10,300 --host-record=forbidden.test,198.51.100.10,300 \
	--host-record=evil.test,203.0.113.66,300 >"$T/dnsmasq.out" 2>&1 &
defer kill_pid "$!"
wait_for 5 sh -c "ip netns exec '$host' ss -Hlun 'sport = :53' | grep -q 10.10.1.1:53" ||
	die "dnsmasq did not start: $(tail -n 3 "$T/dnsmasq.out")"
tf_watch "$DNS_LOG"
bpffs_mount "$T/bpffs"
session_spec "$T/a.json" a ha 02:00:00:00:0a:02 10.10.1.2 fd00:a:1::2 02:00:00:00:0a:01 10.10.1.1 fd00:a:1::1 \
	'[{"cidr":"0.0.0.0/0","proto":"tcp","ports":[80]},{"cidr":"0.0.0.0/0","proto":"udp","ports":[9]},
	  {"cidr":"198.51.100.10","proto":"udp","ports":[5000]},
	  {"host":"allowed.test","proto":"tcp","ports":[443]}]'
session_spec "$T/b.json" b hb 02:00:00:00:0b:02 10.10.2.2 fd00:a:2::2 02:00:00:00:0b:01 10.10.2.1 fd00:a:2::1 \
	'[{"cidr":"198.51.100.0/24","proto":"tcp","ports":[80]}]'
tfd_config "$T/tf.json"

# Each probe: reached DESC... returns 0 when its packet reached the far side (logged since tf_mark).
since_has() { wait_for "${2:-2}" grep_since "$1" "$3"; }
tcp_probe() { # LOG NS SRC DST PORT
	tf_mark
	n "$2" timeout 5 curl -sS --noproxy '*' --connect-timeout 2 --max-time 3 "http://$4:$5/" >/dev/null 2>&1
	since_has "$1" 2 "tcp $4:$5 from $3:"
}
p_metadata() { tcp_probe "$L" "$ga" 10.10.1.2 169.254.169.254 80; }
p_rfc1918() { tcp_probe "$L" "$ga" 10.10.1.2 10.20.30.40 80; }
p_cgnat() { tcp_probe "$L" "$ga" 10.10.1.2 100.64.1.1 80; }
p_loopback() { # a raw frame (the guest's own stack keeps 127/8 to itself; a hostile guest's does not)
	tf_mark
	n "$ga" "$PY" -c 'import logging; logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, sendp
sendp(Ether(src="02:00:00:00:0a:02", dst="02:00:00:00:0a:01") / IP(src="10.10.1.2", dst="127.0.0.1") /
      UDP(sport=40009, dport=9) / b"battery", iface="ga", verbose=False)' 2>/dev/null
	since_has "$LH" 2 "udp 127.0.0.1:9 from 10.10.1.2:"
}
p_host() { tcp_probe "$LH" "$ga" 10.10.1.2 203.0.113.1 80; }
p_internet() { tcp_probe "$L" "$ga" 10.10.1.2 203.0.113.66 8080; }
p_session() { tcp_probe "$LB" "$ga" 10.10.1.2 10.10.2.2 80; }
p_spoof() {
	tf_mark
	udp_echo "$ga" --src 10.10.1.99 198.51.100.10 5000
	since_has "$L" 2 "udp 198.51.100.10:5000 from 10.10.1.99:"
}
p_resolver() {
	tf_mark
	n "$ga" timeout 5 dig @198.51.100.53 +time=1 +tries=1 allowed.test A >/dev/null 2>&1
	since_has "$L" 2 "udp 198.51.100.53:53 from 10.10.1.2:"
}
p_dnsname() {
	tf_mark
	n "$ga" timeout 5 dig @10.10.1.1 +time=1 +tries=1 evil.test A >/dev/null 2>&1
	since_has "$DNS_LOG" 2 "query[A] evil.test from 10.10.1.2"
}
p_sni() {
	n "$ga" timeout 5 dig @10.10.1.1 +time=1 +tries=1 allowed.test A >/dev/null 2>&1
	tf_mark
	n "$ga" timeout 8 curl -sS --noproxy '*' --cacert "$T/ca.pem" --connect-timeout 2 --max-time 4 \
		--resolve forbidden.test:443:198.51.100.10 https://forbidden.test/ >/dev/null 2>&1
	since_has "$SLOG" 2 "sni 198.51.100.10:443 from 10.10.1.2:"
}
p_inbound() { tcp_probe "$LG" "$inet" 10.99.0.2 10.10.1.2 8000; }
# And one that must get through, so a battery that blocks everything is not read as a pass.
p_allowed() { tcp_probe "$L" "$ga" 10.10.1.2 198.51.100.10 80; }

PROBES=(
	"metadata|cloud metadata|critical|the guest connects to 169.254.169.254:80 (allowed by a 0.0.0.0/0 rule)"
	"host|the host itself|critical|the guest connects to an address of the host (203.0.113.1:80, under the 0.0.0.0/0 rule)"
	"internet|open internet|critical|the guest connects to 203.0.113.66:8080, which no rule allows"
	"session|cross-session|critical|guest a connects to guest b's listener (10.10.2.2:80)"
	"rfc1918|RFC1918 lateral|high|the guest connects to 10.20.30.40:80 (under the 0.0.0.0/0 rule)"
	"cgnat|CGNAT lateral|high|the guest connects to 100.64.1.1:80 (under the 0.0.0.0/0 rule)"
	"loopback|host loopback|high|the guest sends UDP to 127.0.0.1:9 (under a 0.0.0.0/0 rule) on a host with route_localnet"
	"spoof|spoofed source|high|the guest sends UDP from 10.10.1.99 to an allowed 198.51.100.10:5000"
	"resolver|DNS elsewhere|high|the guest queries a resolver that is not its session's (198.51.100.53)"
	"dnsname|DNS for a forbidden name|high|the guest asks its own resolver for evil.test (no host rule)"
	"sni|forbidden SNI on an allowed address|high|TLS to 198.51.100.10 (learnt for allowed.test) naming forbidden.test"
	"inbound|inbound to the guest|high|a host on the internet connects to the guest's listener (10.10.1.2:8000)"
)

declare -A base=()
note "phase 1: nothing enforces; every probe must see its own escape"
check "the allowed probe reaches its listener" p_allowed
for p in "${PROBES[@]}"; do
	IFS='|' read -r id vector sev desc <<<"$p"
	if "p_$id"; then base[$id]=1; else base[$id]=0; fi
	check "baseline: $id escapes with nothing enforcing" test "${base[$id]}" -eq 1
done

note "phase 2: tapfenced enforces sessions a and b"
tfd_start "$host"
tfc session add "$T/a.json" >/dev/null || die "cannot add session a"
tfc session add "$T/b.json" >/dev/null || die "cannot add session b"
if p_allowed; then allowed=1; else allowed=0; fi
check "the allowed probe still reaches its listener" test "$allowed" -eq 1
results=$T/results.jsonl
: >"$results"
for p in "${PROBES[@]}"; do
	IFS='|' read -r id vector sev desc <<<"$p"
	tf_mark
	if [ "${base[$id]}" -ne 1 ]; then
		verdict=broken_probe evidence="the probe did not reach its target with nothing enforcing"
	elif "p_$id"; then
		verdict=escaped evidence="reached the far side with tapfence enforcing"
	else
		verdict=blocked
		evidence="never reached the far side; tapfence: $(since "$TF_EVENTS" | "$PY" -c 'import json, sys
rs = sorted({json.loads(l).get("reason") for l in sys.stdin if "\"verdict\":\"deny\"" in l} - {None})
print(",".join(rs) or "no deny event")')"
	fi
	check_not "$id ($vector, $sev): $verdict" test "$verdict" != blocked
	"$PY" -c 'import json, sys
print(json.dumps(dict(zip(("probe", "vector", "severity", "what", "verdict", "evidence"), sys.argv[1:]))))' \
		"$id" "$vector" "$sev" "$desc" "$verdict" "$evidence" >>"$results"
done

"$PY" - "$results" "$OUT" "$TF_BUILD/tapfenced" "$allowed" <<-'EOF'
	import hashlib, json, os, sys, time
	probes = [json.loads(l) for l in open(sys.argv[1])]
	allowed = sys.argv[4] == "1"
	crit = sum(p["verdict"] == "escaped" and p["severity"] == "critical" for p in probes)
	esc = sum(p["verdict"] == "escaped" for p in probes)
	broken = sum(p["verdict"] == "broken_probe" for p in probes)
	report = {
	    "kind": "tapfence-battery", "version": 1,
	    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
	    "kernel": os.uname().release,
	    "tapfenced_sha256": hashlib.sha256(open(sys.argv[3], "rb").read()).hexdigest(),
	    "allowed_reached": allowed,
	    "probes": probes, "escapes": esc, "critical_escapes": crit, "broken_probes": broken,
	    "result": "held" if crit or broken or not allowed else ("escapes" if esc else "no_escape"),
	}
	tmp = sys.argv[2] + ".tmp"
	with open(tmp, "w") as f:
	    json.dump(report, f, indent=1)
	os.rename(tmp, sys.argv[2])
	print("# battery: %d probes, %d escaped (%d critical), %d broken: %s -> %s"
	      % (len(probes), esc, crit, broken, report["result"], sys.argv[2]))
EOF
tf_done
