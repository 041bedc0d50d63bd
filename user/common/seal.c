// SPDX-License-Identifier: GPL-2.0
/*
 * RFC 6962 Merkle tree, C2SP checkpoints and signed notes (Ed25519, ECDSA P-256), with
 * OpenSSL's libcrypto. The tree's hashes (tf_leaf_hash(), tf_merkle_push(),
 * tf_merkle_root()) may run on any thread; the rest keeps one digest
 * context and serves one thread at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "seal.h"

/* U+2014 EM DASH and a space: how a signed note's signature line starts. */
#define SIG_PREFIX "\xe2\x80\x94 "

static int sha256_parts(const void *a, size_t alen, const void *b, size_t blen, const void *c,
			size_t clen, __u8 out[TF_HASH_LEN])
{
	static EVP_MD_CTX *ctx;
	static EVP_MD *md;

	if (!md && !(md = EVP_MD_fetch(NULL, "SHA256", NULL)))
		return -ENOSYS;
	if (!ctx && !(ctx = EVP_MD_CTX_new()))
		return -ENOMEM;
	if (!EVP_DigestInit_ex2(ctx, md, NULL) || !EVP_DigestUpdate(ctx, a, alen) ||
	    (blen && !EVP_DigestUpdate(ctx, b, blen)) ||
	    (clen && !EVP_DigestUpdate(ctx, c, clen)) || !EVP_DigestFinal_ex(ctx, out, NULL))
		return -EIO;
	return 0;
}

/*
 * The tree's hashes (RFC 6962 2.1: a leaf is SHA-256(0x00 || line), a node
 * SHA-256(0x01 || left || right)) use OpenSSL's SHA256_* functions,
 * deprecated since OpenSSL 3.0 and still in every release. An EVP context
 * allocates its digest's state at every digest in OpenSSL 3.0
 * (EVP_MD_CTX_copy_ex() and EVP_DigestInit_ex2() alike), so a tree hash
 * could fail for memory, and one context serves one thread; a SHA256_CTX
 * lives on the stack, so a tree hash cannot fail and the event log folds
 * its tree on a thread of its own (auditlog.c). It is also 20 ns a hash
 * faster (docs/performance.md#event-feed).
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void tree_sha256(__u8 prefix, const void *a, size_t alen, const void *b, size_t blen,
			__u8 out[TF_HASH_LEN])
{
	SHA256_CTX c;

	SHA256_Init(&c);
	SHA256_Update(&c, &prefix, 1);
	SHA256_Update(&c, a, alen);
	SHA256_Update(&c, b, blen);
	SHA256_Final(out, &c);
}

/* SHA-256(""): the hash of a tree of no leaves. */
static void empty_sha256(__u8 out[TF_HASH_LEN])
{
	SHA256_CTX c;

	SHA256_Init(&c);
	SHA256_Final(out, &c);
}
#pragma GCC diagnostic pop

void tf_leaf_hash(const void *data, size_t len, __u8 out[TF_HASH_LEN])
{
	tree_sha256(0x00, data, len, NULL, 0, out);
}

static void node_hash(const __u8 *l, const __u8 *r, __u8 out[TF_HASH_LEN])
{
	tree_sha256(0x01, l, TF_HASH_LEN, r, TF_HASH_LEN, out);
}

void tf_merkle_init(struct tf_merkle *m)
{
	memset(m, 0, sizeof(*m));
}

void tf_merkle_push(struct tf_merkle *m, const __u8 leaf[TF_HASH_LEN])
{
	__u8 h[TF_HASH_LEN];
	int i;

	memcpy(h, leaf, TF_HASH_LEN);
	/* Every set low bit is a complete subtree left of the new leaf: merge it. */
	for (i = 0; m->size >> i & 1; i++)
		node_hash(m->node[i], h, h);
	memcpy(m->node[i], h, TF_HASH_LEN);
	m->size++;
}

void tf_merkle_root(const struct tf_merkle *m, __u8 out[TF_HASH_LEN])
{
	int i, have = 0;

	if (!m->size) {
		empty_sha256(out);
		return;
	}
	/* RFC 6962 splits at the largest power of two: fold the subtrees right to left. */
	for (i = 0; i < 64; i++) {
		if (!(m->size >> i & 1))
			continue;
		if (!have) {
			memcpy(out, m->node[i], TF_HASH_LEN);
			have = 1;
		} else {
			node_hash(m->node[i], out, out);
		}
	}
}

