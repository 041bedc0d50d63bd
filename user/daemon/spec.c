// SPDX-License-Identifier: GPL-2.0
/*
 * Session specs and rules: strict JSON in, validated canonical structs out,
 * and back. Every error names the field path and quotes the bad value;
 * quoted values are truncated and control bytes replaced, since messages
 * end up in logs and on the control socket.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tapfence/abi.h>
#include "jcheck.h"
#include "spec.h"

#define TF_PB_ALL (TF_PB_TCP | TF_PB_UDP | TF_PB_ICMP | TF_PB_OTHER)

static const struct {
	const char *name;
	__u8 protos;
} tf_protos[] = {
	{ "tcp", TF_PB_TCP },
	{ "udp", TF_PB_UDP },
	{ "icmp", TF_PB_ICMP },
	{ "any", TF_PB_ALL },
};

int tf_id_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	/* "." and ".." are refused too: ids may end up in paths. */
	return n >= 1 && n <= TF_ID_MAX && strcmp(s, ".") && strcmp(s, "..") &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* The kernel's dev_valid_name(). */
static int valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= IF_NAMESIZE || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s))
			return 0;
	return 1;
}

/*
 * A namespace path: absolute, printable ASCII, no "/../" (the broker opens
 * it as root; what it opens must be on nsfs, netns.c, but the path a
 * reviewer reads in the log should say plainly where it points).
 */
static int valid_netns(const char *s)
{
	size_t n = strlen(s);
	const char *p;

	if (n < 2 || n > TF_NETNS_MAX || s[0] != '/' || strstr(s, "/../") ||
	    (n >= 3 && !strcmp(s + n - 3, "/..")))
		return 0;
	for (p = s; *p; p++)
		if (*p <= ' ' || *p > '~')
			return 0;
	return 1;
}

/* Why ip cannot be a host's address, or NULL if it can. */
static const char *not_host_addr(const struct tf_ip *ip)
{
	const __u8 *a = ip->addr;
	static const __u8 loop6[16] = { [15] = 1 }, zero[16];

	if (ip->family == TF_FAM_IPV4) {
		if (a[0] == 0)
			return "this-network";
		if (a[0] == 127)
			return "loopback";
		if ((a[0] & 0xf0) == 0xe0)
			return "multicast";
		if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
			return "broadcast";
		return NULL;
	}
	if (!memcmp(a, zero, 16))
		return "unspecified";
	if (!memcmp(a, loop6, 16))
		return "loopback";
	if (a[0] == 0xff)
		return "multicast";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "link-local";
	return NULL;
}

/* An optional address of one family; ip->family stays 0 if absent. */
static int parse_addr(const json_t *obj, const char *where, const char *key, __u8 family, int host,
		      struct tf_ip *ip, char *err, size_t errlen)
{
	char path[TF_JPATH_MAX], q[TF_JQUOTE_MAX];
	const char *s, *why;
	int ret;

	memset(ip, 0, sizeof(*ip));
	ret = tf_jget_str(obj, where, key, 0, &s, err, errlen);
	if (ret || !s)
		return ret;
	tf_jpath(path, where, key);
	if (tf_parse_ip(s, ip) || ip->family != family) {
		memset(ip, 0, sizeof(*ip));
		return tf_jfail(err, errlen, "%s: invalid IPv%u address `%s'", path, family,
				tf_jquote_str(s, q));
	}
	why = host ? not_host_addr(ip) : NULL;
	if (why)
		return tf_jfail(err, errlen, "%s: %s address `%s' not allowed", path, why,
				tf_jquote_str(s, q));
	return 0;
}

static int parse_mac(const json_t *obj, const char *where, __u8 mac[6], char *err, size_t errlen)
{
	static const __u8 zero[6];
	char path[TF_JPATH_MAX], q[TF_JQUOTE_MAX];
	const char *s;
	int ret;

	ret = tf_jget_str(obj, where, "mac", 1, &s, err, errlen);
	if (ret)
		return ret;
	tf_jpath(path, where, "mac");
	if (tf_parse_mac(s, mac))
		return tf_jfail(err, errlen, "%s: invalid MAC `%s'", path, tf_jquote_str(s, q));
	if (mac[0] & 1)
		return tf_jfail(err, errlen, "%s: multicast MAC `%s' not allowed", path,
				tf_jquote_str(s, q));
	if (!memcmp(mac, zero, 6))
		return tf_jfail(err, errlen, "%s: all-zero MAC `%s' not allowed", path,
				tf_jquote_str(s, q));
	return 0;
}

