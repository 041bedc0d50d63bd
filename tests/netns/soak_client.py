#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that the control socket holds up under load: the soak driver of test_soak.sh.

soak_client.py SOCK HOST_NS SECONDS DEV,...
"""
import json, socket, subprocess, sys, threading, time

SOCK, HOST_NS, SECONDS, DEVS = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4].split(",")
MAX_REQ = 1 << 20   # limits.max_request_bytes (the default)
TIMEOUT = 30.0      # the longest a daemon under valgrind may take to answer
end = time.monotonic() + SECONDS
lock = threading.Lock()
requests, clients, problems = {}, {}, []

def running():
    return time.monotonic() < end

def record(kind, answered, good, detail=""):
    with lock:
        t = requests.setdefault(kind, [0, 0, 0])
        t[0] += 1
        t[1] += answered
        t[2] += answered and not good
        if not (answered and good) and len(problems) < 40:
            problems.append("%s: %s" % (kind, detail if answered else "no answer " + detail))

def client(kind):
    with lock:
        clients[kind] = clients.get(kind, 0) + 1

class Conn:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(TIMEOUT)
        self.s.connect(SOCK)
        self.buf, self.eof = b"", False

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if self.eof or left <= 0:
            return False
        self.s.settimeout(left)
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            d = b""
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def line(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            if not self._fill(deadline):
                return None
        l, _, self.buf = self.buf.partition(b"\n")
        return l

    def closed(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.eof and self._fill(deadline):
            pass
        return self.eof

    def close(self):
        self.s.close()

def enc(req):
    return req if isinstance(req, bytes) else json.dumps(req, separators=(",", ":")).encode()

def judge(kind, line, want, err=None, check=None):
    """want: True (ok), False (an error, containing err if given), None (either)."""
    if line is None:
        record(kind, False, False)
        return None
    try:
        r = json.loads(line)
    except ValueError:
        r = None
    good = isinstance(r, dict) and isinstance(r.get("ok"), bool)
    good = good and (want is None or r["ok"] is want)
    good = good and not (want is False and err and err not in r.get("error", ""))
    try:
        good = good and (check is None or bool(check(r)))
    except (KeyError, TypeError):
        good = False
    record(kind, True, good, line[:300].decode(errors="replace"))
    return r if good else None

def call(kind, req, want=True, err=None, check=None):
    start = time.monotonic()
    try:
        c = Conn()
        c.s.sendall(enc(req) + b"\n")
        line = c.line()
        c.close()
    except OSError as e:
        record(kind, False, False, "(%s)" % e)
        time.sleep(0.1)  # no daemon to connect to: do not spin
        return None
    if line is None:
        record(kind, False, False, "(%s after %.1f s)" % ("disconnected" if c.eof else "nothing",
                                                         time.monotonic() - start))
        return None
    return judge(kind, line, want, err, check)

def spec(sid, k, allow):
    return {"id": sid, "ifname": DEVS[k],
            "guest": {"mac": "02:00:00:28:%02x:02" % (0x80 + k), "ipv4": "10.40.%d.2" % (100 + k),
                      "ipv6": "fd00:28:%x::2" % (0x100 + k)},
            "gateway": {"mac": "02:00:00:28:%02x:01" % (0x80 + k), "ipv4": "10.40.%d.1" % (100 + k)},
            "resolver": {"ipv4": "10.40.%d.1" % (100 + k), "port": 53}, "allow": allow}

def ip(*args):
    subprocess.run(["ip", "-n", HOST_NS] + list(args), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=10)

def sessions():
    """Sessions come and go on the cycle devices, with rule changes and queries on each."""
    i = 0
    while running():
        k = i % len(DEVS)
        sid = "cyc%d" % i
        allow = [{"cidr": "198.51.100.0/24", "proto": "tcp", "ports": [80, "8000-8100"]},
                 {"cidr": "2001:db8:%x::/48" % i, "proto": "udp", "ports": [53]},
                 {"host": "*.cyc%d.test" % i, "proto": "tcp", "ports": [443]}]
        add = {"op": "session.add", "spec": spec(sid, k, allow)}
        if not call("session.add", add, True, check=lambda r: r["id"] == sid):
            i += 1
            continue
        call("session.add (same id)", add, False, "already exists")
        call("session.add (bad spec)", {"op": "session.add", "spec": spec("bad%d" % i, k, [{"cidr": "10.0.0.0/33"}])},
             False, "invalid CIDR")
        for rule in ({"cidr": "192.0.2.%d/32" % (i % 254 + 1), "proto": "udp", "ports": [1000 + i % 1000]},
                     {"host": "h%d.cyc.test" % i, "proto": "tcp", "ports": [80]}):
            call("rule.add", {"op": "rule.add", "id": sid, "rule": rule})
            call("rule.add (again)", {"op": "rule.add", "id": sid, "rule": rule}, False, "already has this rule")
        call("session.show", {"op": "session.show", "id": sid}, True,
             check=lambda r: r["session"]["id"] == sid and r["session"]["rules"] == 5)
        for rule in ({"cidr": "192.0.2.%d/32" % (i % 254 + 1), "proto": "udp", "ports": [1000 + i % 1000]},
                     {"host": "h%d.cyc.test" % i, "proto": "tcp", "ports": [80]}):
            call("rule.del", {"op": "rule.del", "id": sid, "rule": rule})
            call("rule.del (again)", {"op": "rule.del", "id": sid, "rule": rule}, False, "no such rule")
        if DEVS[k].startswith("t") and i % 4 == 1:
            # The VMM went away first: the tap is gone when the session is deleted.
            ip("link", "del", DEVS[k])
            client("tap deleted under its session")
            call("session.del (its tap gone)", {"op": "session.del", "id": sid}, True)
            ip("tuntap", "add", "dev", DEVS[k], "mode", "tap")
            ip("link", "set", DEVS[k], "up")
        else:
            call("session.del", {"op": "session.del", "id": sid})
        call("session.del (again)", {"op": "session.del", "id": sid}, False, "no session")
        i += 1

def rules():
    """Rule churn on the guest's live session, never touching what its probes use."""
    j = 0
    while running():
        rs = [{"cidr": "192.0.2.%d/32" % (j % 254 + 1), "proto": "tcp", "ports": [8000 + j % 100]},
              {"cidr": "2001:db8:%x::/64" % j, "proto": "any"},
              {"host": "h%d.churn.test" % j, "proto": "tcp", "ports": [80, 443]}]
        for r in rs:
            call("rule.add g1", {"op": "rule.add", "id": "g1", "rule": r})
        for r in rs:
            call("rule.del g1", {"op": "rule.del", "id": "g1", "rule": r})
        j += 1

