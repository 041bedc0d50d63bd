#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that long-lived flows keep (or stop) reaching a real socket: a line echo server, a client
that keeps one TCP connection or one UDP socket busy, and a link sniffer.

serve:  echo every line received on each --tcp / --udp ADDR:PORT back to its sender, and append
        one line per received line to --log, e.g.
            tcp 198.51.100.10:7001 from 10.20.1.2:40000 msg doomed-tcp 17
            udp 198.51.100.10:7000 from 10.20.1.2:40001 msg doomed-udp 17
stream: from --sport (0: any), send "TAG N" to --tcp or --udp HOST:PORT every --interval seconds
        through one connected socket, until --stop FILE exists or --duration passes; log to --log
        "sent N", "echo N" and "error TEXT" (the stream goes on after an error: a revoked TCP
        connection keeps retransmitting). --ready FILE is written once the socket is connected.
        --abort: a TCP stream ends with an RST (SO_LINGER 0), not a FIN whose unacked data an
        orphan socket retransmits for minutes after a connection was cut.
once:   one TCP connection from --sport: send a line, read its echo, close (FIN both ways);
        exit 0 iff the echo came back.
churn:  --count short flows to --tcp or --udp HOST:PORT, one after another, each from a port of
        its own: a line and its echo, then (TCP) the client's FIN first, or with --server-close
        the server's (the line "close" asks serve to close after its echo), or with --bulk N
        the line "bulk N", the client's FIN at once, and serve's echo and N bytes read whole
        after it (a half-closed connection); print "ok N" for the N that worked, exit 0 iff all
        did.
sniff:  log every IPv4 TCP segment to --port seen on --dev (AF_PACKET), as
            tcp 10.20.1.2:40000 > 198.51.100.10:7001 flags 0x18 len 5

