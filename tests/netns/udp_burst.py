#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test traffic: COUNT datagrams from 10.10.1.2:40900 to the DSTs in turn, then one to LAST.

udp_burst.py COUNT LAST DST...
"""
import socket, sys
count, last, dsts = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.10.1.2", 40900))
for i in range(count):
    s.sendto(b"flood", (dsts[i % len(dsts)], 9))
s.sendto(b"the one that matters", (last, 9))