def queries():
    """Queries, one per connection and several on one."""
    while running():
        call("version", {"op": "version"}, True, check=lambda r: "abi" in r)
        call("stats", {"op": "stats"}, True, check=lambda r: r["stats"]["sessions"] >= 1)
        call("session.list", {"op": "session.list"}, True,
             check=lambda r: "g1" in [s["id"] for s in r["sessions"]])
        call("session.show g1", {"op": "session.show", "id": "g1"}, True,
             check=lambda r: r["session"]["id"] == "g1" and "counters" in r["session"])
        call("session.show (no such)", {"op": "session.show", "id": "nosuch"}, False, "no session")
        try:
            c = Conn()
            reqs = [{"op": "version"}, {"op": "nope"}, {"op": "session.list"}, {"op": "stats"}] * 5
            c.s.sendall(b"".join(enc(r) + b"\n" for r in reqs))
            for r in reqs:
                judge("pipelined on one connection", c.line(), r["op"] != "nope")
            c.close()
        except OSError as e:
            record("pipelined on one connection", False, False, "(%s)" % e)

BAD = [
    ("malformed JSON", b'{"op":', "invalid JSON"),
    ("unknown op", b'{"op":"frobnicate"}', "unknown operation"),
    ("unknown field", b'{"op":"version","colour":"red"}', "unknown field"),
    ("duplicate key", b'{"op":"version","op":"stats"}', "invalid JSON"),
    ("not an object", b'["op"]', "expected a request object"),
    ("empty line", b"", None),
    ("bad session id", b'{"op":"session.show","id":"../etc"}', "expected a session id"),
    ("spec not an object", b'{"op":"session.add","spec":[1]}', "expected an object"),
    ("bad rule", b'{"op":"rule.add","id":"g1","rule":{"cidr":"10.0.0.0/33"}}', "invalid CIDR"),
    ("invalid UTF-8", b'{"op":"\xff\xfe"}', None),
    ("NUL in a string", b'{"op":"version\\u0000"}', None),
    ("raw NUL byte", b'{"op":"version"}\x00', None),
    ("deep nesting", b"[" * 5000, None),
    ("too many rules", enc({"op": "rule.add", "id": "g1", "rule": {"cidr": "192.0.2.0/24", "ports": list(range(1, 200))}}), None),
]

