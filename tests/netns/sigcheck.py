# SPDX-License-Identifier: GPL-2.0
"""An independent verifier for test_evidence.sh: C2SP signed notes and DSSE envelopes signed by
Ed25519 (type 0x01) and ECDSA P-256 (type 0x02) keys, key rotation endorsements, policy lines and
session evidence statements, with Python's hashlib and cryptography only (docs/audit.md).

    sigcheck.py vkey-type PUBFILE TYPE
    sigcheck.py notes LOG KEY... | notes-tail LOG KEY...
    sigcheck.py dsse ENVELOPE KEY...
    sigcheck.py resign ENVELOPE PRIVATE_PEM FIELD VALUE   (prints the envelope)
    sigcheck.py key-lines LOG N
    sigcheck.py forge LOG NEW_ED_PEM NEW_EC_PEM OUT   (writes a made-up log)
    sigcheck.py old-checkpoint LOG ED_PEM OUT           (the log and one more checkpoint by ED_PEM)
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


def lh(b):
    return hashlib.sha256(b"\x00" + b).digest()


def mth(hs):
    """RFC 6962's tree hash of leaf hashes hs."""
    if not hs:
        return hashlib.sha256(b"").digest()
    if len(hs) == 1:
        return hs[0]
    k = 1
    while k * 2 < len(hs):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(hs[:k]) + mth(hs[k:])).digest()


def epoch_leaves(path):
    """The leaf hashes of the log's first epoch (every line but checkpoints, in order)."""
    raw = [l for l in open(path, "rb").read().split(b"\n") if l.strip()]
    out = []
    for i, l in enumerate(raw):
        o = json.loads(l)
        if o.get("kind") == "epoch" and i:
            break
        if o.get("kind") != "checkpoint":
            out.append(lh(l))
    return out


def cmd_key_lines(path, n):
    global leaves
    leaves = epoch_leaves(path)
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
        want = "tapfence key rotation\n%s\n%d\n%s\n%s\n%s\n" % (
            o["origin"], o["seq"], base64.b64encode(mth(leaves[:o["seq"]])).decode(), o["old"], o["new"])
        if text != want:
            fail("endorsement text %r, want %r" % (text, want))
        old[o["type"]] = o["new"]


def cmd_forge(path, ed_pem, ec_pem, out):
    """What the holder of the new keys alone could write: the epoch made up anew (the denied
    lines turned into allowed ones), the genuine key lines copied in at their index, and a
    checkpoint signed by the new keys over it."""
    lines = log_lines(path)
    keys = [o for o in lines if o.get("kind") == "key"]
    origin, idx = keys[0]["origin"], keys[0]["seq"]
    name = keys[0]["old"].split("+")[0]
    ed = serialization.load_pem_private_key(open(ed_pem, "rb").read(), None)
    eck = serialization.load_pem_private_key(open(ec_pem, "rb").read(), None)
    edpub = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    spki = eck.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    hs, outl = [], []

    def leaf(o, chain=True):
        if chain:
            o["seq"], o["prev"] = len(hs), hs[-1][:8].hex()
        s = json.dumps(o, separators=(",", ":"))
        hs.append(lh(s.encode()))
        outl.append(s)

    leaf({"time": "2026-12-02T00:00:00.000000000Z", "kind": "epoch", "origin": origin,
          "key": keys[0]["old"], "checkpoint_lines": 10000, "checkpoint_s": 1, "torn_tail": False,
          "prev": None, "prev_why": "no earlier checkpoint"}, chain=False)
    while len(hs) < idx:
        leaf({"time": "2026-12-02T00:00:01.000000000Z", "session": "a", "verdict": "allow",
              "reason": "allowed", "dst": "192.0.2.66"})
    for k in keys:
        k = {a: b for a, b in k.items() if a not in ("seq", "prev")}
        leaf(k)
    text = "%s\n%d\n%s\n" % (origin, len(hs), base64.b64encode(mth(hs)).decode())
    s1 = base64.b64encode(hashlib.sha256(name.encode() + b"\n\x01" + edpub).digest()[:4] +
                          ed.sign(text.encode())).decode()
    s2 = base64.b64encode(hashlib.sha256(spki).digest()[:4] +
                          eck.sign(text.encode(), ec.ECDSA(hashes.SHA256()))).decode()
    note = text + "\n%s%s %s\n%s%s %s\n" % (DASH, name, s1, DASH, name, s2)
    outl.append(json.dumps({"time": "2026-12-02T00:00:02.000000000Z", "kind": "checkpoint",
                            "origin": origin, "size": len(hs), "note": note},
                           separators=(",", ":"), ensure_ascii=False))
    open(out, "w").write("\n".join(outl) + "\n")


def cmd_old_checkpoint(path, pem, out):
    """The log with one more checkpoint of its first epoch as it stands, signed by the Ed25519
    key in pem alone."""
    hs = epoch_leaves(path)
    first = log_lines(path)[0]
    priv = serialization.load_pem_private_key(open(pem, "rb").read(), None)
    pub = priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    name = first["key"].split("+")[0]
    text = "%s\n%d\n%s\n" % (first["origin"], len(hs), base64.b64encode(mth(hs)).decode())
    sig = base64.b64encode(hashlib.sha256(name.encode() + b"\n\x01" + pub).digest()[:4] +
                           priv.sign(text.encode())).decode()
    line = json.dumps({"time": "2026-12-02T00:00:03.000000000Z", "kind": "checkpoint",
                       "origin": first["origin"], "size": len(hs),
                       "note": text + "\n%s%s %s\n" % (DASH, name, sig)},
                      separators=(",", ":"), ensure_ascii=False)
    raw = open(path, "rb").read().decode()
    open(out, "w").write(raw + line + "\n")


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
     "forge": cmd_forge, "old-checkpoint": cmd_old_checkpoint, "notes-tail": lambda *a: cmd_notes(*a, tail=True)}[cmd](*args)


if __name__ == "__main__":
    main()
