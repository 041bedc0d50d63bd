#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that ICMP errors reach a guest only as much as they need: the guest's and the internet's parts.

capture --log FILE --ready FILE: in the guest, raw ICMP and ICMPv6 sockets; one line per ICMP error
        received appended to FILE: "icmp4 type=3 code=4 src=10.97.0.2 len=36 marker=0" (len: the
        ICMP message's bytes, marker=1 if it holds the crafted payload's marker). --ready as
        listener.py's. Runs until SIGTERM.
big DST PORT SIZE --sport N: from the guest, a UDP datagram of SIZE bytes (IP header included)
        with DF set (IP_PMTUDISC_DO / IPV6_DONTFRAG), as path MTU discovery sends it, then the same
        again every 0.1 s until the socket refuses it (EMSGSIZE: its kernel learnt a smaller path
        MTU): print "socket mtu N" and exit 0; exit 1 if that does not happen within --timeout s.
error --src S --dst GUEST --type T --code C --inner-dst D --sport N --dport P --payload-len L:
        from the internet, one crafted ICMP (or ICMPv6, by the addresses) error to GUEST quoting
        a UDP packet GUEST:N -> D:P followed by L bytes of the marker, as any host that knows or
        guesses the flow can send it.
Standard library plus Debian's scapy (error): run it as /usr/bin/python3.
"""
import errno
import select
import socket
import time

from tfnet import LOG, arg, exit_on_term, log_line, quiet_scapy, ready, run

MARKER = b"TAPFENCE-ICMP-PAYLOAD-"
# <linux/in.h>; Python's socket module names neither.
IP_MTU_DISCOVER = 10
IP_PMTUDISC_DO = 2
IP_MTU = 14
IPV6_MTU = 24
ERRORS4 = (3, 11, 12)
ERRORS6 = (1, 2, 3, 4)


def capture(a):
    s4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    exit_on_term()
    ready(a.ready)
    while True:
        for s in select.select([s4, s6], [], [], 1.0)[0]:
            data, peer = s.recvfrom(65535)
            if s is s4:
                data = data[(data[0] & 15) * 4:]  # a raw IPv4 socket reads the IP header too
            fam = "icmp4" if s is s4 else "icmp6"
            if len(data) < 8 or data[0] not in (ERRORS4 if s is s4 else ERRORS6):
                continue
            line = (f"{fam} type={data[0]} code={data[1]} src={peer[0]} len={len(data)} "
                    f"marker={int(MARKER in data)}")
            log_line(a.log, line)


def big(a):
    v6 = ":" in a.dst
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    if v6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_DONTFRAG, 1)
    else:
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    s.bind(("::" if v6 else "0.0.0.0", a.sport))
    s.connect((a.dst, a.port))
    data = b"x" * (a.size - (48 if v6 else 28))
    s.send(data)
    print(f"sent {a.size} bytes with DF to {a.dst}:{a.port} from port {a.sport}")
    # The socket stays open: the kernel applies a PMTU error through the socket it is about.
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            s.send(data)
        except OSError as e:
            if e.errno != errno.EMSGSIZE:
                continue
            mtu = s.getsockopt(*((socket.IPPROTO_IPV6, IPV6_MTU) if v6 else (socket.IPPROTO_IP, IP_MTU)))
            print(f"socket mtu {mtu}")
            return 0
    print("the socket learnt no smaller MTU")
    return 1


def error(a):
    quiet_scapy()
    from scapy.all import ICMP, IP, UDP, IPv6, send  # noqa: E402
    from scapy.layers.inet6 import ICMPv6DestUnreach  # noqa: E402

    payload = (MARKER * (a.payload_len // len(MARKER) + 1))[:a.payload_len]
    if ":" in a.dst:
        inner = IPv6(src=a.dst, dst=a.inner_dst) / UDP(sport=a.sport, dport=a.dport) / payload
        pkt = IPv6(src=a.src, dst=a.dst) / ICMPv6DestUnreach(code=a.code) / inner
    else:
        inner = IP(src=a.dst, dst=a.inner_dst) / UDP(sport=a.sport, dport=a.dport) / payload
        pkt = IP(src=a.src, dst=a.dst) / ICMP(type=a.type, code=a.code) / inner
    send(pkt, verbose=False)
    print(f"sent an ICMP error of {len(bytes(pkt))} bytes to {a.dst}")
    return 0


COMMANDS = {
    "capture": (capture, [LOG, arg("--ready", required=True)]),
    "big": (big, [arg("dst"), arg("port", type=int), arg("size", type=int),
                  arg("--sport", type=int, required=True), arg("--timeout", type=float, default=3.0)]),
    "error": (error, [arg("--src", required=True), arg("--dst", required=True),
                      arg("--type", type=int, default=3), arg("--code", type=int, default=3),
                      arg("--inner-dst", required=True), arg("--sport", type=int, required=True),
                      arg("--dport", type=int, required=True),
                      arg("--payload-len", type=int, default=1000)]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS)
