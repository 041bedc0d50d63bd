// SPDX-License-Identifier: GPL-2.0
/*
 * The sealed event log (docs/audit.md). Every line written to event_log is
 * a leaf of an append-only RFC 6962 Merkle tree, one tree per epoch (a
 * daemon start), and carries its index in the tree ("seq") and the first
 * TF_CHAIN_HEX hex digits of the previous leaf's hash ("prev"), so a
 * verifier can name the first line that was edited, dropped, inserted or
 * moved (the signed roots are what proves it; these only point). Every checkpoint_lines
 * lines, every checkpoint_s seconds (a heartbeat, also when nothing
 * happened), at start, on SIGHUP and at exit, a sealed "seal" line states the
 * epoch's totals of lost, suppressed and unwritten events, and a
 * "checkpoint" line (not a leaf) carries a C2SP checkpoint of the tree so
 * far, signed as a signed note with the node's Ed25519 key (and its ECDSA
 * P-256 key when configured); the newest one is also written to
 * <state_dir>/log.checkpoint for a log shipper. A key rotation is a sealed
 * "key" line whose endorsement the old key and the new key both sign.
 *
 * Lines are written in batches with write(2); a batch that cannot be
 * written whole is cut off again (ftruncate to the last whole batch), its
 * lines are left out of the tree and counted as unwritten, and the next
 * seal line says so. Sealed bytes are never rewritten.
 *
 * A line's leaf hash is made at once (the next line carries it); the tree's
 * nodes above the leaves only need to be there by the next checkpoint, and
 * a thread of their own makes them (struct folder).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/log.h"
#include "common/seal.h"
#include "daemon.h"

#define BATCH_MAX     (1u << 20)
#define BATCH_LINES   8192 /* a batch is written when it has this many lines or BATCH_MAX bytes */
#define TF_AUDIT_KEYS 2

/*
 * Folds written batches' leaf hashes into the tree, on a thread of its own
 * once tf_audit_start() ran (on the caller's before). A batch's leaves are
 * handed over whole when it is written (fold_hand()), and whoever reads the
 * tree first waits until the thread folded all it was handed (fold_wait()):
 * the tree is the thread's while @n is not 0, the drain's otherwise.
 */
struct folder {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* leaves handed over, leaves folded, or stop */
	pthread_t thread;
	int on, stop;
	unsigned int n;		   /* leaves handed over and not folded yet */
	__u8 (*leaf)[TF_HASH_LEN]; /* them */
};

struct tf_audit {
	int fd;
	off_t committed;	/* file size after the last whole batch */
	struct tf_merkle tree;	/* leaves of the batches written (struct folder) */
	__u64 size;		/* leaves sealed: tree's, the folder's and the batch's */
	__u8 last[TF_HASH_LEN]; /* hash of the last leaf (the chain) */
	__u64 size0;		/* the same two, when the batch began */
	__u8 last0[TF_HASH_LEN];
	unsigned int batch_lines;
	__u8 (*leaf)[TF_HASH_LEN]; /* the batch's leaf hashes */
	__u8 leaves[2][BATCH_LINES][TF_HASH_LEN];
	struct folder f;
	size_t len;
	char buf[BATCH_MAX];
	struct tf_signer key[TF_AUDIT_KEYS]; /* Ed25519; ECDSA P-256 (pkey NULL: none) */
	char origin[TF_ORIGIN_MAX];
	char vkey[TF_AUDIT_KEYS][TF_VKEY_MAX];
	__u64 unwritten;  /* lines this epoch could not write */
	__u64 suppressed; /* events the datapath reported as suppressed */
	__u64 checkpoints;
	__u64 sealed_size;	 /* tree size of the last checkpoint */
	__u64 lines_since;	 /* leaves since the last checkpoint */
	struct timespec last_cp; /* CLOCK_MONOTONIC */
	time_t last_cp_wall;	 /* the last checkpoint written, unix seconds (0: none yet) */
	int failing;		 /* the last batch failed (warned once) */
	char note[TF_NOTE_MAX];	 /* the last checkpoint, signed (a continue line carries it) */
	time_t opened;		 /* CLOCK_MONOTONIC seconds the current file was opened */
	/* A closed segment being compressed, a chunk per tick (zip_in < 0: none). */
	int zip_in, zip_fd; /* zip_fd: a dup of zip_out's fd, to fsync it */
	gzFile zip_out;
	char zip_src[PATH_MAX];
	time_t rotate_retry; /* CLOCK_MONOTONIC seconds: no rotation before */
};

#define ZIP_CHUNK      (1u << 20)
#define ROTATE_RETRY_S 60 /* after a rotation failed */

static void now_rfc3339(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09ldZ", ts.tv_nsec);
}

/*
 * A JSON string literal of s: quotes, backslashes and control bytes
 * escaped, and with ascii every byte from 0x7f too. Without it those are
 * passed as they are: for the daemon's own signed notes (ASCII and one
 * U+2014, whose UTF-8 bytes must stay what was signed), and only those.
 */
static size_t json_quote_as(const char *s, char *out, size_t cap, int ascii)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (cap < 3)
		return 0;
	out[o++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (o + 7 >= cap)
			return 0;
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = c;
		} else if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c < 0x20 || (ascii && c >= 0x7f)) {
			o += snprintf(out + o, cap - o, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
		} else {
			out[o++] = c;
		}
	}
	out[o++] = '"';
	out[o] = 0;
	return o;
}

