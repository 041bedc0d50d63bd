// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence: the command line client of tapfenced. A table of subcommands,
 * one small file each (wireguard-tools wg.c); this file holds main(), the
 * global options, the table, and the output helpers the commands share.
 */
#include <limits.h>
#include <math.h> /* isfinite */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "ctl.h"

static const struct ctl_cmd top_cmds[] = {
	{ "session", NULL, ctl_session_cmds, 0, 0, "session", "manage sessions" },
	{ "rule", NULL, ctl_rule_cmds, 0, 0, "rule", "change a session's allowlist" },
	{ "top", cmd_top, NULL, -1, -1, "top [--interval SEC] [--once] [--log FILE]",
	  "the node at a glance, refreshed: sessions by denials, reasons, denied destinations (docs/top.md)" },
	{ "metrics", cmd_metrics, NULL, 0, 0, "metrics",
	  "the node's metrics in the Prometheus text format (docs/metrics.md)" },
	{ "events", cmd_events, NULL, -1, -1,
	  "events [--follow] [--session ID] [--verdict allow|deny|audit] [--reason R[,R...]] "
	  "[--proto P] [--since T] [--until T] [--last N] [--log FILE] [-o compact|table|json]",
	  "print verdict events, live (until idle for 0.5 s, or with --follow until interrupted), "
	  "or from the event log with --since, --until, --last or --log" },
	{ "log", NULL, ctl_log_cmds, 0, 0, "log", "the sealed event log, offline" },
	{ "policy", NULL, ctl_policy_cmds, 0, 0, "policy",
	  "allowlists from what happened, offline" },
	{ "attest", cmd_attest, NULL, -1, -1,
	  "attest [--session ID] [--out FILE] | attest verify FILE [--key KEY] [--spec SPEC] [--max-age SEC] [--allow-no-battery]",
	  "a signed statement (DSSE, in-toto) of what enforces which policy on this node" },
	{ "stats", cmd_stats, NULL, 0, 0, "stats", "show daemon-wide counters" },
	{ "guard", cmd_guard, NULL, 0, 0, "guard",
	  "list the guarded devices: their session, guard programs and drops" },
	{ "reasons", cmd_reasons, NULL, 0, 0, "reasons",
	  "list every verdict reason the feed reports (no daemon needed; docs/events.md)" },
	{ "version", cmd_version, NULL, 0, 0, "version",
	  "show the CLI's and the daemon's versions" },
	{ "help", NULL, NULL, 0, 0, "help", "show this help" },
	{ 0 }
};

