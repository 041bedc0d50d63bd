#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test specs: write SPEC with one more rule (udp 53000 to 203.0.113.0/24) to OUT.

spec_widen.py SPEC OUT
"""
import json, sys
s = json.load(open(sys.argv[1]))
s["allow"].append({"cidr": "203.0.113.0/24", "proto": "udp", "ports": [53000]})
json.dump(s, open(sys.argv[2], "w"))
