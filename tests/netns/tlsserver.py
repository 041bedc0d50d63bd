#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that a TLS ClientHello, its server name and the request behind it reached a real server.

A TLS server (one process, any number of listeners) that picks its certificate by the ClientHello's
server name, an HTTP responder behind it, and a UDP listener, each logging what reached it to --log:

    conn 203.0.113.10:443 from 10.10.1.2:40001            a TCP connection was accepted
    data 203.0.113.10:443 from 10.10.1.2:40001 first 16030100   its first payload bytes (hex, <= 8)
    eof 203.0.113.10:443 from 10.10.1.2:40001             it ended before any payload arrived
    sni 203.0.113.10:443 from 10.10.1.2:40001 allowed.test     the ClientHello's server name ("-": none)
    tls-error 203.0.113.10:443 from 10.10.1.2:40001 ...   the handshake failed
    request 203.0.113.10:443 from 10.10.1.2:40001 sni allowed.test line GET / HTTP/1.1 host allowed.test
    udp 203.0.113.10:443 from 10.10.1.2:40002 len 12      a UDP datagram
    seg 203.0.113.10:443 from 10.10.1.2:40001 off 0 len 244 hello 517
                              a TCP segment with payload to a listener, seen on --capture IFACE
                              (off: its offset in the client's stream; hello: 5 + the first TLS
                              record's length, on the segment at offset 0)
    hello-sni 203.0.113.10:443 from 10.10.1.2:40001 off 517 forbidden.test
                              a ClientHello record among the records such a segment starts with
                              (at any offset in the stream), and its server name ("-": none, or
                              cut off)

IPv6 addresses are written [ADDR]:PORT. The HTTP reply is "tlsserver <sni> <local address>" so the client can tell which name it reached.
Certificates: --cert NAME:CERTFILE:KEYFILE, the first one also for a ClientHello without a name or
with a name no --cert has. --groups LIST (e.g. prime256v1) limits the key exchange groups, so a
client offering a key share for another one gets a HelloRetryRequest. Exits 0 on SIGTERM. Standard library only; run it as /usr/bin/python3.
"""
import signal
import socket
import ssl
import struct
import sys
import threading

from tfnet import LOG, READY, arg, exit_on_term, fmt, log_line, parse_addr, ready, run

class Server:
    def __init__(self, args):
        self.log = args.log
        self.ctx = {}
        self.default = None
        for spec in args.cert:
            name, cert, key = spec.split(":")
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            ctx.sni_callback = self.on_sni
            if args.groups:
                ctx.set_ecdh_curve(args.groups)
            self.ctx[name] = ctx
            if self.default is None:
                self.default = ctx
        if self.default is None:
            sys.exit("tlsserver: at least one --cert NAME:CERT:KEY")
        self.sni = {}  # id(SSLObject/SSLSocket) -> the name it asked for

    def on_sni(self, sslobj, name, _ctx):
        local, peer = sslobj.getsockname(), sslobj.getpeername()
        log_line(self.log, f"sni {fmt(local)} from {fmt(peer)} {name or '-'}")
        self.sni[id(sslobj)] = name or "-"
        if name in self.ctx:
            sslobj.context = self.ctx[name]
        return None

    def handle(self, conn, peer):
        local = fmt(conn.getsockname())
        who = f"{local} from {fmt(peer)}"
        log_line(self.log, f"conn {who}")
        conn.settimeout(10)
        try:
            first = conn.recv(8, socket.MSG_PEEK)
            if not first:
                log_line(self.log, f"eof {who}")
                return
            log_line(self.log, f"data {who} first {first.hex()}")
            tls = self.default.wrap_socket(conn, server_side=True)
            name = self.sni.pop(id(tls), "-")
            req = b""
            while b"\r\n\r\n" not in req and len(req) < 8192:
                chunk = tls.recv(4096)
                if not chunk:
                    break
                req += chunk
            head = req.split(b"\r\n\r\n", 1)[0].decode("ascii", "replace").split("\r\n")
            host = next((h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("host:")), "-")
            log_line(self.log, f"request {who} sni {name} line {head[0]} host {host}")
            body = f"tlsserver {name} {local}\n".encode()
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            tls.unwrap()
        except (OSError, ssl.SSLError, ValueError) as e:
            log_line(self.log, f"tls-error {who} {type(e).__name__}: {e}")
        finally:
            conn.close()

    def accept_loop(self, lsock):
        while True:
            try:
                conn, peer = lsock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn, peer), daemon=True).start()

    def udp_loop(self, usock):
        local = fmt(usock.getsockname())
        while True:
            data, peer = usock.recvfrom(65535)
            log_line(self.log, f"udp {local} from {fmt(peer)} len {len(data)}")


def hello_snis(p):
    """The server names of the ClientHello records among the whole records p starts with ("-": none,
    or cut off), in order; records of other types (a ChangeCipherSpec before a second hello) are
    skipped."""
    names, r = [], 0
    while r + 9 <= len(p) and p[r] in (20, 21, 22, 23) and p[r + 1] == 3:
        end = r + 5 + struct.unpack("!H", p[r + 3:r + 5])[0]
        if p[r] == 22 and p[r + 5] == 1:
            names.append(record_sni(p[:end], r))
        r = end
    return names


def record_sni(p, r):
    try:
        o = r + 9 + 2 + 32
        o += 1 + p[o]
        o += 2 + struct.unpack("!H", p[o:o + 2])[0]
        o += 1 + p[o]
        o += 2
        while o + 4 <= len(p):
            t, n = struct.unpack("!HH", p[o:o + 4])
            if t == 0 and o + 9 <= len(p):
                ln = struct.unpack("!H", p[o + 7:o + 9])[0]
                return p[o + 9:o + 9 + ln].decode("ascii", "replace")
            o += 4 + n
    except (IndexError, struct.error):
        pass
    return "-"


def capture_loop(log, s, listeners):
    """Log every IPv4 TCP segment with payload to one of our (address, port)s, as seen on s."""
    isn = {}
    while True:
        frame, meta = s.recvfrom(65535)
        if meta[2] == socket.PACKET_OUTGOING:
            continue
        ip = frame[14:]
        if len(ip) < 20 or ip[9] != socket.IPPROTO_TCP:
            continue
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        tcp = ip[ihl:tot]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        if (dst, dport) not in listeners:
            continue
        flow = (src, sport, dst, dport)
        doff = (tcp[12] >> 4) * 4
        if tcp[13] & 0x02:  # SYN
            isn[flow] = (seq + 1) & 0xffffffff
            continue
        payload = tcp[doff:]
        if not payload or flow not in isn:
            continue
        off = (seq - isn[flow]) & 0xffffffff
        extra = ""
        if off == 0 and len(payload) >= 5 and payload[0] == 22:
            extra = f" hello {5 + struct.unpack('!H', payload[3:5])[0]}"
        log_line(log, f"seg {dst}:{dport} from {src}:{sport} off {off} len {len(payload)}{extra}")
        for name in hello_snis(payload):
            log_line(log, f"hello-sni {dst}:{dport} from {src}:{sport} off {off} {name}")


def main(args):
    # A hard exit: the accept and capture threads would keep the process alive.
    exit_on_term(hard=True)
    srv = Server(args)
    threads = []
    for spec in args.tcp:
        family, host, port = parse_addr(spec)
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(64)
        threads.append(threading.Thread(target=srv.accept_loop, args=(s,), daemon=True))
    for spec in args.udp:
        family, host, port = parse_addr(spec)
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.bind((host, port))
        threads.append(threading.Thread(target=srv.udp_loop, args=(s,), daemon=True))
    if args.capture:
        listeners = {parse_addr(spec)[1:] for spec in args.tcp}
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        s.bind((args.capture, 0))
        threads.append(threading.Thread(target=capture_loop, args=(args.log, s, listeners), daemon=True))
    for t in threads:
        t.start()
    ready(args.ready)
    while True:
        signal.pause()


ARGS = [
    LOG, READY,
    arg("--cert", action="append", default=[], help="NAME:CERTFILE:KEYFILE"),
    arg("--tcp", action="append", default=[], help="ADDR:PORT or [ADDR6]:PORT, for TLS"),
    arg("--groups", help="key exchange groups, e.g. prime256v1 (a client's x25519 share then gets "
        "a HelloRetryRequest)"),
    arg("--udp", action="append", default=[], help="ADDR:PORT or [ADDR6]:PORT"),
    arg("--capture", help="interface whose incoming IPv4 segments to our TCP listeners are logged"),
]

if __name__ == "__main__":
    run(__doc__, (main, ARGS))
