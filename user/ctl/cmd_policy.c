// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence policy suggest ID [--since TIME] [--log FILE]: an allowlist that
 * would have allowed what a session was denied (or, in audit mode, passed
 * with verdict audit), from the event log, offline
 * (docs/suggest.md). Read from the log, never from the daemon: a log of
 * gigabytes costs the daemon nothing.
 *
 *   no_rule, port_not_allowed to ADDR (tcp/udp PORT, icmp) -> {"cidr": ADDR, ...}
 *   dns_name_denied NAME                               -> {"host": NAME, tcp 80, 443}
 *   tls_sni_denied, tls_sni_mismatch SNI on PORT       -> {"host": SNI, tcp PORT}
 *
 * Printed as {"allow": [RULE...], "counts": [N...]}: "allow" is what
 * `session add` takes in a spec and `rule add` one by one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define MAX_ENTRIES 1024

struct entry {
	char key[320]; /* "cidr proto addr" or "host name" */
	json_t *rule;  /* without its ports */
	json_t *ports; /* an array of integers, or NULL (none: every port, icmp) */
	json_int_t count;
};

static struct entry *find(struct entry *e, size_t *n, const char *key, int *fresh)
{
	size_t i;

	*fresh = 0;
	for (i = 0; i < *n; i++)
		if (!strcmp(e[i].key, key))
			return &e[i];
	if (*n == MAX_ENTRIES)
		return NULL;
	*fresh = 1;
	memset(&e[*n], 0, sizeof(e[*n]));
	snprintf(e[*n].key, sizeof(e[*n].key), "%s", key);
	return &e[(*n)++];
}

static void add_port(struct entry *e, json_int_t port)
{
	size_t i;
	json_t *p;

	if (port <= 0)
		return;
	json_array_foreach(e->ports, i, p)
		if (json_integer_value(p) == port)
			return;
	json_array_append_new(e->ports, json_integer(port));
}

/* One event line: the entry it asks for, if it is a denial a rule would have allowed. */
static void take(const json_t *ev, struct entry *e, size_t *n)
{
	const char *reason = json_string_value(json_object_get(ev, "reason"));
	const char *proto = json_string_value(json_object_get(ev, "proto"));
	const char *dst = json_string_value(json_object_get(ev, "dst"));
	const char *name = json_string_value(json_object_get(ev, "name"));
	json_int_t dport = json_integer_value(json_object_get(ev, "dport"));
	struct entry *x = NULL;
	char key[320];
	int fresh, l4;

	if (!reason)
		return;
	if ((!strcmp(reason, "no_rule") || !strcmp(reason, "port_not_allowed")) && proto && dst &&
	    !strcmp(json_string_value(json_object_get(ev, "direction")) ?: "", "from_guest")) {
		l4 = !strcmp(proto, "tcp") || !strcmp(proto, "udp");
		if (!l4 && strcmp(proto, "icmp") && strcmp(proto, "icmpv6"))
			return;
		snprintf(key, sizeof(key), "cidr %s %s", l4 ? proto : "icmp", dst);
		x = find(e, n, key, &fresh);
		if (x && fresh) {
			x->rule =
				json_pack("{s:s, s:s}", "cidr", dst, "proto", l4 ? proto : "icmp");
			x->ports = l4 ? json_array() : NULL;
		}
		if (x && l4)
			add_port(x, dport);
	} else if (!strcmp(reason, "dns_name_denied") && name) {
		snprintf(key, sizeof(key), "host %s", name);
		x = find(e, n, key, &fresh);
		if (x && fresh) {
			x->rule = json_pack("{s:s, s:s}", "host", name, "proto", "tcp");
			x->ports = json_array();
		}
		/* The ports a name is wanted on are not known before it resolves: the web's. */
		if (x) {
			add_port(x, 443);
			add_port(x, 80);
		}
	} else if ((!strcmp(reason, "tls_sni_denied") || !strcmp(reason, "tls_sni_mismatch")) &&
		   name) {
		snprintf(key, sizeof(key), "host %s", name);
		x = find(e, n, key, &fresh);
		if (x && fresh) {
			x->rule = json_pack("{s:s, s:s}", "host", name, "proto", "tcp");
			x->ports = json_array();
		}
		if (x)
			add_port(x, dport);
	}
	if (x)
		x->count++;
}

/* A denial, or what audit mode passed that enforce mode would have denied. */
static int denied(const char *verdict)
{
	return verdict && (!strcmp(verdict, "deny") || !strcmp(verdict, "audit"));
}

static int cmd_policy_suggest(const struct ctl_opts *o, const struct ctl_cmd *self, int argc,
			      char *argv[])
{
	const char *id = NULL, *since = NULL, *log = "/var/log/tapfence/events.jsonl", *t;
	static struct entry e[MAX_ENTRIES];
	json_t *ev, *allow, *counts, *out;
	size_t n = 0, i, cap = 0;
	char *line = NULL;
	ssize_t len;
	FILE *f;
	int a;

	(void)o;
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--since") && a + 1 < argc)
			since = argv[++a];
		else if (!strcmp(argv[a], "--log") && a + 1 < argc)
			log = argv[++a];
		else if (!id && argv[a][0] != '-')
			id = argv[a];
		else
			break;
	}
	if (!id || a < argc) {
		ctl_err("usage: %s", self->synopsis);
		return -EINVAL;
	}
	f = fopen(log, "r");
	if (!f) {
		ctl_err("--log: cannot read `%s': %s", log, strerror(errno));
		return -errno;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		ev = json_loadb(line, (size_t)len, 0, NULL);
		t = json_string_value(json_object_get(ev, "time"));
		/* RFC 3339 UTC times compare as strings; --since may be any prefix of one. */
		if (ev && t && (!since || strcmp(t, since) >= 0) &&
		    !strcmp(json_string_value(json_object_get(ev, "session")) ?: "", id) &&
		    denied(json_string_value(json_object_get(ev, "verdict"))))
			take(ev, e, &n);
		json_decref(ev);
	}
	free(line);
	fclose(f);
	allow = json_array();
	counts = json_array();
	for (i = 0; i < n; i++) {
		if (e[i].ports && json_array_size(e[i].ports))
			json_object_set(e[i].rule, "ports", e[i].ports);
		json_array_append(allow, e[i].rule);
		json_array_append_new(counts, json_integer(e[i].count));
		json_decref(e[i].rule);
		json_decref(e[i].ports);
	}
	out = json_pack("{s:o, s:o}", "allow", allow, "counts", counts);
	if (n == MAX_ENTRIES)
		ctl_err("warning: only the first %d destinations are suggested", MAX_ENTRIES);
	json_dumpf(out, stdout, JSON_INDENT(1));
	putchar('\n');
	json_decref(out);
	return 0;
}

const struct ctl_cmd ctl_policy_cmds[] = {
	{ "suggest", cmd_policy_suggest, NULL, -1, -1,
	  "policy suggest ID [--since TIME] [--log FILE]",
	  "an allowlist that would have allowed what session ID was denied, from the event log "
	  "(default /var/log/tapfence/events.jsonl), with counts" },
	{ 0 }
};
