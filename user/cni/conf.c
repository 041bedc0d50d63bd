// SPDX-License-Identifier: GPL-2.0
/*
 * The network config: the object the runtime writes on stdin (the plugin's
 * entry of the conflist, with cniVersion, name, prevResult and runtimeConfig
 * filled in), checked field by field. Pure: a buffer in, a struct or an
 * error naming the field out. The rules and the resolver are passed to
 * tapfenced as they are, which validates them as it does any spec.
 *
 * Precedence, documented in docs/integration.md: runtimeConfig.tapfenceAllow
 * over the config's allow over the spec file's; the config's resolver over
 * the spec file's.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>

#include "cni.h"
#include "daemon/jcheck.h"
#include "daemon/spec.h"

static const char *const versions[] = { "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", NULL };

int cni_fail(struct cni_err *e, int code, int err, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -err;
}

void cni_detail(struct cni_err *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->details, sizeof(e->details), fmt, ap);
	va_end(ap);
}

int cni_version_known(const char *v)
{
	const char *const *p;

	for (p = versions; *p; p++)
		if (!strcmp(*p, v))
			return 1;
	return 0;
}

json_t *cni_versions(void)
{
	const char *const *p;
	json_t *a = json_array();

	for (p = versions; a && *p; p++)
		if (json_array_append_new(a, json_string(*p))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/*
 * The config's own keys, and those of CNI's that a plugin's entry may carry
 * (SPEC.md: network configuration, the runtime's insertions, GC's list).
 * Anything else is refused: a misspelt "allow" must not mean "allow nothing"
 * silently, nor a misspelt "socket" another daemon.
 */
static const char *const conf_keys[] = {
	"cniVersion",	 "cniVersions", "name",
	"type",		 "args",	"capabilities",
	"runtimeConfig", "prevResult",	"cni.dev/valid-attachments",
	"ipMasq",	 "ipam",	"dns",
	"socket",	 "allow",	"resolver",
	"spec",		 "device",	NULL
};

/* What a spec file may hold: the rest of a session spec, the part prevResult cannot say. */
static const char *const file_keys[] = { "allow", "resolver", NULL };

static int bad(struct cni_err *e, int code, int ret, const char *err)
{
	return cni_fail(e, code, ret == -ENOMEM ? ENOMEM : EINVAL, "%s", err);
}

int cni_conf_parse(const char *buf, size_t len, struct cni_conf *c, struct cni_err *e)
{
	char err[TF_ERR_MAX], q[TF_JQUOTE_MAX];
	json_error_t jerr;
	json_t *rc, *v;
	int ret;

	memset(c, 0, sizeof(*c));
	c->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!c->root)
		return cni_fail(e, CNI_ERR_DECODE, EINVAL,
				"network config: invalid JSON at line %d, column %d: %s", jerr.line,
				jerr.column, jerr.text);
	if (!json_is_object(c->root))
		return cni_fail(e, CNI_ERR_DECODE, EINVAL, "network config: not a JSON object");
	ret = tf_jget_str(c->root, "", "cniVersion", 1, &c->version, err, sizeof(err));
	if (ret)
		return bad(e, CNI_ERR_CONFIG, ret, err);
	if (!cni_version_known(c->version))
		return cni_fail(e, CNI_ERR_VERSION, EINVAL,
				"cniVersion: `%s' is not supported (0.3.0 to 1.1.0)",
				tf_jquote_str(c->version, q));
	ret = tf_jcheck_keys(c->root, "", conf_keys, err, sizeof(err));
	if (ret)
		return bad(e, CNI_ERR_FIELD, ret, err);
	ret = tf_jget_str(c->root, "", "name", 1, &c->name, err, sizeof(err));
	if (!ret && !*c->name)
		ret = tf_jfail(err, sizeof(err), "name: empty");
	if (!ret)
		ret = tf_jget_str(c->root, "", "socket", 0, &c->socket, err, sizeof(err));
	if (!ret && c->socket && !*c->socket)
		ret = tf_jfail(err, sizeof(err), "socket: empty");
	if (!ret)
		ret = tf_jget_str(c->root, "", "device", 0, &c->device, err, sizeof(err));
	if (!ret && c->device && (!*c->device || strlen(c->device) >= IF_NAMESIZE))
		ret = tf_jfail(err, sizeof(err), "device: `%s' is not an interface name",
			       tf_jquote_str(c->device, q));
	if (!ret)
		ret = tf_jget_str(c->root, "", "spec", 0, &c->spec_path, err, sizeof(err));
	if (!ret && c->spec_path && c->spec_path[0] != '/')
		ret = tf_jfail(err, sizeof(err),
			       "spec: `%s' is not an absolute path (plugins run in the runtime's "
			       "directory)",
			       tf_jquote_str(c->spec_path, q));
	if (!ret)
		ret = tf_jget(c->root, "", "allow", JSON_ARRAY, 0, &c->allow, err, sizeof(err));
	if (!ret)
		ret = tf_jget(c->root, "", "resolver", JSON_OBJECT, 0, &c->resolver, err,
			      sizeof(err));
	if (!ret)
		ret = tf_jget(c->root, "", "prevResult", JSON_OBJECT, 0, &c->prev, err,
			      sizeof(err));
	if (!ret)
		ret = tf_jget(c->root, "", "cni.dev/valid-attachments", JSON_ARRAY, 0, &c->valid,
			      err, sizeof(err));
	if (!ret)
		ret = tf_jget(c->root, "", "runtimeConfig", JSON_OBJECT, 0, &rc, err, sizeof(err));
	if (ret)
		return bad(e, CNI_ERR_CONFIG, ret, err);
	c->socket = c->socket ? c->socket : CNI_DEFAULT_SOCKET;
	if (c->allow)
		snprintf(c->allow_from, sizeof(c->allow_from), "allow");
	if (c->resolver)
		snprintf(c->resolver_from, sizeof(c->resolver_from), "resolver");

	/*
	 * runtimeConfig carries the capabilities this plugin declares; only
	 * ours is read (a runtime may pass others it was told about).
	 */
	if (rc) {
		ret = tf_jget(rc, "runtimeConfig", CNI_CAP_ALLOW, JSON_ARRAY, 0, &v, err,
			      sizeof(err));
		if (ret)
			return bad(e, CNI_ERR_CONFIG, ret, err);
		if (v) {
			c->allow = v;
			snprintf(c->allow_from, sizeof(c->allow_from), "runtimeConfig.%s",
				 CNI_CAP_ALLOW);
		}
	}
	return 0;
}

