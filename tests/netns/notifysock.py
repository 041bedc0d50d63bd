#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test a daemon's readiness notifications as systemd receives them: play the manager's side of
sd_notify(3) (test_systemd.sh).

    notifysock.py --socket PATH --log FILE [--ready FILE]
        bind a datagram socket at PATH (what $NOTIFY_SOCKET names) and append every message
        received to FILE, one assignment per line, each message followed by a line "--".
        --ready FILE is written once the socket is bound. Runs until killed.

Standard library only; run it as /usr/bin/python3.
"""
import os
import socket

from tfnet import LOG, READY, arg, exit_on_term, log_line, ready, run


def main(a):
    exit_on_term()
    if os.path.exists(a.socket):
        os.unlink(a.socket)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(a.socket)
    ready(a.ready)
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        for line in msg.split("\n"):
            log_line(a.log, line)
        log_line(a.log, "--")


if __name__ == "__main__":
    run(__doc__, (main, [arg("--socket", required=True), LOG, READY]))
