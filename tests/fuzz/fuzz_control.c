// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness over control-socket requests (one line of JSON from a
 * client): tf_request_parse() must accept or refuse every input with an
 * error, never crash or leak, and what it accepts must be well formed:
 *   - an op it knows, with the fields that op needs;
 *   - session ids of the documented alphabet and length;
 *   - a refused request leaves nothing allocated behind.
 * Built by `make fuzz'; replayed over the committed corpus by
 * tests/unit/test_fuzz_corpus.c in every `make test'.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "daemon/request.h"

#define FUZZ_CHECK(cond) ((cond) ? (void)0 : __builtin_trap())

static void check_id(const char *id)
{
	size_t n;

	FUZZ_CHECK(id != NULL);
	n = strlen(id);
	FUZZ_CHECK(n >= 1 && n <= TF_ID_MAX);
	FUZZ_CHECK(
		strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
		n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tf_spec_limits lim = { .max_rules = 64 };
	char err[TF_ERR_MAX] = "";
	struct tf_request r;
	int ret;

	ret = tf_request_parse((const char *)data, size, &lim, &r, err, sizeof(err));
	if (ret) {
		FUZZ_CHECK(ret == -EINVAL && err[0]);
		FUZZ_CHECK(r.root == NULL && r.spec.rules == NULL);
		return 0;
	}
	FUZZ_CHECK(r.op < TF_OP_MAX && r.root != NULL);
	switch (r.op) {
	case TF_OP_SESSION_ADD:
		check_id(r.spec.id);
		break;
	case TF_OP_SESSION_DEL:
	case TF_OP_SESSION_SHOW:
		check_id(r.id);
		break;
	case TF_OP_RULE_ADD:
	case TF_OP_RULE_DEL:
		check_id(r.id);
		FUZZ_CHECK(r.rule.kind == TF_RULE_CIDR || r.rule.kind == TF_RULE_HOST);
		break;
	case TF_OP_SUBSCRIBE:
		if (r.session)
			check_id(r.session);
		break;
	default:
		break;
	}
	tf_request_free(&r);
	return 0;
}