int cni_conf_merge_spec(struct cni_conf *c, json_t *file, struct cni_err *e)
{
	char err[TF_ERR_MAX], where[CNI_FROM_MAX];
	json_t *allow, *resolver;
	int ret;

	c->file = file;
	snprintf(where, sizeof(where), "spec file `%s'", c->spec_path);
	if (!json_is_object(file))
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s: not a JSON object", where);
	ret = tf_jcheck_keys(file, where, file_keys, err, sizeof(err));
	if (ret) {
		cni_detail(e, "a spec file holds allow and resolver; the rest of the session spec "
			      "comes from prevResult");
		return bad(e, CNI_ERR_CONFIG, ret, err);
	}
	ret = tf_jget(file, where, "allow", JSON_ARRAY, 0, &allow, err, sizeof(err));
	if (!ret)
		ret = tf_jget(file, where, "resolver", JSON_OBJECT, 0, &resolver, err, sizeof(err));
	if (ret)
		return bad(e, CNI_ERR_CONFIG, ret, err);
	if (allow && !c->allow) {
		c->allow = allow;
		snprintf(c->allow_from, sizeof(c->allow_from), "spec file `%s': allow",
			 c->spec_path);
	}
	if (resolver && !c->resolver) {
		c->resolver = resolver;
		snprintf(c->resolver_from, sizeof(c->resolver_from), "spec file `%s': resolver",
			 c->spec_path);
	}
	return 0;
}

void cni_conf_free(struct cni_conf *c)
{
	if (!c)
		return;
	json_decref(c->root);
	json_decref(c->file);
	memset(c, 0, sizeof(*c));
}

static int sha256(const char *parts[], unsigned int n, unsigned char out[32])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int i;
	int ok;

	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	/* Each part with its NUL: ("ab", "c") and ("a", "bc") differ. */
	for (i = 0; ok && i < n; i++)
		ok = EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1);
	ok = ok && EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

static void hex(char *dst, const unsigned char *src, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = digits[src[i] >> 4];
		dst[2 * i + 1] = digits[src[i] & 15];
	}
	dst[2 * n] = '\0';
}

int cni_session_id(const char *net, const char *cid, const char *ifname, char *id, char *prefix)
{
	const char *np[] = { "tapfence-cni network", net };
	const char *ap[] = { "tapfence-cni attachment", net, cid, ifname };
	unsigned char h[32];
	int ret;

	/*
	 * A hash, not the names: container ids are 64 characters and may hold
	 * what a session id cannot. The network's part is its own hash, so GC
	 * can tell this network's sessions from any other's by the prefix.
	 */
	ret = sha256(np, 2, h);
	if (ret)
		return ret;
	memcpy(id, "cni-", 4);
	hex(id + 4, h, 5);
	id[14] = '-';
	id[15] = '\0';
	if (prefix)
		memcpy(prefix, id, CNI_ID_PREFIX_LEN + 1);
	if (!cid || !ifname)
		return 0;
	ret = sha256(ap, 4, h);
	if (ret)
		return ret;
	hex(id + 15, h, 12);
	return tf_id_valid(id) ? 0 : -EINVAL;
}
