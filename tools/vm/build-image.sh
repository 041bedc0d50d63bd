#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the microVM guest that tests/vm boots: a Debian cloud kernel and a busybox initramfs.
#
# Usage: tools/vm/build-image.sh [OUTDIR]        (default: build/vm)
#
#   OUTDIR/pkg/linux-image-*.deb    fetched with `apt-get download' (never installed)
#   OUTDIR/kernel/vmlinuz           unpacked from it with `dpkg-deb -x', with the six modules
#   OUTDIR/kernel/*.ko              virtio-net needs (they are modules in that kernel)
#   OUTDIR/tfprobe                  tools/vm/tfprobe.c, static
#   OUTDIR/initramfs.gz             busybox-static, tfprobe, the modules, tools/vm/guest-init.sh
#                                   as /init, and a /dev/console node
#
# Everything is cached: the kernel is fetched once (delete OUTDIR/kernel for a newer one), the
# initramfs is rebuilt only when one of its inputs is newer. Prints one line per thing it builds.
# Needs root (mknod), apt-get, dpkg-deb, gcc with a static libc, /bin/busybox from busybox-static.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$here/../../build/vm}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

KPKG=linux-image-cloud-amd64 # a metapackage: its Depends names the current image
MODULES="virtio_ring virtio virtio_mmio failover net_failover virtio_net"
BUSYBOX=/bin/busybox

say() { printf '  %-8s %s\n' "$1" "$2"; }
die() {
	echo "build-image: $*" >&2
	exit 1
}

[ "$(uname -m)" = x86_64 ] || die "only x86_64 hosts are supported (the guest is ${KPKG%-amd64} amd64)"
[ "$(id -u)" -eq 0 ] || die "must run as root (the initramfs needs a /dev/console node)"
for c in apt-get apt-cache dpkg-deb gcc gzip flock readelf; do
	command -v $c >/dev/null || die "$c is missing"
done
# The initramfs has no libc: the busybox in it must be static (the busybox package's is not).
if ! [ -x "$BUSYBOX" ] || [[ $'\n'$("$BUSYBOX" --list 2>/dev/null)$'\n' != *$'\n'cpio$'\n'* ]] ||
	[[ $(readelf -l "$BUSYBOX" 2>/dev/null) == *"program interpreter"* ]]; then
	die "$BUSYBOX is missing or not static (tools/deps.sh: busybox-static)"
fi

# One builder at a time on this OUTDIR.
exec 9>"$OUT/.lock"
flock 9

# newer_than OUT IN...: OUT is missing or older than one of the INs.
newer_than() {
	local out=$1 in
	shift
	[ -e "$out" ] || return 0
	for in in "$@"; do
		[ "$in" -nt "$out" ] && return 0
	done
	return 1
}

# --- the kernel ---------------------------------------------------------------------------------

fetch_kernel() {
	local pkg deb tmp m f
	pkg=$(apt-cache depends "$KPKG" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	if [ -z "$pkg" ]; then
		# No package lists yet (a fresh machine): fetch them once.
		apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
		pkg=$(apt-cache depends "$KPKG" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	fi
	[ -n "$pkg" ] || die "cannot resolve $KPKG to a kernel image package (apt-cache depends $KPKG)"
	mkdir -p "$OUT/pkg"
	deb=$(find "$OUT/pkg" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
	if [ -z "$deb" ]; then
		say APT "$pkg"
		# As root into a directory _apt cannot write: say so, instead of a warning per download.
		(cd "$OUT/pkg" && apt-get download -qq -o APT::Sandbox::User=root -o Acquire::Retries=3 "$pkg") ||
			die "apt-get download $pkg failed"
		deb=$(find "$OUT/pkg" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
		[ -n "$deb" ] || die "apt-get download $pkg left no .deb in $OUT/pkg"
	fi
	say UNPACK "$(basename "$deb")"
	tmp=$(mktemp -d "$OUT/unpack.XXXXXX")
	# shellcheck disable=SC2064 # expand now: the trap must remove this very directory
	trap "rm -rf '$tmp'" EXIT
	dpkg-deb -x "$deb" "$tmp/root"
	mkdir -p "$tmp/kernel"
	cp "$tmp"/root/boot/vmlinuz-* "$tmp/kernel/vmlinuz"
	cp "$tmp"/root/boot/config-* "$tmp/kernel/config"
	basename "$tmp"/root/boot/vmlinuz-* | sed 's/^vmlinuz-//' >"$tmp/kernel/release"
	for m in $MODULES; do
		f=$(find "$tmp/root/lib/modules" -name "$m.ko" | head -n 1)
		[ -n "$f" ] || die "$m.ko is not in $(basename "$deb") (compressed or built in?)"
		cp "$f" "$tmp/kernel/"
	done
	rm -rf "$OUT/kernel"
	mv "$tmp/kernel" "$OUT/kernel"
	rm -rf "$tmp"
	trap - EXIT
}

if ! [ -s "$OUT/kernel/vmlinuz" ] || ! [ -s "$OUT/kernel/virtio_net.ko" ]; then
	fetch_kernel
fi

# --- tfprobe ------------------------------------------------------------------------------------

if newer_than "$OUT/tfprobe" "$here/tfprobe.c"; then
	say CC "$OUT/tfprobe (static)"
	gcc -static -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE "$here/tfprobe.c" -o "$OUT/tfprobe.tmp" ||
		die "cannot build tfprobe static (is libc6-dev's libc.a there?)"
	mv "$OUT/tfprobe.tmp" "$OUT/tfprobe"
fi

# --- the initramfs ------------------------------------------------------------------------------

if newer_than "$OUT/initramfs.gz" "$here/guest-init.sh" "$here/build-image.sh" "$OUT/tfprobe" \
	"$BUSYBOX" "$OUT/kernel/vmlinuz"; then
	say CPIO "$OUT/initramfs.gz (kernel $(cat "$OUT/kernel/release"))"
	st=$OUT/initramfs.d
	rm -rf "$st"
	mkdir -p "$st"/{bin,dev,proc,sys,tmp,lib/modules}
	cp "$BUSYBOX" "$st/bin/busybox"
	cp "$OUT/tfprobe" "$st/bin/tfprobe"
	for m in $MODULES; do
		cp "$OUT/kernel/$m.ko" "$st/lib/modules/"
	done
	install -m 755 "$here/guest-init.sh" "$st/init"
	# The kernel opens /dev/console for init before anything can mount devtmpfs.
	mknod -m 600 "$st/dev/console" c 5 1
	# No cpio package on Debian by default: busybox's writes the newc format the kernel reads.
	(cd "$st" && find . | LC_ALL=C sort | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1) \
		>"$OUT/initramfs.gz.tmp"
	mv "$OUT/initramfs.gz.tmp" "$OUT/initramfs.gz"
	rm -rf "$st"
fi