void ctl_err(const char *fmt, ...)
{
	va_list ap;

	fputs(CTL_PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Each command's synopsis, then what it does, indented below it: readable in 80 columns. */
static void print_commands(FILE *f, const struct ctl_cmd *table)
{
	for (; table->name; table++) {
		if (table->sub)
			print_commands(f, table->sub);
		else
			fprintf(f, "  %s\n      %s\n", table->synopsis, table->help);
	}
}

static void show_usage(FILE *f)
{
	fprintf(f,
		"Usage: " CTL_PROG " [--socket PATH] [--json] [--timeout SEC] COMMAND [ARGS...]\n\n"
		"Commands:\n");
	print_commands(f, top_cmds);
	fprintf(f,
		"\nOptions:\n"
		"  --socket PATH  control socket (default: $" CTL_SOCKET_ENV
		", else " CTL_DEFAULT_SOCKET ")\n"
		"  --json         print the daemon's responses as JSON\n"
		"  --timeout SEC  bound every connect, read and write (default %d; 0: no bound)\n"
		"  -h, --help     show this help\n\n"
		"Exit status: 0 success, 1 error (reported by the daemon or otherwise),\n"
		"2 cannot connect to the daemon, 64 usage error.\n",
		CTL_DEFAULT_TIMEOUT_MS / 1000);
}

int ctl_usage(const struct ctl_cmd *cmd)
{
	fprintf(stderr, "Usage: " CTL_PROG " [OPTIONS] %s\n", cmd->synopsis);
	return -CTL_EUSAGE;
}

static void group_usage(FILE *f, const struct ctl_cmd *group)
{
	const struct ctl_cmd *c;
	const char *prefix = "Usage:";

	for (c = group->sub; c->name; c++) {
		fprintf(f, "%-6s " CTL_PROG " [OPTIONS] %s\n", prefix, c->synopsis);
		prefix = "";
	}
}

static int is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help");
}

/* argv[0] is a command word of group's table (the top-level one if group is NULL). */
static int dispatch(const struct ctl_opts *o, const struct ctl_cmd *group, int argc, char *argv[])
{
	const struct ctl_cmd *table = group ? group->sub : top_cmds, *c;
	int nargs = argc - 1;

	for (c = table; c->name; c++)
		if (!strcmp(c->name, argv[0]))
			break;
	if (!c->name) {
		ctl_err("unknown command `%s'", argv[0]);
		if (group)
			group_usage(stderr, group);
		else
			show_usage(stderr);
		return -CTL_EUSAGE;
	}
	if (!c->run && !c->sub) { /* help */
		show_usage(stdout);
		return 0;
	}
	if (c->sub) {
		if (argc < 2) {
			group_usage(stderr, c);
			return -CTL_EUSAGE;
		}
		if (is_help(argv[1])) {
			group_usage(stdout, c);
			return 0;
		}
		return dispatch(o, c, argc - 1, argv + 1);
	}
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fprintf(stdout, "Usage: " CTL_PROG " [OPTIONS] %s\n  %s\n", c->synopsis, c->help);
		return 0;
	}
	if (c->max_args >= 0 && (nargs < c->min_args || nargs > c->max_args))
		return ctl_usage(c);
	return c->run(o, c, argc, argv);
}

int ctl_opt_value(int argc, char *argv[], int *i, const char *name, const char **val)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc) {
		ctl_err("option `%s' needs an argument", name);
		return -CTL_EUSAGE;
	}
	*val = argv[++*i];
	return 1;
}

static int parse_timeout(const char *s, int *ms)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(sec) || sec < 0 ||
	    sec > (double)(INT_MAX / 1000)) {
		ctl_err("invalid timeout `%s' (seconds, 0 for none)", s);
		return -CTL_EUSAGE;
	}
	if (sec == 0) {
		*ms = -1;
		return 0;
	}
	*ms = (int)(sec * 1000);
	if ((double)*ms < sec * 1000) /* round up: 0.0001 s is not "none" */
		++*ms;
	return 0;
}

static int exit_code(int err)
{
	if (!err)
		return EXIT_SUCCESS;
	if (err == -CTL_EUSAGE)
		return EX_USAGE;
	if (err == -CTL_ENOCONN)
		return 2;
	return EXIT_FAILURE;
}

int main(int argc, char *argv[])
{
	struct ctl_opts o = { .timeout_ms = CTL_DEFAULT_TIMEOUT_MS };
	const char *env = getenv(CTL_SOCKET_ENV), *val;
	int i, r, err = 0;

	o.socket_path = env && *env ? env : CTL_DEFAULT_SOCKET;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			show_usage(stdout);
			goto out;
		}
		if (!strcmp(a, "--version")) {
			/* The CLI's own, without a daemon (`tapfence version' asks it too). */
			fputs(CTL_PROG " " TF_VERSION "\n", stdout);
			goto out;
		}
		if (!strcmp(a, "--json")) {
			o.json = 1;
			continue;
		}
		r = ctl_opt_value(argc, argv, &i, "--socket", &val);
		if (r > 0) {
			o.socket_path = val;
			continue;
		}
		if (!r) {
			r = ctl_opt_value(argc, argv, &i, "--timeout", &val);
			if (r > 0) {
				err = parse_timeout(val, &o.timeout_ms);
				if (err)
					goto usage;
				continue;
			}
		}
		if (!r)
			ctl_err("unknown option `%s'", a);
		err = -CTL_EUSAGE;
		goto usage;
	}
	if (i >= argc) {
		err = -CTL_EUSAGE;
		goto usage;
	}
	err = dispatch(&o, NULL, argc - i, argv + i);
