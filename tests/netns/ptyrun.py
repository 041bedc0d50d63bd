#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test a terminal program as a person at a terminal would run it (test_top.sh): start COMMAND on a
pseudo-terminal of --rows x --cols, type --keys (each after --delay seconds), save everything it
drew to --out, and report how it ended.

    ptyrun.py --out FILE [--rows 24] [--cols 80] [--delay 1.5] [--keys KEYS] [--wait 3] -- COMMAND...

KEYS is typed one character at a time ("\\n" for Enter). After the last key, it waits up to --wait
seconds for COMMAND to exit. Prints "exit STATUS" or "running" (then kills it). Also prints
"frame ROWS COLS": the size of the last full screen drawn (after the last clear-screen sequence).
Standard library only; run it as /usr/bin/python3.
"""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

from tfnet import arg, run


def main(a):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(a.command[0], a.command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", a.rows, a.cols, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    out = bytearray()

    def pump(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], max(0, end - time.monotonic()))
            if not r:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out.extend(data)
        return True

    alive = True
    for k in (a.keys or "").encode().decode("unicode_escape"):
        alive = pump(a.delay)
        if not alive:
            break
        os.write(fd, k.encode())
    status = None
    end = time.monotonic() + (a.wait if alive else 0.5)
    while status is None and time.monotonic() < end:
        pump(0.1)
        p, st = os.waitpid(pid, os.WNOHANG)
        if p:
            status = os.waitstatus_to_exitcode(st)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    with open(a.out, "wb") as f:
        f.write(out)
    frame = out.split(b"\x1b[H\x1b[2J")[-1].decode("utf-8", "replace").replace("\r", "")
    lines = frame.rstrip("\n").split("\n")
    print(f"frame {len(lines)} {max(len(line) for line in lines)}")
    print("running" if status is None else f"exit {status}")
    return 0


if __name__ == "__main__":
    run(__doc__, (main, [arg("--out", required=True), arg("--rows", type=int, default=24),
                         arg("--cols", type=int, default=80), arg("--delay", type=float, default=1.5),
                         arg("--keys"), arg("--wait", type=float, default=3),
                         arg("command", nargs="+")]))
