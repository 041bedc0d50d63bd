#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write the seed inputs of the DNS fuzz harness into tests/fuzz/corpus/dns/.

One DNS message per file: queries and answers a resolver really sends, and
the shapes the parser must refuse (loops, forward pointers, truncation).
Deterministic; rerun after changing it and commit the files.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "dns")


def name(spec):
    """Labels, then the root or, after '@', a pointer: 'www.github.com', 'cdn@12'."""
    labels, _, ptr = spec.partition("@")
    b = b"".join(bytes([len(l)]) + l.encode() for l in labels.split(".") if l)
    return b + (struct.pack(">H", 0xC000 | int(ptr)) if ptr else b"\0")


def hdr(qid, flags, qd=1, an=0, ns=0, ar=0):
    return struct.pack(">6H", qid, flags, qd, an, ns, ar)


def question(n, qtype=1):
    return name(n) + struct.pack(">HH", qtype, 1)


def rr(owner, rtype, ttl, rdata):
    return name(owner) + struct.pack(">HHIH", rtype, 1, ttl, len(rdata)) + rdata


def a(owner, ttl, addr):
    return rr(owner, 1, ttl, bytes(int(x) for x in addr.split(".")))


def cname(owner, ttl, target):
    return rr(owner, 5, ttl, name(target))


OPT = b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0)


def cname_lost(n):
    """A 240-byte question, then n CNAMEs of it to a 240-byte name of '*' labels (walked, not kept),
    then an A record: owners taken whole and owners walked must both finish (TF_DNS_STEPS_MAX)."""
    q = question(".".join(["a" * 63] * 3 + ["a" * 48]))
    bad_at = 12 + len(q) + 1 + 10
    bad = rr("", 99, 60, name(".".join(["*" * 63] * 3 + ["*" * 48])))
    return (hdr(18, 0x8180, an=n + 2) + q + bad
            + b"".join(rr("@12", 5, 300, name("@%d" % bad_at)) for _ in range(n))
            + a("@12", 60, "203.0.113.7"))


SEEDS = {
    "q_github_a": hdr(1, 0x0100) + question("github.com"),
    "q_mixed_case_aaaa": hdr(2, 0x0100) + question("www.GitHub.com", 28),
    "q_edns": hdr(3, 0x0100, ar=1) + question("registry.npmjs.org") + OPT,
    "q_txt": hdr(4, 0x0100) + question("github.com", 16),
    "q_compressed": hdr(5, 0x0100) + question("www@12"),
    "q_two_questions": hdr(6, 0x0100, qd=2) + question("a.test") + question("b.test"),
    "a_github": hdr(7, 0x8180, an=1) + question("github.com") + a("@12", 60, "140.82.112.3"),
    "a_0x20": hdr(8, 0x8180, an=1) + question("GiThUb.CoM") + a("gItHuB.cOm", 60, "140.82.112.4"),
    "a_cname_chain": hdr(9, 0x8180, an=4) + question("www.example.com")
    + cname("@12", 300, "cdn.example.net") + a("unrelated.org", 60, "203.0.113.99")
    + cname("cdn.example.net", 300, "edge@12") + a("edge.www.example.com", 120, "203.0.113.10"),
    "a_many": hdr(10, 0x8180, an=18) + question("a.test")
    + b"".join(a("@12", 60, "203.0.113.%d" % i) for i in range(18)),
    "a_aaaa_edns": hdr(11, 0x8180, an=1, ar=1) + question("a.test", 28)
    + rr("@12", 28, 60, bytes.fromhex("20010db8000000000000000000000007")) + OPT,
    "a_tc": hdr(12, 0x8380, an=1) + question("a.test") + a("@12", 60, "203.0.113.16"),
    "a_nxdomain": hdr(13, 0x8183) + question("a.test"),
    "a_loop": hdr(14, 0x8180, an=1) + question("a.test") + struct.pack(">HH", 0xC000 | 24, 1),
    "a_forward": hdr(15, 0x8180, an=1) + question("a.test") + struct.pack(">H", 0xC000 | 26)
    + name("a.test"),
    "a_pointer_chain": hdr(16, 0x8180, an=2) + question("a.test") + cname("@12", 60, "b@14")
    + a("@36", 60, "203.0.113.18"),
    "a_cut": (hdr(17, 0x8180, an=1) + question("a.test") + a("@12", 60, "203.0.113.20"))[:-1],
    "a_cname_lost": cname_lost(40),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for fname, data in sorted(SEEDS.items()):
        with open(os.path.join(OUT, fname), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
