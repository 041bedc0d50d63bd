#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write LOG to OUT with one bit of the first line's frontier flipped.

audit_edge.py LOG OUT
"""
import base64, json, sys
lines = open(sys.argv[1]).read().split("\n")
o = json.loads(lines[0])
edge = bytearray(base64.b64decode(o["frontier"][0])); edge[0] ^= 1
o["frontier"][0] = base64.b64encode(bytes(edge)).decode()
lines[0] = json.dumps(o, separators=(",", ":"))
open(sys.argv[2], "w").write("\n".join(lines))
