// SPDX-License-Identifier: GPL-2.0
/* Operator configuration: defaults and the --config JSON parser (pure). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <tapfence/abi.h>

#include "config.h"

void tf_config_defaults(struct tf_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->control_socket, sizeof(c->control_socket), "/run/tapfence/control.sock");
	snprintf(c->pin_dir, sizeof(c->pin_dir), "/sys/fs/bpf/tapfence");
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/tapfence");
	snprintf(c->event_log, sizeof(c->event_log), "/var/log/tapfence/events.jsonl");
	c->guard_mark = 0x100000;
	c->log_checkpoint_lines = 10000;
	c->log_checkpoint_s = 10;
	c->log_segment_bytes = 64ULL << 20;
	c->log_segment_age_s = 86400;
	c->log_compress = 1;
	c->log_retain_bytes = 1ULL << 30;
	c->log_retain_days = 90;
	c->attach_mode = TF_ATTACH_TC;
	c->nat64_floor = 1;
	c->max_sessions = 1024;
	c->warm_slots = 32;
	c->max_rules = 1024;
	c->flows_per_session = 8192;
	c->rule_entries = 262144;
	c->port_entries = 65536;
	c->name_entries = 65536;
	c->floor_entries = 4096;
	c->dns_queries = 128;
	c->learned_entries = 1024;
	c->dns_ttl_min_s = 5;
	c->dns_ttl_max_s = 3600;
	c->dns_query_timeout_s = 10;
	c->tls_pending = 64;
	c->tls_timeout_s = 10;
	c->events_per_s = 200;
	c->events_burst = 400;
	c->reject_floor = 1;
	c->metrics_interval_s = 15;
	c->reject_per_s = 100;
	c->reject_burst = 200;
	c->ringbuf_bytes = 8u << 20;
	c->max_clients = 64;
	c->max_subscribers = 16;
	c->client_timeout_ms = 5000;
	c->max_request_bytes = 1u << 20;
	/* conntrack's defaults (nf_conntrack_proto_*.c) */
	c->to_tcp_syn_sent_s = 120;
	c->to_tcp_established_s = 432000;
	c->to_tcp_fin_s = 120;
	c->to_tcp_rst_s = 10;
	c->to_udp_s = 30;
	c->to_udp_replied_s = 120;
	c->to_icmp_s = 30;
	c->to_other_s = 600;
}

static int set_path(const json_t *v, const char *field, char *dst, size_t len, char *err,
		    size_t errlen)
{
	const char *s = json_string_value(v);

	if (!s || s[0] != '/' || strlen(s) >= len) {
		snprintf(err, errlen, "%s: expected an absolute path", field);
		return -EINVAL;
	}
	snprintf(dst, len, "%s", s);
	return 0;
}

static int set_bool(const json_t *v, const char *field, int *dst, char *err, size_t errlen)
{
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "%s: expected true or false", field);
		return -EINVAL;
	}
	*dst = json_is_true(v);
	return 0;
}

static int set_uint(const json_t *v, const char *field, unsigned int lo, unsigned int hi,
		    unsigned int *dst, char *err, size_t errlen)
{
	json_int_t n;

	if (!json_is_integer(v)) {
		snprintf(err, errlen, "%s: expected an integer", field);
		return -EINVAL;
	}
	n = json_integer_value(v);
	if (n < lo || n > hi) {
		snprintf(err, errlen, "%s: `%lld' out of range %u-%u", field, (long long)n, lo, hi);
		return -EINVAL;
	}
	*dst = n;
	return 0;
}

static int set_ids(const json_t *v, const char *field, unsigned int *dst, unsigned int *n,
		   char *err, size_t errlen)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) > 64) {
		snprintf(err, errlen, "%s: expected an array of at most 64 numeric ids", field);
		return -EINVAL;
	}
	json_array_foreach(v, i, e) {
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    json_integer_value(e) > 0xfffffffeLL) {
			snprintf(err, errlen, "%s[%zu]: expected a numeric id", field, i);
			return -EINVAL;
		}
		dst[i] = (unsigned int)json_integer_value(e);
	}
	*n = json_array_size(v);
	return 0;
}

static int set_cidrs(const json_t *v, const char *field, struct tf_cidr *dst, unsigned int *n,
		     char *err, size_t errlen)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) > TF_CONFIG_MAX_CIDRS) {
		snprintf(err, errlen, "%s: expected an array of at most %u CIDRs", field,
			 TF_CONFIG_MAX_CIDRS);
		return -EINVAL;
	}
	json_array_foreach(v, i, e) {
		const char *s = json_string_value(e);

		if (!s || tf_parse_cidr(s, &dst[i])) {
			snprintf(err, errlen, "%s[%zu]: invalid CIDR `%s'", field, i, s ? s : "?");
			return -EINVAL;
		}
	}
	*n = json_array_size(v);
	return 0;
}

