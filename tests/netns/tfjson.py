#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that what tapfenced writes as JSON says what it must: the JSON side of tests/netns/lib.sh.

events FILE OFFSET TIMEOUT WANT KEY=VALUE...
        the event lines of FILE after byte OFFSET (from the next whole line) whose fields equal
        every KEY=VALUE (compared as text: dport=80 matches 80), polled every 0.1 s for up to
        TIMEOUT s until some match when WANT is 1; prints them. Exit 0 iff some matched == WANT.
schema  every line on stdin is a JSON object with the feed's common keys (the sealed log's own
        lines, docs/audit.md, have theirs); prints the first line that is not, with what it lacks.
check [--learned] FILE EXPR ARG...
        EXPR, a Python expression over d (FILE's JSON), a (the ARGs) and the json module, is true;
        else prints why and exits 1. --learned: also L, the session's learned list (session show --json), and
        has(ADDR), its entry for ADDR or None.
get PATH
        the value at PATH (keys and list indices joined by dots: stats.floor.host_entries) of the
        JSON on stdin, printed (a string as it is, anything else as JSON); exit 1 if there is none.
valid FILE
        FILE holds one JSON document.
set FILE KEY VALUE
        set KEY of FILE's JSON object to VALUE (JSON text), in place.
session-spec [--netns PATH] FILE ID IFNAME GUEST_MAC GUEST4 GUEST6 GW_MAC GW4 GW6 ALLOW_JSON
        write a session spec to FILE; the resolver is the gateway's IPv4, port 53.
        --netns: the device is in the namespace at PATH (the spec's "netns").
"""
import json
import sys
import time

from tfnet import arg, run

EVENT_KEYS = ("time", "ifname", "direction", "verdict", "reason", "policy_version", "suppressed", "lost")
# The sealed log's own lines (docs/audit.md), beside the events.
LOG_KINDS = ("epoch", "continue", "seal", "checkpoint", "retention", "key", "policy", "evidence",
             "attestation", "session", "guard")


def events(a):
    filt = dict(f.split("=", 1) for f in a.filter)
    want_some = a.want == 1

    def scan():
        try:
            data = open(a.file, "rb").read()
        except OSError:
            return []
        if a.offset > 0 and data[a.offset - 1:a.offset] != b"\n":
            nl = data.find(b"\n", a.offset)
            data = data[nl + 1:] if nl >= 0 else b""
        else:
            data = data[a.offset:]
        hits = []
        for line in data.decode(errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if all(str(ev.get(k)) == v for k, v in filt.items()):
                hits.append(line)
        return hits

    deadline = time.monotonic() + a.timeout
    while True:
        hits = scan()
        if (hits and want_some) or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for h in hits:
        print(h)
    return 0 if bool(hits) == want_some else 1


def schema(_a):
    for line in sys.stdin:
        try:
            ev = json.loads(line)
            missing = [] if ev.get("kind") in LOG_KINDS else [k for k in EVENT_KEYS if k not in ev]
        except ValueError:
            missing = ["(not JSON)"]
        if missing:
            print(" ".join(missing) + ": " + line.strip()[:200])
            return 0
    return 0


def check(a):
    try:
        d = json.load(open(a.file))
    except ValueError as e:
        print(f"not JSON: {e}: {open(a.file).read(200)!r}")
        return 1
    env = {"d": d, "a": a.args, "json": json}
    if a.learned:
        try:
            learned = d["session"]["learned"]
        except (KeyError, TypeError) as e:
            print(f"no learned list: {e!r}: {open(a.file).read(300)!r}")
            return 1
        env["L"] = learned
        env["has"] = lambda addr: next((e for e in learned if e.get("addr") == addr), None)
    expr = a.expr
    try:
        ok = eval("(" + expr + "\n)", env)
    except Exception as e:
        ok, expr = False, f"{expr} raised {e!r}"
    if not ok:
        flat = " ".join(expr.split())
        shown = json.dumps(env["L"])[:600] if a.learned else json.dumps(d)[:400]
        print(f"false: {flat} on {'learned ' if a.learned else ''}{shown}")
        return 1
    return 0


def get(a):
    v = json.load(sys.stdin)
    for k in a.path.split("."):
        try:
            v = v[int(k)] if isinstance(v, list) else v[k]
        except (KeyError, IndexError, ValueError, TypeError):
            return 1
    print(v if isinstance(v, str) else json.dumps(v))
    return 0


def valid(a):
    json.load(open(a.file))


def set_field(a):
    with open(a.file) as f:
        d = json.load(f)
    d[a.key] = json.loads(a.value)
    with open(a.file, "w") as f:
        json.dump(d, f, indent=1)


def session_spec(a):
    spec = {"id": a.id, "ifname": a.ifname,
            "guest": {"mac": a.guest_mac, "ipv4": a.guest4, "ipv6": a.guest6},
            "gateway": {"mac": a.gw_mac, "ipv4": a.gw4, "ipv6": a.gw6},
            "resolver": {"ipv4": a.gw4, "port": 53},
            "allow": json.loads(a.allow)}
    if a.netns:
        spec["netns"] = a.netns
    with open(a.file, "w") as f:
        json.dump(spec, f, indent=1)


COMMANDS = {
    "events": (events, [arg("file"), arg("offset", type=int), arg("timeout", type=float),
                        arg("want", type=int), arg("filter", nargs="...")]),
    "schema": (schema, []),
    "check": (check, [arg("--learned", action="store_true"), arg("file"), arg("expr"),
                      arg("args", nargs="...")]),
    "get": (get, [arg("path")]),
    "valid": (valid, [arg("file")]),
    "set": (set_field, [arg("file"), arg("key"), arg("value")]),
    "session-spec": (session_spec, [arg("--netns")] +
                     [arg(n) for n in ("file", "id", "ifname", "guest_mac", "guest4", "guest6",
                                       "gw_mac", "gw4", "gw6", "allow")]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS)
