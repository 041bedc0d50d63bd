#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install every Debian package the build, tests and demo need; a quick no-op when they are present.
set -euo pipefail

PKGS=(
	make gcc clang llvm pkg-config
	libbpf-dev bpftool libelf-dev zlib1g-dev libxdp-dev libjansson-dev libcap-dev
	libssl-dev # libcrypto: the sealed log's SHA-256, Ed25519 and ECDSA P-256 (user/common/seal.c)
	openssl # tests/netns/test_audit.sh, test_evidence.sh: keys made outside the daemon
	iproute2 iputils-ping procps psmisc socat curl
	python3 python3-scapy
	python3-cryptography # test_audit.sh, test_evidence.sh check the signatures independently
	dnsmasq-base bind9-dnsutils libclang-rt-14-dev
	iperf3 nftables gnuplot-nox
	wrk nginx-light # tools/bench/conn.sh: connections a second, each its own HTTP request
	qemu-system-x86 busybox-static libc6-dev # tests/vm: microVM guests (tools/vm/build-image.sh)
	valgrind # tests/netns/test_soak.sh: the daemon under memcheck
	rsyslog # tests/netns/test_audit_ship.sh: the sealed log shipped off the node by a real shipper
	libcap2-bin # tests/netns/test_operator.sh: capsh, to start the daemon without CAP_SYS_RESOURCE
	ethtool # tests/netns/test_reject.sh: checksum offload off, so the guest checks every answer
	prometheus prometheus-node-exporter # tests/netns/test_metrics.sh: the textfile read and scraped
	debhelper dpkg-dev fakeroot lintian # make deb, tests/netns/test_deb.sh
	containernetworking-plugins jq # tests/netns/test_cni.sh: ptp and host-local (/usr/lib/cni)
	# ahead of tapfence-cni in a chain, and jq for the configs and results it passes between them
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]} (run 'make deps' as root)" >&2
	exit 1
fi
# A package with a service (nginx-light, prometheus, rsyslog) must not start it in the root
# namespace: the tests and the bench run their servers by hand, in namespaces of their own. Where no
# policy-rc.d says so already, one refuses every start (invoke-rc.d and deb-systemd-invoke ask it)
# for this install, and goes with it; one of ours left by a killed run is taken over. On a systemd
# host the services are also disabled, so that none starts at the next boot.
POLICY=/usr/sbin/policy-rc.d MARK='# tools/deps.sh: no service starts while it installs'
if [ ! -L "$POLICY" ] && { [ ! -e "$POLICY" ] || grep -qxF "$MARK" "$POLICY"; }; then
	trap 'grep -qxF "$MARK" "$POLICY" 2>/dev/null && rm -f "$POLICY"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
	rm -f "$POLICY"
	(set -C && printf '#!/bin/sh\n%s\nexit 101\n' "$MARK" >"$POLICY") && chmod 755 "$POLICY"
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ -d /run/systemd/system ]; then
	for p in "${missing[@]}"; do
		case $p in
		nginx-light) systemctl disable --now nginx >/dev/null 2>&1 || true ;;
		prometheus | prometheus-node-exporter) systemctl disable --now "$p" >/dev/null 2>&1 || true ;;
		esac
	done
fi
