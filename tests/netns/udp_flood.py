#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test traffic: 20 s of denied datagrams and new flows from guest A, as fast as it can.
"""
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + 20
n = 0
for port in range(20000, 24000):        # 4000 allowed flows, a table of 256
    s.sendto(b"x", ("192.0.2.1", port))
    n += 1
for i in range(20000):                  # denied, event after event
    s.sendto(b"y", ("203.0.113.10", 7))
    n += 1
    if time.monotonic() > end:
        break
print(n)
