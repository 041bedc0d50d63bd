#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write LOG to OUT with its first key line's endorsement naming another log.

evidence_endorsement_edit.py LOG OUT
"""
import json, sys
lines = open(sys.argv[1]).read().split("\n")
i = next(i for i, l in enumerate(lines) if '"kind":"key"' in l)
o = json.loads(lines[i])
text, sigs = o["endorsement"].split("\n\n")
o["endorsement"] = text.replace("tapfence/ev-node", "tapfence/ev-nodf", 1) + "\n\n" + sigs
lines[i] = json.dumps(o, separators=(",", ":"))
open(sys.argv[2], "w").write("\n".join(lines))
