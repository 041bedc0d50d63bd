#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test keys: print the public half of an Ed25519 PEM private key in the verifier-key format.

key_from_pem.py PEM
"""
import base64, hashlib, sys
from cryptography.hazmat.primitives import serialization
k = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), None)
pub = k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
name = b"tapfence/test-node"
kid = hashlib.sha256(name + b"\n\x01" + pub).digest()[:4].hex()
print("%s+%s+%s" % (name.decode(), kid, base64.b64encode(b"\x01" + pub).decode()))
