#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Regenerate vmlinux/<arch>.h from the running kernel's BTF (CO-RE: one header serves every kernel).
set -euo pipefail
arch=$(uname -m)
out="$(dirname "$0")/${arch}.h"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(uname -r))"