static int parse_floor(const json_t *o, struct tf_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	int ret;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "floor: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)o, key, v) {
		if (!strcmp(key, "extra_deny"))
			ret = set_cidrs(v, "floor.extra_deny", c->floor_extra, &c->nfloor_extra,
					err, errlen);
		else if (!strcmp(key, "exceptions"))
			ret = set_cidrs(v, "floor.exceptions", c->floor_exceptions,
					&c->nfloor_exceptions, err, errlen);
		else if (!strcmp(key, "host"))
			ret = set_cidrs(v, "floor.host", c->floor_host, &c->nfloor_host, err,
					errlen);
		else if (!strcmp(key, "nat64"))
			ret = set_bool(v, "floor.nat64", &c->nat64_floor, err, errlen);
		else {
			snprintf(err, errlen, "floor: unknown field `%s'", key);
			return -EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int set_u64(const json_t *v, const char *field, unsigned long long lo, unsigned long long hi,
		   unsigned long long *dst, char *err, size_t errlen)
{
	json_int_t n = json_integer_value(v);

	if (!json_is_integer(v) || n < 0 || (unsigned long long)n < lo ||
	    (unsigned long long)n > hi) {
		snprintf(err, errlen, "%s: expected an integer in %llu-%llu", field, lo, hi);
		return -EINVAL;
	}
	*dst = (unsigned long long)n;
	return 0;
}

/* "log": the sealed event log's key, name, checkpoints, segments and retention (docs/audit.md). */
/* "metrics": {"textfile": PATH, "interval_s": N, "per_session": BOOL} */
static int parse_metrics(const json_t *o, struct tf_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	int ret;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "metrics: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)o, key, v) {
		if (!strcmp(key, "textfile"))
			ret = set_path(v, "metrics.textfile", c->metrics_textfile,
				       sizeof(c->metrics_textfile), err, errlen);
		else if (!strcmp(key, "interval_s"))
			ret = set_uint(v, "metrics.interval_s", 1, 3600, &c->metrics_interval_s,
				       err, errlen);
		else if (!strcmp(key, "per_session"))
			ret = set_bool(v, "metrics.per_session", &c->metrics_per_session, err,
				       errlen);
		else {
			snprintf(err, errlen, "metrics: unknown field `%s'", key);
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_log(const json_t *o, struct tf_config *c, char *err, size_t errlen)
{
	const char *key, *s, *p;
	json_t *v;
	int ret;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "log: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)o, key, v) {
		if (!strcmp(key, "key")) {
			ret = set_path(v, "log.key", c->log_key, sizeof(c->log_key), err, errlen);
		} else if (!strcmp(key, "ecdsa_key")) {
			ret = set_path(v, "log.ecdsa_key", c->log_ecdsa_key,
				       sizeof(c->log_ecdsa_key), err, errlen);
		} else if (!strcmp(key, "session_evidence")) {
			ret = set_bool(v, "log.session_evidence", &c->log_session_evidence, err,
				       errlen);
		} else if (!strcmp(key, "name")) {
			s = json_string_value(v);
			ret = !s || !*s || strlen(s) >= sizeof(c->log_name) ? -EINVAL : 0;
			for (p = s; !ret && *p; p++)
				if ((unsigned char)*p <= ' ' || *p == '+' ||
				    (unsigned char)*p >= 0x7f)
					ret = -EINVAL;
			if (ret)
				snprintf(err, errlen,
					 "log.name: `%.64s' is not a name of 1-63 printable "
					 "characters without space or '+'",
					 s ? s : "?");
			else
				snprintf(c->log_name, sizeof(c->log_name), "%s", s);
		} else if (!strcmp(key, "checkpoint_lines")) {
			ret = set_uint(v, "log.checkpoint_lines", 1, 1u << 30,
				       &c->log_checkpoint_lines, err, errlen);
		} else if (!strcmp(key, "checkpoint_s")) {
			ret = set_uint(v, "log.checkpoint_s", 1, 3600, &c->log_checkpoint_s, err,
				       errlen);
		} else if (!strcmp(key, "segment_bytes")) {
			ret = set_u64(v, "log.segment_bytes", 0, 1ULL << 40, &c->log_segment_bytes,
				      err, errlen);
			if (!ret && c->log_segment_bytes && c->log_segment_bytes < 4096) {
				snprintf(err, errlen,
					 "log.segment_bytes: `%llu' is below 4096 (0: no "
					 "rotation by size)",
					 c->log_segment_bytes);
				ret = -EINVAL;
			}
		} else if (!strcmp(key, "segment_age_s")) {
			ret = set_uint(v, "log.segment_age_s", 0, 366 * 86400,
				       &c->log_segment_age_s, err, errlen);
		} else if (!strcmp(key, "compress")) {
			ret = set_bool(v, "log.compress", &c->log_compress, err, errlen);
		} else if (!strcmp(key, "retain_bytes")) {
			ret = set_u64(v, "log.retain_bytes", 0, 1ULL << 50, &c->log_retain_bytes,
				      err, errlen);
		} else if (!strcmp(key, "retain_days")) {
			ret = set_uint(v, "log.retain_days", 0, 36500, &c->log_retain_days, err,
				       errlen);
		} else {
			snprintf(err, errlen, "log: unknown field `%s'", key);
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

struct limit_field {
	const char *name;
	size_t off;
	unsigned int lo, hi;
};

#define LIMIT(f, lo, hi)                                  \
	{                                                 \
#f, offsetof(struct tf_config, f), lo, hi \
	}
static const struct limit_field limit_fields[] = {
	LIMIT(max_sessions, 1, TF_MAX_SESSIONS - 1),
	LIMIT(warm_slots, 0, TF_MAX_SESSIONS - 1),
	LIMIT(max_rules, 1, 200000),
	LIMIT(flows_per_session, 64, 1u << 24),
	LIMIT(rule_entries, 1024, 1u << 26),
	LIMIT(port_entries, 1024, 1u << 24),
	LIMIT(name_entries, 1024, 1u << 24),
	LIMIT(floor_entries, 1024, 1u << 20),
	LIMIT(dns_queries, 16, 1u << 16),
	LIMIT(learned_entries, 16, 1u << 20),
	LIMIT(dns_ttl_min_s, 0, 86400),
	LIMIT(dns_ttl_max_s, 1, 7 * 86400),
	LIMIT(dns_query_timeout_s, 1, 600),
	LIMIT(tls_pending, 1, 4096),
	LIMIT(tls_timeout_s, 1, 600),
	LIMIT(events_per_s, 0, 10000000),
	LIMIT(events_burst, 1, 10000000),
	LIMIT(reject_per_s, 1, 10000000),
	LIMIT(reject_burst, 1, 10000000),
	LIMIT(ringbuf_bytes, 4096, 1u << 30),
	LIMIT(max_clients, 1, 4096),
	LIMIT(max_subscribers, 1, 1024),
	LIMIT(client_timeout_ms, 100, 600000),
	LIMIT(max_request_bytes, 4096, 64u << 20),
};

#define TIMEOUT_MAX (30 * 86400)
#define TIMEOUT(name, f)                                            \
	{                                                           \
		name, offsetof(struct tf_config, f), 1, TIMEOUT_MAX \
	}
static const struct limit_field timeout_fields[] = {
	TIMEOUT("tcp_syn_sent_s", to_tcp_syn_sent_s),
	TIMEOUT("tcp_established_s", to_tcp_established_s),
	TIMEOUT("tcp_fin_s", to_tcp_fin_s),
	TIMEOUT("tcp_rst_s", to_tcp_rst_s),
	TIMEOUT("udp_s", to_udp_s),
	TIMEOUT("udp_replied_s", to_udp_replied_s),
	TIMEOUT("icmp_s", to_icmp_s),
	TIMEOUT("other_s", to_other_s),
};

/* An object of unsigned fields (limits, timeouts), each in its range. */
static int parse_fields(const json_t *o, const char *what, const struct limit_field *fields,
			size_t n, struct tf_config *c, char *err, size_t errlen)
{
	char field[96];
	const char *key;
	json_t *v;
	size_t i;
	int ret;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: expected an object", what);
		return -EINVAL;
	}
	json_object_foreach((json_t *)o, key, v) {
		for (i = 0; i < n; i++)
			if (!strcmp(key, fields[i].name))
				break;
		if (i == n) {
			snprintf(err, errlen, "%s: unknown field `%s'", what, key);
			return -EINVAL;
		}
		snprintf(field, sizeof(field), "%s.%s", what, key);
		ret = set_uint(v, field, fields[i].lo, fields[i].hi,
			       (unsigned int *)((char *)c + fields[i].off), err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_limits(const json_t *o, struct tf_config *c, char *err, size_t errlen)
{
	int ret = parse_fields(o, "limits", limit_fields,
			       sizeof(limit_fields) / sizeof(limit_fields[0]), c, err, errlen);

	if (ret)
		return ret;
	if (c->dns_ttl_min_s > c->dns_ttl_max_s) {
		snprintf(err, errlen, "limits.dns_ttl_min_s: `%u' is above dns_ttl_max_s `%u'",
			 c->dns_ttl_min_s, c->dns_ttl_max_s);
		return -EINVAL;
	}
	if (c->ringbuf_bytes & (c->ringbuf_bytes - 1)) {
		snprintf(err, errlen, "limits.ringbuf_bytes: `%u' is not a power of two",
			 c->ringbuf_bytes);
		return -EINVAL;
	}
	return 0;
}

/* "tap0", or "tap*" (a prefix): 1-15 of an interface name's characters, '*' only last. */
static int guard_pattern_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n < 1 || n > 15 || !strcmp(s, "*"))
		return 0;
	for (i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || s[i] <= ' ' || s[i] > '~' ||
		    (s[i] == '*' && i != n - 1) || s[i] == '?' || s[i] == '[')
			return 0;
	return 1;
}

/* An absolute path, or a directory and "/\*" (every namespace file in it); no "..". */
static int guard_netns_ok(const char *s)
{
	size_t n = strlen(s);
	const char *star = strchr(s, '*');

	if (n < 2 || s[0] != '/' || strstr(s, "/..") || strchr(s, '?') || strchr(s, '['))
		return 0;
	return !star || (star == s + n - 1 && s[n - 2] == '/' && n > 2);
}

static int guard_list(const json_t *v, const char *field, int (*ok)(const char *), char *out,
		      size_t width, unsigned int *n, char *err, size_t errlen)
{
	const json_t *e;
	size_t i;
	const char *s;

	if (!json_is_array(v) || json_array_size(v) > TF_GUARD_MAX) {
		snprintf(err, errlen, "%s: expected an array of at most %d strings", field,
			 TF_GUARD_MAX);
		return -EINVAL;
	}
	json_array_foreach(v, i, e) {
		s = json_string_value(e);
		if (!s || strlen(s) >= width || !ok(s)) {
			snprintf(
				err, errlen, "%s[%zu]: `%.64s' is not a valid %s", field, i,
				s ? s : "?",
				ok == guard_pattern_ok ?
					"interface name or prefix (\"tap0\", \"tap*\")" :
					"namespace path (\"/run/netns/NAME\" or \"/run/netns/*\")");
			return -EINVAL;
		}
		snprintf(out + i * width, width, "%s", s);
	}
	*n = json_array_size(v);
	return 0;
}

static int parse_guard(const json_t *o, struct tf_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	int ret = 0;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "guard: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)o, key, v) {
		if (!strcmp(key, "interfaces")) {
			ret = guard_list(v, "guard.interfaces", guard_pattern_ok, c->guard_if[0],
					 sizeof(c->guard_if[0]), &c->nguard_if, err, errlen);
		} else if (!strcmp(key, "netns")) {
			ret = guard_list(v, "guard.netns", guard_netns_ok, c->guard_netns[0],
					 sizeof(c->guard_netns[0]), &c->nguard_netns, err, errlen);
		} else if (!strcmp(key, "mark")) {
			json_int_t m = json_integer_value(v);

			if (!json_is_integer(v) || m <= 0 || m > 0xffffffffLL || (m & (m - 1))) {
				snprintf(err, errlen,
					 "guard.mark: expected one bit of the skb mark, such as "
					 "1048576 (0x100000)");
				ret = -EINVAL;
			} else {
				c->guard_mark = (__u32)m;
			}
		} else {
			snprintf(err, errlen, "guard: unknown field `%s'", key);
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	if (c->nguard_netns && !c->nguard_if) {
		snprintf(err, errlen, "guard.netns: namespaces to watch, but no guard.interfaces");
		return -EINVAL;
	}
	return 0;
}

/* "quarantine": {"keep_open": [rules exactly as in a spec's allow]} */
static int parse_quarantine(const json_t *o, struct tf_config *c, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, "keep_open"), *e;
	char where[48];
	const char *key;
	json_t *u;
	size_t i;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "quarantine: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)o, key, u) {
		if (strcmp(key, "keep_open")) {
			snprintf(err, errlen, "quarantine: unknown field `%s'", key);
			return -EINVAL;
		}
	}
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > TF_Q_OPEN_MAX) {
		snprintf(err, errlen, "quarantine.keep_open: expected an array of at most %d rules",
			 TF_Q_OPEN_MAX);
		return -EINVAL;
	}
	json_array_foreach(v, i, e) {
		snprintf(where, sizeof(where), "quarantine.keep_open[%zu]", i);
		if (tf_rule_from_json(e, where, &c->q_open[i], err, errlen))
			return -EINVAL;
	}
	c->nq_open = json_array_size(v);
	return 0;
}

int tf_config_parse(const char *buf, size_t len, struct tf_config *c, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root, *v;
	const char *key, *s;
	int ret = 0;

	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "invalid JSON at line %d: %s", jerr.line, jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "expected a JSON object");
		ret = -EINVAL;
		goto cleanup;
	}
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "control_socket"))
			ret = set_path(v, key, c->control_socket, sizeof(c->control_socket), err,
				       errlen);
		else if (!strcmp(key, "pin_dir"))
			ret = set_path(v, key, c->pin_dir, sizeof(c->pin_dir), err, errlen);
		else if (!strcmp(key, "state_dir"))
			ret = set_path(v, key, c->state_dir, sizeof(c->state_dir), err, errlen);
		else if (!strcmp(key, "event_log"))
			ret = set_path(v, key, c->event_log, sizeof(c->event_log), err, errlen);
		else if (!strcmp(key, "socket_group")) {
			s = json_string_value(v);
			if (!s || !*s || strlen(s) >= sizeof(c->socket_group)) {
				snprintf(err, errlen, "socket_group: expected a group name");
				ret = -EINVAL;
			} else {
				snprintf(c->socket_group, sizeof(c->socket_group), "%s", s);
			}
		} else if (!strcmp(key, "user")) {
			s = json_string_value(v);
			if (!s || !*s || strlen(s) >= sizeof(c->user)) {
				snprintf(err, errlen, "user: expected a user name");
				ret = -EINVAL;
			} else {
				snprintf(c->user, sizeof(c->user), "%s", s);
			}
		} else if (!strcmp(key, "allowed_uids")) {
			ret = set_ids(v, key, c->allowed_uids, &c->nallowed_uids, err, errlen);
		} else if (!strcmp(key, "allowed_gids")) {
			ret = set_ids(v, key, c->allowed_gids, &c->nallowed_gids, err, errlen);
		} else if (!strcmp(key, "attach_mode")) {
			s = json_string_value(v);
			if (s && !strcmp(s, "tc")) {
				c->attach_mode = TF_ATTACH_TC;
			} else if (s && !strcmp(s, "xdp")) {
				c->attach_mode = TF_ATTACH_XDP;
			} else {
				snprintf(err, errlen, "attach_mode: `%s' is not tc or xdp",
					 s ? s : "?");
				ret = -EINVAL;
			}
		} else if (!strcmp(key, "tls_ech")) {
			s = json_string_value(v);
			if (s && !strcmp(s, "deny")) {
				c->tls_ech_outer = 0;
			} else if (s && !strcmp(s, "outer")) {
				c->tls_ech_outer = 1;
			} else {
				snprintf(err, errlen, "tls_ech: `%s' is not deny or outer",
					 s ? s : "?");
				ret = -EINVAL;
			}
		} else if (!strcmp(key, "on_deny") || !strcmp(key, "on_deny_floor")) {
			s = json_string_value(v);
			if (s && (!strcmp(s, "drop") || !strcmp(s, "reject"))) {
				*(key[7] ? &c->reject_floor : &c->on_deny_reject) =
					!strcmp(s, "reject");
			} else {
				snprintf(err, errlen, "%s: `%s' is not drop or reject", key,
					 s ? s : "?");
				ret = -EINVAL;
			}
		} else if (!strcmp(key, "floor")) {
			ret = parse_floor(v, c, err, errlen);
		} else if (!strcmp(key, "guard")) {
			ret = parse_guard(v, c, err, errlen);
		} else if (!strcmp(key, "quarantine")) {
			ret = parse_quarantine(v, c, err, errlen);
		} else if (!strcmp(key, "log")) {
			ret = parse_log(v, c, err, errlen);
		} else if (!strcmp(key, "metrics")) {
			ret = parse_metrics(v, c, err, errlen);
		} else if (!strcmp(key, "limits")) {
			ret = parse_limits(v, c, err, errlen);
		} else if (!strcmp(key, "timeouts")) {
			ret = parse_fields(v, "timeouts", timeout_fields,
					   sizeof(timeout_fields) / sizeof(timeout_fields[0]), c,
					   err, errlen);
		} else {
			snprintf(err, errlen, "unknown field `%s'", key);
			ret = -EINVAL;
		}
		if (ret)
			break;
	}
cleanup:
	json_decref(root);
	return ret;
}