static size_t json_quote(const char *s, char *out, size_t cap)
{
	return json_quote_as(s, out, cap, 0);
}

static int write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

static void fold(struct tf_merkle *tree, __u8 (*leaf)[TF_HASH_LEN], unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		tf_merkle_push(tree, leaf[i]);
}

static void *fold_run(void *arg)
{
	struct tf_audit *a = arg;
	struct folder *f = &a->f;
	unsigned int n;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->n && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		n = f->n;
		if (!n)
			break;
		pthread_mutex_unlock(&f->mu);
		fold(&a->tree, f->leaf, n);
		pthread_mutex_lock(&f->mu);
		f->n = 0;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* The written batch's leaves into the tree: handed to the folder, or folded here. */
static void fold_hand(struct tf_audit *a)
{
	struct folder *f = &a->f;
	__u8(*t)[TF_HASH_LEN];

	if (!f->on) {
		fold(&a->tree, a->leaf, a->batch_lines);
		return;
	}
	pthread_mutex_lock(&f->mu);
	while (f->n)
		pthread_cond_wait(&f->cv, &f->mu);
	t = f->leaf;
	f->leaf = a->leaf;
	a->leaf = t;
	f->n = a->batch_lines;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Before the tree is read: every leaf handed over is in it. */
static void fold_wait(struct tf_audit *a)
{
	struct folder *f = &a->f;

	if (!f->on)
		return;
	pthread_mutex_lock(&f->mu);
	while (f->n)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
}

int tf_audit_start(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;
	sigset_t all, old;
	int err;

	if (!a || a->f.on)
		return 0;
	a->f.stop = 0;
	/* Signals are the main loop's (signalfd): the thread starts with all of them blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&a->f.thread, NULL, fold_run, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	a->f.on = 1;
	return 0;
}

static void fold_stop(struct tf_audit *a)
{
	struct folder *f = &a->f;

	if (!f->on)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	f->on = 0;
}

/* Write the batch; on failure cut the file back and take its lines out of the tree. */
int tf_audit_flush(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;
	int err;

	if (!a || !a->len)
		return 0;
	err = write_all(a->fd, a->buf, a->len);
	if (!err) {
		fold_hand(a);
		a->committed += a->len;
		if (a->failing)
			pr_warn("event log `%s' written again\n", d->cfg.event_log);
		a->failing = 0;
	} else {
		if (ftruncate(a->fd, a->committed))
			pr_warn("event log `%s': cannot cut a torn batch off: %s\n",
				d->cfg.event_log, strerror(errno));
		if (!a->failing)
			pr_warn("event log `%s': cannot write: %s (lines are counted as unwritten)\n",
				d->cfg.event_log, strerror(-err));
		a->failing = 1;
		a->unwritten += a->batch_lines;
		a->lines_since -= a->batch_lines;
		a->size = a->size0;
		memcpy(a->last, a->last0, TF_HASH_LEN);
	}
	a->len = 0;
	a->batch_lines = 0;
	return err;
}

/* What "seq" and "prev" add to a line at most: ,"seq":N,"prev":"H" and a quote. */
#define CHAIN_MAX (7 + 20 + 9 + TF_CHAIN_HEX + 1)

/*
 * Seal one line: line[0..n) is a JSON object; "seq" and "prev" are added
 * before its closing brace (cap must leave room for them), it is hashed
 * into the tree and queued. Returns the new length (0: not sealed). A full
 * batch is written before the line's "seq" and "prev" are made, so that a
 * batch that cannot be written moves them back with the chain.
 */
static size_t audit_leaf(struct tf_daemon *d, char *line, size_t n, size_t cap, int chain)
{
	struct tf_audit *a = d->audit;
	char hex[2 * TF_HASH_LEN + 1];

	if (!n || line[n - 1] != '}')
		return 0;
	if ((a->len + n + (chain ? CHAIN_MAX : 0) + 1 > sizeof(a->buf) ||
	     a->batch_lines == BATCH_LINES) &&
	    tf_audit_flush(d) && a->len)
		return 0;
	if (chain) {
		/* ,"seq":N,"prev":"H"} by hand: this is on the drain path of every event. */
		char d[20];
		__u64 v = a->size;
		int i = sizeof(d);

		do {
			d[--i] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		if (n - 1 + 7 + (sizeof(d) - i) + 9 + TF_CHAIN_HEX + 2 >= cap)
			return 0;
		n--;
		memcpy(line + n, ",\"seq\":", 7);
		n += 7;
		memcpy(line + n, d + i, sizeof(d) - i);
		n += sizeof(d) - i;
		memcpy(line + n, ",\"prev\":\"", 9);
		n += 9;
		tf_hex(a->last, TF_CHAIN_HEX / 2, hex);
		memcpy(line + n, hex, TF_CHAIN_HEX);
		n += TF_CHAIN_HEX;
		memcpy(line + n, "\"}", 2);
		n += 2;
	}
	if (!a->batch_lines) {
		a->size0 = a->size;
		memcpy(a->last0, a->last, TF_HASH_LEN);
	}
	tf_leaf_hash(line, n, a->leaf[a->batch_lines]);
	memcpy(a->last, a->leaf[a->batch_lines], TF_HASH_LEN);
	a->size++;
	memcpy(a->buf + a->len, line, n);
	a->buf[a->len + n] = '\n';
	a->len += n + 1;
	a->batch_lines++;
	a->lines_since++;
	return n;
}

size_t tf_audit_line(struct tf_daemon *d, char *line, size_t n, size_t cap, __u32 suppressed)
{
	size_t len;

	if (!d->audit)
		return n;
	d->audit->suppressed += suppressed;
	len = audit_leaf(d, line, n, cap, 1);
	/* A line that could not be sealed is not written either: the next seal line counts it. */
	if (!len)
		d->audit->unwritten++;
	return len;
}

void tf_audit_unwritten(struct tf_daemon *d)
{
	if (d->audit)
		d->audit->unwritten++;
}

/* Replace <state_dir>/log.checkpoint with note, atomically. */
static void checkpoint_file(struct tf_daemon *d, const char *note, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int fd;

	snprintf(path, sizeof(path), "%s/log.checkpoint", d->cfg.state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0 || write_all(fd, note, len) || fsync(fd) || rename(tmp, path)) {
		pr_warn("cannot write `%s': %s\n", path, strerror(errno));
		unlink(tmp);
	}
	if (fd >= 0)
		close(fd);
}

int tf_audit_seal(struct tf_daemon *d, const char *why)
{
	struct tf_audit *a = d->audit;
	char line[4096], tbuf[48], note[TF_NOTE_MAX], text[TF_NOTE_MAX], q[2 * TF_NOTE_MAX];
	struct tf_checkpoint cp = {};
	size_t n;
	int len, err;

	if (!a)
		return 0;
	/* The batch first: a part it could not write is in the totals below, not after them. */
	tf_audit_flush(d);
	/* why: start, checkpoint, heartbeat, rotate or stop (docs/audit.md). */
	now_rfc3339(tbuf, sizeof(tbuf));
	n = snprintf(line, sizeof(line),
		     "{\"time\":\"%s\",\"kind\":\"seal\",\"reason\":\"%s\",\"origin\":\"%s\","
		     "\"size\":%llu,\"lost\":%llu,\"suppressed\":%llu,\"unwritten\":%llu}",
		     tbuf, why, a->origin, (unsigned long long)a->size + 1,
		     (unsigned long long)d->lost_reported, (unsigned long long)a->suppressed,
		     (unsigned long long)a->unwritten);
	if (n >= sizeof(line) || !audit_leaf(d, line, n, sizeof(line), 1))
		return -ENOSPC;
	err = tf_audit_flush(d);
	clock_gettime(CLOCK_MONOTONIC, &a->last_cp);
	if (err)
		return err;
	snprintf(cp.origin, sizeof(cp.origin), "%s", a->origin);
	fold_wait(a);
	cp.size = a->tree.size;
	tf_merkle_root(&a->tree, cp.root);
	if (tf_checkpoint_text(&cp, text, sizeof(text)) < 0)
		return -EIO;
	len = tf_note_sign(&a->key[0], text, note, sizeof(note));
	if (len >= 0 && a->key[1].pkey)
		len = tf_note_cosign(&a->key[1], note, len, sizeof(note));
	if (len < 0)
		return len;
	if (!json_quote(note, q, sizeof(q)))
		return -ENOSPC;
	n = snprintf(line, sizeof(line),
		     "{\"time\":\"%s\",\"kind\":\"checkpoint\",\"origin\":\"%s\",\"size\":%llu,"
		     "\"note\":%s}\n",
		     tbuf, a->origin, (unsigned long long)cp.size, q);
	if (n >= sizeof(line))
		return -ENOSPC;
	err = write_all(a->fd, line, n);
	if (err) {
		if (ftruncate(a->fd, a->committed))
			pr_warn("event log: cannot cut a torn checkpoint off: %s\n",
				strerror(errno));
		return err;
	}
	a->committed += n;
	a->checkpoints++;
	a->last_cp_wall = time(NULL);
	a->sealed_size = cp.size;
	memcpy(a->note, note, len + 1);
	a->lines_since = 0;
	checkpoint_file(d, note, len);
	if (d->foreground)
		fwrite(line, 1, n, stdout);
	tf_ctl_broadcast(d, 0, line, n - 1);
	return 0;
}

static int rotate(struct tf_daemon *d);
static void zip_step(struct tf_daemon *d);

void tf_audit_tick(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;
	struct timespec now;

	if (!a)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	zip_step(d);
	if (now.tv_sec >= a->rotate_retry &&
	    ((d->cfg.log_segment_bytes &&
	      (unsigned long long)a->committed >= d->cfg.log_segment_bytes) ||
	     (d->cfg.log_segment_age_s &&
	      now.tv_sec - a->opened >= (time_t)d->cfg.log_segment_age_s)) &&
	    rotate(d))
		a->rotate_retry = now.tv_sec + ROTATE_RETRY_S; /* and go on sealing this file */
	if (a->lines_since >= d->cfg.log_checkpoint_lines ||
	    (now.tv_sec - a->last_cp.tv_sec) * 1000 +
			    (now.tv_nsec - a->last_cp.tv_nsec) / 1000000 >=
		    (long long)d->cfg.log_checkpoint_s * 1000)
		tf_audit_seal(d, a->lines_since ? "checkpoint" : "heartbeat");
}

/* Open the log for appending; a last line without its newline (a kill -9) is ended first. */
static int log_open(struct tf_daemon *d, int *torn)
{
	struct tf_audit *a = d->audit;
	struct stat st;
	char c;

	*torn = 0;
	a->fd = open(d->cfg.event_log, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		     0640);
	if (a->fd < 0)
		return -errno;
	if (fstat(a->fd, &st))
		return -errno;
	a->committed = st.st_size;
	if (st.st_size > 0) {
		int rfd = open(d->cfg.event_log, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (rfd >= 0 && pread(rfd, &c, 1, st.st_size - 1) == 1 && c != '\n') {
			*torn = 1;
			if (write_all(a->fd, "\n", 1) == 0)
				a->committed++;
		}
		if (rfd >= 0)
			close(rfd);
	}
	fchmod(a->fd, 0640);
	return 0;
}

/* Whether note is a checkpoint this node's key signed (else it is not quoted into the log). */
static int own_note(struct tf_daemon *d, const char *note, size_t n)
{
	struct tf_verifier v;
	struct tf_checkpoint c;
	char err[128];

	return !tf_verifier_parse(d->audit->vkey[0], &v, err, sizeof(err)) &&
	       tf_note_verify(&v, note, n, &c) == TF_NOTE_OK;
}

/* The previous epoch's last checkpoint (the checkpoint file), quoted for the epoch line. */
static void prev_checkpoint(struct tf_daemon *d, char *q, size_t qlen, char *why, size_t whylen)
{
	char path[PATH_MAX], note[TF_NOTE_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/log.checkpoint", d->cfg.state_dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(q, qlen, "null");
		snprintf(why, whylen, "%s",
			 errno == ENOENT ? "no earlier checkpoint" : strerror(errno));
		return;
	}
	n = read(fd, note, sizeof(note) - 1);
	close(fd);
	if (n <= 0) {
		snprintf(q, qlen, "null");
		snprintf(why, whylen, "the checkpoint file is empty or unreadable");
		return;
	}
	note[n] = 0;
	if (!own_note(d, note, n)) {
		snprintf(q, qlen, "null");
		snprintf(why, whylen, "the checkpoint file holds no checkpoint signed by this key");
		return;
	}
	if (!json_quote(note, q, qlen)) {
		snprintf(q, qlen, "null");
		snprintf(why, whylen, "the checkpoint file is too large");
		return;
	}
	snprintf(why, whylen, "the last checkpoint written before this start");
}

/* The first leaf of an epoch (or of a file after a rotation); no "prev". */
/*
 * The first line of a file after a rotation: the tree goes on at size S.
 * It carries the checkpoint of size S and the tree's right edge (the roots
 * of its complete subtrees, smallest first), so the file can be verified
 * without the files before it (docs/audit.md).
 */
static size_t continue_line(const struct tf_audit *a, unsigned int checkpoint_s, const char *tbuf,
			    int torn, char *line, size_t cap)
{
	char q[2 * TF_NOTE_MAX], b64[64];
	size_t n;
	int i;

	n = snprintf(line, cap,
		     "{\"time\":\"%s\",\"kind\":\"continue\",\"origin\":\"%s\","
		     "\"size\":%llu,\"checkpoint_s\":%u,\"torn_tail\":%s",
		     tbuf, a->origin, (unsigned long long)a->tree.size, checkpoint_s,
		     torn ? "true" : "false");
	if (n >= cap || a->sealed_size != a->tree.size || !json_quote(a->note, q, sizeof(q)))
		return n < cap ? n + snprintf(line + n, cap - n, "}") : cap;
	n += snprintf(line + n, cap - n, ",\"checkpoint\":%s,\"frontier\":[", q);
	for (i = 0; i < 64 && n < cap; i++) {
		if (!(a->tree.size >> i & 1))
			continue;
		tf_b64_encode(a->tree.node[i], TF_HASH_LEN, b64, sizeof(b64));
		n += snprintf(line + n, cap - n, "%s\"%s\"", line[n - 1] == '[' ? "" : ",", b64);
	}
	return n < cap ? n + snprintf(line + n, cap - n, "]}") : cap;
}

static int epoch_line(struct tf_daemon *d, const char *kind, int torn)
{
	struct tf_audit *a = d->audit;
	char line[8192], tbuf[48], prev[2 * TF_NOTE_MAX], why[128], ecdsa[TF_VKEY_MAX + 32] = "";
	size_t n;

	now_rfc3339(tbuf, sizeof(tbuf));
	if (!strcmp(kind, "epoch")) {
		prev_checkpoint(d, prev, sizeof(prev), why, sizeof(why));
		if (a->key[1].pkey)
			snprintf(ecdsa, sizeof(ecdsa), "\"ecdsa_key\":\"%s\",", a->vkey[1]);
		n = snprintf(
			line, sizeof(line),
			"{\"time\":\"%s\",\"kind\":\"epoch\",\"origin\":\"%s\",\"key\":\"%s\",%s"
			"\"checkpoint_lines\":%u,\"checkpoint_s\":%u,\"torn_tail\":%s,"
			"\"prev\":%s,\"prev_why\":\"%s\"}",
			tbuf, a->origin, a->vkey[0], ecdsa, d->cfg.log_checkpoint_lines,
			d->cfg.log_checkpoint_s, torn ? "true" : "false", prev, why);
	} else {
		tf_audit_flush(d); /* the tree's size is then every line sealed */
		fold_wait(a);
		n = continue_line(a, d->cfg.log_checkpoint_s, tbuf, torn, line, sizeof(line));
	}
	if (n >= sizeof(line) || !audit_leaf(d, line, n, sizeof(line), strcmp(kind, "epoch")))
		return -ENOSPC;
	return tf_audit_flush(d);
}

/* Key i's path (the ECDSA one "" when not configured) and type. */
static const char *key_path(const struct tf_daemon *d, int i)
{
	return i ? d->cfg.log_ecdsa_key : d->cfg.log_key;
}

static enum tf_key_type key_type(int i)
{
	return i ? TF_KEY_ECDSA : TF_KEY_ED25519;
}

static int write_vkey(const char *key_path, const char *vkey)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s.pub", key_path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = write_all(fd, vkey, strlen(vkey));
	if (!err)
		err = write_all(fd, "\n", 1);
	if (!err && (fchmod(fd, 0644) || rename(tmp, path)))
		err = -errno;
	close(fd);
	if (err)
		unlink(tmp);
	return err;
}

/* fsync the directory holding path (a rename into it must survive a crash). */
static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Whether the file at path holds the bytes pat (read in chunks that overlap by its length). */
static int file_holds(const char *path, const char *pat)
{
	size_t plen = strlen(pat), have = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), found = 0;
	char *buf = malloc(ZIP_CHUNK + plen);
	ssize_t n;

	while (fd >= 0 && buf && !found && (n = read(fd, buf + have, ZIP_CHUNK)) > 0) {
		have += n;
		found = memmem(buf, have, pat, plen) != NULL;
		if (have > plen) {
			memmove(buf, buf + have - plen, plen);
			have = plen;
		}
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	return found;
}

/*
 * A rotation cut short by a crash left <key>.new: if its key line made it
 * into the log, the log hands on to it, so it becomes the key now; if not,
 * nothing names it and it goes.
 */
static int finish_rotation(struct tf_daemon *d, const char *path, const char *name,
			   enum tf_key_type type)
{
	char tmp[PATH_MAX], vkey[TF_VKEY_MAX], pat[TF_VKEY_MAX + 16], err[256];
	struct tf_signer s;
	int named;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp) || access(tmp, F_OK))
		return 0;
	named = !tf_signer_open(tmp, name, type, &s, err, sizeof(err)) &&
		tf_signer_vkey(&s, vkey, sizeof(vkey)) > 0 &&
		snprintf(pat, sizeof(pat), "\"new\":\"%s\"", vkey) < (int)sizeof(pat) &&
		file_holds(d->cfg.event_log, pat);
	tf_signer_close(&s);
	if (named) {
		/* The log retired the old key: signing with it again would break the chain. */
		if (rename(tmp, path)) {
			pr_warn("log key `%s': the log hands on to `%s', which cannot replace it: %s "
				"(not starting with a retired key)\n",
				path, tmp, strerror(errno));
			return -errno;
		}
		sync_dir(path);
		pr_warn("log key `%s': a rotation cut short is completed (the log names `%s')\n",
			path, tmp);
	} else if (!unlink(tmp)) {
		pr_warn("log key `%s': removed `%s', left by a rotation cut short before its key line\n",
			path, tmp);
	}
	return 0;
}

/* The host name, as a signed-note name allows it (no space, no '+'). */
static void log_name_default(char *buf, size_t len)
{
	char *p;

	if (gethostname(buf, len) || !buf[0])
		snprintf(buf, len, "localhost");
	buf[len - 1] = 0;
	for (p = buf; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '+' || (unsigned char)*p >= 0x7f)
			*p = '-';
}

void tf_audit_dir(const struct tf_config *cfg, char *dir, size_t len)
{
	char path[TF_PATH_MAX];

	snprintf(path, sizeof(path), "%s", cfg->event_log);
	snprintf(dir, len, "%s", dirname(path));
}

int tf_audit_open(struct tf_daemon *d)
{
	char err[256], dir[PATH_MAX];
	struct timespec ts;
	struct tf_audit *a;
	int ret, torn, i;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->zip_in = a->zip_fd = -1;
	a->leaf = a->leaves[0];
	a->f.leaf = a->leaves[1];
	pthread_mutex_init(&a->f.mu, NULL);
	pthread_cond_init(&a->f.cv, NULL);
	d->audit = a;
	tf_audit_dir(&d->cfg, dir, sizeof(dir));
	if (strcmp(dir, "/"))
		mkdir(dir, 0750);
	if (!d->cfg.log_key[0] && snprintf(d->cfg.log_key, sizeof(d->cfg.log_key), "%s/log.key",
					   d->cfg.state_dir) >= (int)sizeof(d->cfg.log_key)) {
		pr_warn("state_dir `%s': too long for the log key's path\n", d->cfg.state_dir);
		ret = -ENAMETOOLONG;
		goto fail;
	}
	if (!d->cfg.log_name[0])
		log_name_default(d->cfg.log_name, sizeof(d->cfg.log_name));
	snprintf(dir, sizeof(dir), "tapfence/%s", d->cfg.log_name);
	for (i = 0; i < TF_AUDIT_KEYS; i++) {
		const char *path = key_path(d, i);

		if (!path[0])
			continue;
		ret = finish_rotation(d, path, dir, key_type(i));
		if (ret)
			goto fail;
		ret = tf_signer_open(path, dir, key_type(i), &a->key[i], err, sizeof(err));
		if (ret) {
			pr_warn("%s\n", err);
			goto fail;
		}
		if (tf_signer_vkey(&a->key[i], a->vkey[i], sizeof(a->vkey[i])) < 0 ||
		    (ret = write_vkey(path, a->vkey[i]))) {
			pr_warn("cannot write `%s.pub': %s\n", path, strerror(-ret));
			ret = ret ? ret : -EIO;
			goto fail;
		}
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(a->origin, sizeof(a->origin), "tapfence/%s/%lld.%09ld", d->cfg.log_name,
		 (long long)ts.tv_sec, ts.tv_nsec);
	ret = log_open(d, &torn);
	if (ret) {
		pr_warn("cannot open event log `%s': %s\n", d->cfg.event_log, strerror(-ret));
		goto fail;
	}
	tf_merkle_init(&a->tree);
	ret = epoch_line(d, "epoch", torn);
	/* Sealed at once: the epoch is signed before anything happens in it. */
	if (!ret)
		ret = tf_audit_seal(d, "start");
	a->opened = a->last_cp.tv_sec;
	if (ret) {
		pr_warn("cannot write to event log `%s': %s\n", d->cfg.event_log, strerror(-ret));
		goto fail;
	}
	return 0;
fail:
	tf_audit_close_fd(d);
	return ret;
}

/* Seal the file, open event_log anew (another file by now), go on with the tree there. */
static int switch_file(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;
	int fd = a->fd, torn, ret;
	struct timespec now;

	tf_audit_seal(d, "rotate");
	ret = log_open(d, &torn);
	if (ret) {
		a->fd = fd;
		return ret;
	}
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &now);
	a->opened = now.tv_sec;
	return epoch_line(d, "continue", torn);
}

/* SIGHUP: the file was moved away (an external rotation). */
int tf_audit_reopen(struct tf_daemon *d)
{
	return d->audit ? switch_file(d) : -EBADF;
}

void tf_audit_note(struct tf_daemon *d, const char *kind, const char *fmt, ...)
{
	char line[1024], tbuf[48];
	va_list ap;
	size_t n;

	now_rfc3339(tbuf, sizeof(tbuf));
	n = snprintf(line, sizeof(line), "{\"time\":\"%s\",\"kind\":\"%s\",", tbuf, kind);
	va_start(ap, fmt);
	n += vsnprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, fmt, ap);
	va_end(ap);
	if (!d->audit || n + 2 >= sizeof(line) - 64)
		return;
	line[n++] = '}';
	n = audit_leaf(d, line, n, sizeof(line), 1);
	if (!n)
		return;
	tf_audit_flush(d);
	if (d->foreground)
		printf("%.*s\n", (int)n, line);
	tf_ctl_broadcast(d, 0, line, n);
}

const struct tf_signer *tf_audit_signer(const struct tf_daemon *d, int i)
{
	return d->audit && i >= 0 && i < TF_AUDIT_KEYS && d->audit->key[i].pkey ?
		       &d->audit->key[i] :
		       NULL;
}

const char *tf_audit_origin(const struct tf_daemon *d)
{
	return d->audit ? d->audit->origin : NULL;
}

const char *tf_audit_vkey(const struct tf_daemon *d, int i)
{
	return tf_audit_signer(d, i) ? d->audit->vkey[i] : NULL;
}

const char *tf_audit_last_note(const struct tf_daemon *d)
{
	return d->audit && d->audit->checkpoints ? d->audit->note : NULL;
}

/*
 * Replace key i: a checkpoint by the old keys, a new key at <path>.new, a
 * sealed "key" line whose endorsement (origin, the line's index, the root
 * of the tree before it, the old and the new verifier key) both keys sign,
 * then the new key renamed over the old one and used from here on. A
 * verifier that trusts the old key learns the new one from the line and
 * retires the old one there (docs/audit.md). A crash between the line and
 * the rename is completed at the next start (finish_rotation()).
 */
static int rotate_one(struct tf_daemon *d, int i, char *err, size_t errlen)
{
	struct tf_audit *a = d->audit;
	char tmp[PATH_MAX], text[TF_NOTE_MAX], note[TF_NOTE_MAX], q[2 * TF_NOTE_MAX];
	char vkey[TF_VKEY_MAX], line[4096], tbuf[48], root64[64];
	const char *path = key_path(d, i);
	__u8 root[TF_HASH_LEN];
	struct tf_signer ns;
	size_t n;
	int len, ret;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/*
	 * Sealed first, by the old key: the endorsement names the tree it hands
	 * on from (its size, which is the key line's index, and its root), so
	 * the new key cannot sign another history of what the old one sealed.
	 */
	if (tf_audit_seal(d, "key") || a->sealed_size != a->size) {
		snprintf(err, errlen,
			 "event log: cannot seal before the rotation (the old key stays)");
		return -EIO;
	}
	tf_merkle_root(&a->tree, root); /* sealed: the folder has folded every leaf */
	if (tf_b64_encode(root, TF_HASH_LEN, root64, sizeof(root64)) < 0) {
		snprintf(
			err, errlen,
			"event log: cannot encode the tree's root for the rotation (the old key stays)");
		return -EIO;
	}
	unlink(tmp); /* what a rotation cut short left: never used */
	ret = tf_signer_create(tmp, a->key[i].name, key_type(i), &ns, err, errlen);
	if (ret)
		return ret;
	ret = -EIO;
	if (tf_signer_vkey(&ns, vkey, sizeof(vkey)) < 0)
		goto fail;
	n = snprintf(text, sizeof(text), "tapfence key rotation\n%s\n%llu\n%s\n%s\n%s\n", a->origin,
		     (unsigned long long)a->tree.size, root64, a->vkey[i], vkey);
	if (n >= sizeof(text))
		goto fail;
	len = tf_note_sign(&a->key[i], text, note, sizeof(note));
	if (len >= 0)
		len = tf_note_cosign(&ns, note, len, sizeof(note));
	if (len < 0 || !json_quote(note, q, sizeof(q)))
		goto fail;
	now_rfc3339(tbuf, sizeof(tbuf));
	n = snprintf(line, sizeof(line),
		     "{\"time\":\"%s\",\"kind\":\"key\",\"origin\":\"%s\",\"type\":\"%s\","
		     "\"old\":\"%s\",\"new\":\"%s\",\"endorsement\":%s}",
		     tbuf, a->origin, tf_key_type_name(key_type(i)), a->vkey[i], vkey, q);
	if (n >= sizeof(line) - 64 || !(n = audit_leaf(d, line, n, sizeof(line), 1)) ||
	    tf_audit_flush(d)) {
		snprintf(err, errlen, "event log: cannot write the key line (the old key stays)");
		goto fail;
	}
	/* The line on disk before the key it names replaces the old one. */
	if (fdatasync(a->fd))
		pr_warn("event log: cannot sync the key line: %s\n", strerror(errno));
	if (rename(tmp, path)) {
		/* The line is written: the new key signs from here on, the old file stays the key. */
		pr_warn("log key `%s': cannot replace it with `%s': %s (the old key stays on disk)\n",
			path, tmp, strerror(errno));
	} else {
		sync_dir(path);
	}
	tf_signer_close(&a->key[i]);
	a->key[i] = ns;
	snprintf(a->vkey[i], sizeof(a->vkey[i]), "%s", vkey);
	if (write_vkey(path, vkey))
		pr_warn("cannot write `%s.pub'\n", path);
	pr_info("log key `%s' rotated: %s\n", path, vkey);
	if (d->foreground)
		printf("%.*s\n", (int)n, line);
	tf_ctl_broadcast(d, 0, line, n);
	return 0;
fail:
	tf_signer_close(&ns);
	unlink(tmp);
	if (!err[0])
		snprintf(err, errlen, "log key `%s': cannot make the new key", path);
	return ret;
}

int tf_audit_rotate_key(struct tf_daemon *d, char *err, size_t errlen)
{
	int i, ret = 0, done = 0;

	err[0] = 0;
	if (!d->audit) {
		snprintf(err, errlen, "the sealed log is not open");
		return -EBADF;
	}
	for (i = 0; i < TF_AUDIT_KEYS && !ret; i++) {
		if (!d->audit->key[i].pkey)
			continue;
		ret = rotate_one(d, i, err, errlen);
		done += !ret;
	}
	if (ret && done) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen,
			 "the Ed25519 key was rotated (a sealed key line), not the ECDSA "
			 "key: %s",
			 why);
	}
	/* The rotation is sealed at once, by the new keys. */
	if (done && tf_audit_seal(d, "key") && !ret) {
		snprintf(err, errlen, "event log: the rotation could not be sealed");
		ret = -EIO;
	}
	return ret;
}

