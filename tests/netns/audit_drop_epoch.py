#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write LOG to OUT without its third epoch from the end.

audit_drop_epoch.py LOG OUT
"""
import sys
lines = open(sys.argv[1]).read().split("\n")
ep = [i for i, l in enumerate(lines) if '"kind":"epoch"' in l]
a, b = ep[-3], ep[-2]   # the third epoch from the end, whole, removed
open(sys.argv[2], "w").write("\n".join(lines[:a] + lines[b:]))
