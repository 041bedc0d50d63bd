// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence-cni: the runtime's side of CNI (SPEC.md, "Execution"): the command
 * and the attachment in CNI_* environment variables, the network config on
 * stdin, the result (ADD, VERSION) or CNI's error object on stdout, exit 0 on
 * success and 1 on error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"

#define STDIN_MAX (16u << 20)

static int read_stdin(char **out, size_t *outlen)
{
	size_t len = 0, cap = 0, n;
	char *buf = NULL, *nb;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, stdin);
		len += n;
		if (len > STDIN_MAX) {
			free(buf);
			return -E2BIG;
		}
		if (n == 0)
			break;
	}
	if (ferror(stdin)) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

static void print_error(const char *version, const struct cni_err *e)
{
	json_t *o =
		json_pack("{s:s, s:i, s:s}", "cniVersion", version, "code", e->code, "msg", e->msg);

	if (o && *e->details)
		json_object_set_new(o, "details", json_string(e->details));
	/* Printed even if the above ran out of memory: the runtime must see a failure. */
	if (!o || json_dumpf(o, stdout, JSON_COMPACT))
		printf("{\"cniVersion\":\"%s\",\"code\":%d,\"msg\":\"out of memory\"}", version,
		       e->code);
	fputc('\n', stdout);
	fflush(stdout);
	json_decref(o);
}

/* VERSION: stdin may hold {"cniVersion": ...}, the version to answer in. */
static int cmd_version(const char *buf, size_t len)
{
	const char *v = "1.1.0";
	json_t *in = len ? json_loadb(buf, len, 0, NULL) : NULL, *out;
	const char *asked = json_string_value(json_object_get(in, "cniVersion"));

	if (asked && cni_version_known(asked))
		v = asked;
	out = json_pack("{s:s, s:o}", "cniVersion", v, "supportedVersions", cni_versions());
	json_decref(in);
	if (!out || json_dumpf(out, stdout, JSON_COMPACT) || fputc('\n', stdout) == EOF ||
	    fflush(stdout)) {
		json_decref(out);
		return 1;
	}
	json_decref(out);
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int need_env(const struct cni_env *x, int netns, struct cni_err *e)
{
	const char *missing = !x->containerid	 ? "CNI_CONTAINERID" :
			      !x->ifname	 ? "CNI_IFNAME" :
			      netns && !x->netns ? "CNI_NETNS" :
						   NULL;

	if (missing)
		return cni_fail(e, CNI_ERR_ENV, EINVAL, "%s: missing (needed by %s)", missing,
				x->command);
	return 0;
}

static int load_spec(struct cni_conf *c, struct cni_err *e)
{
	json_error_t jerr;
	json_t *file;

	if (!c->spec_path)
		return 0;
	file = json_load_file(c->spec_path, JSON_REJECT_DUPLICATES, &jerr);
	if (!file) {
		/* jansson says "unable to open" for a missing file, else where the JSON breaks. */
		if (jerr.line < 0)
			return cni_fail(e, CNI_ERR_IO, EIO, "spec: cannot read `%s': %s",
					c->spec_path, jerr.text);
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
				"spec file `%s': invalid JSON at line %d, column %d: %s",
				c->spec_path, jerr.line, jerr.column, jerr.text);
	}
	return cni_conf_merge_spec(c, file, e);
}

int main(void)
{
	struct cni_env x = {
		.command = env("CNI_COMMAND"),
		.containerid = env("CNI_CONTAINERID"),
		.netns = env("CNI_NETNS"),
		.ifname = env("CNI_IFNAME"),
	};
	struct cni_err e = {};
	struct cni_conf c = {};
	char *buf = NULL;
	size_t len = 0;
	int ret;

	ret = read_stdin(&buf, &len);
	if (ret) {
		cni_fail(&e, CNI_ERR_IO, -ret, "cannot read the network config: %s",
			 strerror(-ret));
		goto out;
	}
	if (x.command && !strcmp(x.command, "VERSION")) {
		ret = cmd_version(buf, len);
		free(buf);
		return ret;
	}
	if (!x.command) {
		ret = cni_fail(&e, CNI_ERR_ENV, EINVAL, "CNI_COMMAND: missing");
		goto out;
	}
	ret = cni_conf_parse(buf, len, &c, &e);
	if (ret)
		goto out;
	if (!strcmp(x.command, "ADD")) {
		ret = need_env(&x, 1, &e);
		if (!ret)
			ret = load_spec(&c, &e);
		if (!ret)
			ret = cni_add(&c, &x, &e);
	} else if (!strcmp(x.command, "DEL")) {
		ret = need_env(&x, 0, &e);
		if (!ret)
			ret = cni_del(&c, &x, &e);
	} else if (!strcmp(x.command, "CHECK")) {
		ret = need_env(&x, 1, &e);
		if (!ret)
			ret = cni_check(&c, &x, &e);
	} else if (!strcmp(x.command, "GC")) {
		ret = cni_gc(&c, &e);
	} else if (!strcmp(x.command, "STATUS")) {
		ret = cni_status(&c, &e);
	} else {
		ret = cni_fail(&e, CNI_ERR_ENV, EINVAL,
			       "CNI_COMMAND: unknown command `%.32s' (ADD, DEL, CHECK, GC, STATUS, "
			       "VERSION)",
			       x.command);
	}
out:
	if (ret)
		print_error(c.version && cni_version_known(c.version) ? c.version : "1.1.0", &e);
	cni_conf_free(&c);
	free(buf);
	return ret ? 1 : 0;
}
