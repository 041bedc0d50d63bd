// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence log key | verify: the sealed event log, offline (no daemon).
 * The format and what a verification claims: docs/audit.md.
 */
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "common/seal.h"
#include "ctl.h"

#define DEFAULT_KEY "/var/lib/tapfence/log.key"

/* Verdicts of verify; exit status 0 verified, 1 tampering found, 2 could not verify. */
#define V_OK	   0
#define V_TAMPERED 1
#define V_CANNOT   2

static int verify_status(int result)
{
	return result == V_OK ? 0 : result == V_TAMPERED ? -EBADMSG : -CTL_ECANNOT;
}

struct where {
	const char *file;
	unsigned long line; /* 1-based line in file */
	__u64 index;	    /* leaf index in its epoch */
};

/* Where a trusted key may sign: after the rotation that handed on to it, up to the one that retired it. */
struct key_window {
	int learnt, retired;
	char from[TF_ORIGIN_MAX], until[TF_ORIGIN_MAX];
	__u64 from_size, until_size;
};

struct verify {
	struct tf_keyring ring;		       /* the keys given, and those they handed on to */
	struct key_window win[TF_KEYRING_MAX]; /* where each may sign */
	json_t *endorsements; /* log export: the key lines' endorsements, in order */
	int json;
	/* the epoch being read */
	int in_epoch;
	char origin[TF_ORIGIN_MAX];
	struct tf_merkle tree;
	__u8 last[TF_HASH_LEN];
	unsigned int checkpoint_s;
	__u64 sealed;		     /* size of its last verified checkpoint */
	char last_note[TF_NOTE_MAX]; /* that checkpoint */
	struct where first_unsealed; /* the first leaf after it */
	int broken;		     /* a leaf after it does not follow the one before */
	struct where broken_at;
	char broken_why[512];
	double last_seal_time;
	/* origins of epochs whose start was not in the input (a "continue" came first) */
	char midstart[TF_ORIGIN_MAX];
	/* totals */
	unsigned int epochs, checkpoints, gaps, resumed, rotations;
	json_t *origins;	   /* every epoch seen */
	struct tf_checkpoint *cps; /* the epoch's verified checkpoints */
	size_t ncps, cpcap;
	__u64 sealed_lines, unsealed_lines;
	json_t *unsealed; /* [{origin, file, line, lines}] */
	json_t *heartbeat_gaps;
	/* --trusted-checkpoint */
	int have_trusted, trusted_ok, trusted_unreachable;
	struct tf_checkpoint trusted;
	char trusted_note[TF_NOTE_MAX];
	__u64 trusted_epoch_size; /* leaves seen of the trusted checkpoint's epoch */
	int trusted_epoch_seen;
	/* the verdict */
	int result;
	char problem[768];
	/* log export: the session's lines, each with its proof against the first checkpoint after it */
	const char *session;
	double since, until;
	struct tf_tree xt; /* the epoch's tree, for proofs */
	json_t *pending;   /* [[index, line]] of this epoch not sealed yet */
	json_t *notes;	   /* the checkpoints the entries cite */
	json_t *entries;
	__u64 unexported; /* matching lines no checkpoint sealed */
};

__attribute__((format(printf, 3, 4))) static void found(struct verify *v, int result,
							const char *fmt, ...)
{
	va_list ap;

	if (v->result == V_TAMPERED || (v->result == V_CANNOT && result != V_TAMPERED))
		return; /* the first tampering found is the one reported */
	v->result = result;
	va_start(ap, fmt);
	vsnprintf(v->problem, sizeof(v->problem), fmt, ap);
	va_end(ap);
}

