// SPDX-License-Identifier: GPL-2.0
/*
 * Test that the log's seal (user/common/seal.c) computes RFC 6962 tree
 * hashes and C2SP signed notes exactly as their reference implementations
 * do, that a note verifies only whole and only with its key, and that a
 * session's spec hash kept across rule changes (user/daemon/evidence.c) is
 * always the canonical spec's hash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "check.h"
#include "common/seal.h"
#include "daemon/daemon.h"

/*
 * Certificate Transparency's reference leaves and roots (RFC 6962 tree
 * hashes of the first n leaves), as in its merkle tree tests.
 */
static const char *const roots[] = {
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static void test_merkle(void)
{
	static const __u8 leaves[8][16] = {
		{},
		{ 0x00 },
		{ 0x10 },
		{ 0x20, 0x21 },
		{ 0x30, 0x31 },
		{ 0x40, 0x41, 0x42, 0x43 },
		{ 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57 },
		{ 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c,
		  0x6d, 0x6e, 0x6f },
	};
	static const size_t lens[8] = { 0, 1, 1, 2, 2, 4, 8, 16 };
	struct tf_merkle m;
	__u8 h[TF_HASH_LEN], root[TF_HASH_LEN];
	char hex[2 * TF_HASH_LEN + 1], desc[96];
	size_t i;

	tf_merkle_init(&m);
	for (i = 0; i <= 8; i++) {
		tf_merkle_root(&m, root);
		tf_hex(root, TF_HASH_LEN, hex);
		snprintf(desc, sizeof(desc), "RFC 6962 root of the first %zu reference leaves", i);
		CHECK_STR(desc, hex, roots[i]);
		if (i == 8)
			break;
		tf_leaf_hash(leaves[i], lens[i], h);
		tf_merkle_push(&m, h);
	}
}

/* golang.org/x/mod/sumdb/note's documented example: its key, its text, its signature. */
#define GO_SEED_B64 "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
#define GO_VKEY	    "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
#define GO_TEXT                                                      \
	"If you think cryptography is the answer to your problem,\n" \
	"then you don't know what your problem is.\n"
#define GO_NOTE \
	GO_TEXT "\n\xe2\x80\x94 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"

static void test_note_reference(void)
{
	__u8 seed[40];
	char vkey[TF_VKEY_MAX], note[TF_NOTE_MAX], err[256];
	struct tf_signer s;
	struct tf_verifier v;
	struct tf_checkpoint c;
	EVP_PKEY *pkey;
	int n;

	n = tf_b64_decode(GO_SEED_B64, strlen(GO_SEED_B64), seed, sizeof(seed));
	CHECK_EQ("the reference private key decodes to 0x01 || 32-byte seed", n, 33);
	pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed + 1, 32);
	CHECK_EQ("the seed makes an Ed25519 key", pkey != NULL, 1);
	if (!pkey || tf_signer_init(pkey, "PeterNeumann", &s)) {
		CHECK_EQ("signer from the reference key", 0, 1);
		EVP_PKEY_free(pkey);
		return;
	}
	CHECK_EQ("vkey formatted", tf_signer_vkey(&s, vkey, sizeof(vkey)) > 0, 1);
	CHECK_STR("the verifier key is the reference's, key id included", vkey, GO_VKEY);
	n = tf_note_sign(&s, GO_TEXT, note, sizeof(note));
	CHECK_EQ("the note is signed", n, (int)strlen(GO_NOTE));
	CHECK_STR("the signed note is the reference's byte for byte", note, GO_NOTE);
	tf_signer_close(&s);

	CHECK_EQ("the reference vkey parses", tf_verifier_parse(GO_VKEY, &v, err, sizeof(err)), 0);
	/* The reference text is no checkpoint: a good signature, then a malformed body. */
	CHECK_EQ("the reference note's signature verifies (it is no checkpoint)",
		 tf_note_verify(&v, GO_NOTE, strlen(GO_NOTE), &c), TF_NOTE_MALFORMED);
	CHECK_EQ("a vkey with a wrong key id is refused",
		 tf_verifier_parse(
			 "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", &v,
			 err, sizeof(err)),
		 -EINVAL);
	CHECK_CONTAINS("... naming why", err, "key id");
}

