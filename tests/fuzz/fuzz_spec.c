// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness over what session creators and operators send us as
 * text: session specs (and the rules in them), and the daemon config.
 * Properties checked on every input, besides "no crash, no sanitizer report":
 *   - a rejected spec comes with an error message and leaves nothing behind;
 *   - an accepted spec round-trips: parse(to_json(spec)) gives the same JSON;
 *   - an accepted spec's rules compile, and every host rule's name is
 *     allowed by the compiled policy for the rule's own protocols.
 * Built by `make fuzz' with the parsers linked in; replayed over the
 * committed corpus by tests/unit/test_spec_corpus.c in every `make test'.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "daemon/config.h"
#include "daemon/policy.h"
#include "daemon/spec.h"

#define FUZZ_CHECK(cond) ((cond) ? (void)0 : __builtin_trap())

static void check_spec(const struct tf_spec *s)
{
	struct tf_spec_limits lim = { .max_rules = 64 };
	char err[TF_ERR_MAX] = "", *a, *b;
	struct tf_spec again = {};
	struct tf_policy p;
	struct tf_rule_val v;
	__u8 rev[TF_DNS_NAME_MAX];
	unsigned int i, len;
	json_t *j;
	int sub;

	j = tf_spec_to_json(s);
	FUZZ_CHECK(j != NULL);
	a = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	FUZZ_CHECK(a != NULL);
	FUZZ_CHECK(tf_spec_from_json(j, &lim, &again, err, sizeof(err)) == 0);
	json_decref(j);
	j = tf_spec_to_json(&again);
	b = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	FUZZ_CHECK(b && !strcmp(a, b));
	free(a);
	free(b);
	json_decref(j);
	tf_spec_free(&again);

	FUZZ_CHECK(tf_policy_compile(s->rules, s->nrules, &p) == 0);
	for (i = 0; i < s->nrules; i++) {
		if (s->rules[i].kind != TF_RULE_HOST)
			continue;
		len = tf_host_reverse(s->rules[i].host, rev);
		FUZZ_CHECK(tf_policy_name_perm(&p, rev, len, s->rules[i].wildcard, &v, &sub) >= 0);
		FUZZ_CHECK((v.protos & s->rules[i].protos) == s->rules[i].protos);
	}
	tf_policy_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tf_spec_limits lim = { .max_rules = 64 };
	char err[TF_ERR_MAX] = "";
	struct tf_spec s = {};
	struct tf_config c;
	int ret;

	ret = tf_spec_parse((const char *)data, size, &lim, &s, err, sizeof(err));
	if (ret) {
		FUZZ_CHECK(ret == -EINVAL && err[0]);
		FUZZ_CHECK(s.nrules == 0 && s.rules == NULL);
	} else {
		check_spec(&s);
	}
	tf_spec_free(&s);

	tf_config_defaults(&c);
	err[0] = 0;
	ret = tf_config_parse((const char *)data, size, &c, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || (ret == -EINVAL && err[0]));
	return 0;
}
