#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test keys: print a fresh Ed25519 public key in the verifier-key format (NAME+KEYID+BASE64).
"""
import base64, hashlib
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization
pub = Ed25519PrivateKey.generate().public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
name = b"tapfence/attest-node"
kid = hashlib.sha256(name + b"\n\x01" + pub).digest()[:4].hex()
print("%s+%s+%s" % (name.decode(), kid, base64.b64encode(b"\x01" + pub).decode()))
