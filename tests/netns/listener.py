#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that a packet reached a real socket: a TCP/UDP listener that logs what it got, plus a UDP client.

serve: listen on every --tcp / --udp ADDR:PORT (IPv6 as [ADDR]:PORT), append one line per accepted
       TCP connection or received UDP datagram to --log, e.g.
           tcp 198.51.100.10:80 from 10.10.1.2:40000
           udp [2001:db8:100::10]:7 from [fd00:a:1::2]:40000 len 12
           udp 10.10.3.1:53 from 10.10.3.2:40053 len 37 q=allowed.example.com   (a DNS query)
       answer TCP with a short HTTP reply naming the listener, echo UDP, exit 0 on SIGTERM.
udp:   send one datagram (optionally from --src/--sport) and wait --timeout seconds for the echo;
       print it and exit 0 if it came back, exit 1 if not.

Standard library only; run it as /usr/bin/python3.
"""
import os
import random
import selectors
import socket
import sys
import time

from tfnet import LOG, READY, arg, exit_on_term, fmt, log_line, parse_addr, ready, run


def serve(args):
    sel = selectors.DefaultSelector()
    socks = []
    for kind, specs in (("tcp", args.tcp), ("udp", args.udp)):
        for spec in specs:
            family, host, port = parse_addr(spec)
            stype = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
            s = socket.socket(family, stype)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind((host, port))
            if kind == "tcp":
                s.listen(16)
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, (kind, fmt((host, port))))
            socks.append(s)
    exit_on_term()
    ready(args.ready)

    while True:
        for key, _ in sel.select(timeout=1.0):
            kind, local = key.data
            s = key.fileobj
            if kind == "tcp":
                try:
                    conn, peer = s.accept()
                except OSError:
                    continue
                log_line(args.log, f"tcp {local} from {fmt(peer)}")
                handle_tcp(conn, local)
            else:
                try:
                    data, peer = s.recvfrom(65535)
                except OSError:
                    continue
                q = dns_qname(data)
                log_line(args.log, f"udp {local} from {fmt(peer)} len {len(data)}"
                         + (f" q={q}" if q else ""))
                try:
                    s.sendto(data, peer)
                except OSError:
                    pass


def dns_qname(data):
    """The question name of a datagram that reads as a DNS query (so a resolver's log names it), or None."""
    if len(data) < 17 or data[2] & 0x80 or int.from_bytes(data[4:6], "big") != 1:
        return None
    pos, labels = 12, []
    while pos < len(data) and data[pos] and data[pos] < 64 and len(labels) < 128:
        labels.append(data[pos + 1:pos + 1 + data[pos]].decode("ascii", "replace"))
        pos += 1 + data[pos]
    if pos + 5 > len(data) or data[pos] or not labels:
        return None
    return ".".join(labels)


def handle_tcp(conn, local):
    """Read the request (bounded: 1 s, 4 KiB), then answer and close."""
    conn.settimeout(1.0)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf and len(buf) < 4096:
            chunk = conn.recv(4096)
            if not chunk:
                break
            buf += chunk
    except OSError:
        pass
    body = f"tapfence-listener tcp {local}\n".encode()
    reply = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    try:
        conn.sendall(reply + body)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    conn.close()


def udp_client(args):
    family = socket.AF_INET6 if ":" in args.dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    src = args.src or ("::" if family == socket.AF_INET6 else "0.0.0.0")
    sport = args.sport or random.randint(40000, 59999)
    s.bind((src, sport))
    payload = (args.payload or f"tapfence-probe-{os.getpid()}").encode()
    s.sendto(payload, (args.dst, args.port))
    local = fmt(s.getsockname())
    print(f"sent udp {local} -> {fmt((args.dst, args.port))} len {len(payload)}", file=sys.stderr)
    deadline = time.monotonic() + args.timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            print("no reply")
            return 1
        s.settimeout(left)
        try:
            data, peer = s.recvfrom(65535)
        except socket.timeout:
            continue
        except OSError as e:  # e.g. ICMP port unreachable surfaced as ECONNREFUSED
            print(f"error {e}")
            return 1
        if data == payload:
            print(f"reply udp from {fmt(peer)} len {len(data)}")
            return 0


COMMANDS = {
    "serve": (serve, [LOG, READY, arg("--tcp", action="append", default=[], metavar="ADDR:PORT"),
                      arg("--udp", action="append", default=[], metavar="ADDR:PORT")]),
    "udp": (udp_client, [arg("dst"), arg("port", type=int), arg("--src"), arg("--sport", type=int),
                         arg("--payload"), arg("--timeout", type=float, default=2.0)]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS)
