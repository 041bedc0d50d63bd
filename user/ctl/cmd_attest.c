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

#define DEFAULT_KEY_PUB   "/var/lib/tapfence/log.key.pub"
#define DEFAULT_MAX_AGE_S 3600

static int attest_make(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
		       char *argv[])
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
__attribute__((format(printf, 2, 3)))
static int say(int rc, const char *fmt, ...)
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

	if (strchr(arg, '+') && !strchr(arg, '/') && !tf_verifier_parse(arg, key, err, sizeof(err)))
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

/* The signature over DSSE's pre-authentication encoding, by this key. */
static int envelope_open(json_t *env, const struct tf_verifier *key, json_t **stmt)
{
	const char *type = json_string_value(json_object_get(env, "payloadType"));
	const char *b64 = json_string_value(json_object_get(env, "payload"));
	json_t *sigs = json_object_get(env, "signatures"), *s;
	size_t plen = b64 ? strlen(b64) / 4 * 3 + 3 : 0, i, palen;
	char *payload = malloc(plen + 1), *pae = NULL, want[TF_ORIGIN_MAX + 16];
	__u8 sig[TF_SIG_LEN + 4];
	int n, rc = 2, mine = 0;

	/* keyid is the signer's verifier key: its name and key id must be this key's. */
	tf_hex(key->keyid, TF_KEYID_LEN, want + snprintf(want, sizeof(want), "%s+", key->name));

	*stmt = NULL;
	if (!type || !b64 || !json_is_array(sigs) || !payload ||
	    strcmp(type, "application/vnd.in-toto+json")) {
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
	json_array_foreach(sigs, i, s) {
		const char *sb = json_string_value(json_object_get(s, "sig"));
		const char *kid = json_string_value(json_object_get(s, "keyid")) ?: "";

		if (strncmp(kid, want, strlen(want)) || kid[strlen(want)] != '+')
			continue;
		mine = 1;
		if (sb && tf_b64_decode(sb, strlen(sb), sig, sizeof(sig)) == TF_SIG_LEN && palen &&
		    tf_verify_raw(key, pae, palen, sig)) {
			rc = 0;
			break;
		}
	}
	free(pae);
	if (rc) {
		free(payload);
		return mine ? say(1, "the signature does not verify (the statement was changed)")
			    : say(2, "not signed by this key");
	}
	*stmt = json_loads(payload, 0, NULL);
	free(payload);
	return *stmt ? 0 : say(1, "the signed payload is not JSON");
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
	if (getdelim(&buf, &len, '\0', f) > 0 && !tf_spec_parse(buf, strlen(buf), &lim, &spec, err,
							   sizeof(err))) {
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

static int attest_verify(int argc, char *argv[])
{
	const char *key_arg = DEFAULT_KEY_PUB, *spec = NULL, *file = NULL, *val;
	char hex[2 * TF_HASH_LEN + 1], sid[128] = "";
	long max_age = DEFAULT_MAX_AGE_S;
	json_t *env, *stmt, *pred, *sessions, *s;
	struct tf_verifier key;
	struct tm tm = {};
	const char *issued, *p;
	double age;
	size_t i;
	int r, rc, matched = 0, allow_no_battery = 0;
	const char *claim;

	for (i = 2; i < (size_t)argc; i++) {
		int k = (int)i;

		if ((r = ctl_opt_value(argc, argv, &k, "--key", &val)) > 0)
			key_arg = val;
		else if (!r && (r = ctl_opt_value(argc, argv, &k, "--spec", &val)) > 0)
			spec = val;
		else if (!r && (r = ctl_opt_value(argc, argv, &k, "--max-age", &val)) > 0)
			max_age = strtol(val, NULL, 10);
		else if (!r && !strcmp(argv[k], "--allow-no-battery"))
			allow_no_battery = 1;
		else if (!r && argv[k][0] != '-' && !file)
			file = argv[k];
		else
			return say(2, "usage: " CTL_PROG " attest verify FILE [--key KEY] [--spec SPEC] "
				   "[--max-age SEC] [--allow-no-battery]");
		i = (size_t)k;
	}
	if (!file || max_age <= 0)
		return say(2, "usage: " CTL_PROG " attest verify FILE [--key KEY] [--spec SPEC] "
			   "[--max-age SEC] [--allow-no-battery]");
	if (read_key(key_arg, &key))
		return say(2, "key `%s': not a verifier key (tapfence log key prints it)", key_arg);
	env = json_load_file(file, 0, NULL);
	if (!env)
		return say(2, "`%s' is not JSON", file);
	rc = envelope_open(env, &key, &stmt);
	json_decref(env);
	if (rc)
		return rc;
	pred = json_object_get(stmt, "predicate");
	sessions = json_object_get(pred, "sessions");
	issued = json_string_value(json_object_get(pred, "issued_at"));
	if (strcmp(json_string_value(json_object_get(stmt, "_type")) ?: "",
		   "https://in-toto.io/Statement/v1") || !json_is_array(sessions) || !issued ||
	    !(p = strptime(issued, "%Y-%m-%dT%H:%M:%SZ", &tm)) || *p) {
		rc = say(1, "not a tapfence statement");
		goto out;
	}
	age = difftime(time(NULL), timegm(&tm));
	if (age > max_age || age < -300) {
		rc = say(1, "issued at %s, %.0f s ago: older than --max-age %ld", issued, age, max_age);
		goto out;
	}
	json_array_foreach(sessions, i, s) {
		if (!json_is_true(json_object_get(s, "tapfence_first"))) {
			rc = say(1, "device %s (session %s): tapfence is not the first program on its hooks",
				 json_string_value(json_object_get(s, "ifname")) ?: "?",
				 json_string_value(json_object_get(s, "id")) ?: "?");
			goto out;
		}
	}
	if (spec) {
		if (spec_digest(spec, hex, sid, sizeof(sid))) {
			rc = say(2, "spec `%s' cannot be read", spec);
			goto out;
		}
		json_array_foreach(sessions, i, s)
			if (!strcmp(json_string_value(json_object_get(s, "id")) ?: "", sid))
				matched = strcmp(json_string_value(json_object_get(s, "spec_sha256")) ?: "",
						 hex) ? -1 : 1;
		if (matched <= 0) {
			rc = say(1, "session %s %s", sid, matched ? "enforces another policy than the spec"
								 : "is not in the statement");
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
		 json_array_size(sessions), issued, age, spec ? ", the spec's policy in force for " : "",
		 spec ? sid : "");
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
