#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that an attestation verifies without tapfence: its DSSE envelope (PAE), signed with the
node's Ed25519 key, checked with Python's cryptography.

attest_verify.py KEYFILE ATTESTATION
"""
import base64, json, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
name, kid, raw = open(sys.argv[1]).read().strip().split("+", 2)
pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(raw)[1:])
env = json.load(open(sys.argv[2]))
body = base64.b64decode(env["payload"])
t = env["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)
pub.verify(base64.b64decode(env["signatures"][0]["sig"]), pae)
st = json.loads(body)
assert st["_type"] == "https://in-toto.io/Statement/v1"
assert {s["name"] for s in st["subject"]} == {"tapfenced", "tapfence.bpf.o"}
assert all(s["tapfence_first"] for s in st["predicate"]["sessions"])
assert st["predicate"]["log_checkpoint"].startswith("tapfence/attest-node/")
