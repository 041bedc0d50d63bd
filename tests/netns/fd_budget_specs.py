#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test specs: the session specs p1 .. p(N-1) of the fd-budget test, written to DIR/pI.json.

fd_budget_specs.py DIR N
"""
import json, sys
t, n = sys.argv[1], int(sys.argv[2])
for i in range(1, n):
    spec = {"id": "p%d" % i, "ifname": "p%d" % i,
            "guest": {"mac": "02:00:00:01:%02x:02" % i, "ipv4": "10.20.%d.2" % i},
            "gateway": {"mac": "02:00:00:01:%02x:01" % i, "ipv4": "10.20.%d.1" % i},
            "resolver": {"ipv4": "10.20.%d.1" % i, "port": 53}, "allow": []}
    json.dump(spec, open("%s/p%d.json" % (t, i), "w"))