static int read_vkey(const char *arg, struct tf_verifier *key)
{
	char err[256], buf[TF_VKEY_MAX + 2], *nl;
	FILE *f;

	if (strchr(arg, '+') && !tf_verifier_parse(arg, key, err, sizeof(err)))
		return 0;
	f = fopen(arg, "re");
	if (!f) {
		ctl_err("key `%s': neither a verifier key nor a readable file", arg);
		return -CTL_ECANNOT;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	if (tf_verifier_parse(buf, key, err, sizeof(err))) {
		ctl_err("key file `%s': %s", arg, err);
		return -CTL_ECANNOT;
	}
	return 0;
}

/* A rotation's endorsement: the note and what its text states. */
struct endorsement {
	char origin[TF_ORIGIN_MAX];
	__u64 index;		/* the key line's, and the size of the tree it hands on from */
	__u8 root[TF_HASH_LEN]; /* that tree's root */
	struct tf_verifier old, new;
	char old_s[TF_VKEY_MAX], new_s[TF_VKEY_MAX];
};

/*
 * The text "tapfence key rotation\n<origin>\n<index>\n<root>\n<old key>\n
 * <new key>\n" of an endorsement; NULL, or what is wrong with it.
 */
static const char *endorsement_parse(const char *note, struct endorsement *e)
{
	char text[TF_NOTE_MAX], *f[6], *p, *end, err[256];
	size_t len = note ? strlen(note) : 0;
	int i;

	memset(e, 0, sizeof(*e));
	if (!len || len >= sizeof(text))
		return "it carries no endorsement";
	memcpy(text, note, len + 1);
	for (i = 0, p = text; i < 6; i++) {
		f[i] = p;
		p = strchr(p, '\n');
		if (!p)
			return "its endorsement is not a key rotation";
		*p++ = 0;
	}
	errno = 0;
	e->index = strtoull(f[2], &end, 10);
	if (*p != '\n' || strcmp(f[0], "tapfence key rotation") ||
	    strlen(f[1]) >= sizeof(e->origin) || errno || *end || f[2][0] < '0' || f[2][0] > '9' ||
	    tf_b64_decode(f[3], strlen(f[3]), e->root, TF_HASH_LEN) != TF_HASH_LEN)
		return "its endorsement is not a key rotation";
	if (tf_verifier_parse(f[4], &e->old, err, sizeof(err)) ||
	    tf_verifier_parse(f[5], &e->new, err, sizeof(err)) || e->old.type != e->new.type)
		return "its endorsement does not name an old and a new key of one type";
	snprintf(e->origin, sizeof(e->origin), "%s", f[1]);
	snprintf(e->old_s, sizeof(e->old_s), "%s", f[4]);
	snprintf(e->new_s, sizeof(e->new_s), "%s", f[5]);
	return NULL;
}

/* An epoch's start time, from its origin "tapfence/<name>/<sec>.<nsec>" (0 if none). */
static double epoch_time(const char *origin)
{
	const char *slash = strrchr(origin, '/');
	char *end;
	double t = slash ? strtod(slash + 1, &end) : 0;

	return slash && *end == 0 ? t : 0;
}

/* Which of two epochs started first: <0, 0 (the same epoch), >0. */
static int epoch_cmp(const char *a, const char *b)
{
	double ta = epoch_time(a), tb = epoch_time(b);

	if (!strcmp(a, b))
		return 0;
	return ta < tb ? -1 : ta > tb ? 1 : strcmp(a, b) < 0 ? -1 : 1;
}

/*
 * Whether trusted key i may sign the checkpoint of (origin, size): a key a
 * rotation handed on to signs only after that point, and one rotated away
 * only up to it.
 */
static int in_window(const struct verify *v, size_t i, const char *origin, __u64 size)
{
	const struct key_window *w = &v->win[i];
	int c;

	if (w->learnt && ((c = epoch_cmp(origin, w->from)) < 0 || (c == 0 && size <= w->from_size)))
		return 0;
	if (w->retired &&
	    ((c = epoch_cmp(origin, w->until)) > 0 || (c == 0 && size > w->until_size)))
		return 0;
	return 1;
}

/*
 * note by a trusted key that may sign it where it stands: TF_NOTE_BAD_SIG
 * if a trusted key's signature fails (C2SP: reject the note); a signature
 * by a key outside its window counts for nothing.
 */
static enum tf_note_result ring_verify(const struct verify *v, const char *note, size_t len,
				       struct tf_checkpoint *c)
{
	enum tf_note_result best = TF_NOTE_NO_KEY, got;
	struct tf_checkpoint cp;
	size_t i;

	for (i = 0; i < v->ring.n; i++) {
		got = tf_note_verify(&v->ring.k[i], note, len, &cp);
		if (got == TF_NOTE_BAD_SIG || got == TF_NOTE_MALFORMED)
			return got;
		if (got == TF_NOTE_OK && in_window(v, i, cp.origin, cp.size)) {
			*c = cp;
			best = TF_NOTE_OK;
		}
	}
	return best;
}

/* Trust key k (given, or handed on to at (origin, size)); -ENOSPC when the ring is full. */
static int trust(struct verify *v, const struct tf_verifier *k, const char *origin, __u64 size)
{
	size_t n = v->ring.n;

	if (tf_keyring_find(&v->ring, k))
		return 0;
	if (tf_keyring_add(&v->ring, k))
		return -ENOSPC;
	memset(&v->win[n], 0, sizeof(v->win[n]));
	if (origin) {
		v->win[n].learnt = 1;
		snprintf(v->win[n].from, sizeof(v->win[n].from), "%s", origin);
		v->win[n].from_size = size;
	}
	return 0;
}

/*
 * Hand trust on: the old key must be trusted and may sign at the rotation's
 * point, both signatures must verify; the new key is trusted from there on,
 * the old one retired there. NULL, or what is wrong; *cannot 1 when the
 * old key was not given (a rotation of a key the verifier does not rely
 * on), 2 when the ring is full.
 */
static const char *hand_on(struct verify *v, const char *note, const struct endorsement *e,
			   int *cannot)
{
	const struct tf_verifier *t = tf_keyring_find(&v->ring, &e->old);
	size_t tlen, i;

	*cannot = t ? 0 : 1;
	if (!t)
		return "it hands on from a key that was not given";
	i = (size_t)(t - v->ring.k);
	if (!in_window(v, i, e->origin, e->index))
		return "it hands on from a key that was already rotated away there (a fork)";
	if (tf_note_verify_text(t, note, strlen(note), &tlen) != TF_NOTE_OK ||
	    tf_note_verify_text(&e->new, note, strlen(note), &tlen) != TF_NOTE_OK)
		return "its endorsement's signatures do not verify (forged or edited)";
	if (trust(v, &e->new, e->origin, e->index)) {
		*cannot = 2;
		return "more keys than a verifier holds";
	}
	v->win[i].retired = 1;
	snprintf(v->win[i].until, sizeof(v->win[i].until), "%s", e->origin);
	v->win[i].until_size = e->index;
	return NULL;
}

/* Lines after the epoch's last checkpoint, when the epoch ends (a new one, or the end). */
static void end_epoch(struct verify *v)
{
	__u64 n;

	if (!v->in_epoch)
		return;
	n = v->tree.size - v->sealed;
	if (n) {
		v->unsealed_lines += n;
		json_array_append_new(v->unsealed,
				      json_pack("{s:s, s:s, s:I, s:I, s:I, s:s?}", "origin",
						v->origin, "file", v->first_unsealed.file, "line",
						(json_int_t)v->first_unsealed.line, "index",
						(json_int_t)v->first_unsealed.index, "lines",
						(json_int_t)n, "broken",
						v->broken ? v->broken_why : NULL));
	}
	v->in_epoch = 0;
	if (v->session) {
		v->unexported += json_array_size(v->pending);
		json_array_clear(v->pending);
		tf_tree_free(&v->xt);
	}
}

static double rfc3339_seconds(const char *s);

/* A new epoch (edge NULL) or a file going on from a rotation: proofs start there. */
static void export_begin(struct verify *v, const struct tf_merkle *edge)
{
	if (!v->session)
		return;
	tf_tree_free(&v->xt);
	tf_tree_init(&v->xt, edge);
}

/* A verified checkpoint of size n: every pending line before it gets its proof. */
static void export_seal(struct verify *v, const char *note, __u64 n)
{
	__u8 proof[TF_PROOF_MAX][TF_HASH_LEN];
	char b64[64];
	size_t i, k, len;
	json_t *e, *p, *out;

	if (!v->session || !json_array_size(v->pending))
		return;
	json_array_append_new(v->notes, json_string(note));
	for (i = 0; i < json_array_size(v->pending); i++) {
		e = json_array_get(v->pending, i);
		__u64 idx = (__u64)json_integer_value(json_array_get(e, 0));

		if (idx >= n || tf_tree_proof(&v->xt, idx, n, proof, &len)) {
			found(v, V_CANNOT, "cannot prove line %llu of epoch %s",
			      (unsigned long long)idx, v->origin);
			continue;
		}
		p = json_array();
		for (k = 0; k < len; k++) {
			tf_b64_encode(proof[k], TF_HASH_LEN, b64, sizeof(b64));
			json_array_append_new(p, json_string(b64));
		}
		out = json_pack("{s:O, s:I, s:I, s:o}", "line", json_array_get(e, 1), "index",
				(json_int_t)idx, "checkpoint",
				(json_int_t)json_array_size(v->notes) - 1, "proof", p);
		json_array_append_new(v->entries, out);
	}
	json_array_clear(v->pending);
}

/* A line of the session asked for, in the time asked for, waits for its checkpoint. */
static void export_line(struct verify *v, json_t *o, const char *line, size_t len, __u64 idx)
{
	const char *sid = json_string_value(json_object_get(o, "session"));
	double t;

	if (!v->session || !sid || strcmp(sid, v->session))
		return;
	t = rfc3339_seconds(json_string_value(json_object_get(o, "time")));
	if ((v->since && t < v->since) || (v->until && t > v->until))
		return;
	json_array_append_new(v->pending, json_pack("[I, s#]", (json_int_t)idx, line, (int)len));
}

static void push_leaf(struct verify *v, const char *line, size_t len, const struct where *w)
{
	__u8 h[TF_HASH_LEN];

	if (v->tree.size == v->sealed)
		v->first_unsealed = *w;
	tf_leaf_hash(line, len, h);
	tf_merkle_push(&v->tree, h);
	memcpy(v->last, h, TF_HASH_LEN);
	if (v->session && tf_tree_push(&v->xt, h))
		found(v, V_CANNOT, "out of memory");
	if (v->have_trusted && !strcmp(v->origin, v->trusted.origin)) {
		v->trusted_epoch_size = v->tree.size;
		if (v->tree.size == v->trusted.size) {
			__u8 root[TF_HASH_LEN];

			tf_merkle_root(&v->tree, root);
			if (memcmp(root, v->trusted.root, TF_HASH_LEN))
				found(v, V_TAMPERED,
				      "%s:%lu: the %llu lines of epoch %s up to here are not the ones "
				      "the trusted checkpoint sealed",
				      w->file, w->line, (unsigned long long)v->trusted.size,
				      v->origin);
			else
				v->trusted_ok = 1;
		}
	}
}

/*
 * The line's place: its "seq" must be its index and its "prev" the previous
 * leaf's hash. The first mismatch is remembered (and named) until a
 * checkpoint judges the lines; the signed root is what proves tampering.
 */
static void chain_check(struct verify *v, json_t *o, const struct where *w)
{
	char hex[2 * TF_HASH_LEN + 1];
	const char *prev = json_string_value(json_object_get(o, "prev"));
	json_t *jseq = json_object_get(o, "seq");
	__u64 seq = json_is_integer(jseq) ? (__u64)json_integer_value(jseq) : ~0ULL;

	tf_hex(v->last, TF_CHAIN_HEX / 2, hex);
	if (v->broken || (seq == w->index && prev && !strcmp(prev, hex)))
		return;
	v->broken = 1;
	v->broken_at = *w;
	if (seq == ~0ULL)
		snprintf(v->broken_why, sizeof(v->broken_why),
			 "%s:%lu (line %llu of the epoch): a line that was never sealed (inserted)",
			 w->file, w->line, (unsigned long long)w->index);
	else if (seq > w->index)
		snprintf(v->broken_why, sizeof(v->broken_why),
			 "%s:%lu (line %llu of the epoch): lines %llu-%llu are missing before it "
			 "(dropped, or moved later)",
			 w->file, w->line, (unsigned long long)w->index,
			 (unsigned long long)w->index, (unsigned long long)seq - 1);
	else if (seq < w->index)
		snprintf(
			v->broken_why, sizeof(v->broken_why),
			"%s:%lu (line %llu of the epoch): it is line %llu, out of place (inserted, "
			"or moved from earlier)",
			w->file, w->line, (unsigned long long)w->index, (unsigned long long)seq);
	else
		snprintf(v->broken_why, sizeof(v->broken_why),
			 "%s:%lu (line %llu of the epoch): the line before it was changed", w->file,
			 w->line - 1, (unsigned long long)w->index - 1);
}

static double rfc3339_seconds(const char *s)
{
	struct tm tm = {};
	const char *p;
	double frac = 0;

	if (!s || !(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return 0;
	if (*p == '.')
		frac = strtod(p, NULL);
	return (double)timegm(&tm) + frac;
}

static void add_checkpoint(struct verify *v, const struct tf_checkpoint *c)
{
	void *p;

	if (v->ncps == v->cpcap) {
		p = realloc(v->cps, (v->cpcap ? 2 * v->cpcap : 64) * sizeof(*v->cps));
		if (!p) {
			found(v, V_CANNOT, "out of memory");
			return;
		}
		v->cps = p;
		v->cpcap = v->cpcap ? 2 * v->cpcap : 64;
	}
	v->cps[v->ncps++] = *c;
}

static int seen_origin(struct verify *v, const char *origin)
{
	if (!v->origins)
		v->origins = json_object();
	if (json_object_get(v->origins, origin))
		return 1;
	json_object_set_new(v->origins, origin, json_true());
	return 0;
}

/* Whether c is one of the verified checkpoints of the epoch just read. */
static int was_checkpoint(const struct verify *v, const struct tf_checkpoint *c)
{
	size_t i;

	for (i = 0; i < v->ncps; i++)
		if (v->cps[i].size == c->size && !memcmp(v->cps[i].root, c->root, TF_HASH_LEN))
			return 1;
	return 0;
}

static void on_epoch(struct verify *v, json_t *o, const char *line, size_t len,
		     const struct where *w)
{
	const char *origin = json_string_value(json_object_get(o, "origin"));
	const char *prev = json_string_value(json_object_get(o, "prev"));
	struct tf_checkpoint pc;
	char before[TF_ORIGIN_MAX];
	__u64 before_sealed = v->sealed;
	int had = v->in_epoch;

	snprintf(before, sizeof(before), "%s", v->origin);
	end_epoch(v);
	if (!origin || strlen(origin) >= sizeof(v->origin)) {
		found(v, V_TAMPERED, "%s:%lu: an epoch line without a valid origin", w->file,
		      w->line);
		return;
	}
	if (v->midstart[0] && !strcmp(v->midstart, origin))
		found(v, V_TAMPERED,
		      "%s:%lu: epoch %s starts here, after a later segment of it: "
		      "segments are out of order",
		      w->file, w->line, origin);
	if (seen_origin(v, origin)) {
		found(v, V_TAMPERED,
		      "%s:%lu: epoch %s appears twice (a file given twice, or an "
		      "epoch replayed)",
		      w->file, w->line, origin);
		return;
	}
	/*
	 * After an epoch, the next one must name that epoch's last checkpoint:
	 * an epoch removed, moved or cut short breaks the link. The checkpoint
	 * file may lag one checkpoint behind the log (a kill between the two
	 * writes), so any verified checkpoint of the epoch before will do.
	 */
	if (had && (!prev || ring_verify(v, prev, strlen(prev), &pc) != TF_NOTE_OK))
		found(v, V_TAMPERED,
		      "%s:%lu: epoch %s does not name a signed checkpoint of the "
		      "epoch before it, %s (an epoch removed, the files out of order, or the node's "
		      "state lost)",
		      w->file, w->line, origin, before);
	else if (had && (strcmp(pc.origin, before) || !was_checkpoint(v, &pc)))
		found(v, V_TAMPERED,
		      "%s:%lu: epoch %s names checkpoint %llu of %s, which the files "
		      "do not hold before it (epochs removed or out of order, or the end of %s cut "
		      "off)",
		      w->file, w->line, origin, (unsigned long long)pc.size, pc.origin, before);
	(void)before_sealed;
	v->in_epoch = 1;
	v->epochs++;
	v->ncps = 0;
	snprintf(v->origin, sizeof(v->origin), "%s", origin);
	tf_merkle_init(&v->tree);
	v->sealed = 0;
	v->broken = 0;
	v->last_note[0] = 0;
	v->last_seal_time = 0;
	v->checkpoint_s = (unsigned int)json_integer_value(json_object_get(o, "checkpoint_s"));
	if (v->have_trusted && !strcmp(origin, v->trusted.origin))
		v->trusted_epoch_seen = 1;
	export_begin(v, NULL);
	push_leaf(v, line, len, w);
}

static void on_checkpoint(struct verify *v, json_t *o, const struct where *w)
{
	const char *note = json_string_value(json_object_get(o, "note"));
	struct tf_checkpoint cp;
	__u8 root[TF_HASH_LEN];

	if (!v->in_epoch) {
		found(v, V_CANNOT, "%s:%lu: a checkpoint outside any epoch in these files", w->file,
		      w->line);
		return;
	}
	switch (note ? ring_verify(v, note, strlen(note), &cp) : TF_NOTE_MALFORMED) {
	case TF_NOTE_OK:
		break;
	case TF_NOTE_NO_KEY:
		found(v, v->checkpoints ? V_TAMPERED : V_CANNOT,
		      "%s:%lu: the checkpoint is not signed by a key given or handed on to%s",
		      w->file, w->line, v->checkpoints ? "" : " (the wrong key?)");
		return;
	default:
		found(v, V_TAMPERED,
		      "%s:%lu: the checkpoint's signature does not verify (forged "
		      "or edited)",
		      w->file, w->line);
		return;
	}
	if (json_integer_value(json_object_get(o, "size")) != (json_int_t)cp.size ||
	    strcmp(json_string_value(json_object_get(o, "origin")) ?: "", cp.origin)) {
		found(v, V_TAMPERED,
		      "%s:%lu: the checkpoint line's origin or size is not what its "
		      "signed note says (edited)",
		      w->file, w->line);
		return;
	}
	if (strcmp(cp.origin, v->origin)) {
		found(v, V_TAMPERED,
		      "%s:%lu: a checkpoint of epoch %s inside epoch %s (moved or "
		      "replayed)",
		      w->file, w->line, cp.origin, v->origin);
		return;
	}
	if (cp.size != v->tree.size) {
		if (v->broken)
			found(v, V_TAMPERED,
			      "%s; the checkpoint at %s:%lu seals %llu lines, %llu "
			      "precede it",
			      v->broken_why, w->file, w->line, (unsigned long long)cp.size,
			      (unsigned long long)v->tree.size);
		else
			found(v, V_TAMPERED,
			      "%s:%lu: the checkpoint seals %llu lines of the epoch, "
			      "%llu precede it (lines dropped or inserted, or a checkpoint replayed)",
			      w->file, w->line, (unsigned long long)cp.size,
			      (unsigned long long)v->tree.size);
		return;
	}
	tf_merkle_root(&v->tree, root);
	if (memcmp(root, cp.root, TF_HASH_LEN)) {
		if (v->broken)
			found(v, V_TAMPERED, "%s", v->broken_why);
		else
			found(v, V_TAMPERED,
			      "%s:%lu (line %llu of the epoch): changed (the "
			      "checkpoint after it does not match)",
			      w->file, w->line - 1, (unsigned long long)cp.size - 1);
		return;
	}
	v->sealed_lines += cp.size - v->sealed;
	v->sealed = cp.size;
	v->broken = 0;
	v->checkpoints++;
	snprintf(v->last_note, sizeof(v->last_note), "%s", note);
	add_checkpoint(v, &cp);
	export_seal(v, note, cp.size);
}

/*
 * A file that goes on from an earlier one (a rotation), verified without it:
 * its continue line carries the signed checkpoint of the size it goes on
 * from and the tree's right edge there, which must hash to that root.
 */
static int resume(struct verify *v, json_t *o, const struct where *w)
{
	const char *note = json_string_value(json_object_get(o, "checkpoint"));
	json_t *edge = json_object_get(o, "frontier"), *e;
	struct tf_checkpoint cp;
	__u8 root[TF_HASH_LEN];
	size_t k = 0;
	int i;

	if (!note || !json_is_array(edge) ||
	    ring_verify(v, note, strlen(note), &cp) != TF_NOTE_OK ||
	    json_integer_value(json_object_get(o, "size")) != (json_int_t)cp.size ||
	    strcmp(json_string_value(json_object_get(o, "origin")) ?: "", cp.origin))
		return 0;
	tf_merkle_init(&v->tree);
	v->tree.size = cp.size;
	for (i = 0; i < 64; i++) {
		if (!(cp.size >> i & 1))
			continue;
		e = json_array_get(edge, k++);
		if (!json_is_string(e) ||
		    tf_b64_decode(json_string_value(e), json_string_length(e), v->tree.node[i],
				  TF_HASH_LEN) != TF_HASH_LEN)
			return 0;
	}
	tf_merkle_root(&v->tree, root);
	if (k != json_array_size(edge) || memcmp(root, cp.root, TF_HASH_LEN)) {
		found(v, V_TAMPERED,
		      "%s:%lu: the tree edge this file goes on from is not the one "
		      "its checkpoint seals",
		      w->file, w->line);
		return 0;
	}
	if (seen_origin(v, cp.origin)) {
		found(v, V_TAMPERED, "%s:%lu: epoch %s goes on here a second time", w->file,
		      w->line, cp.origin);
		return 0;
	}
	v->in_epoch = 1;
	v->resumed++;
	v->ncps = 0;
	add_checkpoint(v, &cp);
	export_begin(v, &v->tree);
	snprintf(v->origin, sizeof(v->origin), "%s", cp.origin);
	v->sealed = cp.size;
	v->broken = 0;
	v->last_seal_time = 0;
	v->checkpoint_s = (unsigned int)json_integer_value(json_object_get(o, "checkpoint_s"));
	snprintf(v->last_note, sizeof(v->last_note), "%s", note);
	if (v->have_trusted && !strcmp(cp.origin, v->trusted.origin)) {
		v->trusted_epoch_seen = 1;
		v->trusted_epoch_size = cp.size;
		if (cp.size > v->trusted.size) {
			v->trusted_unreachable = 1;
			found(v, V_CANNOT,
			      "%s:%lu: the trusted checkpoint (size %llu) lies before this "
			      "file, which goes on from size %llu: give the earlier files too",
			      w->file, w->line, (unsigned long long)v->trusted.size,
			      (unsigned long long)cp.size);
		} else if (cp.size == v->trusted.size &&
			   memcmp(cp.root, v->trusted.root, TF_HASH_LEN)) {
			found(v, V_TAMPERED,
			      "%s:%lu: this file goes on from a tree that is not the "
			      "trusted checkpoint's",
			      w->file, w->line);
		} else if (cp.size == v->trusted.size) {
			v->trusted_ok = 1;
		}
	}
	return 1;
}

/*
 * A "key" line: the node's key was replaced. Its endorsement must name this
 * epoch, this line's index and the root of the tree up to it, which the
 * checkpoint just before it sealed: the old key vouches for the history it
 * hands on, so the new key cannot sign another one.
 */
static void on_key(struct verify *v, json_t *o, const struct where *w)
{
	const char *note = json_string_value(json_object_get(o, "endorsement")), *why;
	struct endorsement e;
	__u8 root[TF_HASH_LEN];
	int cannot = 0;

	why = endorsement_parse(note, &e);
	/* A rotation of a key the verifier was not given: nothing it relies on changes. */
	if (!why && !tf_keyring_find(&v->ring, &e.old)) {
		if (v->endorsements) /* a bundle carries it: another verifier may hold that key */
			json_array_append_new(v->endorsements, json_string(note));
		return;
	}
	if (!why && (strcmp(e.origin, v->origin) || e.index != w->index))
		why = "its endorsement is of another epoch or line (moved or replayed)";
	if (!why && (strcmp(json_string_value(json_object_get(o, "old")) ?: "", e.old_s) ||
		     strcmp(json_string_value(json_object_get(o, "new")) ?: "", e.new_s)))
		why = "its old or new key is not the one its endorsement names (edited)";
	tf_merkle_root(&v->tree, root);
	if (!why && (v->sealed != w->index || memcmp(root, e.root, TF_HASH_LEN)))
		why = "it does not follow a checkpoint of the tree its endorsement names";
	if (!why)
		why = hand_on(v, note, &e, &cannot);
	if (!why && v->endorsements)
		json_array_append_new(v->endorsements, json_string(note));
	if (why) {
		found(v, cannot ? V_CANNOT : V_TAMPERED,
		      "%s:%lu: a key rotation that hands on no "
		      "trust: %s",
		      w->file, w->line, why);
		return;
	}
	v->rotations++;
}

static void on_line(struct verify *v, const char *line, size_t len, const struct where *wpos)
{
	struct where w = *wpos;
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	const char *kind = json_string_value(json_object_get(o, "kind"));
	double t;

	if (kind && !strcmp(kind, "epoch")) {
		w.index = 0;
		on_epoch(v, o, line, len, &w);
	} else if (kind && !strcmp(kind, "checkpoint")) {
		on_checkpoint(v, o, &w);
	} else if (!v->in_epoch) {
		const char *origin = json_string_value(json_object_get(o, "origin"));

		if (kind && !strcmp(kind, "continue") && origin && !v->midstart[0])
			snprintf(v->midstart, sizeof(v->midstart), "%s", origin);
		if (kind && !strcmp(kind, "continue") && resume(v, o, &w)) {
			w.index = v->tree.size;
			push_leaf(v, line, len, &w);
		} else {
			found(v, V_CANNOT,
			      "%s:%lu: lines before any epoch start in these files (give "
			      "the earlier files too)",
			      w.file, w.line);
			v->unsealed_lines++;
		}
	} else {
		w.index = v->tree.size;
		chain_check(v, o, &w);
		if (kind && !strcmp(kind, "continue") &&
		    (json_integer_value(json_object_get(o, "size")) != (json_int_t)v->tree.size ||
		     strcmp(json_string_value(json_object_get(o, "origin")) ?: "", v->origin)))
			found(v, V_TAMPERED,
			      "%s:%lu: this file goes on from another point of the "
			      "log (a segment missing or out of order)",
			      w.file, w.line);
		if (kind && !strcmp(kind, "key"))
			on_key(v, o, &w);
		if (kind && !strcmp(kind, "seal")) {
			t = rfc3339_seconds(json_string_value(json_object_get(o, "time")));
			if (v->last_seal_time && v->checkpoint_s &&
			    t - v->last_seal_time > 2.0 * v->checkpoint_s + 5) {
				v->gaps++;
				json_array_append_new(v->heartbeat_gaps,
						      json_pack("{s:s, s:s, s:I, s:f}", "origin",
								v->origin, "file", w.file, "line",
								(json_int_t)w.line, "seconds",
								t - v->last_seal_time));
			}
			v->last_seal_time = t;
		}
		push_leaf(v, line, len, &w);
		export_line(v, o, line, len, w.index);
	}
	json_decref(o);
}

/*
 * Lines by their real bytes (gzread and memchr, not gzgets and strlen: a
 * NUL would end a line early and glue the rest to the next one). No line
 * the daemon writes holds a NUL: one is tampering.
 */
static int verify_file(struct verify *v, const char *path)
{
	struct where w = { .file = path };
	size_t cap = 1 << 16, len = 0, off = 0;
	char *buf = malloc(cap), *nl, *nb;
	gzFile f = gzopen(path, "rb");
	int n = 1, err = 0;

	if (!buf || !f) {
		found(v, V_CANNOT, "%s: cannot read", path);
		free(buf);
		if (f)
			gzclose(f);
		return -EIO;
	}
	for (;;) {
		nl = memchr(buf + off, '\n', len - off);
		if (!nl && n > 0) {
			memmove(buf, buf + off, len - off);
			len -= off;
			off = 0;
			if (len == cap) {
				if (cap >= (64u << 20) || !(nb = realloc(buf, cap * 2))) {
					found(v, V_TAMPERED,
					      "%s:%lu: a line of more than %zu bytes", path,
					      w.line + 1, cap);
					break;
				}
				buf = nb;
				cap *= 2;
			}
			n = gzread(f, buf + len, (unsigned int)(cap - len));
			if (n < 0) {
				found(v, V_CANNOT, "%s: cannot read (%s)", path, gzerror(f, &n));
				err = -EIO;
				break;
			}
			len += n;
			continue;
		}
		if (!nl) {
			if (len > off) {
				/* A last line without its newline: cut off mid-write, never sealed. */
				w.line++;
				if (v->in_epoch && v->tree.size == v->sealed)
					v->first_unsealed = w;
				v->unsealed_lines++;
			}
			break;
		}
		w.line++;
		if (memchr(buf + off, '\0', nl - (buf + off))) {
			found(v, V_TAMPERED,
			      "%s:%lu: a line with a NUL byte (no line of the log has one)", path,
			      w.line);
			break;
		}
		on_line(v, buf + off, nl - (buf + off), &w);
		off = nl - buf + 1;
		if (v->result == V_TAMPERED)
			break;
	}
	gzclose(f);
	free(buf);
	return err;
}

static int verify_report(struct verify *v)
{
	struct tf_checkpoint cp;
	json_t *out;

	if (v->have_trusted &&
	    ring_verify(v, v->trusted_note, strlen(v->trusted_note), &cp) != TF_NOTE_OK) {
		/* Whatever the files were measured against, it was not a checkpoint of the key's. */
		v->result = V_OK;
		found(v, V_CANNOT,
		      "the trusted checkpoint is not signed by a key given or handed on to");
	} else if (v->have_trusted && !v->trusted_ok && !v->trusted_unreachable) {
		if (!v->trusted_epoch_seen)
			found(v, V_TAMPERED,
			      "the trusted checkpoint's epoch %s is not in these files "
			      "(a segment deleted?)",
			      v->trusted.origin);
		else
			found(v, V_TAMPERED,
			      "truncated: the trusted checkpoint seals %llu lines of "
			      "epoch %s, these files hold %llu",
			      (unsigned long long)v->trusted.size, v->trusted.origin,
			      (unsigned long long)v->trusted_epoch_size);
	}
	if (v->result == V_OK && !v->checkpoints)
		found(v, V_CANNOT, "no checkpoint in these files: nothing is sealed");
	if (v->json) {
		out = json_pack("{s:s, s:s?, s:i, s:i, s:i, s:I, s:I, s:O, s:O, s:b}", "result",
				v->result == V_OK	? "verified" :
				v->result == V_TAMPERED ? "tampered" :
							  "cannot_verify",
				"problem", v->result == V_OK ? NULL : v->problem, "epochs",
				v->epochs, "checkpoints", v->checkpoints, "key_rotations",
				v->rotations, "sealed_lines", (json_int_t)v->sealed_lines,
				"unsealed_lines", (json_int_t)v->unsealed_lines, "unsealed",
				v->unsealed, "heartbeat_gaps", v->heartbeat_gaps,
				"trusted_checkpoint", v->have_trusted && v->trusted_ok);
		if (out)
			json_dumpf(out, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(out);
		return v->result;
	}
	if (v->result == V_TAMPERED)
		printf("tampered: %s\n", v->problem);
	else if (v->result == V_CANNOT)
		printf("cannot verify: %s\n", v->problem);
	else
		printf("verified: %llu lines in %u epoch(s)%s, sealed by %u checkpoint(s)%s%s\n",
		       (unsigned long long)v->sealed_lines, v->epochs + v->resumed,
		       v->resumed ? " (some from a rotated file on)" : "", v->checkpoints,
		       v->have_trusted ? ", up to the trusted checkpoint at least" : "",
		       v->rotations ? ", across key rotations each endorsed by the key before" :
				      "");
	if (v->unsealed_lines)
		printf("unsealed (not verified): %llu line(s) after the last checkpoint of their "
		       "epoch\n",
		       (unsigned long long)v->unsealed_lines);
	if (v->gaps)
		printf("unproven: %u interval(s) without a heartbeat\n", v->gaps);
	return v->result;
}

static int trusted_load(struct verify *v, const char *path)
{
	char note[TF_NOTE_MAX];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f) {
		ctl_err("trusted checkpoint `%s': cannot read", path);
		return -CTL_ECANNOT;
	}
	n = fread(note, 1, sizeof(note) - 1, f);
	fclose(f);
	note[n] = 0;
	/* Its signature is checked at the end: a key a rotation handed on to may have signed it. */
	if (tf_note_checkpoint(note, n, &v->trusted)) {
		ctl_err("trusted checkpoint `%s': not a signed checkpoint", path);
		return -CTL_ECANNOT;
	}
	memcpy(v->trusted_note, note, n + 1);
	v->have_trusted = 1;
	return 0;
}

/* verify's usage errors are "could not verify" (2), as its documentation says. */
static int bad_usage(const struct ctl_cmd *self)
{
	ctl_usage(self);
	return -CTL_ECANNOT;
}

/* Options shared by verify and export; the files are moved to argv[1..*nfiles]. */
struct log_args {
	const char *key, *trusted, *bundle, *session, *since, *until, *out;
};

static int log_args(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[],
		    struct verify *v, struct log_args *a, int *nfiles)
{
	static const struct {
		const char *name;
		size_t off;
	} opts[] = {
		{ "--trusted-checkpoint", offsetof(struct log_args, trusted) },
		{ "--bundle", offsetof(struct log_args, bundle) },
		{ "--session", offsetof(struct log_args, session) },
		{ "--since", offsetof(struct log_args, since) },
		{ "--until", offsetof(struct log_args, until) },
		{ "--out", offsetof(struct log_args, out) },
	};
	struct tf_verifier key;
	const char *val;
	size_t k;
	int i, r;

	memset(v, 0, sizeof(*v));
	v->json = o->json;
	*nfiles = 0;
	for (i = 1; i < argc; i++) {
		/* --key again and again: every key given is trusted. */
		if ((r = ctl_opt_value(argc, argv, &i, "--key", &val)) != 0) {
			if (r < 0)
				return bad_usage(self);
			a->key = val;
			if (read_vkey(val, &key))
				return -CTL_ECANNOT;
			if (trust(v, &key, NULL, 0)) {
				ctl_err("--key: more than %d keys", TF_KEYRING_MAX);
				return -CTL_ECANNOT;
			}
			continue;
		}
		for (k = 0, r = 0; k < sizeof(opts) / sizeof(opts[0]) && !r; k++) {
			r = ctl_opt_value(argc, argv, &i, opts[k].name, &val);
			if (r > 0 && !strstr(self->synopsis, opts[k].name))
				r = -1; /* not an option of this command */
			if (r > 0)
				*(const char **)((char *)a + opts[k].off) = val;
		}
		if (r < 0)
			return bad_usage(self);
		if (r)
			continue;
		if (!strcmp(argv[i], "--json"))
			v->json = 1;
		else if (argv[i][0] == '-')
			return bad_usage(self);
		else
			argv[1 + (*nfiles)++] = argv[i];
	}
	if ((!a->key && (read_vkey(DEFAULT_KEY ".pub", &key) || trust(v, &key, NULL, 0))) ||
	    (a->trusted && trusted_load(v, a->trusted)))
		return -CTL_ECANNOT;
	return 0;
}

/* Read the files in order, as one log; the verdict is v->result. */
static void walk(struct verify *v, int nfiles, char *argv[])
{
	int i;

	v->unsealed = json_array();
	v->heartbeat_gaps = json_array();
	for (i = 1; i <= nfiles && v->result != V_TAMPERED; i++)
		verify_file(v, argv[i]);
	if (v->result != V_TAMPERED)
		end_epoch(v);
}

static void walk_free(struct verify *v)
{
	json_decref(v->origins);
	free(v->cps);
	json_decref(v->unsealed);
	json_decref(v->heartbeat_gaps);
	json_decref(v->pending);
	json_decref(v->notes);
	json_decref(v->entries);
	json_decref(v->endorsements);
	tf_tree_free(&v->xt);
}

/*
 * A bundle (tapfence log export): every line is proven, by its inclusion
 * proof, to be in a checkpoint the key signed, and belongs to the session.
 */
static int bundle_verify(struct verify *v, const char *path)
{
	__u8 proof[TF_PROOF_MAX][TF_HASH_LEN], leaf[TF_HASH_LEN];
	json_t *b = json_load_file(path, JSON_REJECT_DUPLICATES, NULL), *notes, *entries, *e, *p,
	       *lo;
	const char *session = json_string_value(json_object_get(b, "session")), *line;
	double since = rfc3339_seconds(json_string_value(json_object_get(b, "since")));
	double until = rfc3339_seconds(json_string_value(json_object_get(b, "until")));
	struct tf_checkpoint *cps = NULL;
	struct endorsement *rot = NULL;
	json_t *seen = NULL;
	size_t i, k, n, nrot, r;
	int ret = V_OK;

	notes = json_object_get(b, "checkpoints");
	entries = json_object_get(b, "entries");
	if (!session || !json_is_array(notes) || !json_is_array(entries) ||
	    strcmp(json_string_value(json_object_get(b, "kind")) ?: "", "tapfence-log-bundle")) {
		printf("cannot verify: `%s' is not a tapfence log bundle\n", path);
		json_decref(b);
		return V_CANNOT;
	}
	/*
	 * Key rotations first, in order: each hands trust on from a key given
	 * (or handed on to) before, at a point (epoch, index) where the old key
	 * sealed the tree; lines before it must be proven in checkpoints up to
	 * it, which only the old key can sign.
	 */
	nrot = json_array_size(json_object_get(b, "endorsements"));
	rot = calloc(nrot + 1, sizeof(*rot));
	json_array_foreach(json_object_get(b, "endorsements"), i, e) {
		const char *why = rot ? endorsement_parse(json_string_value(e), &rot[i]) :
					"no memory";
		int cannot = 0;

		if (!why)
			why = hand_on(v, json_string_value(e), &rot[i], &cannot);
		if (why && cannot != 1) {
			printf("%s: endorsement %zu of the bundle: %s\n",
			       cannot ? "cannot verify" : "tampered", i, why);
			ret = cannot ? V_CANNOT : V_TAMPERED;
			goto out;
		}
	}
	cps = calloc(json_array_size(notes) + 1, sizeof(*cps));
	for (i = 0; cps && i < json_array_size(notes); i++) {
		const char *note = json_string_value(json_array_get(notes, i));

		if (!note || ring_verify(v, note, strlen(note), &cps[i]) != TF_NOTE_OK) {
			printf("%s: checkpoint %zu of the bundle is not signed by a key given\n",
			       i ? "tampered" : "cannot verify", i);
			ret = i ? V_TAMPERED : V_CANNOT;
			goto out;
		}
	}
	seen = json_object();
	json_array_foreach(entries, i, e) {
		char key[64];
		double t;

		line = json_string_value(json_object_get(e, "line"));
		k = (size_t)json_integer_value(json_object_get(e, "checkpoint"));
		/* One entry per line: an index once per checkpoint's epoch. */
		snprintf(key, sizeof(key), "%zu/%lld", k < json_array_size(notes) ? k : 0,
			 (long long)json_integer_value(json_object_get(e, "index")));
		if (k < json_array_size(notes)) {
			const char *dot = strrchr(cps[k].origin, '/');

			snprintf(key, sizeof(key), "%.40s/%lld", dot ? dot : cps[k].origin,
				 (long long)json_integer_value(json_object_get(e, "index")));
		}
		if (json_object_get(seen, key)) {
			printf("tampered: entry %zu of the bundle is a line it already holds\n", i);
			ret = V_TAMPERED;
			goto out;
		}
		json_object_set_new(seen, key, json_true());
		lo = line ? json_loads(line, JSON_REJECT_DUPLICATES, NULL) : NULL;
		t = rfc3339_seconds(json_string_value(json_object_get(lo, "time")));
		json_decref(lo);
		if ((since && t < since) || (until && t > until)) {
			printf("tampered: entry %zu of the bundle lies outside its --since/--until\n",
			       i);
			ret = V_TAMPERED;
			goto out;
		}
		k = (size_t)json_integer_value(json_object_get(e, "checkpoint"));
		p = json_object_get(e, "proof");
		lo = line ? json_loads(line, 0, NULL) : NULL;
		n = json_array_size(p);
		ret = !line || !json_is_array(p) || n > TF_PROOF_MAX ||
				      k >= json_array_size(notes) ||
				      strcmp(json_string_value(json_object_get(lo, "session")) ?:
												 "",
					     session) ||
				      json_integer_value(json_object_get(lo, "seq")) !=
					      json_integer_value(json_object_get(e, "index")) ?
			      V_TAMPERED :
			      V_OK;
		json_decref(lo);
		for (n = 0; ret == V_OK && n < json_array_size(p); n++)
			if (tf_b64_decode(json_string_value(json_array_get(p, n)) ?: "",
					  json_string_length(json_array_get(p, n)), proof[n],
					  TF_HASH_LEN) != TF_HASH_LEN)
				ret = V_TAMPERED;
		if (ret == V_OK) {
			tf_leaf_hash(line, strlen(line), leaf);
			if (!tf_inclusion_verify(
				    leaf, (__u64)json_integer_value(json_object_get(e, "index")),
				    cps[k].size, (const __u8(*)[TF_HASH_LEN])proof, n, cps[k].root))
				ret = V_TAMPERED;
		}
		if (ret != V_OK) {
			printf("tampered: entry %zu of the bundle is not proven in its checkpoint, or is "
			       "not a line of session %s\n",
			       i, session);
			goto out;
		}
		for (r = 0; r < nrot; r++) {
			if (strcmp(cps[k].origin, rot[r].origin) ||
			    (__u64)json_integer_value(json_object_get(e, "index")) >=
				    rot[r].index ||
			    cps[k].size <= rot[r].index)
				continue;
			printf("tampered: entry %zu of the bundle lies before a key rotation but is proven "
			       "only in a checkpoint after it\n",
			       i);
			ret = V_TAMPERED;
			goto out;
		}
	}
	printf("verified: %zu line(s) of session %s, each proven in a checkpoint signed by the key\n",
	       json_array_size(entries), session);
	if (json_integer_value(json_object_get(b, "unsealed")))
		printf("not in the bundle: %lld line(s) of the session that no checkpoint sealed yet\n",
		       (long long)json_integer_value(json_object_get(b, "unsealed")));
out:
	json_decref(seen);
	free(cps);
	free(rot);
	json_decref(b);
	return ret;
}

static int cmd_log_verify(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			  char *argv[])
{
	static struct verify v;
	struct log_args a = {};
	int ret, nfiles;

	ret = log_args(o, self, argc, argv, &v, &a, &nfiles);
	if (ret)
		return ret;
	if (a.bundle) {
		if (nfiles)
			return bad_usage(self);
		return verify_status(bundle_verify(&v, a.bundle));
	}
	if (!nfiles)
		return bad_usage(self);
	walk(&v, nfiles, argv);
	ret = verify_report(&v);
	walk_free(&v);
	return verify_status(ret);
}

static double time_arg(const char *s, const char *what)
{
	double t = s ? rfc3339_seconds(s) : 0;

	if (s && !t)
		ctl_err("%s `%s': expected an RFC 3339 time, e.g. 2026-12-01T10:00:00Z", what, s);
	return t;
}

static int cmd_log_export(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			  char *argv[])
{
	static struct verify v;
	struct log_args a = {};
	json_t *bundle;
	int ret, nfiles;

	ret = log_args(o, self, argc, argv, &v, &a, &nfiles);
	if (ret)
		return ret;
	if (!nfiles || !a.session)
		return bad_usage(self);
	v.since = time_arg(a.since, "--since");
	v.until = time_arg(a.until, "--until");
	if ((a.since && !v.since) || (a.until && !v.until))
		return -CTL_ECANNOT;
	v.session = a.session;
	v.endorsements = json_array();
	v.pending = json_array();
	v.notes = json_array();
	v.entries = json_array();
	walk(&v, nfiles, argv);
	if (v.result == V_OK && !v.checkpoints)
		found(&v, V_CANNOT, "no checkpoint in these files: nothing is sealed");
	if (v.result != V_OK) {
		ctl_err("not exported: %s", v.problem);
		ret = verify_status(v.result);
		goto out;
	}
	bundle = json_pack("{s:s, s:i, s:s, s:s?, s:s?, s:O, s:O, s:O, s:I}", "kind",
			   "tapfence-log-bundle", "version", 1, "session", a.session, "since",
			   a.since, "until", a.until, "endorsements", v.endorsements, "checkpoints",
			   v.notes, "entries", v.entries, "unsealed", (json_int_t)v.unexported);
	if (!bundle || json_dump_file(bundle, a.out ? a.out : "/dev/stdout", JSON_INDENT(1))) {
		ctl_err("cannot write the bundle%s%s", a.out ? " to " : "", a.out ? a.out : "");
		ret = -EIO;
	} else {
		fprintf(stderr, CTL_PROG ": exported %zu line(s) of session %s%s\n",
			json_array_size(v.entries), a.session,
			v.unexported ? " (and left out lines no checkpoint seals yet)" : "");
	}
	json_decref(bundle);
out:
	walk_free(&v);
	return ret;
}

static int cmd_log_key(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	char path[4096], line[TF_VKEY_MAX + 2], err[256];
	struct tf_verifier key;
	const char *file = DEFAULT_KEY, *val;
	int i, r;
	FILE *f;

	(void)o;
	for (i = 1; i < argc; i++) {
		if ((r = ctl_opt_value(argc, argv, &i, "--key-file", &val)) <= 0)
			return ctl_usage(self);
		file = val;
	}
	snprintf(path, sizeof(path), "%s.pub", file);
	f = fopen(path, "re");
	if (!f || !fgets(line, sizeof(line), f)) {
		ctl_err("cannot read `%s' (tapfenced writes it beside its log key at start)", path);
		if (f)
			fclose(f);
		return -EIO;
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	if (tf_verifier_parse(line, &key, err, sizeof(err))) {
		ctl_err("`%s': %s", path, err);
		return -EIO;
	}
	printf("%s\n", line);
	return 0;
}

/* The new verifier keys, one a line: what the reviewer keeps beside the first. */
static int print_keys(const json_t *resp, const void *ctx)
{
	const char *k2 = json_string_value(json_object_get(resp, "ecdsa_key"));

	(void)ctx;
	printf("%s\n", json_string_value(json_object_get(resp, "key")) ?: "");
	if (k2)
		printf("%s\n", k2);
	return 0;
}

static int cmd_log_rotate_key(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			      char *argv[])
{
	(void)self, (void)argc, (void)argv;
	return ctl_call(o, ctl_req("log.rotate_key"), print_keys, NULL);
}

const struct ctl_cmd ctl_log_cmds[] = {
	{ "key", cmd_log_key, NULL, -1, -1, "log key [--key-file PATH]",
	  "print the verifier key of the node's log key (default " DEFAULT_KEY ")" },
	{ "rotate-key", cmd_log_rotate_key, NULL, 0, 0, "log rotate-key",
	  "replace the node's signing keys; the rotation is a sealed line the old key endorses "
	  "(uid 0 only)" },
	{ "verify", cmd_log_verify, NULL, -1, -1,
	  "log verify [--key KEY]... [--trusted-checkpoint FILE] [--json] PATH... | --bundle FILE",
	  "verify sealed event log files, or an export bundle, offline (exit 0 verified, "
	  "1 tampered, 2 cannot verify)" },
	{ "export", cmd_log_export, NULL, -1, -1,
	  "log export --session ID [--since TIME] [--until TIME] [--key KEY] [--out FILE] PATH...",
	  "a session's sealed lines, each with its inclusion proof and signed checkpoint" },
	{ 0 }
};