void tf_tree_init(struct tf_tree *t, const struct tf_merkle *edge)
{
	memset(t, 0, sizeof(*t));
	if (edge)
		t->edge = *edge;
	t->base = t->size = t->edge.size;
}

void tf_tree_free(struct tf_tree *t)
{
	int k;

	free(t->leaf);
	for (k = 0; k < 64; k++) {
		free(t->memo[k]);
		free(t->have[k]);
	}
	memset(t, 0, sizeof(*t));
}

int tf_tree_push(struct tf_tree *t, const __u8 leaf[TF_HASH_LEN])
{
	void *p;

	if (t->size - t->base == t->cap) {
		p = realloc(t->leaf, (t->cap ? 2 * t->cap : 1024) * TF_HASH_LEN);
		if (!p)
			return -ENOMEM;
		t->leaf = p;
		t->cap = t->cap ? 2 * t->cap : 1024;
	}
	memcpy(t->leaf[t->size - t->base], leaf, TF_HASH_LEN);
	t->size++;
	return 0;
}

/* The edge node that is exactly the subtree [lo, hi), if there is one. */
static const __u8 *edge_node(const struct tf_tree *t, __u64 lo, __u64 hi)
{
	__u64 start = 0;
	int i;

	for (i = 63; i >= 0; i--) {
		if (!(t->edge.size >> i & 1))
			continue;
		if (start == lo && start + (1ULL << i) == hi)
			return t->edge.node[i];
		start += 1ULL << i;
	}
	return NULL;
}

static int largest_pow2_below(__u64 n)
{
	int k = 0;

	while ((2ULL << k) < n)
		k++;
	return k;
}

/* MTH(D[lo:hi]), RFC 6962 2.1, memoising complete aligned subtrees. */
static int mth(struct tf_tree *t, __u64 lo, __u64 hi, __u8 out[TF_HASH_LEN])
{
	__u8 l[TF_HASH_LEN], r[TF_HASH_LEN];
	const __u8 *e;
	__u64 n = hi - lo, j;
	int k, aligned, err;
	void *p;

	if (hi > t->size || !n)
		return -ERANGE;
	if ((e = edge_node(t, lo, hi))) {
		memcpy(out, e, TF_HASH_LEN);
		return 0;
	}
	if (n == 1) {
		if (lo < t->base)
			return -ERANGE;
		memcpy(out, t->leaf[lo - t->base], TF_HASH_LEN);
		return 0;
	}
	k = largest_pow2_below(n);
	aligned = !(n & (n - 1)) && !(lo & (n - 1));
	j = aligned ? lo >> (k + 1) : 0;
	if (aligned && j < t->memo_n[k + 1] && t->have[k + 1][j]) {
		memcpy(out, t->memo[k + 1][j], TF_HASH_LEN);
		return 0;
	}
	if ((err = mth(t, lo, lo + (1ULL << k), l)) || (err = mth(t, lo + (1ULL << k), hi, r)))
		return err;
	node_hash(l, r, out);
	if (!aligned)
		return 0;
	if (j >= t->memo_n[k + 1]) {
		size_t want = (t->size >> (k + 1)) + 1;

		if (!(p = realloc(t->memo[k + 1], want * TF_HASH_LEN)))
			return 0;
		t->memo[k + 1] = p;
		if (!(p = realloc(t->have[k + 1], want)))
			return 0;
		t->have[k + 1] = p;
		memset(t->have[k + 1] + t->memo_n[k + 1], 0, want - t->memo_n[k + 1]);
		t->memo_n[k + 1] = want;
	}
	memcpy(t->memo[k + 1][j], out, TF_HASH_LEN);
	t->have[k + 1][j] = 1;
	return 0;
}

static int path(struct tf_tree *t, __u64 m, __u64 lo, __u64 hi,
		__u8 proof[TF_PROOF_MAX][TF_HASH_LEN], size_t *len)
{
	__u64 k;
	int err;

	if (hi - lo <= 1)
		return 0;
	k = 1ULL << largest_pow2_below(hi - lo);
	if (m - lo < k)
		err = path(t, m, lo, lo + k, proof, len);
	else
		err = path(t, m, lo + k, hi, proof, len);
	if (err || *len >= TF_PROOF_MAX)
		return err ? err : -E2BIG;
	if (m - lo < k)
		err = mth(t, lo + k, hi, proof[*len]);
	else
		err = mth(t, lo, lo + k, proof[*len]);
	if (!err)
		(*len)++;
	return err;
}

