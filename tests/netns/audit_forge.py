#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write LOG to OUT with checkpoint line N (1-based) claiming another root under
its old signature.

audit_forge.py LOG OUT N
"""
import base64, json, sys
lines = open(sys.argv[1]).read().split("\n")
i = int(sys.argv[3]) - 1
o = json.loads(lines[i])
text, sig = o["note"].split("\n\n", 1)
origin, size, root = text.split("\n")[:3]
forged = bytearray(base64.b64decode(root)); forged[0] ^= 1
o["note"] = "\n".join([origin, size, base64.b64encode(bytes(forged)).decode()]) + "\n\n" + sig
lines[i] = json.dumps(o, separators=(",", ":"))
open(sys.argv[2], "w").write("\n".join(lines))