struct segment {
	char name[NAME_MAX + 1];
	off_t size;
	time_t mtime;
};

/* What rotate() names a closed segment after the base name: 20261201T220531.123456789Z[.gz]. */
static int segment_name(const char *s)
{
	static const char pat[] = "ddddddddTdddddd.dddddddddZ";
	size_t i;

	for (i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return 0;
	return !s[i] || !strcmp(s + i, ".gz");
}

static int seg_cmp(const void *x, const void *y)
{
	return strcmp(((const struct segment *)x)->name, ((const struct segment *)y)->name);
}

/*
 * Closed segments are <event_log>.<UTC time, ns>Z[.gz]: remove the oldest while
 * they add up to more than retain_bytes, and any older than retain_days. The one being compressed is left to the next pass. Each
 * removal is a sealed line of the log.
 */
static void retention(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;
	char dir[PATH_MAX], base[PATH_MAX], path[PATH_MAX * 2], qname[6 * NAME_MAX + 3];
	struct segment *seg = NULL, *tmp;
	size_t n = 0, cap = 0, blen, i;
	unsigned long long total = 0;
	time_t now = time(NULL);
	struct dirent *de;
	struct stat st;
	DIR *dp;

	if (!d->cfg.log_retain_bytes && !d->cfg.log_retain_days)
		return;
	snprintf(dir, sizeof(dir), "%s", d->cfg.event_log);
	snprintf(base, sizeof(base), "%s.", basename(dir));
	tf_audit_dir(&d->cfg, dir, sizeof(dir));
	blen = strlen(base);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((de = readdir(dp))) {
		if (strncmp(de->d_name, base, blen) || !segment_name(de->d_name + blen))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			tmp = realloc(seg, (cap = cap ? 2 * cap : 16) * sizeof(*seg));
			if (!tmp)
				break;
			seg = tmp;
		}
		snprintf(seg[n].name, sizeof(seg[n].name), "%s", de->d_name);
		seg[n].size = st.st_size;
		seg[n].mtime = st.st_mtime;
		total += st.st_size;
		n++;
	}
	closedir(dp);
	qsort(seg, n, sizeof(*seg), seg_cmp);
	for (i = 0; i < n; i++) {
		int old = d->cfg.log_retain_days &&
			  now - seg[i].mtime > (time_t)d->cfg.log_retain_days * 86400;

		snprintf(path, sizeof(path), "%s/%s", dir, seg[i].name);
		if (a->zip_in >= 0 && !strncmp(path, a->zip_src, strlen(a->zip_src)))
			continue;
		if (!old && (!d->cfg.log_retain_bytes || total <= d->cfg.log_retain_bytes))
			break;
		if (unlink(path))
			continue;
		total -= seg[i].size;
		pr_info("event log: removed segment `%s' (%lld bytes, retention)\n", path,
			(long long)seg[i].size);
		json_quote_as(seg[i].name, qname, sizeof(qname), 1);
		tf_audit_note(d, "retention", "\"removed\":%s,\"bytes\":%lld,\"why\":\"%s\"", qname,
			      (long long)seg[i].size, old ? "retain_days" : "retain_bytes");
	}
	free(seg);
}