static void test_checkpoint_roundtrip(void)
{
	char text[TF_NOTE_MAX], note[TF_NOTE_MAX], edited[TF_NOTE_MAX], vkey[TF_VKEY_MAX], err[256];
	struct tf_checkpoint c = { .origin = "tapfence/test/1", .size = 8 }, got;
	struct tf_signer s, other;
	struct tf_verifier v, vo;
	EVP_PKEY *k1 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	EVP_PKEY *k2 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	char *p;
	int n;

	if (!k1 || !k2 || tf_signer_init(k1, "tapfence/test", &s) ||
	    tf_signer_init(k2, "tapfence/test", &other)) {
		CHECK_EQ("two test keys", 0, 1);
		return;
	}
	memset(c.root, 0xab, sizeof(c.root));
	n = tf_checkpoint_text(&c, text, sizeof(text));
	CHECK_STR("the checkpoint body is origin, size and base64 root, a line each", text,
		  "tapfence/test/1\n8\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n");
	n = tf_note_sign(&s, text, note, sizeof(note));
	CHECK_EQ("signed", n > 0, 1);
	CHECK_EQ("vkey", tf_signer_vkey(&s, vkey, sizeof(vkey)) > 0, 1);
	CHECK_EQ("vkey parses", tf_verifier_parse(vkey, &v, err, sizeof(err)), 0);
	CHECK_EQ("the checkpoint verifies with its key", tf_note_verify(&v, note, n, &got),
		 TF_NOTE_OK);
	CHECK_STR("... origin", got.origin, c.origin);
	CHECK_EQ("... size", got.size, 8);
	CHECK_EQ("... root", memcmp(got.root, c.root, TF_HASH_LEN), 0);

	memcpy(edited, note, n + 1);
	p = strchr(edited, '\n') + 1;
	*p = '9'; /* the size 8 -> 9 */
	CHECK_EQ("an edited size fails the signature", tf_note_verify(&v, edited, n, &got),
		 TF_NOTE_BAD_SIG);
	CHECK_EQ("a note cut short is malformed", tf_note_verify(&v, note, n - 1, &got),
		 TF_NOTE_MALFORMED);
	CHECK_EQ("other vkey", tf_signer_vkey(&other, vkey, sizeof(vkey)) > 0, 1);
	CHECK_EQ("other vkey parses", tf_verifier_parse(vkey, &vo, err, sizeof(err)), 0);
	CHECK_EQ("another key of the same name finds no signature of its own (key id)",
		 tf_note_verify(&vo, note, n, &got), TF_NOTE_NO_KEY);
	tf_signer_close(&s);
	tf_signer_close(&other);
}

/* Every leaf of every tree up to 40 leaves: its proof verifies, and fails for any other leaf, size or bit. */
static void test_proofs(void)
{
	__u8 leaves[40][TF_HASH_LEN], root[TF_HASH_LEN], proof[TF_PROOF_MAX][TF_HASH_LEN],
		bad[TF_HASH_LEN];
	unsigned int n, m, ok = 0, bad_ok = 0, total = 0;
	struct tf_merkle mk;
	struct tf_tree t, r;
	size_t len;
	__u8 b = 0;

	tf_merkle_init(&mk);
	tf_tree_init(&t, NULL);
	for (n = 0; n < 40; n++) {
		b = (__u8)n;
		tf_leaf_hash(&b, 1, leaves[n]);
		if (tf_tree_push(&t, leaves[n]))
			break;
	}
	for (n = 1; n <= 40; n++) {
		tf_merkle_push(&mk, leaves[n - 1]);
		tf_merkle_root(&mk, root);
		for (m = 0; m < n; m++) {
			total++;
			if (tf_tree_proof(&t, m, n, proof, &len))
				continue;
			ok += tf_inclusion_verify(leaves[m], m, n, (const __u8(*)[32])proof, len,
						  root);
			bad_ok += tf_inclusion_verify(leaves[(m + 1) % 40], m, n,
						      (const __u8(*)[32])proof, len, root);
			if (len) {
				proof[len - 1][3] ^= 0x40;
				bad_ok += tf_inclusion_verify(leaves[m], m, n,
							      (const __u8(*)[32])proof, len, root);
			}
			bad_ok += n > 1 && tf_inclusion_verify(leaves[m], m, n + 1,
							       (const __u8(*)[32])proof, len, root);
		}
	}
	CHECK_EQ("an inclusion proof for every leaf of every tree of 1-40 leaves verifies", ok,
		 total);
	CHECK_EQ("... and none with another leaf, a flipped bit or another tree size", bad_ok, 0);

	/* A reader that knows only the edge at 13 and the leaves after it proves those leaves. */
	tf_merkle_init(&mk);
	for (n = 0; n < 13; n++)
		tf_merkle_push(&mk, leaves[n]);
	tf_tree_init(&r, &mk);
	for (n = 13; n < 40; n++)
		if (tf_tree_push(&r, leaves[n]))
			break;
	for (n = 13; n < 40; n++)
		tf_merkle_push(&mk, leaves[n]);
	tf_merkle_root(&mk, root);
	for (m = 13, ok = 0; m < 40; m++) {
		if (!tf_tree_proof(&r, m, 40, proof, &len))
			ok += tf_inclusion_verify(leaves[m], m, 40, (const __u8(*)[32])proof, len,
						  root);
	}
	CHECK_EQ("from the edge at 13 on, leaves 13-39 are proven in the tree of 40", ok, 27);
	CHECK_EQ("a leaf before the edge cannot be proven", tf_tree_proof(&r, 12, 40, proof, &len),
		 -ERANGE);
	memset(bad, 0, sizeof(bad));
	CHECK_EQ("index past the size refused", tf_inclusion_verify(bad, 40, 40, NULL, 0, root), 0);
	tf_tree_free(&t);
	tf_tree_free(&r);
}

