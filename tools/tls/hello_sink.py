#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Accept one TCP connection, save the TLS records that carry its ClientHello, close.

usage: hello_sink.py ADDR PORT OUT READY

OUT gets the raw wire bytes of every record up to and including the one that completes the
ClientHello handshake message (a hello may be fragmented over several records). READY is created
once the socket listens, so the caller knows when to start the client. Nothing is ever sent back:
the client fails after the close, which is fine, only its hello matters. Standard library only.
"""
import socket
import struct
import sys

ACCEPT_TIMEOUT = 60  # a cold headless browser can take a while to dial


def read_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"peer closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def read_hello(conn):
    """Return (wire bytes, handshake bytes) of one complete ClientHello."""
    wire, hs = b"", b""
    while len(hs) < 4 or len(hs) < 4 + int.from_bytes(hs[1:4], "big"):
        header = read_exact(conn, 5)
        rtype, _version, length = struct.unpack("!BHH", header)
        if rtype != 0x16:
            raise ValueError(f"record type {rtype:#x}, expected handshake (0x16)")
        body = read_exact(conn, length)
        wire += header + body
        hs += body
    if hs[0] != 1:
        raise ValueError(f"handshake type {hs[0]}, expected ClientHello (1)")
    return wire, hs


def main():
    addr, port, out, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with socket.create_server((addr, port)) as srv:
        open(ready, "w").close()
        srv.settimeout(ACCEPT_TIMEOUT)
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(10)
            wire, hs = read_hello(conn)
    with open(out, "wb") as f:
        f.write(wire)
    print(f"{out}: {len(wire)} bytes, hello {len(hs)} bytes")


if __name__ == "__main__":
    main()
