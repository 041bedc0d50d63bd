/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sealing the event log (docs/audit.md): an append-only Merkle tree with
 * RFC 6962 hashing over the exact bytes of every line, and checkpoints of
 * it in the C2SP tlog-checkpoint format, signed as C2SP signed notes with
 * Ed25519 (and ECDSA P-256 as a second signature). Shared by tapfenced (which seals) and tapfence (which
 * verifies), so the two cannot disagree. All crypto is OpenSSL's.
 */
#ifndef TF_SEAL_H
#define TF_SEAL_H

#include <stddef.h>
#include <linux/types.h>
#include <jansson.h>

#define TF_HASH_LEN    32
#define TF_ED25519_LEN 32
#define TF_SIG_LEN     64 /* Ed25519 */
#define TF_PUB_MAX     96 /* Ed25519: 32 raw bytes; ECDSA P-256: a 91-byte DER SubjectPublicKeyInfo */
#define TF_SIG_MAX     72 /* ECDSA P-256: an ASN.1 DER signature of up to 72 bytes */
#define TF_KEYID_LEN   4
#define TF_NOTE_MAX    1024 /* a signed checkpoint note, signature lines included */
#define TF_VKEY_MAX    256
#define TF_ORIGIN_MAX  160
#define TF_CHAIN_HEX   16 /* hex digits of the previous leaf hash a line carries ("prev") */

/*
 * struct tf_merkle - the right edge of an append-only tree: @node[i] is the
 * root of the complete subtree of 2^i leaves that bit i of @size stands for.
 */
struct tf_merkle {
	__u64 size;
	__u8 node[64][TF_HASH_LEN];
};

/* SHA-256(0x00 || data): the leaf hash of one line (without its newline). */
void tf_leaf_hash(const void *data, size_t len, __u8 out[TF_HASH_LEN]);
void tf_merkle_init(struct tf_merkle *m);
void tf_merkle_push(struct tf_merkle *m, const __u8 leaf[TF_HASH_LEN]);
/* The RFC 6962 Merkle tree hash of the leaves pushed so far (SHA-256("") when none). */
void tf_merkle_root(const struct tf_merkle *m, __u8 out[TF_HASH_LEN]);

/*
 * struct tf_tree - an epoch's tree as far as a reader knows it, for
 * inclusion proofs: its leaves from @base on, and before @base only the
 * right edge (@edge, size @base: a file that goes on from a rotation).
 * Complete aligned subtrees are memoised, so a proof costs O(log n) once
 * they are known.
 */
struct tf_tree {
	__u64 base, size;
	struct tf_merkle edge;
	__u8 (*leaf)[TF_HASH_LEN]; /* leaf[i - base] */
	size_t cap;
	__u8 (*memo[64])[TF_HASH_LEN]; /* memo[k][j]: the subtree of leaves [j << k, (j + 1) << k) */
	__u8 *have[64];
	size_t memo_n[64];
};

#define TF_PROOF_MAX 64

/* An empty tree from edge (size 0 for an epoch read from its start). */
void tf_tree_init(struct tf_tree *t, const struct tf_merkle *edge);
void tf_tree_free(struct tf_tree *t);
int tf_tree_push(struct tf_tree *t, const __u8 leaf[TF_HASH_LEN])
	__attribute__((warn_unused_result));
/* RFC 6962 2.1.1 PATH(m, D[0:n]); *len hashes, leaf side first. -ERANGE if m is before base. */
int tf_tree_proof(struct tf_tree *t, __u64 m, __u64 n, __u8 proof[TF_PROOF_MAX][TF_HASH_LEN],
		  size_t *len) __attribute__((warn_unused_result));
/* RFC 9162 2.1.3.2: 1 if proof shows leaf at index m in the tree of size n with root. */
int tf_inclusion_verify(const __u8 leaf[TF_HASH_LEN], __u64 m, __u64 n,
			const __u8 (*proof)[TF_HASH_LEN], size_t len, const __u8 root[TF_HASH_LEN]);

/* The tree as a checkpoint states it. */
struct tf_checkpoint {
	char origin[TF_ORIGIN_MAX];
	__u64 size;
	__u8 root[TF_HASH_LEN];
};

/* "origin\nsize\nbase64(root)\n" into buf; its length, or -ENOSPC. */
int tf_checkpoint_text(const struct tf_checkpoint *c, char *buf, size_t len);

/*
 * Signature types, as C2SP signed notes number them: Ed25519 (key id
 * SHA-256(name || 0x0A || 0x01 || pub)[:4]) and ECDSA over P-256 with
 * SHA-256, the transparency-dev witness form (key id SHA-256(DER SPKI)[:4],
 * ASN.1 DER signatures).
 */
enum tf_key_type {
	TF_KEY_ED25519 = 0x01,
	TF_KEY_ECDSA = 0x02,
};

/* A signer: the private key and its signed-note name, type, public key and key id. */
struct tf_signer {
	void *pkey; /* EVP_PKEY; NULL: no key */
	enum tf_key_type type;
	char name[TF_ORIGIN_MAX];
	__u8 pub[TF_PUB_MAX];
	size_t publen;
	__u8 keyid[TF_KEYID_LEN];
};

/* A verifier key: name, type, key id and public key, as a vkey string carries them. */
struct tf_verifier {
	enum tf_key_type type;
	char name[TF_ORIGIN_MAX];
	__u8 pub[TF_PUB_MAX];
	size_t publen;
	__u8 keyid[TF_KEYID_LEN];
};

