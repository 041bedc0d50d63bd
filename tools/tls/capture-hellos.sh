#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Capture real TLS ClientHellos from real clients into tests/tls/hellos/ (raw TLS records, one hello
# per file). Needs root. Regenerates the committed fixtures; tests never run it, so the capture
# tools (gnutls-bin, golang-go, chromium) stay out of tools/deps.sh. A missing client is skipped.
#
#   netns tfcap$$ (lo only)
#   +-------------------------------------------------------------+
#   |  client --SNI www.example.com--> 127.0.0.1:443 hello_sink.py |
#   +-------------------------------------------------------------+
#
# usage: tools/tls/capture-hellos.sh [OUTDIR]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(realpath -m "${1:-$HERE/../../tests/tls/hellos}")
PY=/usr/bin/python3 # Debian's python: its ssl module is the system OpenSSL, like curl's
SNI=www.example.com
NS=tfcap$$
CLIENT_TIMEOUT=30

[ "$(id -u)" -eq 0 ] || { echo "capture-hellos.sh: must run as root" >&2; exit 1; }

pids=()
failed=()
# Wait (5 s at most) for the namespace to empty, so nothing still writes to $TMP when it goes.
ns_settle() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ -z "$(ip netns pids "$NS" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
}

cleanup() {
	# A second signal must not cut the cleanup short (bash runs the EXIT trap only once).
	trap '' INT TERM HUP
	set +e
	local p
	# timeout(1) leads its own process group and passes TERM on to it, so a browser's helpers go too.
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	# Whatever is left in the namespace was started by us (a browser helper that outlived its parent).
	for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	ns_settle
	ip netns del "$NS" 2>/dev/null
	[ -n "${TMP:-}" ] && rm -rf "$TMP"
}
trap cleanup EXIT
# Without these a fatal signal ends bash and skips the EXIT trap.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

TMP=$(mktemp -d /tmp/tfcap.XXXXXX)
ip netns add "$NS"
ip -n "$NS" link set lo up
mkdir -p "$OUT"

have() { command -v "$1" >/dev/null || { echo "skip $1: not installed (apt-get install $2)"; return 1; }; }

# capture NAME CMD...: run CMD in the netns against a fresh sink, keep its hello as $OUT/NAME.bin.
capture() {
	local name=$1 sink client i
	shift
	rm -f "$TMP/ready" "$TMP/$name.bin"
	# Started directly, not through a shell function, so $! is the process itself and not a subshell.
	ip netns exec "$NS" "$PY" "$HERE/hello_sink.py" 127.0.0.1 443 "$TMP/$name.bin" "$TMP/ready" &
	sink=$!
	pids+=("$sink")
	for ((i = 0; i < 50; i++)); do [ -e "$TMP/ready" ] && break; sleep 0.1; done
	ip netns exec "$NS" timeout "$CLIENT_TIMEOUT" "$@" </dev/null >"$TMP/$name.log" 2>&1 &
	client=$!
	pids+=("$client")
	if wait "$sink"; then
		mv "$TMP/$name.bin" "$OUT/$name.bin"
	else
		echo "FAILED $name: no ClientHello; client output:" >&2
		failed+=("$name")
		sed 's/^/  /' "$TMP/$name.log" >&2
	fi
	# The client has sent its hello and is now failing or waiting on a dead socket: stop it.
	kill "$client" 2>/dev/null || true
	wait "$client" 2>/dev/null || true
	ns_settle
	pids=() # both reaped: their PIDs may be reused, never kill them again
}

capture openssl-s_client openssl s_client -connect 127.0.0.1:443 -servername "$SNI"
capture openssl-nosni openssl s_client -connect 127.0.0.1:443 -noservername
capture curl curl -sS https://$SNI/ --resolve "$SNI:443:127.0.0.1"
capture python-ssl "$PY" -c '
import socket, ssl, sys
with socket.create_connection(("127.0.0.1", 443)) as s:
    ssl.create_default_context().wrap_socket(s, server_hostname=sys.argv[1])' "$SNI"

if have gnutls-cli gnutls-bin; then
	capture gnutls-cli gnutls-cli --sni-hostname="$SNI" -p 443 127.0.0.1
fi

if have go golang-go; then
	# Built outside the netns so the build's time does not count against the sink's accept timeout.
	go build -o "$TMP/tlsdial" "$HERE/tlsdial.go"
	capture go "$TMP/tlsdial" 127.0.0.1:443 "$SNI"
fi

if have chromium chromium; then
	# --dump-dom makes headless chromium exit after the (failed) load instead of idling.
	capture chromium chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$TMP/chromium" --host-resolver-rules="MAP $SNI:443 127.0.0.1:443" \
		--dump-dom "https://$SNI/"
fi

ls -l "$OUT"/*.bin
[ ${#failed[@]} -eq 0 ] || { echo "capture-hellos.sh: no hello from: ${failed[*]}" >&2; exit 1; }
