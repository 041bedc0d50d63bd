#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write LOG to OUT with its first key line's new key replaced by its old one.

evidence_key_edit.py LOG OUT
"""
import json, sys
lines = open(sys.argv[1]).read().split("\n")
i = next(i for i, l in enumerate(lines) if '"kind":"key"' in l)
o = json.loads(lines[i])
o["new"] = o["old"]
lines[i] = json.dumps(o, separators=(",", ":"))
open(sys.argv[2], "w").write("\n".join(lines))
