#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that tapfenced's control socket keeps its contract at the byte level, as any client sees it.

A raw client of the control socket (docs/control-protocol.md), for what the tapfence CLI never
does: several requests on one connection, oversized and half-sent requests, stalled clients.
It prints what the daemon sent; tests/netns/test_control.sh judges it.

  ctlraw.py SOCK lines LINE...   one connection, all LINEs written at once (each + "\\n"); prints one
                                 response line per request, then "<closed>" if the daemon closed
                                 the connection afterwards, "<open>" if it did not
  ctlraw.py SOCK big SIZE        one request line of SIZE bytes (a version request padded with an
                                 unknown field); prints what came back, then "<closed>" / "<open>"
  ctlraw.py SOCK stall           client A sends half a line and stalls; 0.1 s later client B connects
                                 and asks for the version; prints a JSON summary of both
  ctlraw.py SOCK idle            connect, send nothing; prints a JSON summary of when it was closed
  ctlraw.py SOCK trickle         send a request one byte every 0.2 s, never a whole line, for at most
                                 --timeout s; prints a JSON summary of what the daemon did and when
  ctlraw.py SOCK subscribe [ID]  events.subscribe (of session ID); prints every line received, flushed,
                                 until SIGTERM or the daemon closes the connection
  ctlraw.py SOCK stalled FILE    events.subscribe (every session), its answer read, then nothing read
                                 (a 4 KiB receive buffer) until FILE exists; then everything to the
                                 end; prints a JSON summary: bytes and lines read after the answer,
                                 and whether the daemon had closed the connection

Standard library only; run it as /usr/bin/python3. Every wait is bounded (--timeout, default 5 s).
"""
import json
import os
import signal
import socket
import sys
import threading
import time

from tfnet import arg, run


def connect(path, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


class Reader:
    """Line reader over a socket; remembers how the stream ended."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.end = None  # None (open), "eof" or "reset"

    def _fill(self, deadline):
        if self.end:
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            # AF_UNIX: the daemon closed with our data unread; what it sent first was read already.
            self.end = "reset"
            return False
        if not data:
            self.end = "eof"
            return False
        self.buf += data
        return True

    def line(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            if not self._fill(deadline):
                return None
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")

    def closed_within(self, timeout):
        """True if the daemon closes the connection within timeout (data before that is kept)."""
        deadline = time.monotonic() + timeout
        while not self.end:
            if not self._fill(deadline) and not self.end:
                return False
        return True


def cmd_lines(args):
    s = connect(args.sock, args.timeout)
    s.sendall(b"".join(line.encode() + b"\n" for line in args.line))
    r = Reader(s)
    for _ in args.line:
        line = r.line(args.timeout)
        if line is None:
            print("<no response>")
            break
        print(line)
    print("<closed>" if r.closed_within(0.2) else "<open>")


def cmd_big(args):
    head = '{"op":"version","pad":"'
    tail = '"}'
    req = (head + "x" * (args.size - len(head) - len(tail)) + tail + "\n").encode()
    assert len(req) == args.size + 1
    s = connect(args.sock, args.timeout)
    # The daemon may close before it read everything: send in the background, read meanwhile.
    errors = []

    def send():
        try:
            s.sendall(req)
        except OSError as e:
            errors.append(e.errno)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    r = Reader(s)
    line = r.line(args.timeout)
    print(line if line is not None else "<no response>")
    print("<closed>" if r.closed_within(args.timeout) else "<open>")
    t.join(args.timeout)


def cmd_stall(args):
    out = {}
    a = connect(args.sock, args.timeout)
    a.sendall(b'{"op":"vers')
    a_sent = time.monotonic()
    time.sleep(0.1)
    # B connects during A's stall and must be served at once, not after A's timeout.
    b_start = time.monotonic()
    b = connect(args.sock, args.timeout)
    b.sendall(b'{"op":"version"}\n')
    rb = Reader(b)
    out["b_response"] = rb.line(args.timeout)
    b_done = time.monotonic()
    out["b_latency"] = round(b_done - b_start, 3)
    b.close()
    ra = Reader(a)
    out["a_response"] = ra.line(args.timeout)
    a_done = time.monotonic()
    out["a_elapsed"] = round(a_done - a_sent, 3)
    out["a_closed"] = ra.closed_within(1.0)
    out["b_before_a"] = b_done < a_done
    print(json.dumps(out))


def cmd_idle(args):
    s = connect(args.sock, args.timeout)
    start = time.monotonic()
    r = Reader(s)
    closed = r.closed_within(args.timeout)
    print(json.dumps({"closed": closed, "after": round(time.monotonic() - start, 3),
                      "data": r.buf.decode(errors="replace")}))


def cmd_trickle(args):
    s = connect(args.sock, args.timeout)
    req = b'{"op":"version","pad":"' + b"x" * 1000
    r = Reader(s)
    start = time.monotonic()
    sent = 0
    line = None
    while time.monotonic() - start < args.timeout and sent < len(req):
        try:
            s.sendall(req[sent:sent + 1])
        except OSError:
            break
        sent += 1
        line = r.line(0.2)
        if line is not None or r.end:
            break
    print(json.dumps({"response": line, "after": round(time.monotonic() - start, 3),
                      "closed": r.closed_within(0.5), "sent": sent}))


def cmd_subscribe(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s = connect(args.sock, args.timeout)
    req = {"op": "events.subscribe"}
    if args.session is not None:
        req["session"] = args.session
    s.sendall(json.dumps(req).encode() + b"\n")
    r = Reader(s)
    while True:
        line = r.line(3600)
        if line is None:
            print("<closed>" if r.end else "<idle>", flush=True)
            return
        print(line, flush=True)


def cmd_stalled(args):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(args.timeout)
    s.connect(args.sock)
    s.sendall(b'{"op":"events.subscribe"}\n')
    r = Reader(s)
    answer = r.line(args.timeout)
    deadline = time.monotonic() + 600
    while not os.path.exists(args.file) and time.monotonic() < deadline:
        time.sleep(0.05)
    n, lines = len(r.buf), r.buf.count(b"\n")
    s.settimeout(args.timeout)
    end = "open"
    while True:
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            end = "reset"
            break
        if not data:
            end = "eof"
            break
        n += len(data)
        lines += data.count(b"\n")
    print(json.dumps({"answer": answer, "bytes": n, "lines": lines, "end": end}))


COMMANDS = {
    "lines": (cmd_lines, [arg("line", nargs="+")]),
    "big": (cmd_big, [arg("size", type=int)]),
    "stall": (cmd_stall, []),
    "idle": (cmd_idle, []),
    "trickle": (cmd_trickle, []),
    "subscribe": (cmd_subscribe, [arg("session", nargs="?")]),
    "stalled": (cmd_stalled, [arg("file")]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS, common=[arg("sock"), arg("--timeout", type=float, default=5.0)])
