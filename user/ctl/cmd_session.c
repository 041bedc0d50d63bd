// SPDX-License-Identifier: GPL-2.0
/* tapfence session add|del|list|show */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

/*
 * A spec file may be pretty-printed; the compact request must still fit
 * the daemon's max_request_bytes.
 */
#define SPEC_FILE_MAX (16u << 20)

static int read_all(const char *path, char **bufp, size_t *lenp)
{
	const char *name = strcmp(path, "-") ? path : "standard input";
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	int fd, err = 0;
	ssize_t n;

	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		err = errno;
		ctl_err("cannot open `%s': %s", path, strerror(err));
		return ctl_syserr(err);
	}
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ctl_err("out of memory");
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			ctl_err("cannot read `%s': %s", name, strerror(err));
			err = ctl_syserr(err);
			goto cleanup;
		}
		if (!n)
			break;
		len += (size_t)n;
		if (len > SPEC_FILE_MAX) {
			ctl_err("`%s' is larger than %u bytes", name, SPEC_FILE_MAX);
			err = -EFBIG;
			goto cleanup;
		}
	}
	*bufp = buf;
	*lenp = len;
	buf = NULL;
cleanup:
	if (fd != STDIN_FILENO)
		close(fd);
	free(buf);
	return err;
}

static int session_add(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	const char *path = argv[1];
	json_t *spec;
	size_t len = 0;
	char *buf = NULL;
	int err;

	(void)self;
	(void)argc;
	err = read_all(path, &buf, &len);
	if (err)
		return err;
	/* Only the shape is checked here; validating the spec is the daemon's job. */
	err = ctl_parse_object(buf, len, strcmp(path, "-") ? path : "standard input", &spec);
	free(buf);
	if (err)
		return err;
	return ctl_call(o, ctl_req_set(ctl_req("session.add"), "spec", spec), ctl_print_line,
			"session {id} added: ifindex {ifindex}, slot {slot}, "
			"policy version {policy_version}\n");
}

/* "session ID deleted", and where its evidence statement went (log.session_evidence). */
static int print_del(const json_t *resp, const void *ctx)
{
	const char *ev = json_string_value(json_object_get(resp, "evidence"));
	const char *ev_err = json_string_value(json_object_get(resp, "evidence_error"));

	(void)ctx;
	printf("session %s deleted\n", json_string_value(json_object_get(resp, "id")) ?: "?");
	if (ev)
		printf("evidence: %s\n", ev);
	if (ev_err)
		printf("evidence: %s\n", ev_err);
	return 0;
}

static int session_del(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[])
{
	json_t *req;

	if (argc == 3 && strcmp(argv[2], "--release")) {
		ctl_err("session del: unknown option `%s' (usage: %s)", argv[2], self->synopsis);
		return -EINVAL;
	}
	req = ctl_req_id(ctl_req("session.del"), "id", argv[1]);
	if (req && argc == 3 && json_object_set_new(req, "release", json_true())) {
		json_decref(req);
		req = NULL;
	}
	return ctl_call(o, req, print_del, NULL);
}

/* session quarantine ID [--reason TEXT] [--reset] / session resume ID */
static int session_quarantine(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			      char *argv[])
{
	const char *reason = NULL;
	int reset = 0, a;
	json_t *req;

	for (a = 2; a < argc; a++) {
		if (!strcmp(argv[a], "--reason") && a + 1 < argc && !reason)
			reason = argv[++a];
		else if (!strcmp(argv[a], "--reset") && !reset)
			reset = 1;
		else
			break;
	}
	if (a < argc) {
		ctl_err("usage: %s", self->synopsis);
		return -EINVAL;
	}
	req = ctl_req_id(ctl_req("session.quarantine"), "id", argv[1]);
	if (req && ((reason && json_object_set_new(req, "reason", json_string(reason))) ||
		    (reset && json_object_set_new(req, "reset", json_true())))) {
		json_decref(req);
		req = NULL;
	}
	return ctl_call(o, req, ctl_print_line,
			"session {id} quarantined (policy version {policy_version})\n");
}

static int session_resume(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			  char *argv[])
{
	(void)self, (void)argc;
	return ctl_call(o, ctl_req_id(ctl_req("session.resume"), "id", argv[1]), ctl_print_line,
			"session {id} resumed (policy version {policy_version})\n");
}

/* session mode ID enforce|audit */
static int session_mode(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			char *argv[])
{
	json_t *req;

	if (argc != 3 || (strcmp(argv[2], "enforce") && strcmp(argv[2], "audit"))) {
		ctl_err("usage: %s", self->synopsis);
		return -EINVAL;
	}
	req = ctl_req_id(ctl_req("session.mode"), "id", argv[1]);
	if (req && json_object_set_new(req, "mode", json_string(argv[2]))) {
		json_decref(req);
		req = NULL;
	}
	return ctl_call(o, req, ctl_print_line,
			"session {id} in {mode} mode (policy version {policy_version})\n");
}

static const struct {
	const char *head, *key;
} list_cols[] = {
	{ "ID", "id" },		{ "IFNAME", "ifname" },		{ "IFINDEX", "ifindex" },
	{ "SLOT", "slot" },	{ "POLICY", "policy_version" }, { "RULES", "rules" },
	{ "ATTACH", "attach" },
};
#define NCOLS (sizeof(list_cols) / sizeof(list_cols[0]))

