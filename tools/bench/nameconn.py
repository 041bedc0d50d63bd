#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A name resolved, then connected to at once: the server and the client of tools/bench/names.sh.

  nameconn.py serve --port P --ready FILE --log FILE
      Accept connections on every local address, one at a time; answer each with one byte and
      close it. Logs one line per connection ("conn DST from SRC"). Writes its PID to FILE once
      listening; exits 0 on SIGTERM.
  nameconn.py client --target CONFIG:RESOLVER:SUFFIX... --port P --n N [--rounds R] [--seed S]
      N trials to each target, one after the other and the targets interleaved: each iteration
      makes one trial per target, in an order shuffled with a random.Random(--seed, default 1).
      Trial I (1..N) of a target: an A query for nI.SUFFIX, sent by hand over UDP to RESOLVER:53;
      once the answer is read, connect at once to its first address on port P, then read the
      server's byte. Timed from before the query is sent: dns_us to the answer read, connect_us
      from there to connect() returning, first_byte_us to the byte read. The first SYN was
      dropped if the socket retransmitted before it connected (TCP_INFO tcpi_total_retrans) or if
      connect() took over 200 ms (the SYN's first retransmission is 1 s after it). A trial that
      fails (no answer, no address, no connection in 5 s) is recorded with its error, and the run
      goes on. Prints a JSON list of trials.
Standard library only; run it as /usr/bin/python3.
"""
import argparse
import json
import os
import random
import signal
import socket
import struct
import sys
import time

TIMEOUT = 5.0
SLOW_CONNECT_US = 200_000


def serve(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ls = socket.socket(socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", args.port))
    ls.listen(128)
    with open(args.ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(args.ready + ".tmp", args.ready)
    log = open(args.log, "a")
    while True:
        s, peer = ls.accept()
        try:
            s.sendall(b"\x01")
            log.write(f"conn {s.getsockname()[0]} from {peer[0]}\n")
        except OSError as e:
            log.write(f"error {peer[0]}:{peer[1]} {e}\n")
        finally:
            log.flush()
            s.close()


def query(qid, name):
    """An A/IN query for NAME with recursion desired, no EDNS0."""
    q = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\x00"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", 1, 1)


def skip_name(msg, off):
    """The offset after the (possibly compressed) name at OFF."""
    while True:
        n = msg[off]
        if n >= 0xC0:
            return off + 2
        if n == 0:
            return off + 1
        off += 1 + n


def first_a(msg, qid):
    """The first A record's address in answer MSG to query QID."""
    rid, flags, qd, an = struct.unpack_from("!HHHH", msg)
    if rid != qid or not flags & 0x8000 or flags & 0xF:
        raise ValueError(f"answer id {rid:#x} flags {flags:#x}, to query {qid:#x}")
    off = 12
    for _ in range(qd):
        off = skip_name(msg, off) + 4
    for _ in range(an):
        off = skip_name(msg, off)
        rtype, _, _, rdlen = struct.unpack_from("!HHIH", msg, off)
        off += 10
        if rtype == 1 and rdlen == 4:
            return socket.inet_ntoa(msg[off:off + 4])
        off += rdlen
    raise ValueError("no A record in the answer")


def tcpi_total_retrans(s):
    # struct tcp_info (uapi/linux/tcp.h): 8 bytes of u8 fields, then u32s; tcpi_total_retrans is
    # the 24th u32.
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("=I", info, 8 + 23 * 4)[0]


def trial(resolver, name, port, rng):
    """One name, resolved and connected to: its timings and what became of its first SYN."""
    out = {"name": name, "addr": None, "dns_us": None, "connect_us": None, "first_byte_us": None,
           "syn_retrans": None, "syn_dropped": None, "error": None}
    qid = rng.randrange(0x10000)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Made before the query, so that nothing but parsing the answer stands between it and the SYN.
    s = socket.socket(socket.AF_INET)
    try:
        u.settimeout(TIMEOUT)
        u.connect((resolver, 53))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(TIMEOUT)
        msg = query(qid, name)
        t0 = time.perf_counter_ns()
        u.send(msg)
        ans = u.recv(2048)
        t1 = time.perf_counter_ns()
        out["dns_us"] = round((t1 - t0) / 1000, 2)
        out["addr"] = addr = first_a(ans, qid)
        s.connect((addr, port))
        t2 = time.perf_counter_ns()
        out["syn_retrans"] = tcpi_total_retrans(s)
        b = s.recv(1)
        t3 = time.perf_counter_ns()
        if b != b"\x01":
            raise EOFError(f"server sent {b!r}, not 01")
        out.update(connect_us=round((t2 - t1) / 1000, 2), first_byte_us=round((t3 - t0) / 1000, 2))
        out["syn_dropped"] = out["syn_retrans"] > 0 or out["connect_us"] > SLOW_CONNECT_US
    except (OSError, EOFError, ValueError, struct.error, IndexError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
        # A connection that never came up lost its SYN (and every retransmission of it).
        if out["addr"] is not None:
            out["syn_dropped"] = True
    finally:
        u.close()
        s.close()
    return out


def client(args):
    targets = [t.split(":", 2) for t in args.target]
    per_round = max(args.n // args.rounds, 1)
    rng = random.Random(args.seed)
    trials = []
    for i in range(1, args.n + 1):
        rnd = min((i - 1) // per_round, args.rounds - 1) + 1
        for cfg, resolver, suffix in rng.sample(targets, len(targets)):
            t = trial(resolver, f"n{i}.{suffix}", args.port, rng)
            t.update(config=cfg, round=rnd, i=i)
            trials.append(t)
    json.dump(trials, sys.stdout)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--port", type=int, required=True)
    sv.add_argument("--ready", required=True)
    sv.add_argument("--log", required=True)
    cl = sub.add_parser("client")
    cl.add_argument("--target", action="append", required=True, metavar="CONFIG:RESOLVER:SUFFIX")
    cl.add_argument("--port", type=int, required=True)
    cl.add_argument("--n", type=int, required=True)
    cl.add_argument("--rounds", type=int, default=1)
    cl.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
    else:
        client(args)


if __name__ == "__main__":
    main()