static void test_b64(void)
{
	__u8 out[8];

	CHECK_EQ("base64 with padding", tf_b64_decode("YWI=", 4, out, sizeof(out)), 2);
	CHECK_EQ("base64 with a character after padding refused",
		 tf_b64_decode("YW=j", 4, out, sizeof(out)), -EINVAL);
	CHECK_EQ("base64 of a length not a multiple of 4 refused",
		 tf_b64_decode("YWJ", 3, out, sizeof(out)), -EINVAL);
	CHECK_EQ("base64 with a bad character refused", tf_b64_decode("Y*I=", 4, out, sizeof(out)),
		 -EINVAL);
	CHECK_EQ("base64 whose last digit holds bits past the data refused (=)",
		 tf_b64_decode("YWJ=", 4, out, sizeof(out)), -EINVAL);
	CHECK_EQ("base64 whose last digit holds bits past the data refused (==)",
		 tf_b64_decode("YR==", 4, out, sizeof(out)), -EINVAL);
	CHECK_EQ("base64 canonical with two pad characters",
		 tf_b64_decode("YQ==", 4, out, sizeof(out)), 1);
}

/*
 * ECDSA P-256 as C2SP's signature type 0x02: the key id is SHA-256 of the
 * DER SubjectPublicKeyInfo, the signature ASN.1 DER over SHA-256 of the
 * text. A note signed by Ed25519 and cosigned by ECDSA verifies by either
 * key; a keyring rejects a note that any of its keys' signatures fails.
 */
