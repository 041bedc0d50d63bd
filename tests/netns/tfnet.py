# SPDX-License-Identifier: GPL-2.0
"""What the netns test helpers share (listener.py, flowpeer.py, dnsprobe.py, icmpprobe.py,
tlsserver.py, tlsclient.py, tapvmm.py, ctlraw.py): addresses written ADDR:PORT, the line logs the
tests grep, the ready file lib.sh waits for, and a command line declared as a table.

A helper imports it from its own directory (python3 puts the script's directory on sys.path).
Standard library only.
"""
import argparse
import logging
import os
import signal
import socket
import sys
import threading

_LOG_LOCK = threading.Lock()


def parse_addr(spec):
    """'1.2.3.4:80' or '[2001:db8::1]:80' -> (family, host, port)."""
    if spec.startswith("["):
        host, _, port = spec[1:].partition("]:")
        return socket.AF_INET6, host, int(port)
    host, _, port = spec.rpartition(":")
    return socket.AF_INET, host, int(port)


def fmt(addr):
    """(host, port, ...) -> '1.2.3.4:80' or '[2001:db8::1]:80', as the logs write an address."""
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def log_line(path, line):
    """Append one line to the log at path. One write per line, in append mode and under a lock,
    so a reader (grep in a test) never sees half a line, whichever thread writes."""
    with _LOG_LOCK, open(path, "a", encoding="ascii", errors="replace") as f:
        f.write(line + "\n")


def ready(path):
    """Tell lib.sh the helper is up: path (if given) appears at once, holding our PID."""
    if path:
        with open(path + ".tmp", "w", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")
        os.rename(path + ".tmp", path)


def exit_on_term(hard=False):
    """SIGTERM and SIGINT end the helper with status 0: by SystemExit, or at once (os._exit) when
    hard, for a helper whose threads would otherwise keep it alive."""

    def on_term(_sig, _frame):
        if hard:
            os._exit(0)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)


def quiet_scapy():
    """Import scapy without its warnings on stderr (no route, no IPv6 default gateway ...)."""
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)


def arg(*names, **kw):
    """One argument of a command-line table: what argparse.add_argument takes."""
    return names, kw


LOG = arg("--log", required=True, help="the log to append one line per event to")
READY = arg("--ready", help="file written (atomically, with our PID) once the helper is ready")


def main(doc, commands, common=(), check=None):
    """Parse the command line and run its command; returns the exit status.

    commands maps a subcommand's name to (function, [arg(...), ...]); a single (function, args)
    pair instead makes a command line without subcommands. common: arguments before the
    subcommand. check(parser, args), if given, may reject a combination with parser.error().
    The function gets the parsed arguments; its return value (None: 0) is the exit status.
    """
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for names, kw in common:
        p.add_argument(*names, **kw)
    if isinstance(commands, tuple):
        fn, args = commands
        for names, kw in args:
            p.add_argument(*names, **kw)
    else:
        sub = p.add_subparsers(dest="cmd", required=True)
        for name, (f, args) in commands.items():
            sp = sub.add_parser(name)
            for names, kw in args:
                sp.add_argument(*names, **kw)
            sp.set_defaults(fn=f)
    a = p.parse_args()
    if check:
        check(p, a)
    return (fn if isinstance(commands, tuple) else a.fn)(a) or 0


def run(doc, commands, common=(), check=None):
    """main(), then exit with its status: what a helper's `if __name__ == "__main__"' calls."""
    sys.exit(main(doc, commands, common, check))
