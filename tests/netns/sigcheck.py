# SPDX-License-Identifier: GPL-2.0
"""An independent verifier for test_evidence.sh: C2SP signed notes and DSSE envelopes signed by
Ed25519 (type 0x01) and ECDSA P-256 (type 0x02) keys, key rotation endorsements, policy lines and
session evidence statements, with Python's hashlib and cryptography only (docs/audit.md).

    sigcheck.py vkey-type PUBFILE TYPE
    sigcheck.py notes LOG KEY... | notes-tail LOG KEY...
    sigcheck.py dsse ENVELOPE KEY...
    sigcheck.py resign ENVELOPE PRIVATE_PEM FIELD VALUE   (prints the envelope)
    sigcheck.py key-lines LOG N
    sigcheck.py policy-lines LOG SESSION ATTESTATION OP...
    sigcheck.py evidence ENVELOPE LOG SHOW_JSON OP...
Exits 0 when every check holds, else prints what failed and exits 1.
"""
import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

DASH = "\u2014 "


def fail(msg):
    print("sigcheck: " + msg, file=sys.stderr)
    sys.exit(1)


class Key:
    """A verifier key, "name+keyid+base64(type || key)", its key id recomputed as C2SP says."""

    def __init__(self, vkey):
        self.vkey = vkey.strip()
        self.name, kid, raw = self.vkey.split("+", 2)
        raw = base64.b64decode(raw, validate=True)
        self.type, key = raw[0], raw[1:]
        if self.type == 1:
            self.pub = Ed25519PublicKey.from_public_bytes(key)
            want = hashlib.sha256(self.name.encode() + b"\n\x01" + key).digest()[:4]
        elif self.type == 2:
            self.pub = serialization.load_der_public_key(key)
            if not isinstance(self.pub, ec.EllipticCurvePublicKey) or self.pub.curve.name != "secp256r1":
                fail("not a P-256 key: " + self.vkey)
            want = hashlib.sha256(key).digest()[:4]
        else:
            fail("unknown key type %d" % self.type)
        if want.hex() != kid:
            fail("key id %s is not %s" % (kid, want.hex()))
        self.kid = want

    def verify(self, sig, msg):
        if self.type == 1:
            self.pub.verify(sig, msg)
        else:
            self.pub.verify(sig, msg, ec.ECDSA(hashes.SHA256()))


def key_file(path):
    return Key(open(path).read())


def note_verify(note, key):
    """The note's text if a signature line by key verifies over it."""
    text, sigs = note.split("\n\n", 1)
    text += "\n"
    for line in sigs.splitlines():
        if not line.startswith(DASH):
            fail("not a signature line: %r" % line)
        name, b64 = line[len(DASH):].split(" ")
        raw = base64.b64decode(b64, validate=True)
        if name == key.name and raw[:4] == key.kid:
            key.verify(raw[4:], text.encode())
            return text
    fail("no signature by %s in %r" % (key.vkey[:40], note[:80]))


def log_lines(path):
    return [json.loads(l) for l in open(path, "rb").read().decode().split("\n") if l.strip()]


def cmd_vkey_type(path, t):
    if key_file(path).type != int(t):
        fail("%s is not of type %s" % (path, t))


def cmd_notes(path, *keys, tail=False):
    lines = log_lines(path)
    if tail:
        last_key = max(i for i, o in enumerate(lines) if o.get("kind") == "key")
        lines = lines[last_key + 1:]
    cps = [o for o in lines if o.get("kind") == "checkpoint"]
    if not cps:
        fail("no checkpoint")
    for o in cps:
        for k in keys:
            note_verify(o["note"], key_file(k))


def pae(env):
    body = base64.b64decode(env["payload"])
    t = env["payloadType"].encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def cmd_dsse(path, *keys):
    env = json.load(open(path))
    if len(env["signatures"]) != len(keys):
        fail("%d signatures, want %d" % (len(env["signatures"]), len(keys)))
    for k in map(key_file, keys):
        s = next(s for s in env["signatures"] if s["keyid"] == k.vkey)
        k.verify(base64.b64decode(s["sig"]), pae(env))


