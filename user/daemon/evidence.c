// SPDX-License-Identifier: GPL-2.0
/*
 * A session's policy history in the sealed log, and its evidence statement
 * (docs/attest.md). Every policy a session gets (added, restored at a
 * start, a rule added or deleted, deleted) is a sealed "policy" line naming
 * the canonical hash of its spec and rules. With log.session_evidence, a
 * session del also writes a signed statement: the session's first and last
 * line of the log, the checkpoint that seals them, its counters per reason,
 * and every policy hash it had, as a DSSE envelope in
 * <state_dir>/evidence/, for a reviewer after the session is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "common/log.h"
#include "common/reason.h"
#include "common/seal.h"
#include "daemon.h"

/* Policy changes a statement lists at most (a peer looping rule add/del cannot grow it further). */
#define EVIDENCE_POLICIES_MAX 4096

struct tf_evidence {
	char origin[TF_ORIGIN_MAX]; /* the epoch of its first line */
	__u64 first;		    /* the index of its first line there */
	json_t *policies;	    /* [{op, policy_version, spec_sha256, index, time}] */
	__u64 omitted; /* policy changes past EVIDENCE_POLICIES_MAX (their lines are in the log) */
};

int tf_spec_sha256(const struct tf_spec *spec, char hex[2 * TF_HASH_LEN + 1])
{
	json_t *j = tf_spec_to_json(spec);
	__u8 h[TF_HASH_LEN];
	int err = j ? tf_json_digest(j, h) : -ENOMEM;

	json_decref(j);
	if (!err)
		tf_hex(h, TF_HASH_LEN, hex);
	return err;
}

/*
 * A session's spec hash, kept up to date by its changes. The canonical
 * text of a spec (tf_json_digest(): compact, keys sorted) is
 * {"allow":[R1,...,Rn],REST} ("allow" sorts first), so the session keeps a
 * SHA-256 context fed up to Rn: a rule appended costs its own text and
 * REST's, not every rule's again (28 ms at 10,000 rules). Any other change
 * feeds it anew. test_seal.c checks it against tf_spec_sha256().
 */
struct tf_spec_md {
	EVP_MD_CTX *ctx;
	unsigned int n; /* rules fed */
	char hex[2 * TF_HASH_LEN + 1];
};

#define ALLOW_OPEN "{\"allow\":["
#define JSON_CANON (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)

/* Feed rule r's canonical text, after a comma unless it is the first. */
static int md_rule(EVP_MD_CTX *ctx, const struct tf_rule *r, int first)
{
	json_t *j = tf_rule_to_json(r);
	char *txt = j ? json_dumps(j, JSON_CANON) : NULL;
	int ok = txt && (first || EVP_DigestUpdate(ctx, ",", 1)) &&
		 EVP_DigestUpdate(ctx, txt, strlen(txt));

	json_decref(j);
	free(txt);
	return ok ? 0 : -EIO;
}

int tf_sess_spec_hash(struct tf_sess *s, int appended, char hex[2 * TF_HASH_LEN + 1])
{
	struct tf_spec bare = s->spec;
	struct tf_spec_md *m = s->md;
	EVP_MD_CTX *fin = NULL;
	__u8 h[TF_HASH_LEN];
	char *rest = NULL;
	json_t *j;
	int err = -EIO;

	if (!m) {
		m = s->md = calloc(1, sizeof(*m));
		if (!m)
			return -ENOMEM;
	}
	if (!m->ctx && !(m->ctx = EVP_MD_CTX_new()))
		return -ENOMEM;
	m->hex[0] = 0;
	if (!appended || m->n + 1 != s->spec.nrules) {
		m->n = 0;
		if (!EVP_DigestInit_ex(m->ctx, EVP_sha256(), NULL) ||
		    !EVP_DigestUpdate(m->ctx, ALLOW_OPEN, strlen(ALLOW_OPEN)))
			return -EIO;
	}
	for (; m->n < s->spec.nrules; m->n++)
		if (md_rule(m->ctx, &s->spec.rules[m->n], !m->n)) {
			m->n = (unsigned int)-1; /* fed in part: anew next time */
			return -EIO;
		}
	/* REST: the text of the spec without rules, from its empty array's end on. */
	bare.rules = NULL;
	bare.nrules = 0;
	j = tf_spec_to_json(&bare);
	rest = j ? json_dumps(j, JSON_CANON) : NULL;
	json_decref(j);
	if (rest && !strncmp(rest, ALLOW_OPEN "]", strlen(ALLOW_OPEN) + 1) &&
	    (fin = EVP_MD_CTX_new()) && EVP_MD_CTX_copy_ex(fin, m->ctx) &&
	    EVP_DigestUpdate(fin, rest + strlen(ALLOW_OPEN), strlen(rest) - strlen(ALLOW_OPEN)) &&
	    EVP_DigestFinal_ex(fin, h, NULL)) {
		tf_hex(h, TF_HASH_LEN, m->hex);
		memcpy(hex, m->hex, sizeof(m->hex));
		err = 0;
	}
	EVP_MD_CTX_free(fin);
	free(rest);
	return err;
}

