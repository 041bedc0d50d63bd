#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test tampering: write the session evidence ENVELOPE to OUT with its statement's counters
emptied (the signature left as it was).

evidence_counters_emptied.py ENVELOPE OUT
"""
import base64, json, sys
env = json.load(open(sys.argv[1]))
st = json.loads(base64.b64decode(env["payload"]))
st["predicate"]["counters"] = {}
env["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
json.dump(env, open(sys.argv[2], "w"))
