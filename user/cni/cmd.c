// SPDX-License-Identifier: GPL-2.0
/*
 * The commands: each one or a few exchanges with tapfenced. ADD fails unless
 * the session is in force, so the runtime never starts a sandbox unfiltered;
 * DEL is idempotent; CHECK asks the daemon whether its programs head the
 * device; GC deletes this network's sessions of attachments no longer valid.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cni.h"
#include "daemon/jcheck.h"
#include "daemon/spec.h"

static json_t *req_id(const char *op, const char *id)
{
	json_t *r = json_object();

	if (!r || json_object_set_new(r, "op", json_string(op)) ||
	    (id && json_object_set_new(r, "id", json_string(id)))) {
		json_decref(r);
		return NULL;
	}
	return r;
}

static int attachment_id(const struct cni_conf *c, const struct cni_env *env, char *id,
			 struct cni_err *e)
{
	int ret = cni_session_id(c->name, env->containerid, env->ifname, id, NULL);

	if (ret)
		return cni_fail(e, CNI_ERR_IO, -ret, "cannot derive the session id: %s",
				strerror(-ret));
	return 0;
}

/*
 * A daemon's refusal of the spec names the field as the spec has it
 * ("allow[2].ports[0]: ..."): say where that field came from instead, the
 * runtime's capability or the spec file, when not the config's own key.
 */
static void name_source(struct cni_err *e, const char *key, const char *from)
{
	size_t n = strlen(key);
	char msg[sizeof(e->msg)];

	if (strncmp(e->msg, key, n) || !strchr("[.:", e->msg[n]))
		return;
	e->code = CNI_ERR_CONFIG;
	if (!strcmp(from, key))
		return;
	snprintf(msg, sizeof(msg), "%s%s", from, e->msg + n);
	memcpy(e->msg, msg, sizeof(msg));
}

/* 1 if session id is in session.list's answer. */
static int listed(const json_t *list, const char *id)
{
	json_t *s;
	size_t i;

	json_array_foreach(json_object_get(list, "sessions"), i, s)
		if (!strcmp(json_string_value(json_object_get(s, "id")) ?: "", id))
			return 1;
	return 0;
}

/* session.del; 0 also when the session is gone already (not in session.list). */
static int session_gone(const char *sock, const char *id, struct cni_err *e)
{
	struct cni_err le = {};
	json_t *resp, *list;
	int ret, gone;

	ret = tfd_call(sock, req_id("session.del", id), &resp, e);
	json_decref(resp);
	if (ret != -EREMOTEIO)
		return ret;
	/*
	 * Refused: gone already ("no session"), or really refused. The list
	 * tells, not the message's wording.
	 */
	if (tfd_call(sock, req_id("session.list", NULL), &list, &le))
		return ret;
	gone = !listed(list, id);
	json_decref(list);
	return gone ? 0 : ret;
}

int cni_add(const struct cni_conf *c, const struct cni_env *env, struct cni_err *e)
{
	char id[CNI_ID_LEN + 1];
	struct cni_attach a;
	struct cni_err de = {};
	json_t *spec, *req, *resp;
	int ret;

	ret = attachment_id(c, env, id, e);
	if (!ret)
		ret = cni_attach_from_result(c, env, &a, e);
	if (ret)
		return ret;
	spec = cni_attach_spec(c, &a, id);
	req = req_id("session.add", NULL);
	if (!spec || !req || json_object_set_new(req, "spec", spec)) {
		json_decref(req);
		return cni_fail(e, CNI_ERR_IO, ENOMEM, "out of memory");
	}
	ret = tfd_call(c->socket, req, &resp, e);
	json_decref(resp);
	if (ret == -EREMOTEIO) {
		name_source(e, "allow", c->allow_from);
		name_source(e, "resolver", c->resolver_from);
		cni_detail(e, "tapfenced refused session `%s' on `%s'%s%s", id, a.ifname,
			   a.netns ? " in " : "", a.netns ?: "");
	}
	if (ret)
		return ret;

	/* The result is prevResult, unchanged: tapfence adds no interface or address. */
	if (json_dumpf(c->prev, stdout, JSON_COMPACT) || fputc('\n', stdout) == EOF ||
	    fflush(stdout)) {
		/* The runtime would not know of the session: take it back. */
		(void)session_gone(c->socket, id, &de);
		return cni_fail(e, CNI_ERR_IO, EIO, "cannot write the result: %s", strerror(errno));
	}
	return 0;
}

int cni_del(const struct cni_conf *c, const struct cni_env *env, struct cni_err *e)
{
	char id[CNI_ID_LEN + 1];
	int ret;

	ret = attachment_id(c, env, id, e);
	if (ret)
		return ret;
	ret = session_gone(c->socket, id, e);
	/*
	 * A daemon that does not answer fails DEL: the session may still be in
	 * force (its pins outlive the daemon), and a runtime told it is gone
	 * would never ask again. It retries DEL, and GC catches what is left.
	 */
	if (ret == -ENOTCONN)
		cni_detail(e, "session `%s' may still be in force; DEL again once tapfenced runs",
			   id);
	return ret;
}