static void zip_end(struct tf_audit *a, int ok)
{
	char tmp[PATH_MAX + 8], dst[PATH_MAX + 8];

	snprintf(tmp, sizeof(tmp), "%s.gz.tmp", a->zip_src);
	snprintf(dst, sizeof(dst), "%s.gz", a->zip_src);
	/* The .gz reaches the disk before the plain segment goes (gzflush, then fsync of a dup). */
	if (gzflush(a->zip_out, Z_FINISH) != Z_OK || fsync(a->zip_fd))
		ok = 0;
	close(a->zip_fd);
	if (gzclose(a->zip_out) != Z_OK)
		ok = 0;
	close(a->zip_in);
	a->zip_in = -1;
	a->zip_out = NULL;
	if (ok && !link(tmp, dst)) {
		unlink(tmp);
		unlink(a->zip_src);
		return;
	}
	pr_warn("event log: cannot compress `%s' (kept as it is)\n", a->zip_src);
	unlink(tmp);
}

/* Compress a chunk of the closed segment; at its end, replace it with the .gz. */
static void zip_step(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;
	static char buf[ZIP_CHUNK];
	ssize_t n;

	if (a->zip_in < 0)
		return;
	n = read(a->zip_in, buf, sizeof(buf));
	if (n > 0 && gzwrite(a->zip_out, buf, (unsigned int)n) == n)
		return;
	zip_end(a, n == 0);
	retention(d);
}

