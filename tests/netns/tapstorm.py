#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Race the guard (test_guard.sh): make taps the way a VMM does and write frames into them at once.

  tapstorm.py storm --prefix P --count N --frames F --bridge BR FRAME...
      N times: create tap P<i> by opening /dev/net/tun (TUNSETIFF: the device exists from this
      call), bring it up, make it a port of bridge BR, and write F frames into it without pause;
      then close it (the tap goes). Nothing waits between the ioctls and the writes.
  tapstorm.py write --dev D --frames F FRAME...
      attach to the existing tap D and write F frames.
FRAME: --guest-mac M --gw-mac G --src A --dst B --port P: one UDP datagram from A (MAC M) to B:P,
sent to G (the bridge's MAC); its payload names the tap and the frame's number.
Prints how many frames were written. Exit 2 on a setup error.
Needs Debian's scapy: run it as /usr/bin/python3.
"""
import fcntl
import os
import socket
import struct

from tfnet import arg, quiet_scapy, run

quiet_scapy()
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
SIOCGIFINDEX = 0x8933
SIOCBRADDIF = 0x89A2
IFF_UP = 0x1


def tap_open(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def up_and_enslave(sock, name, bridge):
    ifr = struct.pack("16sH22x", name.encode(), 0)
    flags = struct.unpack("16sH22x", fcntl.ioctl(sock, SIOCGIFFLAGS, ifr))[1]
    fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH22x", name.encode(), flags | IFF_UP))
    index = struct.unpack("16si20x", fcntl.ioctl(sock, SIOCGIFINDEX, ifr))[1]
    fcntl.ioctl(sock, SIOCBRADDIF, struct.pack("16si20x", bridge.encode(), index))


def frames(a, dev):
    base = Ether(src=a.guest_mac, dst=a.gw_mac) / IP(src=a.src, dst=a.dst) / UDP(sport=40000, dport=a.port)
    return [bytes(base / f"storm {dev} {i:06d}".encode()) for i in range(a.frames)]


def write_all(fd, frs):
    n = 0
    for f in frs:
        try:
            os.write(fd, f)
            n += 1
        except OSError:
            pass
    return n


def cmd_storm(a):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    total = 0
    for i in range(a.count):
        name = f"{a.prefix}{i}"
        frs = frames(a, name)
        fd = tap_open(name)
        try:
            up_and_enslave(sock, name, a.bridge)
            total += write_all(fd, frs)
        finally:
            os.close(fd)
    print(f"wrote {total} frames on {a.count} taps")
    return 0


def cmd_write(a):
    fd = tap_open(a.dev)
    try:
        n = write_all(fd, frames(a, a.dev))
    finally:
        os.close(fd)
    print(f"wrote {n} frames on {a.dev}")
    return 0


FRAME = [arg("--frames", type=int, default=20), arg("--guest-mac", required=True),
         arg("--gw-mac", required=True), arg("--src", required=True), arg("--dst", required=True),
         arg("--port", type=int, required=True)]
COMMANDS = {
    "storm": (cmd_storm, [arg("--prefix", required=True), arg("--count", type=int, default=30),
                          arg("--bridge", required=True)] + FRAME),
    "write": (cmd_write, [arg("--dev", required=True)] + FRAME),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS)
