// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence attest [--session ID] [--out FILE]: the daemon's signed statement.
 * tapfence attest verify FILE [--key KEY] [--spec SPEC] [--max-age SEC]: offline.
 * Formats and what is claimed: docs/attest.md.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/seal.h"
#include "daemon/spec.h"
#include "ctl.h"

#define DEFAULT_KEY_PUB	  "/var/lib/tapfence/log.key.pub"
#define DEFAULT_MAX_AGE_S 3600
#define ATTEST_VERIFY_USAGE                                                                    \
	"usage: " CTL_PROG " attest verify FILE [--key KEY]... [--spec SPEC] [--session ID] "  \
	"[--max-age SEC] [--allow-no-battery] | --evidence FILE [--key KEY]... [--spec SPEC] " \
	"[--session ID]"

static int attest_make(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	const char *session = NULL, *out = NULL, *val;
	json_t *req, *resp = NULL;
	FILE *f = stdout;
	int i, r, err;

	for (i = 1; i < argc; i++) {
		if ((r = ctl_opt_value(argc, argv, &i, "--session", &val)) > 0)
			session = val;
		else if (r == 0 && (r = ctl_opt_value(argc, argv, &i, "--out", &val)) > 0)
			out = val;
		else
			return ctl_usage(self);
	}
	req = ctl_req("attest");
	if (!req)
		return -ENOMEM;
	if (session)
		json_object_set_new(req, "session", json_string(session));
	err = ctl_request(o, req, &resp);
	json_decref(req);
	if (err)
		return err;
	if (out && !(f = fopen(out, "we"))) {
		ctl_err("cannot write `%s'", out);
		err = -EIO;
	} else if (json_dumpf(json_object_get(resp, "attestation"), f, JSON_INDENT(2)) ||
		   fputc('\n', f) == EOF) {
		err = -EIO;
	}
	if (out && f)
		fclose(f);
	json_decref(resp);
	return err;
}

