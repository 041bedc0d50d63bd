#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that the daemon's device listener takes RTM_NEWLINK from the kernel only.

nlforge.py PID NAME IFINDEX: in the daemon's namespace, find process PID's NETLINK_ROUTE socket
        that listens to RTMGRP_LINK (its inode among PID's fds, its port id in /proc/net/netlink)
        and send it, from a socket of this process, one RTM_NEWLINK naming NAME with IFINDEX, as
        a process with CAP_NET_ADMIN can. Prints "sent to port N"; exit 1 if no such socket.
Standard library only.
"""
import os
import socket
import struct
import sys

NETLINK_ROUTE = 0
RTM_NEWLINK = 16
RTMGRP_LINK = 1
IFLA_IFNAME = 3


def link_socket_port(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    with open("/proc/net/netlink") as f:
        next(f)
        for line in f:
            cols = line.split()
            proto, port, groups, inode = int(cols[1]), int(cols[2]), int(cols[3], 16), int(cols[9])
            if proto == NETLINK_ROUTE and groups & RTMGRP_LINK and inode in inodes:
                return port
    return None


def newlink(name, ifindex):
    raw = name.encode() + b"\0"
    attr = struct.pack("=HH", 4 + len(raw), IFLA_IFNAME) + raw
    attr += b"\0" * (-len(attr) % 4)
    ifi = struct.pack("=BxHiII", socket.AF_UNSPEC, 1, ifindex, 0x1 | 0x40, 0xffffffff)
    body = ifi + attr
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWLINK, 0, 1, os.getpid()) + body


def main():
    pid, name, ifindex = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    port = link_socket_port(pid)
    if port is None:
        print(f"no RTMGRP_LINK listener of pid {pid} in this namespace")
        return 1
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    s.bind((0, 0))
    s.sendto(newlink(name, ifindex), (port, 0))
    print(f"sent to port {port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
