#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that a log bundle verifies without tapfence: RFC 9162 inclusion of each line, signed notes.

audit_bundle.py KEYFILE BUNDLE
"""
import base64, hashlib, json, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
name, keyid, raw = open(sys.argv[1]).read().strip().split("+", 2)
pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(raw)[1:])
b = json.load(open(sys.argv[2]))
H = lambda x: hashlib.sha256(x).digest()
cps = []
for note in b["checkpoints"]:
    text, sig = note.encode().split(b"\n\n", 1)
    pub.verify(base64.b64decode(sig.split(b" ")[-1])[4:], text + b"\n")
    origin, size, root = text.decode().split("\n")[:3]
    cps.append((int(size), base64.b64decode(root)))
for e in b["entries"]:
    n, root = cps[e["checkpoint"]]
    fn, sn, r = e["index"], n - 1, H(b"\x00" + e["line"].encode())
    for p in map(base64.b64decode, e["proof"]):
        assert sn > 0
        if fn & 1 or fn == sn:
            r = H(b"\x01" + p + r)
            while not fn & 1 and fn:
                fn >>= 1; sn >>= 1
        else:
            r = H(b"\x01" + r + p)
        fn >>= 1; sn >>= 1
    assert sn == 0 and r == root, e["index"]
    assert json.loads(e["line"])["session"] == b["session"]
