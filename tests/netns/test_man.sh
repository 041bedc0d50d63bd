#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The man pages (tools/man/mkman.py): each renders with man(1) and groff warns about nothing; they
# name every subcommand of `tapfence --help', every key the config parser takes
# (user/daemon/config.c), every reason (include/tapfence/reason.h): a key or reason added
# without its documentation fails here. make install puts them under MANDIR. No namespace.
set -u
. "$(dirname "$0")/lib.sh"
tf_init

tf_need man groff
MAN=$TF_BUILD/man
for p in tapfenced.8 tapfence.8 tapfence.conf.5 tapfence-events.7; do
	check "$p is built" test -s "$MAN/$p"
	MANWIDTH=80 man -l "$MAN/$p" >"$T/$p.txt" 2>"$T/$p.err"
	check "man -l $p renders" test -s "$T/$p.txt"
	groff -man -Tutf8 -ww -z "$MAN/$p" >"$T/$p.warn" 2>&1
	check "groff has no warning for $p" test ! -s "$T/$p.warn"
	# Its text as written, unescaped: the rendered one wraps and hyphenates.
	sed 's/\\-/-/g; s/\\e/\\/g; s/\\f[BRI]//g; s/\\&//g' "$MAN/$p" >"$T/$p.src"
done

missing() { # missing PAGE WORD...: the words PAGE's text lacks
	local w
	for w in "${@:2}"; do grep -qF -- "$w" "$T/$1.src" || echo "$w"; done
}
mapfile -t cmds < <("$TF_BUILD/tapfence" --help | sed -n '/^Commands:/,/^$/p' | grep '^  [a-z]' | sed 's/^  //')
check "tapfence --help lists commands (${#cmds[@]})" test "${#cmds[@]}" -ge 15
m=$(missing tapfence.8 "${cmds[@]}")
check "tapfence(8) names every subcommand${m:+ (missing: $m)}" test -z "$m"
mapfile -t keys < <(grep -oE 'strcmp\(key, "[a-z_0-9]+"\)|LIMIT\([a-z_0-9]+|TIMEOUT\("[a-z_0-9]+"' \
	"$TF_ROOT/user/daemon/config.c" | grep -oE '[a-z_0-9]{2,}"?\)?$' | tr -d '")' | grep -v '^key$' | sort -u)
check "config.c takes keys (${#keys[@]})" test "${#keys[@]}" -ge 40
m=$(missing tapfence.conf.5 "${keys[@]}")
check "tapfence.conf(5) names every key the parser takes${m:+ (missing: $m)}" test -z "$m"
mapfile -t reasons < <(grep -oE 'X\([0-9]+, [A-Z0-9_]+, "[a-z0-9_]+"' "$TF_ROOT/include/tapfence/reason.h" |
	grep -oE '"[a-z0-9_]+"' | tr -d '"' | grep -v '^unused')
check "reason.h has reasons (${#reasons[@]})" test "${#reasons[@]}" -ge 70
m=$(missing tapfence-events.7 "${reasons[@]}")
check "tapfence-events(7) names every reason${m:+ (missing: $m)}" test -z "$m"
check "tapfenced(8) has --check-config and --cleanup" sh -c \
	"grep -q -- '--check-config' '$T/tapfenced.8.txt' && grep -q -- '--cleanup' '$T/tapfenced.8.txt'"

root=$T/root
check "make install DESTDIR PREFIX=/usr" make -s -C "$TF_ROOT" BUILD="$TF_BUILD" DESTDIR="$root" \
	PREFIX=/usr install
for p in man8/tapfenced.8 man8/tapfence.8 man5/tapfence.conf.5 man7/tapfence-events.7; do
	check "installed usr/share/man/$p" test -s "$root/usr/share/man/$p"
done
check "make uninstall" make -s -C "$TF_ROOT" BUILD="$TF_BUILD" DESTDIR="$root" PREFIX=/usr uninstall
check "uninstall leaves no page" test -z "$(find "$root" -name '*.[578]')"

tf_done
