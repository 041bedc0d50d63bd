#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Debian package (docs/packaging.md): `make deb' builds it with dpkg-buildpackage and passes
# lintian with no error or warning. It installs on this machine with dpkg: the daemon, CLI, CNI
# plugin, unit, config (a conffile), man pages and completion where Debian puts them, the installed
# daemon serving with the installed config's checks. Removing it leaves the config and the state;
# purging removes them. Skipped if a tapfence package is installed already (it is not this test's).
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need dpkg-buildpackage lintian dh
if dpkg-query -W -f='${Status}' tapfence 2>/dev/null | grep -q 'ok installed'; then
	echo "SKIP: a tapfence package is installed on this machine; not this test's to replace"
	pass "skipped: a tapfence package is installed already"
	tf_done
	exit
fi
state_was=0
[ -e /var/lib/tapfence ] && state_was=1

check "make deb (dpkg-buildpackage, lintian --fail-on error,warning)" \
	make -s -C "$TF_ROOT" BUILD="$TF_BUILD" deb
DEB=$TF_BUILD/deb/tapfence_$(sed -n 's/^VERSION *:= *//p' "$TF_ROOT/Makefile")_amd64.deb
check "the package is built" test -s "$DEB"
[ -s "$DEB" ] || { tail -n 20 "$TF_BUILD/deb/build.log" 2>/dev/null | sed 's/^/#   /'; tf_done; exit 1; }
dpkg-deb -c "$DEB" | awk '{ print $6 }' >"$T/contents"
for f in ./usr/sbin/tapfenced ./usr/bin/tapfence ./usr/lib/cni/tapfence-cni \
	./lib/systemd/system/tapfenced.service ./etc/tapfence/tapfence.json \
	./usr/share/man/man8/tapfence.8.gz ./usr/share/man/man5/tapfence.conf.5.gz \
	./usr/share/bash-completion/completions/tapfence ./usr/share/doc/tapfence/copyright; do
	check "the package holds $f" grep -qxF "$f" "$T/contents"
done
check "the config is a conffile" sh -c "dpkg-deb -e '$DEB' '$T/ctl' && grep -qx /etc/tapfence/tapfence.json '$T/ctl/conffiles'"

purge() { dpkg -P tapfence >>"$T/dpkg.out" 2>&1; }
check "dpkg -i" sh -c "dpkg -i '$DEB' >>'$T/dpkg.out' 2>&1"
defer purge
check "installed: tapfenced --version" /usr/sbin/tapfenced --version
check "installed: its config is valid" /usr/sbin/tapfenced --check-config /etc/tapfence/tapfence.json
check "installed: the unit names the installed daemon" grep -q '^ExecStart=/usr/sbin/tapfenced ' \
	/lib/systemd/system/tapfenced.service
check "installed: man finds tapfence(8)" sh -c "man -w tapfence | grep -q /usr/share/man/man8/tapfence.8"

note "the installed daemon serves (in a namespace, on this test's paths)"
ns=tf-deb-$TF_SFX
setup ns_add "$ns"
bpffs_mount "$T/bpffs"
tfd_config "$T/tf.json"
TF_BUILD_SAVED=$TF_BUILD
TF_BUILD=/usr/sbin tfd_start "$ns"
TF_BUILD=$TF_BUILD_SAVED
check "tapfence (installed) version talks to it" sh -c "/usr/bin/tapfence --socket '$TF_SOCK' version | grep -q '^tapfenced '"
tfd_stop

note "remove, then purge"
mkdir -p /var/lib/tapfence
check "dpkg -r" sh -c "dpkg -r tapfence >>'$T/dpkg.out' 2>&1"
check "removed: the programs are gone" test ! -e /usr/sbin/tapfenced
check "removed: the config stays" test -f /etc/tapfence/tapfence.json
check "removed: the state stays" test -d /var/lib/tapfence
if [ "$state_was" = 0 ]; then
	check "dpkg -P" purge
	check "purged: the config is gone" test ! -e /etc/tapfence/tapfence.json
	check "purged: the state is gone" test ! -e /var/lib/tapfence
else
	note "/var/lib/tapfence was there before the test: purge not checked"
	purge
fi
tf_done
