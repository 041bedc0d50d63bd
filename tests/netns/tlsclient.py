#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that a real TLS client's unusual first flights reach (or never reach) a real server: the two shapes test_tls.sh needs.

    trickle  a real handshake (Python's ssl over a MemoryBIO) whose ClientHello goes out through a
             TCP_NODELAY socket one byte per send() for its first --first bytes, --gap seconds
             apart, then the rest in one send(); then an HTTP GET. Prints the reply's first line.
    second   a real handshake for --sni is started: its ClientHello is sent and the server's first
             flight read; then, instead of the client's Finished, a second ClientHello (a record
             another SSLObject made for --second) is written in its own send() on the same
             connection, as a client fronting through a HelloRetryRequest would. Prints what
             came back, if anything.

Exit status: 0 if the server answered the request (trickle) or anything at all after the second
hello (second), 1 if not, 2 on a usage or set-up error. Standard library only; run it as
/usr/bin/python3.
"""
import socket
import ssl
import sys
import time

from tfnet import arg, run


def connect(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if args.bind:
        host, _, port = args.bind.rpartition(":")
        s.bind((host, int(port)))
    s.settimeout(args.timeout)
    s.connect((args.addr, args.port))
    return s


def tls_object(args, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(args.cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    return ctx.wrap_bio(inc, out, server_hostname=name), inc, out


def step(obj, sock, inc, out):
    """Drive obj one round: flush what it wrote, feed it what the server sent. True when done."""
    try:
        obj.do_handshake()
        done = True
    except ssl.SSLWantReadError:
        done = False
    data = out.read()
    if data:
        sock.sendall(data)
    if done:
        return True
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the server closed the connection during the handshake")
    inc.write(chunk)
    return False


def trickle(args):
    sock = connect(args)
    obj, inc, out = tls_object(args, args.sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    first = min(args.first, len(hello))
    for i in range(first):
        sock.send(hello[i:i + 1])
        time.sleep(args.gap)
    sock.sendall(hello[first:])
    print(f"hello {len(hello)} bytes: {first} sent one byte at a time", file=sys.stderr)
    while not step(obj, sock, inc, out):
        pass
    obj.write(f"GET / HTTP/1.1\r\nHost: {args.sni}\r\nConnection: close\r\n\r\n".encode())
    sock.sendall(out.read())
    reply = b""
    while b"\n" not in reply:
        chunk = sock.recv(65536)
        if not chunk:
            break
        inc.write(chunk)
        try:
            reply += obj.read(65536)
        except ssl.SSLWantReadError:
            continue
    body = b""
    while True:
        try:
            body += obj.read(65536)
        except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
            chunk = sock.recv(65536)
            if not chunk:
                break
            inc.write(chunk)
            continue
        if b"tlsserver" in reply + body:
            break
    text = (reply + body).decode("ascii", "replace")
    print(text.strip())
    return 0 if "tlsserver" in text else 1


def second(args):
    sock = connect(args)
    obj, inc, out = tls_object(args, args.sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    sock.sendall(out.read())
    # The server's first flight (ServerHello .. Finished), as far as it comes in one read.
    inc.write(sock.recv(65536))
    other, _, other_out = tls_object(args, args.second)
    try:
        other.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello2 = other_out.read()
    time.sleep(0.05)  # its own segment, not coalesced with anything before it
    sock.sendall(hello2)
    print(f"second hello for {args.second}: {len(hello2)} bytes", file=sys.stderr)
    try:
        got = sock.recv(65536)
    except socket.timeout:
        got = b""
    print(f"after the second hello: {len(got)} bytes")
    return 0 if got else 1


def guarded(mode):
    """mode, with a network or TLS error printed and exit status 1 instead of a traceback."""

    def run_mode(args):
        try:
            return mode(args)
        except (OSError, ssl.SSLError, ConnectionError) as e:
            print(f"tlsclient: {type(e).__name__}: {e}")
            return 1

    return run_mode


ARGS = [
    arg("addr"), arg("port", type=int), arg("--sni", required=True),
    arg("--second", help="second: the SNI of the second ClientHello"),
    arg("--cafile", required=True), arg("--bind", help="ADDR:PORT to connect from"),
    arg("--first", type=int, default=120, help="trickle: bytes sent one at a time"),
    arg("--gap", type=float, default=0.003, help="trickle: seconds between them"),
    arg("--timeout", type=float, default=5),
]


def check(p, args):
    if args.cmd == "second" and not args.second:
        p.error("second needs --second NAME")


if __name__ == "__main__":
    run(__doc__, {"trickle": (guarded(trickle), ARGS), "second": (guarded(second), ARGS)}, check=check)