/* "guest" or "gateway": {"mac", "ipv4", "ipv6"}. */
static int parse_end(const json_t *j, const char *key, __u8 mac[6], struct tf_ip *ip4,
		     struct tf_ip *ip6, char *err, size_t errlen)
{
	static const char *const keys[] = { "mac", "ipv4", "ipv6", NULL };
	json_t *o;
	int ret;

	ret = tf_jget(j, "", key, JSON_OBJECT, 1, &o, err, errlen);
	if (!ret)
		ret = tf_jcheck_keys(o, key, keys, err, errlen);
	if (!ret)
		ret = parse_mac(o, key, mac, err, errlen);
	if (!ret)
		ret = parse_addr(o, key, "ipv4", TF_FAM_IPV4, 1, ip4, err, errlen);
	if (!ret)
		ret = parse_addr(o, key, "ipv6", TF_FAM_IPV6, 1, ip6, err, errlen);
	return ret;
}

static int ip_equal(const struct tf_ip *a, const struct tf_ip *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/* The guest and the gateway: addresses present in pairs, none shared. */
static int parse_ends(const json_t *j, struct tf_spec *s, char *err, size_t errlen)
{
	char buf[TF_ADDRSTRLEN];
	int ret;

	ret = parse_end(j, "guest", s->guest_mac, &s->guest_ip4, &s->guest_ip6, err, errlen);
	if (!ret)
		ret = parse_end(j, "gateway", s->gw_mac, &s->gw_ip4, &s->gw_ip6, err, errlen);
	if (ret)
		return ret;
	s->has_ip4 = s->guest_ip4.family != 0;
	s->has_ip6 = s->guest_ip6.family != 0;
	if (!s->has_ip4 && !s->has_ip6)
		return tf_jfail(err, errlen, "guest: needs an ipv4 or an ipv6 address");
	if (s->has_ip4 && !s->gw_ip4.family)
		return tf_jfail(err, errlen, "gateway.ipv4: missing (guest.ipv4 is set)");
	if (!s->has_ip4 && s->gw_ip4.family)
		return tf_jfail(err, errlen, "gateway.ipv4: `%s' set but guest.ipv4 is not",
				tf_fmt_ip(s->gw_ip4.family, s->gw_ip4.addr, buf));
	if (!s->has_ip6 && s->gw_ip6.family)
		return tf_jfail(err, errlen, "gateway.ipv6: `%s' set but guest.ipv6 is not",
				tf_fmt_ip(s->gw_ip6.family, s->gw_ip6.addr, buf));
	if (!memcmp(s->guest_mac, s->gw_mac, 6))
		return tf_jfail(err, errlen, "gateway.mac: `%s' is the guest's MAC",
				tf_fmt_mac(s->gw_mac, buf));
	if (s->has_ip4 && ip_equal(&s->guest_ip4, &s->gw_ip4))
		return tf_jfail(err, errlen, "gateway.ipv4: `%s' is the guest's address",
				tf_fmt_ip(s->gw_ip4.family, s->gw_ip4.addr, buf));
	if (s->has_ip6 && ip_equal(&s->guest_ip6, &s->gw_ip6))
		return tf_jfail(err, errlen, "gateway.ipv6: `%s' is the guest's address",
				tf_fmt_ip(s->gw_ip6.family, s->gw_ip6.addr, buf));
	return 0;
}

/*
 * The session's resolver lives at its gateway: one address, the gateway's
 * of that family (for IPv6, its global address or the link-local one
 * derived from its MAC), on a port that defaults to 53.
 */
static int parse_resolver(const json_t *j, struct tf_spec *s, char *err, size_t errlen)
{
	static const char *const keys[] = { "ipv4", "ipv6", "port", NULL };
	char buf[TF_ADDRSTRLEN], llbuf[TF_ADDRSTRLEN], q[TF_JQUOTE_MAX];
	struct tf_ip ll = { .family = TF_FAM_IPV6 };
	const char *a4, *a6, *path;
	json_t *r, *port;
	int ret, v4;

	s->resolver_port = 53;
	ret = tf_jget(j, "", "resolver", JSON_OBJECT, 0, &r, err, errlen);
	if (ret || !r)
		return ret;
	ret = tf_jcheck_keys(r, "resolver", keys, err, errlen);
	if (!ret)
		ret = tf_jget_str(r, "resolver", "ipv4", 0, &a4, err, errlen);
	if (!ret)
		ret = tf_jget_str(r, "resolver", "ipv6", 0, &a6, err, errlen);
	if (ret)
		return ret;
	if (!a4 == !a6)
		return tf_jfail(err, errlen, "resolver: needs exactly one of ipv4 and ipv6");
	v4 = a4 != NULL;
	path = v4 ? "resolver.ipv4" : "resolver.ipv6";
	ret = parse_addr(r, "resolver", v4 ? "ipv4" : "ipv6", v4 ? TF_FAM_IPV4 : TF_FAM_IPV6, 0,
			 &s->resolver, err, errlen);
	if (ret)
		return ret;
	if (!(v4 ? s->has_ip4 : s->has_ip6))
		return tf_jfail(err, errlen, "%s: `%s' but the guest has no IPv%d address", path,
				tf_jquote_str(v4 ? a4 : a6, q), v4 ? 4 : 6);
	tf_ip6_ll_from_mac(s->gw_mac, ll.addr);
	if (v4 && !ip_equal(&s->resolver, &s->gw_ip4))
		return tf_jfail(
			err, errlen,
			"%s: `%s' is not the gateway's address %s (the resolver lives at the gateway)",
			path, tf_jquote_str(a4, q), tf_fmt_ip(TF_FAM_IPV4, s->gw_ip4.addr, buf));
	if (!v4 && !ip_equal(&s->resolver, &s->gw_ip6) && !ip_equal(&s->resolver, &ll))
		return tf_jfail(
			err, errlen,
			"%s: `%s' is not the gateway's address %s or %s (the resolver lives at the gateway)",
			path, tf_jquote_str(a6, q),
			s->gw_ip6.family ? tf_fmt_ip(TF_FAM_IPV6, s->gw_ip6.addr, buf) : "(none)",
			tf_fmt_ip(TF_FAM_IPV6, ll.addr, llbuf));
	ret = tf_jget(r, "resolver", "port", JSON_INTEGER, 0, &port, err, errlen);
	if (ret || !port)
		return ret;
	if (json_integer_value(port) < 1 || json_integer_value(port) > 65535)
		return tf_jfail(err, errlen, "resolver.port: port `%s' out of range 1-65535",
				tf_jquote(port, q));
	s->resolver_port = (__u16)json_integer_value(port);
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct tf_port_range *x = a, *y = b;

	return x->lo != y->lo ? x->lo - y->lo : x->hi - y->hi;
}

unsigned int tf_ranges_merge(struct tf_port_range *r, unsigned int n)
{
	unsigned int i, m = 0;

	qsort(r, n, sizeof(*r), range_cmp);
	for (i = 0; i < n; i++) {
		if (m && r[i].lo <= r[m - 1].hi + 1u) {
			if (r[i].hi > r[m - 1].hi)
				r[m - 1].hi = r[i].hi;
		} else {
			r[m++] = r[i];
		}
	}
	memset(r + m, 0, (n - m) * sizeof(*r));
	return m;
}

/* "lo-hi": decimal digits only, no sign or space. */
static int parse_range(const char *s, long long *lo, long long *hi)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	*lo = strtoll(s, &end, 10);
	if (end[0] != '-' || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	*hi = strtoll(end + 1, &end, 10);
	return *end ? -EINVAL : 0;
}

static int parse_ports(const json_t *ports, const char *where, struct tf_rule *r, char *err,
		       size_t errlen)
{
	char path[TF_JPATH_MAX], q[TF_JQUOTE_MAX];
	size_t i, n = json_array_size(ports);
	long long lo, hi;
	json_t *v;

	if (!n)
		return tf_jfail(err, errlen, "%s.ports: empty list (omit \"ports\" for every port)",
				where);
	if (n > TF_RULE_MAX_RANGES)
		return tf_jfail(err, errlen, "%s.ports: %zu entries, more than the limit of %d",
				where, n, TF_RULE_MAX_RANGES);
	json_array_foreach(ports, i, v) {
		snprintf(path, sizeof(path), "%s.ports[%zu]", where, i);
		if (json_is_integer(v)) {
			lo = hi = json_integer_value(v);
			if (lo < 1 || lo > 65535)
				return tf_jfail(err, errlen, "%s: port `%s' out of range 1-65535",
						path, tf_jquote(v, q));
		} else if (json_is_string(v)) {
			if (parse_range(json_string_value(v), &lo, &hi))
				return tf_jfail(err, errlen,
						"%s: invalid port range `%s' (want \"lo-hi\")",
						path, tf_jquote(v, q));
			if (lo < 1 || lo > 65535 || hi < 1 || hi > 65535)
				return tf_jfail(err, errlen,
						"%s: port range `%s' out of range 1-65535", path,
						tf_jquote(v, q));
			if (lo > hi)
				return tf_jfail(err, errlen, "%s: port range `%s' is reversed",
						path, tf_jquote(v, q));
		} else {
			return tf_jfail(err, errlen,
					"%s: invalid port `%s' (want a number or \"lo-hi\")", path,
					tf_jquote(v, q));
		}
		r->ranges[i].lo = (__u16)lo;
		r->ranges[i].hi = (__u16)hi;
	}
	r->nranges = tf_ranges_merge(r->ranges, (unsigned int)n);
	return 0;
}

static int host_label_ok(const char *l, size_t n)
{
	size_t i;

	if (n < 1 || n > 63 || l[0] == '-' || l[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!islower((unsigned char)l[i]) && !isdigit((unsigned char)l[i]) && l[i] != '-' &&
		    l[i] != '_')
			return 0;
	return 1;
}

int tf_host_parse(const char *s, char host[TF_HOST_MAX + 1], int *wildcard)
{
	char buf[TF_HOST_MAX + 3];
	size_t n = strlen(s), i, start, labels = 0, last = 0;
	int digits_only = 1;

	*wildcard = 0;
	if (n && s[n - 1] == '.')
		n--;
	if (n >= 2 && s[0] == '*' && s[1] == '.') {
		*wildcard = 1;
		s += 2;
		n -= 2;
	}
	if (n == 0 || n > TF_HOST_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[n] = 0;
	for (start = 0, i = 0; i <= n; i++) {
		if (i < n && buf[i] != '.')
			continue;
		if (!host_label_ok(buf + start, i - start))
			return -EINVAL;
		labels++;
		last = start;
		start = i + 1;
	}
	for (i = last; i < n; i++)
		digits_only &= !!isdigit((unsigned char)buf[i]);
	if (digits_only)
		return -EINVAL; /* an IP literal (or a numeric TLD): use a cidr rule */
	if (*wildcard && labels < 2)
		return -EINVAL; /* "*.com" would open a whole top-level domain */
	memcpy(host, buf, n + 1);
	return 0;
}

unsigned int tf_host_reverse(const char *host, __u8 out[TF_DNS_NAME_MAX])
{
	size_t n = strlen(host), i;

	memset(out, 0, TF_DNS_NAME_MAX);
	for (i = 0; i < n; i++)
		out[i] = (__u8)host[n - 1 - i];
	out[n] = '.';
	return (unsigned int)n + 1;
}

static int host_from_json(const json_t *j, const char *where, struct tf_rule *out, char *err,
			  size_t errlen)
{
	const char *host;
	char path[TF_JPATH_MAX], q[TF_JQUOTE_MAX];
	int ret = tf_jget_str(j, where, "host", 1, &host, err, errlen);

	if (ret)
		return ret;
	if (tf_host_parse(host, out->host, &out->wildcard))
		return tf_jfail(
			err, errlen,
			"%s: invalid host name `%s' (labels of a-z 0-9 - _, "
			"at most %d characters, \"*.\" only in front of two or more labels, "
			"no IP literals)",
			tf_jpath(path, where, "host"), tf_jquote_str(host, q), TF_HOST_MAX);
	out->kind = TF_RULE_HOST;
	return 0;
}

int tf_rule_from_json(const json_t *j, const char *where, struct tf_rule *out, char *err,
		      size_t errlen)
{
	static const char *const cidr_keys[] = { "cidr", "proto", "ports", "tls", "action", NULL };
	static const char *const host_keys[] = { "host", "proto", "ports", "tls", "action", NULL };
	const char *const *keys = cidr_keys;
	char path[TF_JPATH_MAX], q[TF_JQUOTE_MAX];
	const char *cidr = NULL, *proto, *action;
	json_t *ports, *tls;
	size_t i;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!j)
		return tf_jfail(err, errlen, "%s: missing", where);
	if (!json_is_object(j))
		return tf_jfail(err, errlen, "%s: expected an object, not `%s'", where,
				tf_jquote(j, q));
	if (json_object_get(j, "host") && json_object_get(j, "cidr"))
		return tf_jfail(err, errlen, "%s: a rule has either \"cidr\" or \"host\", not both",
				where);
	if (json_object_get(j, "host"))
		keys = host_keys;
	ret = tf_jcheck_keys(j, where, keys, err, errlen);
	if (!ret && keys == host_keys)
		ret = host_from_json(j, where, out, err, errlen);
	else if (!ret)
		ret = tf_jget_str(j, where, "cidr", 1, &cidr, err, errlen);
	if (!ret)
		ret = tf_jget_str(j, where, "proto", 0, &proto, err, errlen);
	if (!ret)
		ret = tf_jget(j, where, "ports", JSON_ARRAY, 0, &ports, err, errlen);
	if (!ret)
		ret = tf_jget_str(j, where, "action", 0, &action, err, errlen);
	if (ret)
		goto cleanup;
	if (action && strcmp(action, "allow") && strcmp(action, "deny")) {
		ret = tf_jfail(err, errlen, "%s: `%s' is not allow or deny",
			       tf_jpath(path, where, "action"), tf_jquote_str(action, q));
		goto cleanup;
	}
	out->deny = action && !strcmp(action, "deny");
	if (out->deny && json_object_get(j, "tls")) {
		ret = tf_jfail(err, errlen, "%s: a deny rule has no SNI check",
			       tf_jpath(path, where, "tls"));
		goto cleanup;
	}
	if (cidr && tf_parse_cidr(cidr, &out->cidr)) {
		ret = tf_jfail(err, errlen, "%s: invalid CIDR `%s'", tf_jpath(path, where, "cidr"),
			       tf_jquote_str(cidr, q));
		goto cleanup;
	}
	out->protos = TF_PB_ALL;
	for (i = 0; proto && i < sizeof(tf_protos) / sizeof(tf_protos[0]); i++)
		if (!strcmp(proto, tf_protos[i].name))
			break;
	if (proto && i == sizeof(tf_protos) / sizeof(tf_protos[0])) {
		ret = tf_jfail(err, errlen,
			       "%s: unknown protocol `%s' (want tcp, udp, icmp or any)",
			       tf_jpath(path, where, "proto"), tf_jquote_str(proto, q));
		goto cleanup;
	}
	if (proto)
		out->protos = tf_protos[i].protos;
	if (ports && out->protos == TF_PB_ICMP) {
		ret = tf_jfail(err, errlen, "%s.ports: ports given for proto `icmp'", where);
		goto cleanup;
	}
	if (ports) {
		ret = parse_ports(ports, where, out, err, errlen);
		if (ret)
			goto cleanup;
		out->protos &= TF_PB_TCP | TF_PB_UDP; /* "any" with ports: TCP and UDP */
	}
	if (!out->kind)
		out->kind = TF_RULE_CIDR;
	tls = json_object_get(j, "tls");
	if (tls && !json_is_boolean(tls)) {
		ret = tf_jfail(err, errlen, "%s: expected true or false, not `%s'",
			       tf_jpath(path, where, "tls"), tf_jquote(tls, q));
		goto cleanup;
	}
	if (tls && json_is_true(tls) && !(out->protos & TF_PB_TCP)) {
		ret = tf_jfail(err, errlen, "%s: an SNI check needs TCP (proto `%s')",
			       tf_jpath(path, where, "tls"), tf_jquote_str(proto, q));
		goto cleanup;
	}
	if (tls)
		out->tls = json_is_true(tls) ? TF_TLS_ON : TF_TLS_OFF;
cleanup:
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

static int cmp_u(unsigned int a, unsigned int b)
{
	return (a > b) - (a < b);
}

/* A total order on canonical rules, 0 for equal ones. */
static int rule_cmp(const struct tf_rule *a, const struct tf_rule *b)
{
	int d = cmp_u(a->kind, b->kind);

	if (!d)
		d = strcmp(a->host, b->host);
	if (!d)
		d = cmp_u(a->wildcard, b->wildcard);
	if (!d)
		d = cmp_u(a->cidr.ip.family, b->cidr.ip.family);
	if (!d)
		d = memcmp(a->cidr.ip.addr, b->cidr.ip.addr, sizeof(a->cidr.ip.addr));
	if (!d)
		d = cmp_u(a->cidr.prefixlen, b->cidr.prefixlen);
	if (!d)
		d = cmp_u(a->protos, b->protos);
	if (!d)
		d = cmp_u(a->tls, b->tls);
	if (!d)
		d = cmp_u(a->deny, b->deny);
	if (!d)
		d = cmp_u(a->nranges, b->nranges);
	if (!d)
		d = memcmp(a->ranges, b->ranges, a->nranges * sizeof(a->ranges[0]));
	return d;
}

int tf_rule_equal(const struct tf_rule *a, const struct tf_rule *b)
{
	return !rule_cmp(a, b);
}

/* Sort indices by rule, ties by index, so equal rules end up adjacent. */
static int rule_idx_cmp(const void *a, const void *b, void *rules)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
	int d = rule_cmp((struct tf_rule *)rules + x, (struct tf_rule *)rules + y);

	return d ? d : cmp_u(x, y);
}

/* O(n log n), so a spec near max_rules is checked quickly; reports the earliest duplicate. */
static int check_duplicates(const struct tf_spec *s, char *err, size_t errlen)
{
	unsigned int *idx, i, first = 0, dup = 0;
	char q[TF_JQUOTE_MAX];
	json_t *rule;

	if (s->nrules < 2)
		return 0;
	idx = malloc(s->nrules * sizeof(*idx));
	if (!idx)
		return tf_jnomem(err, errlen);
	for (i = 0; i < s->nrules; i++)
		idx[i] = i;
	qsort_r(idx, s->nrules, sizeof(*idx), rule_idx_cmp, s->rules);
	for (i = 1; i < s->nrules; i++) {
		if (tf_rule_equal(&s->rules[idx[i - 1]], &s->rules[idx[i]]) &&
		    (!dup || idx[i] < dup)) {
			first = idx[i - 1];
			dup = idx[i];
		}
	}
	free(idx);
	if (!dup)
		return 0;
	rule = tf_rule_to_json(&s->rules[dup]);
	tf_jfail(err, errlen, "allow[%u]: duplicate of allow[%u] `%s'", dup, first,
		 rule ? tf_jquote(rule, q) : "?");
	json_decref(rule);
	return -EINVAL;
}

static int parse_allow(const json_t *j, const struct tf_spec_limits *lim, struct tf_spec *s,
		       char *err, size_t errlen)
{
	char where[TF_JPATH_MAX];
	json_t *allow, *v;
	size_t i, n;
	int ret;

	ret = tf_jget(j, "", "allow", JSON_ARRAY, 0, &allow, err, errlen);
	n = json_array_size(allow);
	if (ret || !n)
		return ret;
	if (n > lim->max_rules)
		return tf_jfail(err, errlen, "allow: %zu rules, more than the limit of %u", n,
				lim->max_rules);
	s->rules = calloc(n, sizeof(*s->rules));
	if (!s->rules)
		return tf_jnomem(err, errlen);
	json_array_foreach(allow, i, v) {
		snprintf(where, sizeof(where), "allow[%zu]", i);
		ret = tf_rule_from_json(v, where, &s->rules[i], err, errlen);
		if (ret)
			return ret;
		s->nrules++;
	}
	return check_duplicates(s, err, errlen);
}

/* "mode": "enforce" (default) or "audit"; "on_deny": "drop" or "reject" (default: the operator's). */
static int parse_modes(const json_t *j, struct tf_spec *s, char *err, size_t errlen)
{
	const char *mode, *on_deny;
	char q[TF_JQUOTE_MAX];
	int ret = tf_jget_str(j, "", "mode", 0, &mode, err, errlen);

	if (!ret)
		ret = tf_jget_str(j, "", "on_deny", 0, &on_deny, err, errlen);
	if (ret)
		return ret;
	if (mode && strcmp(mode, "enforce") && strcmp(mode, "audit"))
		return tf_jfail(err, errlen, "mode: `%s' is not enforce or audit",
				tf_jquote_str(mode, q));
	s->audit = mode && !strcmp(mode, "audit");
	if (!on_deny)
		return 0;
	if (!strcmp(on_deny, "drop"))
		s->on_deny = TF_ON_DENY_DROP;
	else if (!strcmp(on_deny, "reject"))
		s->on_deny = TF_ON_DENY_REJECT;
	else
		return tf_jfail(err, errlen, "on_deny: `%s' is not drop or reject",
				tf_jquote_str(on_deny, q));
	return 0;
}

int tf_spec_from_json(const json_t *j, const struct tf_spec_limits *lim, struct tf_spec *out,
		      char *err, size_t errlen)
{
	static const char *const keys[] = { "id",	"ifname", "netns", "guest",   "gateway",
					    "resolver", "allow",  "mode",  "on_deny", NULL };
	struct tf_spec s = {};
	const char *id, *ifname, *netns = NULL;
	char q[TF_JQUOTE_MAX];
	int ret;

	memset(out, 0, sizeof(*out));
	if (!j)
		return tf_jfail(err, errlen, "session spec: missing");
	if (!json_is_object(j))
		return tf_jfail(err, errlen, "session spec: expected an object, not `%s'",
				tf_jquote(j, q));
	ret = tf_jcheck_keys(j, "", keys, err, errlen);
	if (!ret)
		ret = tf_jget_str(j, "", "id", 1, &id, err, errlen);
	if (!ret)
		ret = tf_jget_str(j, "", "ifname", 1, &ifname, err, errlen);
	if (ret)
		goto cleanup;
	if (!tf_id_valid(id)) {
		ret = tf_jfail(err, errlen,
			       "id: invalid session id `%s' (want 1-%d of A-Z a-z 0-9 _ . -)",
			       tf_jquote_str(id, q), TF_ID_MAX);
		goto cleanup;
	}
	if (!valid_ifname(ifname)) {
		ret = tf_jfail(err, errlen, "ifname: invalid interface name `%s'",
			       tf_jquote_str(ifname, q));
		goto cleanup;
	}
	strcpy(s.id, id);
	strcpy(s.ifname, ifname);
	ret = tf_jget_str(j, "", "netns", 0, &netns, err, errlen);
	if (ret)
		goto cleanup;
	if (netns && !valid_netns(netns)) {
		ret = tf_jfail(
			err, errlen,
			"netns: invalid namespace path `%s' (want an absolute path of at most "
			"%d printable characters, such as /run/netns/NAME)",
			tf_jquote_str(netns, q), TF_NETNS_MAX);
		goto cleanup;
	}
	if (netns)
		strcpy(s.netns, netns);
	ret = parse_ends(j, &s, err, errlen);
	if (!ret)
		ret = parse_resolver(j, &s, err, errlen);
	if (!ret)
		ret = parse_modes(j, &s, err, errlen);
	if (!ret)
		ret = parse_allow(j, lim, &s, err, errlen);
	if (!ret)
		*out = s;
cleanup:
	if (ret)
		tf_spec_free(&s);
	return ret;
}

int tf_spec_parse(const char *buf, size_t len, const struct tf_spec_limits *lim,
		  struct tf_spec *out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *j;
	int ret;

	memset(out, 0, sizeof(*out));
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return tf_jfail(err, errlen, "invalid JSON at line %d column %d: %s", jerr.line,
				jerr.column, jerr.text);
	ret = tf_spec_from_json(j, lim, out, err, errlen);
	json_decref(j);
	return ret;
}

static const char *proto_name(const struct tf_rule *r)
{
	size_t i;

	if (r->nranges && r->protos == (TF_PB_TCP | TF_PB_UDP))
		return "any";
	for (i = 0; i < sizeof(tf_protos) / sizeof(tf_protos[0]); i++)
		if (r->protos == tf_protos[i].protos)
			return tf_protos[i].name;
	return NULL;
}

static json_t *ports_to_json(const struct tf_rule *r)
{
	json_t *a = json_array();
	unsigned int i;
	char buf[16];

	for (i = 0; a && i < r->nranges; i++) {
		const struct tf_port_range *p = &r->ranges[i];
		json_t *v;

		if (p->lo == p->hi) {
			v = json_integer(p->lo);
		} else {
			snprintf(buf, sizeof(buf), "%u-%u", p->lo, p->hi);
			v = json_string(buf);
		}
		if (json_array_append_new(a, v)) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

json_t *tf_rule_to_json(const struct tf_rule *r)
{
	const char *proto = proto_name(r);
	char buf[TF_ADDRSTRLEN], host[TF_HOST_MAX + 3];
	json_t *ports = NULL, *tls = NULL;

	if ((r->kind != TF_RULE_CIDR && r->kind != TF_RULE_HOST) || !proto)
		return NULL;
	if (r->nranges) {
		ports = ports_to_json(r);
		if (!ports)
			return NULL;
	}
	/* json_pack() steals ports even when it fails (jansson >= 2.11). */
	if (r->tls != TF_TLS_DEFAULT)
		tls = json_boolean(r->tls == TF_TLS_ON);
	if (r->kind == TF_RULE_HOST) {
		snprintf(host, sizeof(host), "%s%s", r->wildcard ? "*." : "", r->host);
		return json_pack("{s:s, s:s, s:o*, s:o*, s:s*}", "host", host, "proto", proto,
				 "ports", ports, "tls", tls, "action", r->deny ? "deny" : NULL);
	}
	return json_pack("{s:s, s:s, s:o*, s:o*, s:s*}", "cidr", tf_fmt_cidr(&r->cidr, buf),
			 "proto", proto, "ports", ports, "tls", tls, "action",
			 r->deny ? "deny" : NULL);
}

static json_t *end_to_json(const __u8 mac[6], const struct tf_ip *ip4, const struct tf_ip *ip6)
{
	char m[TF_ADDRSTRLEN], a4[TF_ADDRSTRLEN], a6[TF_ADDRSTRLEN];

	return json_pack("{s:s, s:s?, s:s?}", "mac", tf_fmt_mac(mac, m), "ipv4",
			 ip4->family ? tf_fmt_ip(ip4->family, ip4->addr, a4) : NULL, "ipv6",
			 ip6->family ? tf_fmt_ip(ip6->family, ip6->addr, a6) : NULL);
}

json_t *tf_spec_to_json(const struct tf_spec *s)
{
	json_t *guest, *gw, *resolver = NULL, *allow;
	char buf[TF_ADDRSTRLEN];
	unsigned int i;

	guest = end_to_json(s->guest_mac, &s->guest_ip4, &s->guest_ip6);
	gw = end_to_json(s->gw_mac, &s->gw_ip4, &s->gw_ip6);
	allow = json_array();
	for (i = 0; allow && i < s->nrules; i++) {
		if (json_array_append_new(allow, tf_rule_to_json(&s->rules[i]))) {
			json_decref(allow);
			allow = NULL;
		}
	}
	if (s->resolver.family) {
		resolver = json_pack("{s:s, s:i}",
				     s->resolver.family == TF_FAM_IPV4 ? "ipv4" : "ipv6",
				     tf_fmt_ip(s->resolver.family, s->resolver.addr, buf), "port",
				     s->resolver_port);
		if (!resolver) {
			json_decref(guest);
			json_decref(gw);
			json_decref(allow);
			return NULL;
		}
	}
	/* NULL members make json_pack() fail; it releases the others. Defaults are left out. */
	return json_pack("{s:s, s:s, s:s*, s:o, s:o, s:o*, s:s*, s:s*, s:o}", "id", s->id, "ifname",
			 s->ifname, "netns", s->netns[0] ? s->netns : NULL, "guest", guest,
			 "gateway", gw, "resolver", resolver, "mode", s->audit ? "audit" : NULL,
			 "on_deny",
			 s->on_deny == TF_ON_DENY_DROP	 ? "drop" :
			 s->on_deny == TF_ON_DENY_REJECT ? "reject" :
							   NULL,
			 "allow", allow);
}

int tf_spec_add_rule(struct tf_spec *s, const struct tf_rule *r, unsigned int max_rules)
{
	struct tf_rule *rules;
	unsigned int i, cap;

	for (i = 0; i < s->nrules; i++)
		if (tf_rule_equal(&s->rules[i], r))
			return -EEXIST;
	if (s->nrules >= max_rules)
		return -E2BIG;
	/* Room doubled when it runs out: a rule added to 10,000 copies 5 MB only now and then. */
	if (s->nrules >= s->cap_rules) {
		cap = s->nrules < 8 ? 16 : 2 * s->nrules;
		rules = realloc(s->rules, cap * sizeof(*rules));
		if (!rules)
			return -ENOMEM;
		s->rules = rules;
		s->cap_rules = cap;
	}
	s->rules[s->nrules++] = *r;
	return 0;
}

int tf_spec_del_rule(struct tf_spec *s, const struct tf_rule *r)
{
	unsigned int i;

	for (i = 0; i < s->nrules; i++) {
		if (tf_rule_equal(&s->rules[i], r)) {
			memmove(&s->rules[i], &s->rules[i + 1], (s->nrules - i - 1) * sizeof(*r));
			s->nrules--;
			return 0;
		}
	}
	return -ENOENT;
}

int tf_spec_copy(struct tf_spec *dst, const struct tf_spec *src)
{
	*dst = *src;
	dst->rules = NULL;
	dst->cap_rules = 0;
	if (!src->nrules)
		return 0;
	dst->rules = malloc(src->nrules * sizeof(*dst->rules));
	if (!dst->rules) {
		dst->nrules = 0;
		return -ENOMEM;
	}
	memcpy(dst->rules, src->rules, src->nrules * sizeof(*dst->rules));
	return 0;
}

json_t *tf_spec_warnings(const struct tf_spec *s, const struct tf_rule *only)
{
	json_t *arr = json_array();
	unsigned int i, k;
	char msg[TF_HOST_MAX * 4 + 160];

	for (i = 0; arr && i < s->nrules; i++) {
		const struct tf_rule *r = &s->rules[i];

		/* A wildcard deny that spares its apex says so by itself. */
		if (r->kind != TF_RULE_HOST || !r->wildcard || r->deny ||
		    (only && (only->kind != TF_RULE_HOST || !only->wildcard ||
			      strcmp(only->host, r->host))))
			continue;
		for (k = 0; k < s->nrules; k++)
			if (s->rules[k].kind == TF_RULE_HOST && !s->rules[k].wildcard &&
			    !strcmp(s->rules[k].host, r->host))
				break;
		if (k < s->nrules)
			continue;
		snprintf(msg, sizeof(msg),
			 "allow[%u]: `*.%s' matches the names below %s, not %s itself: add a rule "
			 "for `%s' if the guest needs it",
			 i, r->host, r->host, r->host, r->host);
		json_array_append_new(arr, json_string(msg));
	}
	return arr;
}

void tf_spec_free_rules(struct tf_spec *s)
{
	free(s->rules);
	s->rules = NULL;
	s->nrules = s->cap_rules = 0;
}

void tf_spec_free(struct tf_spec *s)
{
	if (!s)
		return;
	tf_spec_free_rules(s);
}