static int print_list(const json_t *resp, const void *ctx)
{
	const json_t *sessions = json_object_get(resp, "sessions");
	size_t w[NCOLS], i, k, vw;
	json_t *s, *v;

	(void)ctx;
	if (!json_is_array(sessions)) {
		ctl_err("malformed response from daemon");
		return -EPROTO;
	}
	for (k = 0; k < NCOLS; k++)
		w[k] = strlen(list_cols[k].head);
	json_array_foreach(sessions, i, s) {
		if (!json_is_object(s)) {
			ctl_err("malformed response from daemon");
			return -EPROTO;
		}
		for (k = 0; k < NCOLS; k++) {
			vw = ctl_value_width(json_object_get(s, list_cols[k].key));
			w[k] = vw > w[k] ? vw : w[k];
		}
	}
	for (k = 0; k < NCOLS; k++) {
		fputs(list_cols[k].head, stdout);
		if (k + 1 < NCOLS)
			ctl_pad(stdout, strlen(list_cols[k].head), w[k] + 2);
	}
	fputc('\n', stdout);
	json_array_foreach(sessions, i, s) {
		for (k = 0; k < NCOLS; k++) {
			v = json_object_get(s, list_cols[k].key);
			ctl_print_value(stdout, v);
			if (k + 1 < NCOLS)
				ctl_pad(stdout, ctl_value_width(v), w[k] + 2);
		}
		fputc('\n', stdout);
	}
	return 0;
}

static int session_list(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			char *argv[])
{
	(void)self;
	(void)argc;
	(void)argv;
	return ctl_call(o, ctl_req("session.list"), print_list, NULL);
}

/* "tcp 198.51.100.0/24 ports 80,8000-8100", then any fields this CLI does not know. */
static void print_rule(FILE *f, const json_t *rule)
{
	const json_t *proto, *ports, *v;
	const char *key;
	size_t i;

	if (!json_is_object(rule)) {
		ctl_print_value(f, rule);
		return;
	}
	proto = json_object_get(rule, "proto");
	if (proto)
		ctl_print_value(f, proto);
	else
		fputs("any", f);
	if (json_object_get(rule, "cidr")) {
		fputc(' ', f);
		ctl_print_value(f, json_object_get(rule, "cidr"));
	}
	ports = json_object_get(rule, "ports");
	if (json_is_array(ports) && json_array_size(ports)) {
		fputs(" ports ", f);
		json_array_foreach(ports, i, v) {
			if (i)
				fputc(',', f);
			ctl_print_value(f, v);
		}
	} else if (ports && !json_is_array(ports)) {
		fputs(" ports ", f);
		ctl_print_value(f, ports);
	}
	json_object_foreach((json_t *)rule, key, v) {
		if (!strcmp(key, "proto") || !strcmp(key, "cidr") || !strcmp(key, "ports"))
			continue;
		fputc(' ', f);
		ctl_print_str(f, key);
		fputc('=', f);
		ctl_print_value(f, v);
	}
}

/*
 * The session's own fields, then its spec's (guest, gateway, resolver, and
 * whatever else the daemon reports), then the allowlist and the counters.
 */
static int print_show(const json_t *resp, const void *ctx)
{
	const json_t *sess = json_object_get(resp, "session"), *spec, *allow, *v;
	json_t *view;
	const char *key;
	size_t i, w = strlen("counters");

	(void)ctx;
	if (!json_is_object(sess)) {
		ctl_err("malformed response from daemon");
		return -EPROTO;
	}
	view = json_object();
	if (!view) {
		ctl_err("out of memory");
		return -ENOMEM;
	}
	json_object_foreach((json_t *)sess, key, v)
		if (strcmp(key, "spec") && strcmp(key, "counters"))
			json_object_set(view, key, (json_t *)v);
	spec = json_object_get(sess, "spec");
	json_object_foreach((json_t *)spec, key, v)
		if (strcmp(key, "allow") && !json_object_get(view, key))
			json_object_set(view, key, (json_t *)v);
	json_object_foreach(view, key, v)
		w = ctl_str_width(key) > w ? ctl_str_width(key) : w;
	json_object_foreach(view, key, v)
		ctl_print_kv_line(stdout, 0, key, w, v);
	json_decref(view);

	allow = json_object_get(spec, "allow");
	if (json_is_array(allow) && json_array_size(allow)) {
		fputs("allow:\n", stdout);
		json_array_foreach(allow, i, v) {
			fputs("  ", stdout);
			print_rule(stdout, v);
			fputc('\n', stdout);
		}
	} else {
		fputs("allow:", stdout);
		ctl_pad(stdout, strlen("allow:"), w + 3);
		fputs("(none)\n", stdout);
	}
	v = json_object_get(sess, "counters");
	if (v)
		ctl_print_kv_line(stdout, 0, "counters", w, v);
	return 0;
}

static int session_show(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			char *argv[])
{
	(void)self;
	(void)argc;
	return ctl_call(o, ctl_req_id(ctl_req("session.show"), "id", argv[1]), print_show, NULL);
}

const struct ctl_cmd ctl_session_cmds[] = {
	{ "add", session_add, NULL, 1, 1, "session add FILE|-",
	  "add a session from a JSON spec in FILE, or - for standard input" },
	{ "del", session_del, NULL, 1, 2, "session del ID [--release]",
	  "delete a session; its device denies everything after, unless --release" },
	{ "list", session_list, NULL, 0, 0, "session list", "list sessions" },
	{ "mode", session_mode, NULL, 2, 2, "session mode ID enforce|audit",
	  "switch a session between enforcing and auditing its policy (docs/audit-mode.md)" },
	{ "quarantine", session_quarantine, NULL, 1, 4,
	  "session quarantine ID [--reason TEXT] [--reset]",
	  "cut a session off at once, established flows included; --reset: its TCP connections "
	  "reset toward the guest (docs/quarantine.md)" },
	{ "resume", session_resume, NULL, 1, 1, "session resume ID",
	  "give a quarantined session its own policy back" },
	{ "show", session_show, NULL, 1, 1, "session show ID",
	  "show a session: spec, allowlist and counters" },
	{ 0 }
};
