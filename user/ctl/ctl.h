/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tapfence, the CLI: shared declarations. The wire protocol (newline-
 * delimited JSON over a Unix stream socket) is in docs/control-protocol.md.
 *
 * Every function returns 0 or a negative errno and has already said why on
 * stderr. main() alone turns errors into exit codes: -CTL_EUSAGE is 64
 * (usage printed), -CTL_ENOCONN is 2 (daemon unreachable), anything else 1.
 */
#ifndef TF_CTL_H
#define TF_CTL_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#define CTL_PROG	       "tapfence"
#define CTL_DEFAULT_SOCKET     "/run/tapfence/control.sock"
#define CTL_SOCKET_ENV	       "TAPFENCE_SOCKET"
#define CTL_DEFAULT_TIMEOUT_MS 10000
#define CTL_RESPONSE_MAX       (16u << 20) /* response line excl. "\n" */
#define CTL_EVENTS_IDLE_MS     500	   /* `events' without --follow */

#define CTL_EUSAGE  EINVAL	/* exit 64 (EX_USAGE) */
#define CTL_ENOCONN ENOTCONN	/* exit 2 */
#define CTL_EDAEMON EREMOTEIO	/* {"ok":false}: exit 1 */
#define CTL_ECANNOT CTL_ENOCONN /* exit 2: `log verify' could not verify */

struct ctl_opts {
	const char *socket_path;
	int json;	/* --json */
	int timeout_ms; /* --timeout; -1 for none */
};

/**
 * struct ctl_cmd - one entry of a subcommand table (wireguard-tools wg.c).
 * A group ("session") has @sub, a NULL-terminated table, and no @run.
 * @min_args, @max_args: operands after the command words; -1 for "the
 *                       command parses its own" (events takes options).
 * @synopsis: the full command line shown in usage, e.g. "session del ID".
 */
struct ctl_cmd {
	const char *name;
	int (*run)(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
	const struct ctl_cmd *sub;
	int min_args, max_args;
	const char *synopsis;
	const char *help;
};

extern const struct ctl_cmd ctl_session_cmds[];
extern const struct ctl_cmd ctl_rule_cmds[];
extern const struct ctl_cmd ctl_log_cmds[];
extern const struct ctl_cmd ctl_policy_cmds[];
int cmd_events(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_attest(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_stats(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_metrics(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_top(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_guard(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_version(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);
int cmd_reasons(const struct ctl_opts *o, const struct ctl_cmd *self, int argc, char *argv[]);

/* Errors and usage (tapfence.c). ctl_usage() prints one command's usage, returns -CTL_EUSAGE. */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ctl_usage(const struct ctl_cmd *cmd);
/*
 * Option with a value, "--name VALUE" or "--name=VALUE", at argv[*i]: 1 and
 * *val set (*i advanced past a separate value), 0 if argv[*i] is not it,
 * -CTL_EUSAGE if the value is missing.
 */
int ctl_opt_value(int argc, char *argv[], int *i, const char *name, const char **val)
	__attribute__((warn_unused_result));
/* A syscall errno as a return value that cannot be mistaken for one of the CTL_E* codes. */
static inline int ctl_syserr(int e)
{
	return (e == CTL_EUSAGE || e == CTL_ENOCONN || e == CTL_EDAEMON || e <= 0) ? -EIO : -e;
}

/* Transport (client.c). */
struct ctl_conn {
	int fd;
	const char *path;
	int timeout_ms;
	const sigset_t *waitmask; /* if set, signals allowed while waiting (ppoll) */
	char *buf;
	size_t off, scan, len, cap; /* unread data is buf[off..len) */
};

extern volatile sig_atomic_t ctl_stop; /* set by SIGINT/SIGTERM handlers that want it */

int ctl_connect(const struct ctl_opts *o, struct ctl_conn *c) __attribute__((warn_unused_result));
void ctl_close(struct ctl_conn *c);
/* One request line. -EPIPE (not reported) if the daemon closed the connection. */
int ctl_send(struct ctl_conn *c, const json_t *req) __attribute__((warn_unused_result));
/*
 * Next line, without its "\n" and NUL-terminated; valid until the next call.
 * timeout_ms bounds the whole line (-1: none). -ETIMEDOUT, -ECONNRESET on EOF
 * (silently if nothing of a line was read), -EMSGSIZE, -EINTR if ctl_stop was set.
 */
int ctl_recv_line(struct ctl_conn *c, int timeout_ms, char **line, size_t *len)
	__attribute__((warn_unused_result));
/* 1 if data (or EOF) is ready within timeout_ms, 0 if not, or -errno. */
int ctl_wait_readable(struct ctl_conn *c, int timeout_ms) __attribute__((warn_unused_result));
/* Parse one response line; checks "ok", prints a daemon error and returns -CTL_EDAEMON. */
int ctl_parse_response(const char *line, size_t len, json_t **resp)
	__attribute__((warn_unused_result));
/* Send req, read its response (see ctl_parse_response), even if sending failed with -EPIPE. */
int ctl_roundtrip(struct ctl_conn *c, const json_t *req, json_t **resp)
	__attribute__((warn_unused_result));
/* Connect, ctl_roundtrip(), close. */
int ctl_request(const struct ctl_opts *o, const json_t *req, json_t **resp)
	__attribute__((warn_unused_result));
/*
 * Requests: a new {"op":op}, then fields added; each returns the request or
 * NULL (message printed, request freed), and takes NULL for a request that
 * could not be made, so calls chain into ctl_call().
 */
json_t *ctl_req(const char *op);
/* req[key] = v, v stolen (freed if req is NULL). */
json_t *ctl_req_set(json_t *req, const char *key, json_t *v);
/* req[key] = the session id id; NULL if id is not valid UTF-8. */
json_t *ctl_req_id(json_t *req, const char *key, const char *id);
/* Prints a successful response resp as text (a subcommand's printer); 0 or -errno. */
typedef int ctl_print_fn(const json_t *resp, const void *ctx);
/*
 * One subcommand's exchange: send req (consumed; NULL: it could not be
 * made, and said so), then print the response, as JSON with --json, else
 * with print(resp, ctx) (NULL: nothing to print).
 */
int ctl_call(const struct ctl_opts *o, json_t *req, ctl_print_fn *print, const void *ctx)
	__attribute__((warn_unused_result));
/* Parse a JSON object given on the command line or in a file; what names it in errors. */
int ctl_parse_object(const char *buf, size_t len, const char *what, json_t **out)
	__attribute__((warn_unused_result));

/* Output (tapfence.c). */
void ctl_print_str(FILE *f, const char *s); /* control bytes escaped as \xNN */
size_t ctl_str_width(const char *s);
void ctl_print_value(FILE *f, const json_t *v); /* scalar as text, else compact JSON */
size_t ctl_value_width(const json_t *v);
void ctl_pad(FILE *f, size_t have, size_t want);
/* --json: the response without "ok", indented. */
int ctl_print_json(json_t *resp);
/*
 * A ctl_print_fn: the template tmpl (a string) on stdout, each "{key}" in it
 * replaced by resp's member key as ctl_print_value() prints it.
 */
int ctl_print_line(const json_t *resp, const void *tmpl);
/* key/value block of an object, keys aligned, nested objects indented. */
void ctl_print_kv(FILE *f, const json_t *obj, int indent);
void ctl_print_kv_line(FILE *f, int indent, const char *key, size_t keyw, const json_t *v);

#endif