def cmd_resign(path, pem, field, value):
    env = json.load(open(path))
    st = json.loads(base64.b64decode(env["payload"]))
    st[field] = value
    env["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    priv = serialization.load_pem_private_key(open(pem, "rb").read(), None)
    env["signatures"] = [{"keyid": env["signatures"][0]["keyid"],
                          "sig": base64.b64encode(priv.sign(pae(env))).decode()}]
    json.dump(env, sys.stdout)


def cmd_key_lines(path, n):
    lines = log_lines(path)
    keys = [o for o in lines if o.get("kind") == "key"]
    if len(keys) != int(n):
        fail("%d key lines, want %s" % (len(keys), n))
    epoch = next(o for o in lines if o.get("kind") == "epoch")
    old = {"ed25519": epoch["key"], "ecdsa-p256": epoch["ecdsa_key"]}
    for o in keys:
        if o["old"] != old[o["type"]]:
            fail("key line %d hands on from %s, not the key in use" % (o["seq"], o["old"][:40]))
        text = note_verify(o["endorsement"], Key(o["old"]))
        if note_verify(o["endorsement"], Key(o["new"])) != text:
            fail("the two signatures are over different texts")
        want = "tapfence key rotation\n%s\n%d\n%s\n%s\n" % (o["origin"], o["seq"], o["old"], o["new"])
        if text != want:
            fail("endorsement text %r, want %r" % (text, want))
        old[o["type"]] = o["new"]


def cmd_policy_lines(path, sid, att, *ops):
    pol = [o for o in log_lines(path) if o.get("kind") == "policy" and o.get("session") == sid]
    if [o["op"] for o in pol] != list(ops):
        fail("policy ops %s, want %s" % ([o["op"] for o in pol], list(ops)))
    if [o["policy_version"] for o in pol] != sorted(set(o["policy_version"] for o in pol)):
        fail("policy versions do not increase: %s" % [o["policy_version"] for o in pol])
    st = json.loads(base64.b64decode(json.load(open(att))["payload"]))
    want = next(s["spec_sha256"] for s in st["predicate"]["sessions"] if s["id"] == sid)
    if pol[-1]["spec_sha256"] != want or pol[0]["spec_sha256"] == want:
        fail("hashes %s, the attestation's %s" % ([o["spec_sha256"] for o in pol], want))


def find(o, key):
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    return None


def cmd_evidence(path, log, show, *ops):
    st = json.loads(base64.b64decode(json.load(open(path))["payload"]))
    p = st["predicate"]
    lines, origin, at = log_lines(log), None, {}
    for o in lines:
        origin = o["origin"] if o.get("kind") in ("epoch", "continue") else origin
        if origin == p["origin"] and "seq" in o:
            at[o["seq"]] = o
    first, last = at.get(p["first_index"]), at.get(p["last_index"])
    if not first or first.get("kind") != "policy" or first.get("op") != ops[0]:
        fail("line %d of the epoch is %s, not its %s policy line" % (p["first_index"], first, ops[0]))
    if not last or last.get("kind") != "policy" or last.get("op") != "del":
        fail("line %d of the epoch is %s, not its del line" % (p["last_index"], last))
    if [x["op"] for x in p["policies"]] != list(ops):
        fail("policies %s, want %s" % ([x["op"] for x in p["policies"]], list(ops)))
    if any(at[x["index"]]["spec_sha256"] != x["spec_sha256"] for x in p["policies"]):
        fail("a policy's hash is not its line's")
    if st["subject"][0]["digest"]["sha256"] != last["spec_sha256"]:
        fail("the subject is not the last policy")
    want = find(json.load(open(show)), "counters")
    if p["counters"] != want or not want:
        fail("counters %s, session show said %s" % (p["counters"], want))
    cp = note_verify(p["checkpoint"], Key(next(o for o in lines if o.get("kind") == "epoch"
                                               and o["origin"] == p["origin"])["key"]))
    if int(cp.split("\n")[1]) <= p["last_index"]:
        fail("the checkpoint does not cover the last line")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"vkey-type": cmd_vkey_type, "notes": cmd_notes, "dsse": cmd_dsse, "resign": cmd_resign,
     "key-lines": cmd_key_lines, "policy-lines": cmd_policy_lines, "evidence": cmd_evidence,
     "notes-tail": lambda *a: cmd_notes(*a, tail=True)}[cmd](*args)


if __name__ == "__main__":
    main()