/* The verdict of verify: 0 verified, 1 a check failed, 2 could not verify. */
__attribute__((format(printf, 2, 3))) static int say(int rc, const char *fmt, ...)
{
	va_list ap;

	fputs(rc == 0 ? "verified: " : rc == 1 ? "not verified: " : "cannot verify: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return rc == 0 ? 0 : rc == 1 ? -EBADMSG : -CTL_ECANNOT;
}

static int read_key(const char *arg, struct tf_verifier *key)
{
	char err[256], buf[TF_VKEY_MAX + 2];
	FILE *f;

	if (strchr(arg, '+') && !tf_verifier_parse(arg, key, err, sizeof(err)))
		return 0;
	f = fopen(arg, "re");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return tf_verifier_parse(buf, key, err, sizeof(err)) ? -1 : 0;
}

/* Whether sigs holds a signature by key over pae that verifies: 1, 0 none by it, -1 one that fails. */
static int signed_by(json_t *sigs, const struct tf_verifier *key, const char *pae, size_t palen)
{
	char want[TF_ORIGIN_MAX + 16];
	__u8 sig[TF_SIG_MAX + 4];
	int n, mine = 0;
	json_t *s;
	size_t i;

	/* keyid is the signer's verifier key: its name and key id must be this key's. */
	tf_hex(key->keyid, TF_KEYID_LEN, want + snprintf(want, sizeof(want), "%s+", key->name));
	json_array_foreach(sigs, i, s) {
		const char *sb = json_string_value(json_object_get(s, "sig"));
		const char *kid = json_string_value(json_object_get(s, "keyid")) ?: "";

		if (strncmp(kid, want, strlen(want)) || kid[strlen(want)] != '+')
			continue;
		mine = 1;
		n = sb ? tf_b64_decode(sb, strlen(sb), sig, sizeof(sig)) : -1;
		if (n > 0 && n <= TF_SIG_MAX && palen && tf_verify_raw(key, pae, palen, sig, n))
			return 1;
	}
	return mine ? -1 : 0;
}

/* The signatures over DSSE's pre-authentication encoding: one by every key given. */
static int envelope_open(json_t *env, const struct tf_keyring *keys, json_t **stmt)
{
	const char *type = json_string_value(json_object_get(env, "payloadType"));
	const char *b64 = json_string_value(json_object_get(env, "payload"));
	json_t *sigs = json_object_get(env, "signatures");
	size_t plen = b64 ? strlen(b64) / 4 * 3 + 3 : 0, i, palen;
	char *payload = malloc(plen + 1), *pae = NULL;
	int n, got = 1;

	*stmt = NULL;
	if (!type || !b64 || !json_is_array(sigs) || !payload ||
	    strcmp(type, TF_DSSE_PAYLOAD_TYPE)) {
		free(payload);
		return say(2, "not a DSSE envelope of an in-toto statement");
	}
	n = plen > 0 ? tf_b64_decode(b64, strlen(b64), (__u8 *)payload, plen) : -1;
	if (n < 0) {
		free(payload);
		return say(1, "the payload is not base64");
	}
	payload[n] = 0;
	palen = strlen(type) + n + 64;
	pae = malloc(palen);
	palen = pae ? tf_dsse_pae(type, payload, n, pae, palen) : 0;
	for (i = 0; i < keys->n && got == 1; i++)
		got = signed_by(sigs, &keys->k[i], pae, palen);
	free(pae);
	if (got != 1) {
		free(payload);
		return got < 0 ? say(1,
				     "the %s signature does not verify (the statement was changed)",
				     tf_key_type_name(keys->k[i - 1].type)) :
				 say(2, "not signed by the %s key %s",
				     tf_key_type_name(keys->k[i - 1].type), keys->k[i - 1].name);
	}
	*stmt = json_loads(payload, 0, NULL);
	free(payload);
	return *stmt ? 0 : say(1, "the signed payload is not JSON");
}

/* The statement's subjects: tapfenced and tapfence.bpf.o, each with a SHA-256 digest. */
static int subjects_ok(json_t *stmt)
{
	static const char *const names[] = { "tapfenced", "tapfence.bpf.o" };
	json_t *subj = json_object_get(stmt, "subject");
	const char *h;
	size_t i;

	if (json_array_size(subj) != 2)
		return 0;
	for (i = 0; i < 2; i++) {
		h = json_string_value(json_object_get(
			json_object_get(json_array_get(subj, i), "digest"), "sha256"));
		if (strcmp(json_string_value(json_object_get(json_array_get(subj, i), "name")) ?:
												 "",
			   names[i]) ||
		    !h || strlen(h) != 2 * TF_HASH_LEN ||
		    strspn(h, "0123456789abcdef") != 2 * TF_HASH_LEN)
			return 0;
	}
	return 1;
}

static int spec_digest(const char *path, char hex[2 * TF_HASH_LEN + 1], char *id, size_t idlen)
{
	struct tf_spec_limits lim = { .max_rules = 200000 };
	char err[512], *buf = NULL;
	struct tf_spec spec;
	__u8 h[TF_HASH_LEN];
	size_t len = 0;
	json_t *j;
	FILE *f = fopen(path, "re");
	int ret = -1;

	if (!f)
		return -1;
	if (getdelim(&buf, &len, '\0', f) > 0 &&
	    !tf_spec_parse(buf, strlen(buf), &lim, &spec, err, sizeof(err))) {
		j = tf_spec_to_json(&spec);
		if (j && !tf_json_digest(j, h)) {
			tf_hex(h, TF_HASH_LEN, hex);
			snprintf(id, idlen, "%s", spec.id);
			ret = 0;
		}
		json_decref(j);
		tf_spec_free(&spec);
	} else {
		fprintf(stderr, CTL_PROG ": spec `%s': %s\n", path, err);
	}
	free(buf);
	fclose(f);
	return ret;
}

/*
 * A session's evidence statement (log.session_evidence): its checkpoint is
 * signed by the keys, seals the session's first and last line, and its
 * policy history runs from that first line to the del at that last one.
 */
static int evidence_verify(json_t *stmt, const struct tf_keyring *keys, const char *spec,
			   const char *session)
{
	json_t *pred = json_object_get(stmt, "predicate"), *pols, *pl;
	const char *sid = json_string_value(json_object_get(pred, "session")) ?: "";
	const char *note = json_string_value(json_object_get(pred, "checkpoint"));
	const char *subj =
		json_string_value(json_object_get(json_array_get(json_object_get(stmt, "subject"), 0), "name")) ?:
			"";
	const char *last_h =
		json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(stmt, "subject"), 0), "digest"), "sha256")) ?:
			"";
	json_int_t first = json_integer_value(json_object_get(pred, "first_index"));
	json_int_t last = json_integer_value(json_object_get(pred, "last_index"));
	char hex[2 * TF_HASH_LEN + 1], spec_id[128] = "";
	struct tf_checkpoint cp;
	json_int_t in_force = -1;
	size_t i, n;

	pols = json_object_get(pred, "policies");
	n = json_array_size(pols);
	if (strcmp(json_string_value(json_object_get(stmt, "_type")) ?: "",
		   "https://in-toto.io/Statement/v1") ||
	    strncmp(subj, "session/", 8) || strcmp(subj + 8, sid) || !*sid || n < 2 ||
	    strlen(last_h) != 2 * TF_HASH_LEN ||
	    strspn(last_h, "0123456789abcdef") != 2 * TF_HASH_LEN)
		return say(1, "not a session evidence statement (its type, subject or policies)");
	if (session && strcmp(session, sid))
		return say(1, "the statement is the evidence of session %s, not %s", sid, session);
	if (!note || tf_note_verify_ring(keys, note, strlen(note), &cp) != TF_NOTE_OK)
		return say(1, "its checkpoint is not signed by the key");
	if (strcmp(cp.origin, json_string_value(json_object_get(pred, "origin")) ?: "") ||
	    first < 0 || first > last || (__u64)last >= cp.size)
		return say(1, "its checkpoint (epoch %s, size %llu) does not seal lines %lld-%lld",
			   cp.origin, (unsigned long long)cp.size, (long long)first,
			   (long long)last);
	json_array_foreach(pols, i, pl) {
		json_int_t at = json_integer_value(json_object_get(pl, "index"));
		const char *op = json_string_value(json_object_get(pl, "op")) ?: "";
		const char *h = json_string_value(json_object_get(pl, "spec_sha256")) ?: "";

		if (at < first || at > last || (i == 0 && at != first) ||
		    (i == n - 1 && (at != last || strcmp(op, "del") || strcmp(h, last_h))) ||
		    (i > 0 && at <= json_integer_value(json_object_get(json_array_get(pols, i - 1),
								       "index"))) ||
		    strlen(h) != 2 * TF_HASH_LEN)
			return say(1,
				   "policy %zu of the statement does not fit its lines %lld-%lld",
				   i, (long long)first, (long long)last);
	}
	if (spec) {
		if (spec_digest(spec, hex, spec_id, sizeof(spec_id)))
			return say(2, "spec `%s' cannot be read", spec);
		json_array_foreach(pols, i, pl)
			if (!strcmp(json_string_value(json_object_get(pl, "spec_sha256")) ?: "",
				    hex))
				in_force =
					json_integer_value(json_object_get(pl, "policy_version"));
		if (strcmp(spec_id, sid) || in_force < 0)
			return say(1, "session %s never enforced the spec's policy", sid);
	}
	return say(0,
		   "session %s, lines %lld-%lld of epoch %s sealed by a checkpoint of size %llu, "
		   "%zu policy change(s)%s",
		   sid, (long long)first, (long long)last, cp.origin, (unsigned long long)cp.size,
		   n, spec ? ", the spec's policy among them" : "");
}