static void zip_start(struct tf_daemon *d, const char *src)
{
	struct tf_audit *a = d->audit;
	char tmp[PATH_MAX + 8];
	int out;

	while (a->zip_in >= 0) /* one at a time: finish the one before */
		zip_step(d);
	snprintf(a->zip_src, sizeof(a->zip_src), "%s", src);
	snprintf(tmp, sizeof(tmp), "%s.gz.tmp", src);
	a->zip_in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	a->zip_fd = out >= 0 ? dup(out) : -1;
	a->zip_out = out >= 0 && a->zip_fd >= 0 ? gzdopen(out, "wb6") : NULL;
	if (a->zip_in < 0 || !a->zip_out) {
		pr_warn("event log: cannot compress `%s': %s\n", src, strerror(errno));
		if (a->zip_in >= 0)
			close(a->zip_in);
		if (out >= 0 && !a->zip_out)
			close(out);
		if (a->zip_out)
			gzclose(a->zip_out);
		if (a->zip_fd >= 0)
			close(a->zip_fd);
		a->zip_in = -1;
		a->zip_out = NULL;
		unlink(tmp);
	}
}

/* Size or age reached: the daemon rotates the file itself, then compresses the closed one. */
static int rotate(struct tf_daemon *d)
{
	char seg[PATH_MAX], ts[32];
	struct timespec t;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y%m%dT%H%M%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%09ldZ", t.tv_nsec);
	if (snprintf(seg, sizeof(seg), "%s.%s", d->cfg.event_log, ts) >= (int)sizeof(seg))
		return -ENAMETOOLONG;
	/* link + unlink, not rename: never over an existing segment. */
	if (link(d->cfg.event_log, seg)) {
		pr_warn("event log: cannot rotate to `%s': %s (going on in this file, again in %d s)\n",
			seg, strerror(errno), ROTATE_RETRY_S);
		return -errno;
	}
	if (unlink(d->cfg.event_log) || switch_file(d)) {
		pr_warn("event log: cannot start a new `%s' after rotating: %s (going on in `%s')\n",
			d->cfg.event_log, strerror(errno), seg);
		return -EIO;
	}
	pr_info("event log: rotated to `%s'\n", seg);
	if (d->cfg.log_compress)
		zip_start(d, seg);
	else
		retention(d);
	return 0;
}

void tf_audit_stats(const struct tf_daemon *d, __u64 *size, __u64 *checkpoints, __u64 *unwritten)
{
	const struct tf_audit *a = d->audit;

	*size = a ? a->size : 0;
	*checkpoints = a ? a->checkpoints : 0;
	*unwritten = a ? a->unwritten : 0;
}

time_t tf_audit_last_checkpoint(const struct tf_daemon *d)
{
	return d->audit ? d->audit->last_cp_wall : 0;
}

void tf_audit_close_fd(struct tf_daemon *d)
{
	struct tf_audit *a = d->audit;

	if (!a)
		return;
	while (a->zip_in >= 0)
		zip_step(d);
	fold_stop(a);
	pthread_mutex_destroy(&a->f.mu);
	pthread_cond_destroy(&a->f.cv);
	if (a->fd >= 0)
		close(a->fd);
	tf_signer_close(&a->key[0]);
	tf_signer_close(&a->key[1]);
	free(a);
	d->audit = NULL;
}

void tf_audit_close(struct tf_daemon *d)
{
	if (!d->audit)
		return;
	if (tf_audit_seal(d, "stop"))
		pr_warn("event log: the last lines could not be sealed\n");
	tf_audit_close_fd(d);
}