def bad():
    """Bad requests: each must get an error and leave the daemon serving."""
    n = 0
    while running():
        for kind, data, err in BAD:
            call("bad: " + kind, data, False, err)
        if n % 4 == 0:
            for size, want in ((MAX_REQ - 1024, "unknown field `pad'"), (MAX_REQ + 1024, "request too large")):
                kind = "bad: line of %d bytes" % size
                head = b'{"op":"version","pad":"'
                data = head + b"x" * (size - len(head) - 2) + b'"}\n'
                try:
                    c = Conn()
                    t = threading.Thread(target=lambda: c.s.sendall(data), daemon=True)
                    t.start()
                    judge(kind, c.line(), False, want)
                    if size > MAX_REQ:
                        closed = c.closed(TIMEOUT)
                        record("bad: oversized line, then disconnected", closed, closed)
                    c.close()
                    t.join(1)
                except OSError as e:
                    record(kind, False, False, "(%s)" % e)
        n += 1

def rude():
    """Clients that stall, trickle, vanish mid-request or never read."""
    k = 0
    while running():
        m = k % 9
        try:
            c = Conn()
            if m == 0:
                client("connected and left")
            elif m == 1:
                c.s.sendall(b'{"op":"sess')
                client("left in the middle of a request")
            elif m == 2:
                c.s.sendall(b'{"op":"session.list"}\n')
                client("left without reading its answer")
            elif m == 3:
                c.s.sendall(b'{"op":"stats"}\n' * 300)
                client("sent 300 requests, read nothing, left")
            elif m == 4:
                c.s.sendall(b'{"op":"vers')
                judge("stalled half a request: timed out", c.line(), False, "request incomplete: timed out")
                closed = c.closed(TIMEOUT)
                record("stalled half a request: then disconnected", closed, closed)
            elif m == 5:
                closed = c.closed(TIMEOUT)
                record("idle connection: disconnected", closed, closed)
            elif m == 6:
                for part in (b'{"op":', b'"session', b'.list"}\n'):
                    c.s.sendall(part)
                    time.sleep(0.05)
                judge("request in three pieces", c.line(), True)
            elif m == 7:
                c.s.sendall(b'{"op":"version"}\n')
                c.s.shutdown(socket.SHUT_WR)
                judge("request, then shutdown(SHUT_WR)", c.line(), True)
            else:
                for b in b'{"op":"version"}\n':
                    c.s.sendall(bytes([b]))
                judge("request a byte at a time", c.line(), True)
            c.close()
        except OSError as e:
            record("rude client %d" % m, False, False, "(%s)" % e)
        k += 1

def subscribers():
    """Subscribers that come and go: reading, not reading, refused."""
    k = 0
    while running():
        m = k % 4
        try:
            c = Conn()
            if m == 0:
                c.s.sendall(b'{"op":"events.subscribe"}\n')
                judge("events.subscribe", c.line(), True, check=lambda r: r["subscribed"] is True)
                c.line(3)  # an event, if one comes, then leave
            elif m == 1:
                c.s.sendall(b'{"op":"events.subscribe","session":"g1"}\n')
                judge("events.subscribe g1, then not reading", c.line(), True)
                time.sleep(2)
            elif m == 2:
                c.s.sendall(b'{"op":"events.subscribe","session":"nosuch"}\n')
                judge("events.subscribe (no such session)", c.line(), False, "no session")
            else:
                c.s.sendall(b'{"op":"events.subscribe"}\n{"op":"events.subscribe"}\n')
                judge("events.subscribe", c.line(), True)
                line = c.line()
                while line is not None and b'"ok"' not in line:
                    line = c.line()   # event lines may come first
                judge("events.subscribe twice on a connection", line, False, "already subscribed")
            c.close()
        except OSError as e:
            record("subscriber %d" % m, False, False, "(%s)" % e)
        k += 1

workers = [threading.Thread(target=f, daemon=True) for f in (sessions, rules, queries, bad, rude, subscribers)]
for w in workers:
    w.start()
for w in workers:
    w.join(SECONDS + 10 * TIMEOUT)
with lock:
    print(json.dumps({"requests": requests, "clients": clients, "problems": problems,
                      "alive": [w.is_alive() for w in workers].count(True)}))
