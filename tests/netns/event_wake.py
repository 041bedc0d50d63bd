#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test traffic: how events wake tapfenced (bpf/lib/record.bpf.h event_send()).

event_wake.py LOG PID DST

From 10.10.1.2, denied datagrams to DST: after a quiet spell A, then B as soon as A's line is in
LOG. A wakes the daemon; B, within TF_EV_WAKE_MS of that, does not, and must be in LOG by the drain
the daemon owes after reading A (TF_LINGER_MS), not the next tick (TF_TICK_MS, 250 ms). Then 20
datagrams 0.5 ms apart: the daemon's main thread (PID) is woken about once per TF_EV_WAKE_MS of
the run, not once per event.
Prints "B_MS WAKES RUN_MS": B's time from its send to its line in LOG, the main thread's voluntary
context switches (its sleeps) over the 20, and how long the 20 took to send.
"""
import socket, sys, time

log, pid, dst = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.10.1.2", 40901))


def switches():
    for line in open(f"/proc/{pid}/task/{pid}/status"):
        if line.startswith("voluntary_ctxt_switches"):
            yield int(line.split()[1])


def in_log(port, since):
    with open(log) as f:
        f.seek(since)
        return f'"dport":{port},' in f.read()


time.sleep(0.1)
start = len(open(log).read())
s.sendto(b"A", (dst, 9101))
t = time.monotonic()
while not in_log(9101, start) and time.monotonic() - t < 1:
    time.sleep(0.0002)
# A's wake-up drained it; B, sent at once, is within TF_EV_WAKE_MS of that wake-up.
t = time.monotonic()
s.sendto(b"B", (dst, 9102))
b_ms = -1
while time.monotonic() - t < 1:
    if in_log(9102, start):
        b_ms = round((time.monotonic() - t) * 1000)
        break
    time.sleep(0.001)

time.sleep(0.5)
before = sum(switches())
t = time.monotonic()
for i in range(20):
    s.sendto(b"C", (dst, 9110 + i))
    time.sleep(0.0005)
run_ms = round((time.monotonic() - t) * 1000)
time.sleep(0.1)
print(b_ms, sum(switches()) - before, run_ms)