static int attest_verify(int argc, char *argv[])
{
	const char *spec = NULL, *file = NULL, *session = NULL, *val, *scope;
	char hex[2 * TF_HASH_LEN + 1], sid[128] = "";
	long max_age = DEFAULT_MAX_AGE_S;
	json_t *env, *stmt, *pred, *sessions, *s;
	struct tf_keyring keys = {};
	struct tf_verifier key;
	struct tm tm = {};
	const char *issued, *p;
	double age;
	size_t i;
	int r, rc, matched = 0, allow_no_battery = 0, evidence = 0, max_age_set = 0;
	const char *claim;

	for (i = 2; i < (size_t)argc; i++) {
		int k = (int)i;

		if ((r = ctl_opt_value(argc, argv, &k, "--key", &val)) > 0) {
			if (read_key(val, &key) || tf_keyring_add(&keys, &key))
				return say(
					2,
					"key `%s': not a verifier key (tapfence log key prints it)",
					val);
		} else if (!r && (r = ctl_opt_value(argc, argv, &k, "--session", &val)) > 0)
			session = val;
		else if (!r && (r = ctl_opt_value(argc, argv, &k, "--spec", &val)) > 0)
			spec = val;
		else if (!r && (r = ctl_opt_value(argc, argv, &k, "--max-age", &val)) > 0) {
			max_age = strtol(val, NULL, 10);
			max_age_set = 1;
		} else if (!r && !strcmp(argv[k], "--allow-no-battery"))
			allow_no_battery = 1;
		else if (!r && !strcmp(argv[k], "--evidence"))
			evidence = 1;
		else if (!r && argv[k][0] != '-' && !file)
			file = argv[k];
		else
			return say(2, ATTEST_VERIFY_USAGE);
		i = (size_t)k;
	}
	/* A statement of the past has no age to check, and no battery. */
	if (!file || max_age <= 0 || (evidence && (max_age_set || allow_no_battery)))
		return say(2, ATTEST_VERIFY_USAGE);
	if (!keys.n && (read_key(DEFAULT_KEY_PUB, &key) || tf_keyring_add(&keys, &key)))
		return say(2, "key `%s': not a verifier key (tapfence log key prints it)",
			   DEFAULT_KEY_PUB);
	env = json_load_file(file, 0, NULL);
	if (!env)
		return say(2, "`%s' is not JSON", file);
	rc = envelope_open(env, &keys, &stmt);
	json_decref(env);
	if (rc)
		return rc;
	/* Asked for explicitly: a record of a deleted session never passes for a live node's state. */
	if (evidence || !strcmp(json_string_value(json_object_get(stmt, "predicateType")) ?: "",
				TF_EVIDENCE_PREDICATE)) {
		rc = evidence ? evidence_verify(stmt, &keys, spec, session) :
				say(1, "a session's evidence statement, not a node's attestation "
				       "(verify it with --evidence)");
		goto out;
	}
	pred = json_object_get(stmt, "predicate");
	sessions = json_object_get(pred, "sessions");
	issued = json_string_value(json_object_get(pred, "issued_at"));
	scope = json_string_value(json_object_get(pred, "scope")) ?: "";
	if (strcmp(json_string_value(json_object_get(stmt, "_type")) ?: "",
		   "https://in-toto.io/Statement/v1") ||
	    strcmp(json_string_value(json_object_get(stmt, "predicateType")) ?: "",
		   TF_ATTEST_PREDICATE) ||
	    !subjects_ok(stmt) || !json_is_array(sessions) || !issued ||
	    !(p = strptime(issued, "%Y-%m-%dT%H:%M:%SZ", &tm)) || *p ||
	    (strcmp(scope, "node") && strcmp(scope, "session")) ||
	    (!strcmp(scope, "session") && json_array_size(sessions) != 1)) {
		rc = say(1, "not a tapfence statement (its type, subjects, scope or sessions)");
		goto out;
	}
	age = difftime(time(NULL), timegm(&tm));
	if (age > max_age || age < -300) {
		rc = say(1, "issued at %s, %.0f s ago: older than --max-age %ld", issued, age,
			 max_age);
		goto out;
	}
	json_array_foreach(sessions, i, s) {
		if (!json_is_true(json_object_get(s, "tapfence_first"))) {
			rc = say(
				1,
				"device %s (session %s): tapfence is not the first program on its hooks",
				json_string_value(json_object_get(s, "ifname")) ?: "?",
				json_string_value(json_object_get(s, "id")) ?: "?");
			goto out;
		}
	}
	if (session) {
		json_array_foreach(sessions, i, s)
			matched |=
				!strcmp(json_string_value(json_object_get(s, "id")) ?: "", session);
		if (!matched) {
			rc = say(1, "session %s is not in the statement", session);
			goto out;
		}
		matched = 0;
	}
	if (spec) {
		if (spec_digest(spec, hex, sid, sizeof(sid))) {
			rc = say(2, "spec `%s' cannot be read", spec);
			goto out;
		}
		json_array_foreach(sessions, i, s)
			if (!strcmp(json_string_value(json_object_get(s, "id")) ?: "", sid))
				matched =
					strcmp(json_string_value(json_object_get(s, "spec_sha256")) ?:
						       "",
					       hex) ?
						-1 :
						1;
		if (matched <= 0) {
			rc = say(1, "session %s %s", sid,
				 matched ? "enforces another policy than the spec" :
					   "is not in the statement");
			goto out;
		}
	}
	/* Any critical escape or broken probe holds the claim; so does no battery, unless waived. */
	claim = json_string_value(json_object_get(pred, "claim")) ?: "held";
	if (strcmp(claim, "verified") &&
	    !(allow_no_battery && json_is_null(json_object_get(pred, "battery")))) {
		rc = say(1, "claim held: %s",
			 json_string_value(json_object_get(pred, "claim_why")) ?: "no battery");
		goto out;
	}
	rc = say(0, "%zu session(s), tapfence first on every device, issued at %s (%.0f s ago)%s%s",
		 json_array_size(sessions), issued, age,
		 spec ? ", the spec's policy in force for " : "", spec ? sid : "");
out:
	json_decref(stmt);
	return rc;
}

int cmd_attest(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	if (argc > 1 && !strcmp(argv[1], "verify"))
		return attest_verify(argc, argv);
	return attest_make(o, self, argc, argv);
}
