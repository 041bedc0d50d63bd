#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that every checkpoint of a sealed log verifies without tapfence: its Ed25519 signature
(signed-note format) and its RFC 6962 root, recomputed from the lines.

audit_checkpoints.py KEYFILE [LOG...]
"""
import base64, hashlib, json, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
name, keyid, raw = open(sys.argv[1]).read().strip().split("+", 2)
raw = base64.b64decode(raw)
assert raw[0] == 1 and len(raw) == 33
pub = Ed25519PublicKey.from_public_bytes(raw[1:])
want_id = hashlib.sha256(name.encode() + b"\n\x01" + raw[1:]).digest()[:4]
assert want_id.hex() == keyid, "key id"
def mth(h):
    if len(h) == 1:
        return h[0]
    k = 1
    while 2 * k < len(h):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(h[:k]) + mth(h[k:])).digest()
leaves, checked = [], 0
for path in sys.argv[2:]:
    for line in open(path, "rb").read().split(b"\n")[:-1]:
        o = json.loads(line)
        if o.get("kind") == "epoch":
            leaves = []
        if o.get("kind") != "checkpoint":
            leaves.append(hashlib.sha256(b"\x00" + line).digest())
            continue
        note = o["note"].encode()
        text, sigs = note.split(b"\n\n", 1)
        text += b"\n"
        prefix = "\u2014 ".encode() + name.encode() + b" "
        assert sigs.startswith(prefix), "signature line"
        blob = base64.b64decode(sigs[len(prefix):].strip())
        assert blob[:4] == want_id
        pub.verify(blob[4:], text)
        origin, size, root = text.decode().splitlines()[:3]
        assert int(size) == len(leaves), "size %s vs %d" % (size, len(leaves))
        assert base64.b64decode(root) == mth(leaves), "root"
        checked += 1
assert checked > 0
print("# %d checkpoints checked independently" % checked)
