#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test specs: 601 rules (tcp/80 to 198.51.100.10, then udp/9 to 600 host addresses) as JSON in FILE.

many_rules.py FILE
"""
import json, sys
nets = ("192.0.2.%d/32", "198.51.100.%d/32", "203.0.113.%d/32")
rules = [{"cidr": "198.51.100.10/32", "proto": "tcp", "ports": [80]}]
rules += [{"cidr": nets[i // 256] % (i % 256), "proto": "udp", "ports": [9]} for i in range(600)]
json.dump(rules, open(sys.argv[1], "w"))
