#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that every tier passes: runs the unit binaries and the netns scripts, counts the
# "PASS: ..." / "FAIL: ..." lines they print, and ends with "N passed, N failed".
# Usage: tests/run.sh [unit|san|netns|vm|TIER:NAME]...   (default: all tiers; vm only where QEMU is
# installed). TIER:NAME runs one test of a tier: netns:test_cni, unit:test_spec, vm:test_guests.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
tiers=("$@")
[ ${#tiers[@]} -eq 0 ] && tiers=(unit san netns)

# vm_available: what the vm tier needs is installed (tests/vm/lib.sh's vm_prereqs decides).
vm_available() {
	# shellcheck source=/dev/null
	(source tests/netns/lib.sh && source tests/vm/lib.sh && vm_prereqs && exit 0
		echo "# vm tier skipped: missing$VM_MISSING (make deps installs them)"; exit 1)
}
# The vm tier (real microVMs, about 1.5 minutes) joins the default run only where it can boot.
[ $# -eq 0 ] && vm_available && tiers+=(vm)

passed=0 failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_one() { # name cmd...
	local name=$1; shift
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local p f
	p=$(grep -c '^PASS: ' "$log")
	f=$(grep -c '^FAIL: ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name exited $rc without naming a failed case"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name ran no test"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

for tier in "${tiers[@]}"; do
	case $tier in
	unit:* | netns:* | vm:*)
		name=${tier#*:} t=${tier%%:*}
		case $t in
		unit) f=$BUILD/tests/$name ;;
		*) f=tests/$t/$name.sh ;;
		esac
		[ -e "$f" ] || { echo "no test $tier ($f)" >&2; exit 2; }
		if [ "$t" = unit ]; then run_one "$tier" "$f"; else run_one "$tier" bash "$f"; fi ;;
	unit)
		for t in "$BUILD"/tests/test_*; do
			[ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
		done ;;
	san)
		# The unit binaries again, built with ASan+UBSan (make san); any report fails the run.
		for t in "$BUILD"/san/tests/test_*; do
			[ -x "$t" ] && run_one "san/$(basename "$t")" \
				env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
				UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$t"
		done
		# The control test again against the sanitized daemon and CLI.
		run_one "san/test_control.sh" env BUILD="$BUILD/san" \
			ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
			bash tests/netns/test_control.sh ;;
	netns)
		for t in tests/netns/test_*.sh; do
			[ -f "$t" ] && run_one "netns/$(basename "$t")" bash "$t"
		done ;;
	vm)
		for t in tests/vm/test_*.sh; do
			[ -f "$t" ] && run_one "vm/$(basename "$t")" bash "$t"
		done ;;
	*) echo "unknown tier $tier" >&2; exit 2 ;;
	esac
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