Standard library only; run it as /usr/bin/python3.
"""
import os
import selectors
import socket
import struct
import time

from tfnet import LOG, READY, arg, exit_on_term, log_line, parse_addr, ready, run


def serve(args):
    sel = selectors.DefaultSelector()
    for kind, specs in (("tcp", args.tcp), ("udp", args.udp)):
        for spec in specs:
            _, host, port = parse_addr(spec)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            if kind == "tcp":
                s.listen(16)
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, (kind, "listen", f"{host}:{port}", b""))
    exit_on_term()
    ready(args.ready)
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            kind, role, local, buf = key.data
            if kind == "udp":
                data, peer = s.recvfrom(65535)
                log_line(args.log, f"udp {local} from {peer[0]}:{peer[1]} msg {data.decode(errors='replace').strip()}")
                s.sendto(data, peer)
            elif role == "listen":
                conn, peer = s.accept()
                conn.setblocking(False)
                sel.register(conn, selectors.EVENT_READ, ("tcp", f"{peer[0]}:{peer[1]}", local, b""))
            else:
                try:
                    data = s.recv(65535)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s)
                    s.close()
                    continue
                buf += data
                closing = False
                while b"\n" in buf:
                    line, _, buf = buf.partition(b"\n")
                    log_line(args.log, f"tcp {local} from {role} msg {line.decode(errors='replace')}")
                    try:
                        s.send(line + b"\n")
                        if line.startswith(b"bulk "):
                            # N bytes more, whole: blocking while they go (one test client).
                            s.setblocking(True)
                            s.sendall(b"x" * int(line.split()[1]))
                            s.setblocking(False)
                    except (OSError, ValueError):
                        pass
                    closing = closing or line == b"close"
                if closing:
                    sel.unregister(s)
                    s.close()
                    continue
                sel.modify(s, selectors.EVENT_READ, (kind, role, local, buf))


def stream(args):
    kind, spec = ("tcp", args.tcp) if args.tcp else ("udp", args.udp)
    dst = parse_addr(spec)[1:]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.sport:
        s.bind(("0.0.0.0", args.sport))
    s.settimeout(3)
    s.connect(dst)
    s.setblocking(False)
    ready(args.ready)
    deadline = time.monotonic() + args.duration
    n = 0
    while time.monotonic() < deadline and not (args.stop and os.path.exists(args.stop)):
        n += 1
        try:
            s.send(f"{args.tag} {n}\n".encode())
            log_line(args.log, f"sent {n}")
        except OSError as e:
            log_line(args.log, f"error {e}")
        end = time.monotonic() + args.interval
        while time.monotonic() < end:
            try:
                data = s.recv(65535)
                for line in data.decode(errors="replace").split("\n"):
                    if line.strip():
                        log_line(args.log, f"echo {line.split()[-1]}")
            except BlockingIOError:
                pass
            except OSError as e:
                log_line(args.log, f"error {e}")
            time.sleep(0.01)
    if args.abort and kind == "tcp":
        # An RST and the socket gone at once: no orphan retransmitting a cut connection's data
        # into whatever the guest's device judges minutes later.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    return 0


def once(args):
    dst = parse_addr(args.tcp)[1:]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", args.sport))
    s.settimeout(args.timeout)
    try:
        s.connect(dst)
        s.sendall(f"{args.tag}\n".encode())
        got = s.recv(100)
        s.shutdown(socket.SHUT_WR)
        while s.recv(100):
            pass
    except OSError as e:
        print(f"error {e}")
        return 1
    finally:
        s.close()
    return 0 if got.strip() == args.tag.encode() else 1


def churn(args):
    kind, spec = ("tcp", args.tcp) if args.tcp else ("udp", args.udp)
    dst = parse_addr(spec)[1:]
    ok = 0
    for _ in range(args.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.settimeout(args.timeout)
        line = b"close\n" if args.server_close else b"churn\n"
        if args.bulk:
            line = f"bulk {args.bulk}\n".encode()
        try:
            s.connect(dst)
            s.sendall(line)
            if args.bulk:
                # Half-closed at once; the answer still streams in after the FIN.
                s.shutdown(socket.SHUT_WR)
                got = b""
                while True:
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        break
                    got += chunk
                ok += got == line + b"x" * args.bulk
                continue
            got = s.recv(100)
            if kind == "tcp":
                if args.server_close:
                    while s.recv(100):
                        pass
                else:
                    s.shutdown(socket.SHUT_WR)
                    while s.recv(100):
                        pass
            ok += got == line
        except OSError:
            pass
        finally:
            s.close()
    print(f"ok {ok}")
    return 0 if ok == args.count else 1


def sniff(args):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((args.dev, 0))
    exit_on_term()
    ready(args.ready)
    while True:
        frame = s.recv(65535)
        ip = frame[14:]
        if len(ip) < 20 or ip[9] != socket.IPPROTO_TCP:
            continue
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:]
        if len(tcp) < 20:
            continue
        sport, dport = struct.unpack("!HH", tcp[:4])
        if dport != args.port:
            continue
        doff = (tcp[12] >> 4) * 4
        log_line(args.log, f"tcp {socket.inet_ntoa(ip[12:16])}:{sport} > {socket.inet_ntoa(ip[16:20])}:{dport} "
                           f"flags 0x{tcp[13]:02x} len {tot - ihl - doff}")


def check(p, args):
    if args.fn in (stream, churn) and bool(args.tcp) == bool(args.udp):
        p.error("one of --tcp and --udp")


COMMANDS = {
    "serve": (serve, [LOG, READY, arg("--tcp", action="append", default=[], metavar="ADDR:PORT"),
                      arg("--udp", action="append", default=[], metavar="ADDR:PORT")]),
    "stream": (stream, [arg("--tcp", metavar="HOST:PORT"), arg("--udp", metavar="HOST:PORT"),
                        arg("--sport", type=int, default=0), arg("--tag", required=True), LOG,
                        arg("--interval", type=float, default=0.1),
                        arg("--duration", type=float, default=120), arg("--stop"),
                        arg("--abort", action="store_true"), READY]),
    "once": (once, [arg("--tcp", required=True, metavar="HOST:PORT"),
                    arg("--sport", type=int, required=True), arg("--tag", required=True),
                    arg("--timeout", type=float, default=2)]),
    "churn": (churn, [arg("--tcp", metavar="HOST:PORT"), arg("--udp", metavar="HOST:PORT"),
                      arg("--count", type=int, required=True),
                      arg("--server-close", action="store_true"),
                      arg("--bulk", type=int, default=0, metavar="N"),
                      arg("--timeout", type=float, default=2)]),
    "sniff": (sniff, [arg("--dev", required=True), arg("--port", type=int, required=True), LOG,
                      READY]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS, check=check)
