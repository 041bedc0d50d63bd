#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test how a denied guest fails: what a real client sees, and how fast (test_reject.sh).

    tcp ADDR:PORT           connect(); prints "tcp connected MS" or "tcp ERRNO MS"
    udp ADDR:PORT           a datagram on a connected socket, then recv(); prints "udp reply MS"
                            or "udp ERRNO MS" (an ICMP error reaches a connected UDP socket)
    dns SERVER NAME         an A query from a plain UDP socket; prints "dns RCODE MS"
                            (NOERROR, REFUSED, NXDOMAIN, ...), "dns bad-id MS" or "dns timeout MS"
    flood ADDR:PORT N       N datagrams as fast as they go, nothing read; prints "flood N"

ERRNO is a name (ECONNREFUSED, EHOSTUNREACH, ETIMEDOUT, ...), MS the milliseconds from the
first send to the outcome. --timeout S bounds every wait (default 2). Exit status 0 once a line
is printed, 2 on a usage error. Standard library only; run it as /usr/bin/python3.
"""
import errno
import os
import socket
import struct
import time

from tfnet import arg, parse_addr, run

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def ms(t0):
    return f"{(time.monotonic() - t0) * 1000:.1f}"


def err_name(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def tcp(a):
    fam, host, port = parse_addr(a.addr)
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(a.timeout)
    t0 = time.monotonic()
    try:
        s.connect((host, port))
        print(f"tcp connected {ms(t0)}")
    except socket.timeout:
        print(f"tcp ETIMEDOUT {ms(t0)}")
    except OSError as e:
        print(f"tcp {err_name(e)} {ms(t0)}")
    return 0


def udp(a):
    fam, host, port = parse_addr(a.addr)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(a.timeout)
    s.connect((host, port))
    t0 = time.monotonic()
    try:
        s.send(b"tapfence-reject-probe")
        s.recv(2048)
        print(f"udp reply {ms(t0)}")
    except socket.timeout:
        print(f"udp ETIMEDOUT {ms(t0)}")
    except OSError as e:
        print(f"udp {err_name(e)} {ms(t0)}")
    return 0


def dns(a):
    fam, host, port = parse_addr(a.server if ":" in a.server else a.server + ":53")
    qid = int.from_bytes(os.urandom(2), "big")
    qname = b"".join(bytes([len(x)]) + x.encode() for x in a.name.split(".")) + b"\0"
    query = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname + struct.pack(">HH", 1, 1)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(a.timeout)
    t0 = time.monotonic()
    s.sendto(query, (host, port))
    try:
        reply = s.recv(4096)
    except socket.timeout:
        print(f"dns timeout {ms(t0)}")
        return 0
    rid, flags, qd, an = struct.unpack(">HHHH", reply[:8])
    if rid != qid or not flags & 0x8000 or qd != 1 or reply[12:12 + len(qname)] != qname:
        print(f"dns bad-id {ms(t0)}")
    else:
        print(f"dns {RCODES.get(flags & 0xF, flags & 0xF)} {ms(t0)} answers {an}")
    return 0


def flood(a):
    fam, host, port = parse_addr(a.addr)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((host, port))
    sent = 0
    for _ in range(a.n):
        try:
            s.send(b"flood")
            sent += 1
        except OSError:
            pass  # an ICMP error from the previous datagram surfaces on the next send
    print(f"flood {sent}")
    return 0


COMMON = [arg("--timeout", type=float, default=2.0)]
COMMANDS = {
    "tcp": (tcp, COMMON + [arg("addr")]),
    "udp": (udp, COMMON + [arg("addr")]),
    "dns": (dns, COMMON + [arg("server"), arg("name")]),
    "flood": (flood, COMMON + [arg("addr"), arg("n", type=int)]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS)
