#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write LOG to OUT with a line starting with a NUL byte inserted.

audit_nul_line.py LOG OUT
"""
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
lines.insert(3, b'\0{"session":"a","verdict":"allow","name":"exfil.evil"}')
open(sys.argv[2], "wb").write(b"\n".join(lines))