out:
	/* A full disk or closed pipe on stdout is an error too. */
	if (fflush(stdout) || ferror(stdout)) {
		if (!err)
			ctl_err("cannot write to standard output: %s", strerror(errno));
		err = err ? err : -EIO;
	}
	return exit_code(err);
usage:
	show_usage(stderr);
	return exit_code(err);
}

/* Output helpers shared by the commands. */

static int is_ctrl(unsigned char ch)
{
	return ch < 0x20 || ch == 0x7f;
}

void ctl_print_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (is_ctrl((unsigned char)*s))
			fprintf(f, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
}

/* Terminal columns, roughly: escapes count 4, UTF-8 continuation bytes 0. */
size_t ctl_str_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++) {
		if (is_ctrl((unsigned char)*s))
			w += 4;
		else if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	}
	return w;
}

void ctl_print_value(FILE *f, const json_t *v)
{
	if (!v) { /* absent */
		fputc('-', f);
		return;
	}
	switch (json_typeof(v)) {
	case JSON_STRING:
		ctl_print_str(f, json_string_value(v));
		break;
	case JSON_INTEGER:
		fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		fprintf(f, "%g", json_real_value(v));
		break;
	case JSON_TRUE:
		fputs("true", f);
		break;
	case JSON_FALSE:
		fputs("false", f);
		break;
	case JSON_OBJECT:
	case JSON_ARRAY:
		json_dumpf(v, f, JSON_COMPACT);
		break;
	default: /* null */
		fputc('-', f);
	}
}

size_t ctl_value_width(const json_t *v)
{
	char *s;
	size_t w;
	int n;

	if (!v)
		return 1;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return ctl_str_width(json_string_value(v));
	case JSON_INTEGER:
		n = snprintf(NULL, 0, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return n > 0 ? (size_t)n : 0;
	case JSON_REAL:
		n = snprintf(NULL, 0, "%g", json_real_value(v));
		return n > 0 ? (size_t)n : 0;
	case JSON_TRUE:
		return 4;
	case JSON_FALSE:
		return 5;
	case JSON_OBJECT:
	case JSON_ARRAY:
		s = json_dumps(v, JSON_COMPACT);
		w = s ? ctl_str_width(s) : 0;
		free(s);
		return w;
	default:
		return 1;
	}
}

void ctl_pad(FILE *f, size_t have, size_t want)
{
	for (; have < want; have++)
		fputc(' ', f);
}

int ctl_print_json(json_t *resp)
{
	json_object_del(resp, "ok");
	if (json_dumpf(resp, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF) {
		ctl_err("cannot write to standard output");
		return -EIO;
	}
	return 0;
}

void ctl_print_kv_line(FILE *f, int indent, const char *key, size_t keyw, const json_t *v)
{
	ctl_pad(f, 0, (size_t)indent);
	ctl_print_str(f, key);
	fputc(':', f);
	if (json_is_object(v) && json_object_size(v)) {
		fputc('\n', f);
		ctl_print_kv(f, v, indent + 2);
		return;
	}
	ctl_pad(f, ctl_str_width(key) + 1, keyw + 3);
	if (json_is_object(v))
		fputs("(none)", f);
	else
		ctl_print_value(f, v);
	fputc('\n', f);
}

int ctl_print_line(const json_t *resp, const void *tmpl)
{
	const char *p, *end;
	char key[64];

	for (p = tmpl; *p; p++) {
		end = *p == '{' ? strchr(p, '}') : NULL;
		if (!end || (size_t)(end - p - 1) >= sizeof(key)) {
			fputc(*p, stdout);
			continue;
		}
		memcpy(key, p + 1, end - p - 1);
		key[end - p - 1] = '\0';
		ctl_print_value(stdout, json_object_get(resp, key));
		p = end;
	}
	return 0;
}

void ctl_print_kv(FILE *f, const json_t *obj, int indent)
{
	const char *key;
	json_t *v;
	size_t w = 0;

	json_object_foreach((json_t *)obj, key, v)
		if (ctl_str_width(key) > w)
			w = ctl_str_width(key);
	json_object_foreach((json_t *)obj, key, v)
		ctl_print_kv_line(f, indent, key, w, v);
}
