#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that DNS answers and long-lived flows behave: the DNS and TCP pieces test_dns.sh needs.

echo-serve: TCP line echo on every ADDR:PORT; one line per accepted connection appended to --log
            ("tcp 198.51.100.40:443 from 10.10.1.2:40000", as listener.py writes), --ready as there.
echo-client DST PORT --go FILE: connect, send a line, read its echo and print "echo 1 ok"; then wait
            (up to --wait s) for FILE to exist, send a second line on the same connection, read its
            echo and print "echo 2 ok". Exit 0 iff both echoes came back.
query:      from --src:--sport send one DNS query (--id, --name, --qtype) to SERVER:53, write
            --sent once it is out, then log every datagram received on that socket for --listen s
            to --log, one line each: "dns id=0x1234 qr=1 rcode=0 q=NAME an=A:1.2.3.4,CNAME:x".
spoof:      send one forged DNS answer as an Ethernet frame on --iface (from --src:53 to
            --dst:--dport, --id, question --name, A record --addr), as an off-path host would.
            Exit 0 when it went out, 3 when the device's egress path dropped it (ENOBUFS: a TC
            egress program said drop).
Standard library plus Debian's scapy: run it as /usr/bin/python3.
"""
import errno
import os
import socket
import threading
import time

from tfnet import LOG, READY, arg, fmt, log_line, parse_addr, quiet_scapy, ready, run

quiet_scapy()


def echo_conn(conn):
    conn.settimeout(60)
    try:
        while True:
            data = conn.recv(4096)
            if not data:
                break
            conn.sendall(data)
    except OSError:
        pass
    conn.close()


def echo_accept(s, local, log):
    while True:
        try:
            conn, peer = s.accept()
        except OSError:
            return
        log_line(log, f"tcp {local} from {fmt(peer)}")
        threading.Thread(target=echo_conn, args=(conn,), daemon=True).start()


def echo_serve(args):
    threads = []
    for spec in args.tcp:
        family, host, port = parse_addr(spec)
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(16)
        t = threading.Thread(target=echo_accept, args=(s, fmt((host, port)), args.log), daemon=True)
        t.start()
        threads.append(t)
    ready(args.ready)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def recv_line(s, timeout):
    s.settimeout(timeout)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf


def echo_client(args):
    family = socket.AF_INET6 if ":" in args.dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(args.timeout)
    try:
        s.connect((args.dst, args.port))
    except OSError as e:
        print(f"connect: {e}", flush=True)
        return 1
    print(f"connected from {fmt(s.getsockname())}", flush=True)
    for n in (1, 2):
        if n == 2:
            deadline = time.monotonic() + args.wait
            while not os.path.exists(args.go) and time.monotonic() < deadline:
                time.sleep(0.05)
        line = f"tapfence-echo {n} {os.getpid()}\n".encode()
        try:
            s.sendall(line)
            got = recv_line(s, args.timeout)
        except OSError as e:
            print(f"echo {n}: {e}", flush=True)
            return 1
        if got != line:
            print(f"echo {n}: got {got!r}", flush=True)
            return 1
        print(f"echo {n} ok", flush=True)
    return 0


def dns_line(data):
    from scapy.layers.dns import DNS

    try:
        d = DNS(data)
    except Exception as e:  # a datagram scapy cannot parse is logged, not fatal
        return f"dns unparsable {e!r} len {len(data)}"
    q = d.qd.qname.decode(errors="replace").rstrip(".") if d.qdcount and d.qd else "-"
    an = []
    rr = d.an
    for _ in range(d.ancount or 0):
        if rr is None or not hasattr(rr, "type"):
            break
        rdata = rr.rdata
        if isinstance(rdata, bytes):
            rdata = rdata.decode(errors="replace").rstrip(".")
        an.append(f"{ {1: 'A', 5: 'CNAME', 28: 'AAAA'}.get(rr.type, rr.type)}:{rdata}")
        rr = rr.payload
    return f"dns id=0x{d.id:04x} qr={d.qr} rcode={d.rcode} q={q} an={','.join(an) or '-'}"


def query(args):
    from scapy.layers.dns import DNS, DNSQR

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((args.src, args.sport))
    pkt = DNS(id=args.id, rd=1, qd=DNSQR(qname=args.name, qtype=args.qtype))
    s.sendto(bytes(pkt), (args.server, 53))
    with open(args.sent + ".tmp", "w", encoding="ascii") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(args.sent + ".tmp", args.sent)
    deadline = time.monotonic() + args.listen
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return 0
        s.settimeout(left)
        try:
            data, peer = s.recvfrom(65535)
        except socket.timeout:
            continue
        log_line(args.log, f"{dns_line(data)} from {peer[0]}:{peer[1]}")


def spoof(args):
    from scapy.layers.dns import DNS, DNSQR, DNSRR
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.sendrecv import sendp

    dns = DNS(id=args.id, qr=1, aa=1, rd=1, ra=1, qd=DNSQR(qname=args.name, qtype="A"),
              an=DNSRR(rrname=args.name, type="A", ttl=300, rdata=args.addr))
    frame = (Ether(src=args.src_mac, dst=args.dst_mac) / IP(src=args.src, dst=args.dst) /
             UDP(sport=53, dport=args.dport) / dns)
    try:
        sendp(frame, iface=args.iface, verbose=False)
    except OSError as e:
        # A packet socket's send goes through the device's egress hooks: a frame a TC egress
        # program drops makes dev_queue_xmit() return NET_XMIT_DROP, which the socket reports as
        # ENOBUFS. It left no trace on the wire, which is what the caller wants to know.
        if e.errno == errno.ENOBUFS:
            print("spoof: dropped on egress (ENOBUFS)")
            return 3
        raise
    print("spoof: sent")
    return 0


def number(v):
    return int(v, 0)


COMMANDS = {
    "echo-serve": (echo_serve, [LOG, READY,
                                arg("--tcp", action="append", default=[], metavar="ADDR:PORT")]),
    "echo-client": (echo_client, [arg("dst"), arg("port", type=int), arg("--go", required=True),
                                  arg("--wait", type=float, default=20.0),
                                  arg("--timeout", type=float, default=2.0)]),
    "query": (query, [arg("server"), arg("--src", required=True), arg("--sport", type=int, required=True),
                      arg("--id", type=number, required=True), arg("--name", required=True),
                      arg("--qtype", default="A"), arg("--sent", required=True), LOG,
                      arg("--listen", type=float, default=5.0)]),
    "spoof": (spoof, [arg("--iface", required=True), arg("--src-mac", required=True),
                      arg("--dst-mac", required=True), arg("--src", required=True),
                      arg("--dst", required=True), arg("--dport", type=int, required=True),
                      arg("--id", type=number, required=True), arg("--name", required=True),
                      arg("--addr", required=True)]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS)