int tf_tree_proof(struct tf_tree *t, __u64 m, __u64 n, __u8 proof[TF_PROOF_MAX][TF_HASH_LEN],
		  size_t *len)
{
	*len = 0;
	if (m >= n || n > t->size || m < t->base)
		return -ERANGE;
	return path(t, m, 0, n, proof, len);
}

int tf_inclusion_verify(const __u8 leaf[TF_HASH_LEN], __u64 m, __u64 n,
			const __u8 (*proof)[TF_HASH_LEN], size_t len, const __u8 root[TF_HASH_LEN])
{
	__u64 fn = m, sn = n - 1;
	__u8 r[TF_HASH_LEN];
	size_t i;

	if (m >= n)
		return 0;
	memcpy(r, leaf, TF_HASH_LEN);
	for (i = 0; i < len; i++) {
		if (!sn)
			return 0;
		if ((fn & 1) || fn == sn) {
			node_hash(proof[i], r, r);
			if (!(fn & 1))
				while (!(fn & 1) && fn) {
					fn >>= 1;
					sn >>= 1;
				}
		} else {
			node_hash(r, proof[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return !sn && !memcmp(r, root, TF_HASH_LEN);
}

void tf_hex(const __u8 *h, size_t n, char *buf)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		buf[2 * i] = digits[h[i] >> 4];
		buf[2 * i + 1] = digits[h[i] & 15];
	}
	buf[2 * n] = 0;
}

int tf_b64_encode(const __u8 *in, size_t n, char *out, size_t outlen)
{
	if (outlen < 4 * ((n + 2) / 3) + 1)
		return -ENOSPC;
	return EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* The 6-bit value of a base64 digit (one tf_b64_decode() accepted). */
static unsigned int b64_value(char c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' :
	       c >= 'a' && c <= 'z' ? c - 'a' + 26 :
	       c >= '0' && c <= '9' ? c - '0' + 52 :
	       c == '+'		    ? 62 :
				      63;
}

int tf_b64_decode(const char *in, size_t n, __u8 *out, size_t outlen)
{
	unsigned char *tmp;
	size_t i, pad = 0;
	int got;

	if (!n || n % 4 || n > (1u << 30))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		char c = in[i];

		if (c == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (pad || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return -EINVAL;
	}
	/* Canonical only: the bits the padding leaves over are zero (RFC 4648 3.5). */
	if (pad && (b64_value(in[n - 1 - pad]) & (pad == 1 ? 0x3 : 0xf)))
		return -EINVAL;
	tmp = malloc(n / 4 * 3);
	if (!tmp)
		return -ENOMEM;
	got = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)n);
	if (got < 0 || (size_t)got < pad || (size_t)got - pad > outlen) {
		free(tmp);
		return -EINVAL;
	}
	memcpy(out, tmp, got - pad);
	free(tmp);
	return (int)(got - pad);
}

int tf_checkpoint_text(const struct tf_checkpoint *c, char *buf, size_t len)
{
	char b64[64];
	int n;

	if (tf_b64_encode(c->root, TF_HASH_LEN, b64, sizeof(b64)) < 0)
		return -ENOSPC;
	n = snprintf(buf, len, "%s\n%llu\n%s\n", c->origin, (unsigned long long)c->size, b64);
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/*
 * The signed-note key id: Ed25519, SHA-256(name || "\n" || 0x01 || pub)[:4];
 * ECDSA, SHA-256(DER SubjectPublicKeyInfo)[:4] (C2SP signed-note).
 */
static int key_id(const char *name, enum tf_key_type type, const __u8 *pub, size_t publen,
		  __u8 id[TF_KEYID_LEN])
{
	__u8 h[TF_HASH_LEN], alg[2] = { '\n', TF_KEY_ED25519 };
	int err = type == TF_KEY_ECDSA ? sha256_parts(pub, publen, NULL, 0, NULL, 0, h) :
					 sha256_parts(name, strlen(name), alg, 2, pub, publen, h);

	if (!err)
		memcpy(id, h, TF_KEYID_LEN);
	return err;
}

/* A signed-note key name: non-empty, no space, no '+', printable. */
static int name_ok(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;

	if (!*p || strlen(name) >= TF_ORIGIN_MAX)
		return 0;
	for (; *p; p++)
		if (*p <= ' ' || *p == '+' || *p >= 0x7f)
			return 0;
	return 1;
}

const char *tf_key_type_name(enum tf_key_type type)
{
	return type == TF_KEY_ECDSA ? "ecdsa-p256" : "ed25519";
}

/* The type of pkey: Ed25519, or ECDSA on P-256; 0 for any other key. */
static enum tf_key_type pkey_type(EVP_PKEY *pkey)
{
	char group[32];

	if (EVP_PKEY_get_id(pkey) == EVP_PKEY_ED25519)
		return TF_KEY_ED25519;
	if (EVP_PKEY_get_id(pkey) == EVP_PKEY_EC &&
	    EVP_PKEY_get_group_name(pkey, group, sizeof(group), NULL) == 1 &&
	    !strcmp(group, "prime256v1"))
		return TF_KEY_ECDSA;
	return 0;
}

static const char *key_kind(enum tf_key_type type)
{
	return type == TF_KEY_ECDSA ? "an ECDSA P-256" : "an Ed25519";
}

static EVP_PKEY *key_read(const char *path, enum tf_key_type type, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	EVP_PKEY *pkey = NULL;
	struct stat st;
	FILE *f;

	if (fd < 0) {
		snprintf(err, errlen, "log key `%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		snprintf(err, errlen, "log key `%s': not a regular file of mode 0600 or stricter",
			 path);
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "log key `%s': %s", path, strerror(errno));
		return NULL;
	}
	pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!pkey || pkey_type(pkey) != type) {
		snprintf(err, errlen, "log key `%s': not %s private key in PEM", path,
			 key_kind(type));
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;
}

static EVP_PKEY *key_create(const char *path, enum tf_key_type type, char *err, size_t errlen)
{
	EVP_PKEY *pkey = type == TF_KEY_ECDSA ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256") :
						EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	int fd, ok;
	FILE *f;

	if (!pkey) {
		snprintf(err, errlen, "log key: cannot generate %s key", key_kind(type));
		return NULL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		snprintf(err, errlen, "log key `%s': cannot create: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	ok = PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL) == 1;
	ok = !fflush(f) && !fsync(fileno(f)) && ok;
	fclose(f);
	if (!ok) {
		snprintf(err, errlen, "log key `%s': cannot write", path);
		unlink(path);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;
}

int tf_signer_init(void *pkey, const char *name, struct tf_signer *s)
{
	unsigned char *p;
	int n;

	memset(s, 0, sizeof(*s));
	if (!name_ok(name))
		return -EINVAL;
	s->type = pkey_type(pkey);
	if (s->type == TF_KEY_ED25519) {
		s->publen = TF_ED25519_LEN;
		if (!EVP_PKEY_get_raw_public_key(pkey, s->pub, &s->publen) ||
		    s->publen != TF_ED25519_LEN)
			return -EIO;
	} else if (s->type == TF_KEY_ECDSA) {
		n = i2d_PUBKEY(pkey, NULL);
		if (n <= 0 || n > TF_PUB_MAX)
			return -EIO;
		p = s->pub;
		if (i2d_PUBKEY(pkey, &p) != n)
			return -EIO;
		s->publen = n;
	} else {
		return -EINVAL;
	}
	if (key_id(name, s->type, s->pub, s->publen, s->keyid))
		return -EIO;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->pkey = pkey;
	return 0;
}

static int signer_open(const char *path, const char *name, enum tf_key_type type, int create,
		       struct tf_signer *s, char *err, size_t errlen)
{
	EVP_PKEY *pkey;
	int ret;

	memset(s, 0, sizeof(*s));
	if (!name_ok(name)) {
		snprintf(err, errlen,
			 "log name `%s': expected printable characters, no space or '+'", name);
		return -EINVAL;
	}
	pkey = create ? key_create(path, type, err, errlen) : key_read(path, type, err, errlen);
	if (!pkey)
		return -EINVAL;
	ret = tf_signer_init(pkey, name, s);
	if (ret) {
		snprintf(err, errlen, "log key `%s': cannot read its public key", path);
		EVP_PKEY_free(pkey);
	}
	return ret;
}

int tf_signer_open(const char *path, const char *name, enum tf_key_type type, struct tf_signer *s,
		   char *err, size_t errlen)
{
	return signer_open(path, name, type, access(path, F_OK) != 0, s, err, errlen);
}

int tf_signer_create(const char *path, const char *name, enum tf_key_type type, struct tf_signer *s,
		     char *err, size_t errlen)
{
	return signer_open(path, name, type, 1, s, err, errlen);
}

void tf_signer_close(struct tf_signer *s)
{
	EVP_PKEY_free(s->pkey);
	s->pkey = NULL;
}

int tf_signer_vkey(const struct tf_signer *s, char *buf, size_t len)
{
	__u8 raw[1 + TF_PUB_MAX] = { s->type };
	char hex[2 * TF_KEYID_LEN + 1], b64[4 * (sizeof(raw) + 2) / 3 + 4];
	int n;

	memcpy(raw + 1, s->pub, s->publen);
	tf_hex(s->keyid, TF_KEYID_LEN, hex);
	if (tf_b64_encode(raw, 1 + s->publen, b64, sizeof(b64)) < 0)
		return -ENOSPC;
	n = snprintf(buf, len, "%s+%s+%s", s->name, hex, b64);
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/* pub as a P-256 public key in DER SubjectPublicKeyInfo form. */
static EVP_PKEY *ecdsa_pub(const __u8 *pub, size_t publen)
{
	const unsigned char *p = pub;
	EVP_PKEY *pkey = d2i_PUBKEY(NULL, &p, (long)publen);

	if (pkey && (p != pub + publen || pkey_type(pkey) != TF_KEY_ECDSA)) {
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;
}

int tf_verifier_parse(const char *vkey, struct tf_verifier *v, char *err, size_t errlen)
{
	const char *p1 = strchr(vkey, '+'), *p2 = p1 ? strchr(p1 + 1, '+') : NULL;
	__u8 raw[1 + TF_PUB_MAX + 8], id[TF_KEYID_LEN];
	char hex[2 * TF_KEYID_LEN + 1];
	EVP_PKEY *pkey = NULL;
	size_t nlen;
	int n;

	memset(v, 0, sizeof(*v));
	nlen = p1 ? (size_t)(p1 - vkey) : 0;
	if (!p2 || !nlen || nlen >= sizeof(v->name) || p2 - p1 - 1 != 2 * TF_KEYID_LEN) {
		snprintf(err, errlen, "key `%.80s': expected NAME+KEYID+BASE64 (tapfence log key)",
			 vkey);
		return -EINVAL;
	}
	memcpy(v->name, vkey, nlen);
	n = tf_b64_decode(p2 + 1, strlen(p2 + 1), raw, sizeof(raw));
	if (name_ok(v->name) && n == 1 + TF_ED25519_LEN && raw[0] == TF_KEY_ED25519)
		v->type = TF_KEY_ED25519;
	else if (name_ok(v->name) && n > 1 && n <= 1 + TF_PUB_MAX && raw[0] == TF_KEY_ECDSA &&
		 (pkey = ecdsa_pub(raw + 1, n - 1)))
		v->type = TF_KEY_ECDSA;
	EVP_PKEY_free(pkey);
	if (!v->type) {
		snprintf(err, errlen, "key `%.80s': not an Ed25519 or ECDSA P-256 verifier key",
			 vkey);
		return -EINVAL;
	}
	v->publen = n - 1;
	memcpy(v->pub, raw + 1, v->publen);
	if (key_id(v->name, v->type, v->pub, v->publen, id)) {
		snprintf(err, errlen, "key `%.80s': cannot hash", vkey);
		return -EIO;
	}
	tf_hex(id, TF_KEYID_LEN, hex);
	if (strncmp(hex, p1 + 1, 2 * TF_KEYID_LEN)) {
		snprintf(err, errlen, "key `%.80s': its key id does not match its name and key",
			 vkey);
		return -EINVAL;
	}
	memcpy(v->keyid, id, TF_KEYID_LEN);
	return 0;
}

int tf_verifier_same(const struct tf_verifier *a, const struct tf_verifier *b)
{
	return a->type == b->type && a->publen == b->publen && !strcmp(a->name, b->name) &&
	       !memcmp(a->pub, b->pub, a->publen);
}

/* "— name base64(keyid || sig)\n" for text, at out; its length, or -errno. */
static int sig_line(const struct tf_signer *s, const char *text, size_t tlen, char *out,
		    size_t outlen)
{
	__u8 raw[TF_KEYID_LEN + TF_SIG_MAX];
	char b64[4 * (sizeof(raw) + 2) / 3 + 4];
	int n, slen;

	if (!tlen || text[tlen - 1] != '\n')
		return -EINVAL;
	slen = tf_sign_raw(s, text, tlen, raw + TF_KEYID_LEN);
	if (slen < 0)
		return slen;
	memcpy(raw, s->keyid, TF_KEYID_LEN);
	if (tf_b64_encode(raw, TF_KEYID_LEN + slen, b64, sizeof(b64)) < 0)
		return -ENOSPC;
	n = snprintf(out, outlen, SIG_PREFIX "%s %s\n", s->name, b64);
	return n < 0 || (size_t)n >= outlen ? -ENOSPC : n;
}

int tf_note_sign(const struct tf_signer *s, const char *text, char *out, size_t outlen)
{
	size_t tlen = strlen(text);
	int n;

	if (tlen + 2 > outlen)
		return -ENOSPC;
	memcpy(out, text, tlen);
	out[tlen] = '\n';
	n = sig_line(s, text, tlen, out + tlen + 1, outlen - tlen - 1);
	return n < 0 ? n : (int)tlen + 1 + n;
}

/* The length of a signed note's text: up to its first blank line; 0 if it has none. */
static size_t note_text_len(const char *note, size_t len)
{
	const char *end = note + len, *p, *nl;

	for (p = note; p < end; p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			return 0;
		if (nl == p)
			return p == note ? 0 : (size_t)(p - note);
	}
	return 0;
}

int tf_note_cosign(const struct tf_signer *s, char *buf, size_t len, size_t cap)
{
	size_t tlen = note_text_len(buf, len);
	int n;

	if (!tlen || len >= cap || buf[len - 1] != '\n')
		return -EINVAL;
	n = sig_line(s, buf, tlen, buf + len, cap - len);
	return n < 0 ? n : (int)len + n;
}

int tf_verify_raw(const struct tf_verifier *v, const void *msg, size_t len, const __u8 *sig,
		  size_t siglen)
{
	EVP_PKEY *pub =
		v->type == TF_KEY_ECDSA ?
			ecdsa_pub(v->pub, v->publen) :
			EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, v->pub, v->publen);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = pub && ctx && (v->type == TF_KEY_ECDSA || siglen == TF_SIG_LEN) &&
		 EVP_DigestVerifyInit(ctx, NULL, v->type == TF_KEY_ECDSA ? EVP_sha256() : NULL,
				      NULL, pub) == 1 &&
		 EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;

	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pub);
	return ok;
}

int tf_sign_raw(const struct tf_signer *s, const void *msg, size_t len, __u8 sig[TF_SIG_MAX])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = TF_SIG_MAX;
	int ok = ctx && s->pkey &&
		 EVP_DigestSignInit(ctx, NULL, s->type == TF_KEY_ECDSA ? EVP_sha256() : NULL, NULL,
				    s->pkey) == 1 &&
		 EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 &&
		 (s->type == TF_KEY_ECDSA || siglen == TF_SIG_LEN);

	EVP_MD_CTX_free(ctx);
	return ok ? (int)siglen : -EIO;
}

size_t tf_dsse_pae(const char *type, const char *payload, size_t plen, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "DSSEv1 %zu %s %zu ", strlen(type), type, plen);

	if (n < 0 || (size_t)n + plen > outlen)
		return 0;
	memcpy(out + n, payload, plen);
	return (size_t)n + plen;
}

int tf_json_digest(const json_t *o, __u8 out[TF_HASH_LEN])
{
	char *txt = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	int err;

	if (!txt)
		return -ENOMEM;
	err = sha256_parts(txt, strlen(txt), NULL, 0, NULL, 0, out);
	free(txt);
	return err;
}

/* "origin\nsize\nroot\n" (extension lines after the root are allowed and ignored). */
static int checkpoint_parse(const char *text, size_t len, struct tf_checkpoint *c)
{
	const char *end = text + len, *l1 = memchr(text, '\n', len), *l2, *l3;
	char num[24], *e;

	memset(c, 0, sizeof(*c));
	if (!l1 || l1 == text || (size_t)(l1 - text) >= sizeof(c->origin))
		return -EINVAL;
	l2 = memchr(l1 + 1, '\n', end - l1 - 1);
	if (!l2 || l2 == l1 + 1 || (size_t)(l2 - l1 - 1) >= sizeof(num) ||
	    (l1[1] == '0' && l2 > l1 + 2))
		return -EINVAL;
	l3 = memchr(l2 + 1, '\n', end - l2 - 1);
	if (!l3)
		return -EINVAL;
	memcpy(c->origin, text, l1 - text);
	memcpy(num, l1 + 1, l2 - l1 - 1);
	num[l2 - l1 - 1] = 0;
	if (num[0] < '0' || num[0] > '9')
		return -EINVAL;
	errno = 0;
	c->size = strtoull(num, &e, 10);
	if (errno || *e)
		return -EINVAL;
	return tf_b64_decode(l2 + 1, l3 - l2 - 1, c->root, TF_HASH_LEN) == TF_HASH_LEN ? 0 :
											 -EINVAL;
}

enum tf_note_result tf_note_verify_text(const struct tf_verifier *v, const char *note, size_t len,
					size_t *tlenp)
{
	const char *end = note + len, *p, *nl;
	size_t tlen = note_text_len(note, len), plen = strlen(SIG_PREFIX), nlen = strlen(v->name);
	__u8 raw[TF_KEYID_LEN + TF_SIG_MAX + 8];
	int found = 0, n;

	/* The text ends at the first blank line; signature lines follow, each ending in "\n". */
	if (!tlen || end[-1] != '\n')
		return TF_NOTE_MALFORMED;
	for (p = note + tlen + 1; p < end; p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if ((size_t)(nl - p) < plen || memcmp(p, SIG_PREFIX, plen))
			return TF_NOTE_MALFORMED;
		p += plen;
		if ((size_t)(nl - p) <= nlen + 1 || memcmp(p, v->name, nlen) || p[nlen] != ' ')
			continue;
		p += nlen + 1;
		n = tf_b64_decode(p, nl - p, raw, sizeof(raw));
		if (n <= TF_KEYID_LEN || n > TF_KEYID_LEN + TF_SIG_MAX ||
		    memcmp(raw, v->keyid, TF_KEYID_LEN))
			continue;
		/* Any line by this key that fails rejects the note (C2SP; as Go's note.Open). */
		if (!tf_verify_raw(v, note, tlen, raw + TF_KEYID_LEN, n - TF_KEYID_LEN))
			return TF_NOTE_BAD_SIG;
		found = 1;
	}
	if (!found)
		return TF_NOTE_NO_KEY;
	*tlenp = tlen;
	return TF_NOTE_OK;
}

enum tf_note_result tf_note_verify(const struct tf_verifier *v, const char *note, size_t len,
				   struct tf_checkpoint *c)
{
	enum tf_note_result r;
	size_t tlen;

	r = tf_note_verify_text(v, note, len, &tlen);
	if (r != TF_NOTE_OK)
		return r;
	return checkpoint_parse(note, tlen, c) ? TF_NOTE_MALFORMED : TF_NOTE_OK;
}

int tf_note_checkpoint(const char *note, size_t len, struct tf_checkpoint *c)
{
	size_t tlen = note_text_len(note, len);

	return tlen ? checkpoint_parse(note, tlen, c) : -EINVAL;
}

int tf_keyring_add(struct tf_keyring *r, const struct tf_verifier *v)
{
	if (tf_keyring_find(r, v))
		return 0;
	if (r->n == TF_KEYRING_MAX)
		return -ENOSPC;
	r->k[r->n++] = *v;
	return 0;
}

const struct tf_verifier *tf_keyring_find(const struct tf_keyring *r, const struct tf_verifier *v)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (tf_verifier_same(&r->k[i], v))
			return &r->k[i];
	return NULL;
}

enum tf_note_result tf_note_verify_ring(const struct tf_keyring *r, const char *note, size_t len,
					struct tf_checkpoint *c)
{
	enum tf_note_result best = TF_NOTE_NO_KEY, got;
	struct tf_checkpoint cp;
	size_t i;

	for (i = 0; i < r->n; i++) {
		got = tf_note_verify(&r->k[i], note, len, &cp);
		if (got == TF_NOTE_BAD_SIG || got == TF_NOTE_MALFORMED)
			return got;
		if (got == TF_NOTE_OK) {
			*c = cp;
			best = TF_NOTE_OK;
		}
	}
	return best;
}
