#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test traffic: one VXLAN packet to DST:PORT whose inner frame (to INNER_MAC) carries UDP from
198.18.0.7 to the metadata server 169.254.169.254:7 with TAG as its payload.

vxlan_send.py DST PORT INNER_MAC TAG
"""
import socket, struct, sys
dst, port, mac, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
vni = 42 if port == 4789 else 43
udp = struct.pack("!HHHH", 40007, 7, 8 + len(tag), 0) + tag
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                 socket.inet_aton("198.18.0.7"), socket.inet_aton("169.254.169.254"))
words = struct.unpack("!10H", ip)
s = sum(words)
s = (s & 0xffff) + (s >> 16)
s = (s & 0xffff) + (s >> 16)
ip = ip[:10] + struct.pack("!H", ~s & 0xffff) + ip[12:]
eth = bytes.fromhex(mac.replace(":", "")) + bytes.fromhex("020000000707") + b"\x08\x00"
vx = struct.pack("!II", 0x08000000, vni << 8)
fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM)
for _ in range(3):
    s.sendto(vx + eth + ip + udp, (dst, port))