int cni_check(const struct cni_conf *c, const struct cni_env *env, struct cni_err *e)
{
	char id[CNI_ID_LEN + 1];
	struct cni_attach a;
	const json_t *s, *spec, *first;
	const char *ifname, *mac, *netns;
	__u8 m[6];
	json_t *resp;
	int ret;

	ret = attachment_id(c, env, id, e);
	if (!ret)
		ret = cni_attach_from_result(c, env, &a, e);
	if (ret)
		return ret;
	ret = tfd_call(c->socket, req_id("session.show", id), &resp, e);
	if (ret == -EREMOTEIO) {
		cni_detail(e, "tapfenced: %s", e->msg);
		ret = cni_fail(e, CNI_ERR_NOT_ENFORCED, ENOENT, "session `%s' is not in force", id);
	}
	if (ret)
		goto cleanup;
	s = json_object_get(resp, "session");
	spec = json_object_get(s, "spec");
	ifname = json_string_value(json_object_get(spec, "ifname"));
	mac = json_string_value(json_object_get(json_object_get(spec, "guest"), "mac"));
	netns = json_string_value(json_object_get(spec, "netns"));
	first = json_object_get(s, "first");
	if (!ifname || strcmp(ifname, a.ifname)) {
		ret = cni_fail(e, CNI_ERR_NOT_ENFORCED, EINVAL,
			       "session `%s' is on `%s', not on `%s'", id, ifname ?: "?", a.ifname);
	} else if (a.netns ? !netns || strcmp(netns, a.netns) : !!netns) {
		ret = cni_fail(e, CNI_ERR_NOT_ENFORCED, EINVAL,
			       "session `%s' is in namespace `%s', not in `%s'", id,
			       netns ?: "(tapfenced's)", a.netns ?: "(tapfenced's)");
	} else if (!mac || tf_parse_mac(mac, m) || memcmp(m, a.guest_mac, 6)) {
		ret = cni_fail(e, CNI_ERR_NOT_ENFORCED, EINVAL,
			       "session `%s' is for guest MAC `%s', not this sandbox's", id,
			       mac ?: "?");
	} else if (!json_is_boolean(first)) {
		ret = cni_fail(e, CNI_ERR_NOT_ENFORCED, EPROTO,
			       "session `%s': tapfenced does not say whether its programs come "
			       "first on `%s' (no `first' in session.show)",
			       id, a.ifname);
	} else if (!json_is_true(first)) {
		cni_detail(e, "another program ahead of tapfence's on the device's tcx chain "
			      "decides first what the guest sends or receives");
		ret = cni_fail(e, CNI_ERR_NOT_ENFORCED, EPERM,
			       "session `%s': tapfence's programs are not first on `%s'", id,
			       a.ifname);
	}
cleanup:
	json_decref(resp);
	return ret;
}

/* The ids of GC's valid attachments, in valid (an object used as a set). */
static int valid_ids(const struct cni_conf *c, json_t *valid, struct cni_err *e)
{
	char err[TF_ERR_MAX], where[48], id[CNI_ID_LEN + 1];
	const char *cid, *ifname;
	json_t *v;
	size_t i;
	int ret;

	json_array_foreach(c->valid, i, v) {
		snprintf(where, sizeof(where), "cni.dev/valid-attachments[%zu]", i);
		if (!json_is_object(v))
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s: not an object", where);
		ret = tf_jget_str(v, where, "containerID", 1, &cid, err, sizeof(err));
		if (!ret)
			ret = tf_jget_str(v, where, "ifname", 1, &ifname, err, sizeof(err));
		if (ret)
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s", err);
		ret = cni_session_id(c->name, cid, ifname, id, NULL);
		if (ret)
			return cni_fail(e, CNI_ERR_IO, -ret, "cannot derive the session id: %s",
					strerror(-ret));
		if (json_object_set_new(valid, id, json_true()))
			return cni_fail(e, CNI_ERR_IO, ENOMEM, "out of memory");
	}
	return 0;
}

int cni_gc(const struct cni_conf *c, struct cni_err *e)
{
	char prefix[CNI_ID_PREFIX_LEN + 1], id[CNI_ID_LEN + 1];
	json_t *valid = json_object(), *list = NULL, *s;
	struct cni_err de;
	unsigned int failed = 0;
	const char *sid;
	size_t i;
	int ret;

	if (!valid)
		return cni_fail(e, CNI_ERR_IO, ENOMEM, "out of memory");
	/* Without the list every session would look stale: refuse rather than guess. */
	if (!c->valid) {
		ret = cni_fail(e, CNI_ERR_CONFIG, EINVAL, "cni.dev/valid-attachments: missing");
		goto cleanup;
	}
	ret = cni_session_id(c->name, NULL, NULL, id, prefix);
	if (!ret)
		ret = valid_ids(c, valid, e);
	if (!ret)
		ret = tfd_call(c->socket, req_id("session.list", NULL), &list, e);
	if (ret)
		goto cleanup;
	/* As many as can be deleted are; the first failure is the one reported. */
	json_array_foreach(json_object_get(list, "sessions"), i, s) {
		sid = json_string_value(json_object_get(s, "id"));
		if (!sid || strncmp(sid, prefix, CNI_ID_PREFIX_LEN) || json_object_get(valid, sid))
			continue;
		memset(&de, 0, sizeof(de));
		if (session_gone(c->socket, sid, &de) && !failed++) {
			*e = de;
			ret = -EIO;
		}
	}
	if (failed > 1)
		cni_detail(e, "%u stale sessions could not be deleted", failed);
cleanup:
	json_decref(list);
	json_decref(valid);
	return ret;
}

int cni_status(const struct cni_conf *c, struct cni_err *e)
{
	json_t *resp;
	int ret = tfd_call(c->socket, req_id("version", NULL), &resp, e);

	json_decref(resp);
	if (ret) {
		cni_detail(e, "%s", e->msg);
		return cni_fail(e, CNI_ERR_UNAVAILABLE, -ret == ENOTCONN ? ENOTCONN : EIO,
				"tapfenced does not answer on %s: no sandbox can be added",
				c->socket);
	}
	return 0;
}
