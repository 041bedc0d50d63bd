#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make install' and `make uninstall' (docs/operations.md#installing) into a scratch DESTDIR: the
# daemon, the CLI, the CNI plugin and the example config where PREFIX and CNIDIR say, runnable; the
# example config valid for the installed daemon; uninstall leaves nothing of them. No namespace.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

root=$T/root
mk() { make -s -C "$TF_ROOT" BUILD="$TF_BUILD" DESTDIR="$root" PREFIX=/usr CNIDIR=/usr/lib/cni "$@"; }
check "make install DESTDIR PREFIX=/usr CNIDIR=/usr/lib/cni" mk install
for f in usr/sbin/tapfenced usr/bin/tapfence usr/lib/cni/tapfence-cni; do
	check "installed $f, mode 0755" test "$(stat -c %a "$root/$f" 2>/dev/null)" = 755
done
check "installed the example config, mode 0644" \
	test "$(stat -c %a "$root/usr/share/doc/tapfence/examples/tapfence.json" 2>/dev/null)" = 644
check_says "the installed tapfenced runs: --version" 0 "(abi " "$root/usr/sbin/tapfenced" --version
check_says "the installed tapfence runs: --version" 0 "tapfence " "$root/usr/bin/tapfence" --version
check_says "the example config is valid for the installed daemon" 0 "valid" \
	"$root/usr/sbin/tapfenced" --check-config "$root/usr/share/doc/tapfence/examples/tapfence.json"
check "make uninstall" mk uninstall
check "uninstall leaves none of the files" test -z "$(find "$root" -type f)"
tf_done