const char *tf_sess_spec_sha256(struct tf_sess *s)
{
	char hex[2 * TF_HASH_LEN + 1];

	if (s->md && s->md->hex[0])
		return s->md->hex;
	return tf_sess_spec_hash(s, 0, hex) ? NULL : s->md->hex;
}

static void now_rfc3339(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void tf_evidence_policy(struct tf_daemon *d, struct tf_sess *s, const char *op,
			const struct tf_rule *rule)
{
	char hex[2 * TF_HASH_LEN + 1], tbuf[32], trans[48] = "";
	__u64 index, checkpoints, unwritten;
	json_t *rj = rule ? tf_rule_to_json(rule) : NULL;
	char *rtxt = rj ? json_dumps(rj, JSON_COMPACT) : NULL;
	__u32 transition = s->transition;

	json_decref(rj);
	s->transition = 0;
	if (tf_sess_spec_hash(s, !strcmp(op, "rule.add"), hex)) {
		pr_warn("session %s: cannot hash its policy for the log\n", s->spec.id);
		free(rtxt);
		return;
	}
	/* Versions transition..ver - 1 named the change being written or undone. */
	if (transition)
		snprintf(trans, sizeof(trans), ",\"transition\":[%u,%u]", transition, s->ver - 1);
	tf_audit_stats(d, &index, &checkpoints, &unwritten);
	tf_audit_note(d, "policy",
		      "\"session\":\"%s\",\"op\":\"%s\",\"policy_version\":%u,"
		      "\"spec_sha256\":\"%s\",\"rules\":%u%s%s%s",
		      s->spec.id, op, s->ver, hex, s->spec.nrules, trans, rtxt ? ",\"rule\":" : "",
		      rtxt ?: "");
	free(rtxt);
	/* The history is kept for the statement only: without one, the log line is all. */
	if (!d->cfg.log_session_evidence)
		return;
	if (!s->ev) {
		s->ev = calloc(1, sizeof(*s->ev));
		if (!s->ev)
			return;
		s->ev->first = index;
		snprintf(s->ev->origin, sizeof(s->ev->origin), "%s", tf_audit_origin(d) ?: "");
		s->ev->policies = json_array();
	}
	if (strcmp(op, "del") && json_array_size(s->ev->policies) >= EVIDENCE_POLICIES_MAX - 1) {
		s->ev->omitted++;
		return;
	}
	now_rfc3339(tbuf, sizeof(tbuf));
	json_array_append_new(s->ev->policies,
			      json_pack("{s:s, s:I, s:s, s:I, s:s, s:o*}", "op", op, "policy_version",
					(json_int_t)s->ver, "spec_sha256", hex, "index",
					(json_int_t)index, "time", tbuf, "transition",
					transition ? json_pack("[I, I]", (json_int_t)transition,
							       (json_int_t)s->ver - 1) :
						     NULL));
}

void tf_evidence_free(struct tf_sess *s)
{
	if (s->md) {
		EVP_MD_CTX_free(s->md->ctx);
		free(s->md);
		s->md = NULL;
	}
	if (!s->ev)
		return;
	json_decref(s->ev->policies);
	free(s->ev);
	s->ev = NULL;
}

/* Write env to <state_dir>/evidence/<id>.<time>.json (never over a file); its path in path. */
static int evidence_write(struct tf_daemon *d, const char *id, const json_t *env, char *path,
			  size_t len)
{
	char dir[PATH_MAX], tbuf[32];
	time_t t = time(NULL);
	struct tm tm;
	int fd, err = 0;
	char *txt;

	gmtime_r(&t, &tm);
	strftime(tbuf, sizeof(tbuf), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(dir, sizeof(dir), "%s/evidence", d->cfg.state_dir);
	if (mkdir(dir, 0750) && errno != EEXIST)
		return -errno;
	if (snprintf(path, len, "%s/%s.%s.json", dir, id, tbuf) >= (int)len)
		return -ENAMETOOLONG;
	txt = json_dumps(env, JSON_INDENT(2));
	if (!txt)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0 || write(fd, txt, strlen(txt)) != (ssize_t)strlen(txt) ||
	    write(fd, "\n", 1) != 1 || fsync(fd))
		err = -errno ? -errno : -EIO;
	if (fd >= 0)
		close(fd);
	if (err && fd >= 0)
		unlink(path);
	free(txt);
	return err;
}

int tf_evidence_end(struct tf_daemon *d, struct tf_sess *s, char *path, size_t len)
{
	char hex[2 * TF_HASH_LEN + 1], tbuf[32], subject[TF_ID_MAX + 16];
	__u64 cnt[TF_CNT_SLOTS] = {}, last, checkpoints, unwritten;
	json_t *counters, *stmt = NULL, *env = NULL;
	const char *note;
	unsigned int r;
	int err = -EIO;

	path[0] = 0;
	tf_evidence_policy(d, s, "del", NULL);
	if (!d->cfg.log_session_evidence)
		return 0;
	tf_audit_stats(d, &last, &checkpoints, &unwritten);
	/* Sealed now: the statement names the checkpoint that covers the session's last line. */
	if (!s->ev || !last || tf_audit_seal(d, "evidence") || !(note = tf_audit_last_note(d)) ||
	    tf_sess_spec_hash(s, 0, hex)) {
		pr_warn("session %s: no evidence statement (the log could not seal its lines)\n",
			s->spec.id);
		return -EIO;
	}
	counters = json_object();
	if (counters && !tf_dp_counters(&d->dp, s->sid, cnt))
		for (r = 0; r < TF_REASON_MAX; r++)
			if (cnt[r])
				json_object_set_new(counters, tf_reason_name(r),
						    json_integer(cnt[r]));
	now_rfc3339(tbuf, sizeof(tbuf));
	snprintf(subject, sizeof(subject), "session/%s", s->spec.id);
	stmt = json_pack("{s:s, s:[{s:s, s:{s:s}}], s:s, s:{s:s, s:s, s:s, s:s, s:I, s:I, s:s, "
			 "s:o, s:I, s:I, s:O, s:I}}",
			 "_type", "https://in-toto.io/Statement/v1", "subject", "name", subject,
			 "digest", "sha256", hex, "predicateType", TF_EVIDENCE_PREDICATE,
			 "predicate", "session", s->spec.id, "node", d->cfg.log_name, "ended_at",
			 tbuf, "origin", s->ev->origin, "first_index", (json_int_t)s->ev->first,
			 "last_index", (json_int_t)(last - 1), "checkpoint", note, "counters",
			 counters, "events_lost", (json_int_t)cnt[TF_CNT_EVENTS_LOST],
			 "events_suppressed", (json_int_t)cnt[TF_CNT_EVENTS_SUPPRESSED], "policies",
			 s->ev->policies, "policies_omitted", (json_int_t)s->ev->omitted);
	env = stmt ? tf_attest_sign(d, stmt) : NULL;
	if (env)
		err = evidence_write(d, s->spec.id, env, path, len);
	if (err) {
		pr_warn("session %s: cannot write its evidence statement: %s\n", s->spec.id,
			strerror(-err));
		path[0] = 0;
	} else {
		tf_audit_note(d, "evidence",
			      "\"session\":\"%s\",\"first_index\":%llu,"
			      "\"last_index\":%llu",
			      s->spec.id, (unsigned long long)s->ev->first,
			      (unsigned long long)(last - 1));
	}
	json_decref(stmt);
	json_decref(env);
	return err;
}
