#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Connect latency of a TLS ClientHello: the server and the client of tools/bench/tls.sh.

  tlsconn.py serve --addr A --port P --ready FILE [--log FILE]
      Accept connections one at a time; from each read one whole ClientHello (TLS record headers
      walked until the handshake message's length is in), answer one byte, close. A connection whose
      first bytes are not a handshake record, or that stalls for 5 s, is logged and dropped.
      Writes its PID to FILE once listening; exits 0 on SIGTERM.
  tlsconn.py client --target NAME:ADDR:SPLIT:GAP... --port P --hello FILE --n N [--rounds R]
                    [--warmup W] [--seed S]
      N timed connections to each target (after W untimed ones), one after the other and the targets
      interleaved: each iteration connects to every target once, in an order shuffled with a
      random.Random(--seed, default 1). A connection: TCP_NODELAY, connect, send the hello (in one
      write if SPLIT is 0, else bytes [0, SPLIT), then GAP ms later (0: at once) the rest), read
      the byte, close; timed from before connect() to the byte read. Prints a JSON list of runs, one per target and
      round (the N iterations cut into R rounds): the latencies (us), each connection's retransmitted
      segments (TCP_INFO), and the change of the namespace's loss-recovery counters
      (/proc/net/netstat, /proc/net/snmp; read before and after each connection, untimed).
      Exits non-zero on the first connection that fails.
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

# One reader of a whole ClientHello, shared with the capture tool.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tls"))
from hello_sink import read_hello  # noqa: E402

TIMEOUT = 5.0
# TcpExt and Tcp counters that tell which loss recovery resent a dropped segment.
MIB = ("TCPLossProbes", "TCPLossProbeRecovery", "TCPTimeouts", "TCPSackRecovery", "TCPFastRetrans",
       "TCPLostRetransmit", "TCPSpuriousRTOs", "TCPDSACKRecv", "RetransSegs", "OutSegs")


def serve(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ls = socket.socket(socket.AF_INET6 if ":" in args.addr else socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.addr, args.port))
    ls.listen(128)
    with open(args.ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(args.ready + ".tmp", args.ready)
    log = open(args.log, "a") if args.log else None
    while True:
        s, peer = ls.accept()
        s.settimeout(TIMEOUT)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            n = len(read_hello(s)[0])
            s.sendall(b"\x01")
            if log:
                log.write(f"hello {peer[0]}:{peer[1]} {n}\n")
        except (OSError, EOFError, ValueError) as e:
            if log:
                log.write(f"error {peer[0]}:{peer[1]} {e}\n")
        finally:
            if log:
                log.flush()
            s.close()


def mib():
    """The namespace's TCP counters named in MIB (this process's network namespace)."""
    out = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = open(path).read().splitlines()
        for names, values in zip(lines[::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            if prefix not in ("TcpExt", "Tcp"):
                continue
            for k, v in zip(names.split(), values.split(":", 1)[1].split()):
                if k in MIB:
                    out[k] = int(v)
    return out


def tcpi_total_retrans(s):
    # struct tcp_info (uapi/linux/tcp.h): 8 bytes of u8 fields, then u32s; tcpi_total_retrans is
    # the 24th u32.
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("=I", info, 8 + 23 * 4)[0]


def one(addr, port, hello, split, gap_ms):
    """One connection: its latency in ns and its retransmitted segments."""
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(TIMEOUT)
        t0 = time.perf_counter_ns()
        s.connect((addr, port))
        if split:
            s.sendall(hello[:split])
            if gap_ms > 0:
                time.sleep(gap_ms / 1000)
            s.sendall(hello[split:])
        else:
            s.sendall(hello)
        b = s.recv(1)
        t1 = time.perf_counter_ns()
        if b != b"\x01":
            raise EOFError(f"answer {b!r}, not 01")
        return t1 - t0, tcpi_total_retrans(s)
    finally:
        s.close()


def client(args):
    hello = open(args.hello, "rb").read()
    targets = []
    for t in args.target:
        name, addr, split, gap = t.rsplit(":", 3)
        if not 0 <= int(split) < len(hello):
            sys.exit(f"tlsconn: split {split} of {name} is outside the hello's {len(hello)} bytes")
        targets.append((name, addr, int(split), float(gap)))
    per_round = max(args.n // args.rounds, 1)
    runs = {}
    rng = random.Random(args.seed)
    try:
        for name, addr, split, gap in targets:
            for _ in range(args.warmup):
                one(addr, args.port, hello, split, gap)
        for i in range(args.n):
            rnd = min(i // per_round, args.rounds - 1) + 1
            # Every target once per iteration, in an order of its own: what a connection follows
            # (a 2-segment one's sleep, say) is the same for every target on average.
            for name, addr, split, gap in rng.sample(targets, len(targets)):
                run = runs.setdefault((name, rnd), {"config": name, "round": rnd, "lat_us": [],
                                                    "retrans": [], "mib": dict.fromkeys(MIB, 0)})
                before = mib()
                ns, r = one(addr, args.port, hello, split, gap)
                after = mib()
                run["lat_us"].append(round(ns / 1000, 2))
                run["retrans"].append(r)
                for c in MIB:
                    run["mib"][c] += after.get(c, 0) - before.get(c, 0)
    except (OSError, EOFError) as e:
        sys.exit(f"tlsconn: connection ({name}, {addr}:{args.port}) failed: {e}")
    json.dump(sorted(runs.values(), key=lambda r: (r["round"], [t[0] for t in targets].index(r["config"]))),
              sys.stdout)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--addr", required=True)
    sv.add_argument("--port", type=int, required=True)
    sv.add_argument("--ready", required=True)
    sv.add_argument("--log")
    cl = sub.add_parser("client")
    cl.add_argument("--target", action="append", required=True, metavar="NAME:ADDR:SPLIT:GAP")
    cl.add_argument("--port", type=int, required=True)
    cl.add_argument("--hello", required=True)
    cl.add_argument("--n", type=int, required=True)
    cl.add_argument("--rounds", type=int, default=1)
    cl.add_argument("--warmup", type=int, default=0)
    cl.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
    else:
        client(args)


if __name__ == "__main__":
    main()