static void test_ecdsa_cosign(void)
{
	char text[TF_NOTE_MAX], note[TF_NOTE_MAX], vkey[TF_VKEY_MAX], err[256], *p;
	struct tf_checkpoint c = { .origin = "tapfence/test/2", .size = 3 }, got;
	struct tf_signer ed, ec;
	struct tf_verifier ved, vec;
	struct tf_keyring ring = {};
	EVP_PKEY *k1 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	EVP_PKEY *k2 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	unsigned char *der = NULL;
	__u8 h[TF_HASH_LEN];
	int n, dlen;

	if (!k1 || !k2 || tf_signer_init(k1, "tapfence/test", &ed) ||
	    tf_signer_init(k2, "tapfence/test", &ec)) {
		CHECK_EQ("Ed25519 and P-256 signers", 0, 1);
		return;
	}
	CHECK_EQ("a P-256 key is an ECDSA signer", ec.type, TF_KEY_ECDSA);
	dlen = i2d_PUBKEY(k2, &der);
	CHECK_EQ("its public key is the DER SubjectPublicKeyInfo",
		 dlen == (int)ec.publen && !memcmp(der, ec.pub, dlen), 1);
	EVP_Digest(der, dlen, h, NULL, EVP_sha256(), NULL);
	OPENSSL_free(der);
	CHECK_EQ("its key id is SHA-256(SPKI)[:4]", memcmp(h, ec.keyid, TF_KEYID_LEN), 0);
	CHECK_EQ("its vkey formats", tf_signer_vkey(&ec, vkey, sizeof(vkey)) > 0, 1);
	CHECK_EQ("... and parses back", tf_verifier_parse(vkey, &vec, err, sizeof(err)), 0);
	CHECK_EQ("... as ECDSA", vec.type, TF_KEY_ECDSA);
	p = strchr(strchr(vkey, '+') + 1, '+'); /* name+keyid+key: base64 may hold '+' too */
	CHECK_EQ("... its key is 0x02 then DER (0x30): base64 \"Aj\"",
		 p && !strncmp(p + 1, "Aj", 2), 1);
	vkey[strlen(vkey) - 3] ^= 1;
	CHECK_EQ("an ECDSA vkey with another key is refused",
		 tf_verifier_parse(vkey, &vec, err, sizeof(err)) < 0, 1);
	CHECK_EQ("the Ed25519 vkey",
		 tf_signer_vkey(&ed, vkey, sizeof(vkey)) > 0 &&
			 !tf_verifier_parse(vkey, &ved, err, sizeof(err)),
		 1);
	CHECK_EQ("the ECDSA vkey",
		 tf_signer_vkey(&ec, vkey, sizeof(vkey)) > 0 &&
			 !tf_verifier_parse(vkey, &vec, err, sizeof(err)),
		 1);

	memset(c.root, 0x5a, sizeof(c.root));
	CHECK_EQ("checkpoint text", tf_checkpoint_text(&c, text, sizeof(text)) > 0, 1);
	n = tf_note_sign(&ed, text, note, sizeof(note));
	CHECK_EQ("signed by Ed25519", n > 0, 1);
	n = tf_note_cosign(&ec, note, n, sizeof(note));
	CHECK_EQ("cosigned by ECDSA", n > 0 && (size_t)n == strlen(note), 1);
	CHECK_EQ("two signature lines", !!strstr(strstr(note, "\xe2\x80\x94") + 1, "\xe2\x80\x94"),
		 1);
	CHECK_EQ("verifies by the Ed25519 key", tf_note_verify(&ved, note, n, &got), TF_NOTE_OK);
	CHECK_EQ("verifies by the ECDSA key", tf_note_verify(&vec, note, n, &got), TF_NOTE_OK);
	CHECK_EQ("... the checkpoint it seals",
		 got.size == 3 && !memcmp(got.root, c.root, TF_HASH_LEN), 1);
	CHECK_EQ("a keyring of both",
		 !tf_keyring_add(&ring, &ved) && !tf_keyring_add(&ring, &vec) &&
			 !tf_keyring_add(&ring, &vec) && ring.n == 2,
		 1);
	CHECK_EQ("the ring verifies it", tf_note_verify_ring(&ring, note, n, &got), TF_NOTE_OK);
	/* Break the ECDSA signature only: the Ed25519 one still holds, the ring refuses the note. */
	p = strrchr(note, ' ') + 10;
	*p = *p == 'A' ? 'B' : 'A';
	CHECK_EQ("a broken ECDSA signature fails by its key", tf_note_verify(&vec, note, n, &got),
		 TF_NOTE_BAD_SIG);
	CHECK_EQ("... the Ed25519 one still verifies", tf_note_verify(&ved, note, n, &got),
		 TF_NOTE_OK);
	CHECK_EQ("... and the ring refuses the note (C2SP: reject it whole)",
		 tf_note_verify_ring(&ring, note, n, &got), TF_NOTE_BAD_SIG);
	tf_signer_close(&ed);
	tf_signer_close(&ec);
}

/*
 * tf_sess_spec_hash() against tf_spec_sha256() (the whole canonical text
 * hashed at once) through rules appended, deleted, the first one, a mode
 * change, and a call that wrongly says "appended" after a deletion.
 */
