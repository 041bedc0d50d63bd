#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test traffic: how events wake tapfenced (bpf/lib/record.bpf.h event_send()).

event_wake.py LOG PID DST

From 10.10.1.2, denied datagrams to DST: first A, then B 2 ms later, after a quiet spell. A wakes
the daemon; B, within TF_EV_WAKE_MS of that, does not, and must be in LOG by the drain the daemon
owes after reading A (TF_LINGER_MS), not the next tick (TF_TICK_MS, 250 ms). Then 20 datagrams
0.5 ms apart: the daemon's main thread (PID) is woken a few times, not once per event.
Prints "B_MS WAKES": B's time from its send to its line in LOG, the main thread's context switches
over the 20 (voluntary: its sleeps).
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
time.sleep(0.002)
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
for i in range(20):
    s.sendto(b"C", (dst, 9110 + i))
    time.sleep(0.0005)
time.sleep(0.1)
print(b_ms, sum(switches()) - before)
