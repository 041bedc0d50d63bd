#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that the isolation battery (tools/battery.sh, docs/attest.md#the-isolation-battery) finds no
# escape on this build and kernel: every probe first sees its own escape with nothing enforcing,
# then none gets through tapfence, and its report says "no_escape".
set -u
out=$(mktemp /tmp/tapfence-battery.XXXXXX.json)
trap 'rm -f "$out"' EXIT
bash "$(dirname "$0")/../../tools/battery.sh" --out "$out"
rc=$?
if /usr/bin/python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["result"] != "no_escape")' "$out" 2>/dev/null; then
	echo "PASS: the battery's report: no escape, no broken probe"
else
	echo "FAIL: the battery's report is not \"no_escape\": $(head -c 300 "$out" 2>/dev/null)"
	rc=1
fi
exit "$rc"