static void test_spec_hash(void)
{
	static const char *const rules[] = {
		"{\"cidr\":\"198.51.100.0/24\",\"proto\":\"tcp\",\"ports\":[80,\"8000-8100\"]}",
		"{\"host\":\"*.example.com\",\"proto\":\"tcp\",\"ports\":[443],\"tls\":true}",
		"{\"cidr\":\"2001:db8::/32\",\"proto\":\"udp\",\"ports\":[53]}",
		"{\"cidr\":\"203.0.113.7/32\",\"proto\":\"any\",\"action\":\"deny\"}",
		"{\"host\":\"api.example.org\",\"proto\":\"icmp\"}",
	};
	const char *base = "{\"id\":\"s1\",\"ifname\":\"tap0\",\"guest\":{\"mac\":"
			   "\"02:00:00:00:00:02\",\"ipv4\":\"10.0.0.2\"},\"gateway\":{\"mac\":"
			   "\"02:00:00:00:00:01\",\"ipv4\":\"10.0.0.1\"},\"allow\":[]}";
	struct tf_spec_limits lim = { .max_rules = 16 };
	char want[65], got[65], desc[96], err[TF_ERR_MAX];
	struct tf_rule r[5];
	struct tf_sess s = {};
	json_t *j = json_loads(base, 0, NULL);
	unsigned int i;

	CHECK_EQ("spec hash: the spec parses", tf_spec_from_json(j, &lim, &s.spec, err, sizeof(err)), 0);
	json_decref(j);
	for (i = 0; i < 5; i++) {
		j = json_loads(rules[i], 0, NULL);
		CHECK_EQ("spec hash: a rule parses", tf_rule_from_json(j, "rule", &r[i], err, sizeof(err)), 0);
		json_decref(j);
	}
	CHECK_EQ("spec hash: no rules", tf_sess_spec_hash(&s, 0, got), 0);
	CHECK_EQ("spec hash: no rules, whole", tf_spec_sha256(&s.spec, want), 0);
	CHECK_STR("spec hash: no rules, as whole", got, want);
	for (i = 0; i < 5; i++) {
		CHECK_EQ("spec hash: add", tf_spec_add_rule(&s.spec, &r[i], 16), 0);
		CHECK_EQ("spec hash: appended", tf_sess_spec_hash(&s, 1, got), 0);
		CHECK_EQ("spec hash: whole", tf_spec_sha256(&s.spec, want), 0);
		snprintf(desc, sizeof(desc), "spec hash: %u rules appended one by one, as whole", i + 1);
		CHECK_STR(desc, got, want);
	}
	CHECK_STR("spec hash: the last one is kept", tf_sess_spec_sha256(&s), want);
	CHECK_EQ("spec hash: del the second", tf_spec_del_rule(&s.spec, &r[1]), 0);
	CHECK_EQ("spec hash: after del", tf_sess_spec_hash(&s, 0, got), 0);
	CHECK_EQ("spec hash: after del, whole", tf_spec_sha256(&s.spec, want), 0);
	CHECK_STR("spec hash: after del, as whole", got, want);
	CHECK_EQ("spec hash: add it back", tf_spec_add_rule(&s.spec, &r[1], 16), 0);
	CHECK_EQ("spec hash: appended after a del", tf_sess_spec_hash(&s, 1, got), 0);
	CHECK_EQ("spec hash: appended after a del, whole", tf_spec_sha256(&s.spec, want), 0);
	CHECK_STR("spec hash: appended after a del, as whole", got, want);
	/* Said "appended" though two rules went: the count tells, it starts anew. */
	CHECK_EQ("spec hash: del two", tf_spec_del_rule(&s.spec, &r[0]), 0);
	CHECK_EQ("spec hash: del two", tf_spec_del_rule(&s.spec, &r[2]), 0);
	CHECK_EQ("spec hash: said appended", tf_sess_spec_hash(&s, 1, got), 0);
	CHECK_EQ("spec hash: said appended, whole", tf_spec_sha256(&s.spec, want), 0);
	CHECK_STR("spec hash: said appended after two deletions, as whole", got, want);
	s.spec.audit = 1;
	CHECK_EQ("spec hash: audit mode", tf_sess_spec_hash(&s, 0, got), 0);
	CHECK_EQ("spec hash: audit mode, whole", tf_spec_sha256(&s.spec, want), 0);
	CHECK_STR("spec hash: audit mode (REST changed), as whole", got, want);
	tf_evidence_free(&s);
	tf_spec_free(&s.spec);
}

int main(void)
{
	test_merkle();
	test_note_reference();
	test_checkpoint_roundtrip();
	test_proofs();
	test_b64();
	test_ecdsa_cosign();
	test_spec_hash();
	return CHECK_EXIT();
}