/*
 * Load the PEM private key of this type at path, or create it (mode 0600,
 * never over an existing file) when there is none. 0 or -errno, err naming
 * path and why.
 */
int tf_signer_open(const char *path, const char *name, enum tf_key_type type, struct tf_signer *s,
		   char *err, size_t errlen) __attribute__((warn_unused_result));
/* A new key of this type written to path (which must not exist), as tf_signer_open() would. */
int tf_signer_create(const char *path, const char *name, enum tf_key_type type, struct tf_signer *s,
		     char *err, size_t errlen) __attribute__((warn_unused_result));
/* A signer of an Ed25519 or P-256 EVP_PKEY, which it then owns (tf_signer_close() frees it). */
int tf_signer_init(void *pkey, const char *name, struct tf_signer *s)
	__attribute__((warn_unused_result));
void tf_signer_close(struct tf_signer *s);
/* "name+hex(keyid)+base64(type || pub)" (the signed-note verifier key format). */
int tf_signer_vkey(const struct tf_signer *s, char *buf, size_t len);
int tf_verifier_parse(const char *vkey, struct tf_verifier *v, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* Whether two verifier keys are the same key (name, type and public key). */
int tf_verifier_same(const struct tf_verifier *a, const struct tf_verifier *b);
const char *tf_key_type_name(enum tf_key_type type);

/*
 * A signed note: text (ending in a newline), a blank line, and one
 * signature line "— name base64(keyid || sig)". Its length, or -errno.
 */
int tf_note_sign(const struct tf_signer *s, const char *text, char *out, size_t outlen)
	__attribute__((warn_unused_result));
/* One more signature line by s on the signed note in buf (len bytes, cap): its new length, or -errno. */
int tf_note_cosign(const struct tf_signer *s, char *buf, size_t len, size_t cap)
	__attribute__((warn_unused_result));

enum tf_note_result {
	TF_NOTE_OK,	   /* a signature by the key verifies */
	TF_NOTE_MALFORMED, /* not a signed note */
	TF_NOTE_NO_KEY,	   /* no signature line by this key (name and key id) */
	TF_NOTE_BAD_SIG,   /* a signature line by this key that does not verify */
};

/* Check note against v; on TF_NOTE_OK, *c is its checkpoint. */
enum tf_note_result tf_note_verify(const struct tf_verifier *v, const char *note, size_t len,
				   struct tf_checkpoint *c);
/* The same for any note: on TF_NOTE_OK, *tlen is the length of its text. */
enum tf_note_result tf_note_verify_text(const struct tf_verifier *v, const char *note, size_t len,
					size_t *tlen);

/* The checkpoint a signed note states, its signatures unchecked (to check them later). */
int tf_note_checkpoint(const char *note, size_t len, struct tf_checkpoint *c);

/*
 * The keys a verifier trusts: those it was given, and those a trusted key
 * handed on to in a key rotation (docs/audit.md).
 */
#define TF_KEYRING_MAX 64
struct tf_keyring {
	size_t n;
	struct tf_verifier k[TF_KEYRING_MAX];
};

/* Add v (once); -ENOSPC when full. */
int tf_keyring_add(struct tf_keyring *r, const struct tf_verifier *v);
/* The key of r that is v, or NULL. */
const struct tf_verifier *tf_keyring_find(const struct tf_keyring *r, const struct tf_verifier *v);
/*
 * note against every key of r: TF_NOTE_BAD_SIG if a signature by one of
 * them fails (C2SP: reject the note), else TF_NOTE_OK if one verifies.
 */
enum tf_note_result tf_note_verify_ring(const struct tf_keyring *r, const char *note, size_t len,
					struct tf_checkpoint *c);

/* A signature over msg (DSSE envelopes): its length, or -EIO; and its check. */
int tf_sign_raw(const struct tf_signer *s, const void *msg, size_t len, __u8 sig[TF_SIG_MAX])
	__attribute__((warn_unused_result));
int tf_verify_raw(const struct tf_verifier *v, const void *msg, size_t len, const __u8 *sig,
		  size_t siglen);
/* What tapfence attest signs: an in-toto statement of this predicate type, in a DSSE envelope. */
#define TF_DSSE_PAYLOAD_TYPE  "application/vnd.in-toto+json"
#define TF_ATTEST_PREDICATE   "https://tapfence.dev/attestation/node/v1"
/* ... and what a session del signs with log.session_evidence (docs/attest.md). */
#define TF_EVIDENCE_PREDICATE "https://tapfence.dev/evidence/session/v1"
/* DSSE v1 pre-authentication encoding of (type, payload) into out; its length, 0 if it does not fit. */
size_t tf_dsse_pae(const char *type, const char *payload, size_t plen, char *out, size_t outlen);
/* SHA-256 of o's canonical text (compact, keys sorted): specs and statements. */
int tf_json_digest(const json_t *o, __u8 out[TF_HASH_LEN]) __attribute__((warn_unused_result));

/* Lower-case hex of the first n bytes of h; buf needs 2n + 1. */
void tf_hex(const __u8 *h, size_t n, char *buf);
int tf_b64_encode(const __u8 *in, size_t n, char *out, size_t outlen);
/* Strict: whole input, padding as required; returns the decoded length or -EINVAL. */
int tf_b64_decode(const char *in, size_t n, __u8 *out, size_t outlen);

#endif
