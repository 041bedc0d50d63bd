// SPDX-License-Identifier: GPL-2.0
/* Test that compiled policies allow exactly the union of the rules containing an address, share port classes, and scale. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "daemon/policy.h"
#include "check.h"

#define MAX_CASE_RULES 8
#define IPPROTO_GRE_   47 /* an "other" protocol */

/* Fixtures are written with ' for ", to stay readable. */
static int parse_rule(const char *s, struct tf_rule *r)
{
	char buf[1024], err[TF_ERR_MAX];
	json_t *j;
	size_t i;
	int ret;

	for (i = 0; s[i] && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = '\0';
	j = json_loads(buf, 0, NULL);
	ret = tf_rule_from_json(j, "rule", r, err, sizeof(err));
	json_decref(j);
	return ret;
}

/* Compile rule fixtures; rules must hold MAX_CASE_RULES. Returns the rule count or -1. */
static int compile_fixture(const char *const *json, struct tf_rule *rules, struct tf_policy *p)
{
	int n;

	for (n = 0; n < MAX_CASE_RULES && json[n]; n++)
		if (parse_rule(json[n], &rules[n]))
			return -1;
	return tf_policy_compile(rules, (unsigned int)n, p) ? -1 : n;
}

static __u8 proto_bit(__u8 family, __u8 proto)
{
	if (proto == IPPROTO_TCP)
		return TF_PB_TCP;
	if (proto == IPPROTO_UDP)
		return TF_PB_UDP;
	if (proto == (family == TF_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6))
		return TF_PB_ICMP;
	return TF_PB_OTHER;
}

/* Does rule r's protocol and port part cover (bit, port)? */
static int rule_covers(const struct tf_rule *r, __u8 bit, __u16 port)
{
	unsigned int k;

	if (!(r->protos & bit))
		return 0;
	if (!r->nranges || (bit & (TF_PB_ICMP | TF_PB_OTHER)))
		return 1;
	for (k = 0; k < r->nranges; k++)
		if (port >= r->ranges[k].lo && port <= r->ranges[k].hi)
			return 1;
	return 0;
}

/* The oracle: some allow rule containing ip covers it, and no deny rule does. */
static int rules_allow(const struct tf_rule *rules, unsigned int n, const struct tf_ip *ip,
		       __u8 proto, __u16 port)
{
	__u8 bit = proto_bit(ip->family, proto);
	unsigned int i;
	int allowed = 0;

	for (i = 0; i < n; i++) {
		const struct tf_rule *r = &rules[i];

		if (r->kind != TF_RULE_CIDR || !tf_cidr_contains(&r->cidr, ip) ||
		    !rule_covers(r, bit, port))
			continue;
		if (r->deny)
			return 0;
		allowed = 1;
	}
	return allowed;
}

/* The permission bit of a chunk's set: TCP ports, UDP ports or TLS ports (TF_PORTS_TLS). */
static __u8 chunk_bit(const struct tf_policy_chunk *c)
{
	return c->proto == IPPROTO_TCP	? TF_PB_TCP :
	       c->proto == IPPROTO_UDP	? TF_PB_UDP :
	       c->proto == TF_PORTS_TLS ? TF_PB_TLS :
					  0;
}

/* Is port in the set of class cls whose permission bit is bit? */
static int class_has(const struct tf_policy *p, __u16 cls, __u8 bit, __u16 port)
{
	unsigned int i;

	for (i = 0; cls && i < p->nchunks; i++)
		if (p->chunks[i].cls == cls && chunk_bit(&p->chunks[i]) == bit &&
		    p->chunks[i].hi == port >> 8)
			return (int)(p->chunks[i].bits.w[(port & 0xff) / 64] >> (port % 64) & 1);
	return 0;
}

/* Does permission v allow TCP (bit TF_PB_TCP) or make a TLS port (TF_PB_TLS) of port? */
static int val_has(const struct tf_policy *p, const struct tf_rule_val *v, __u8 bit, __u16 port)
{
	if (!(v->protos & bit))
		return 0;
	return (v->all_ports & bit) || class_has(p, v->cls, bit, port);
}

/*
 * The promises policy.h and abi.h make of one permission: all_ports only
 * TCP, UDP and TLS, and within protos; a class iff some TCP, UDP or TLS
 * permission is limited to ports; no chunk for a set that is all ports; a
 * TLS port is always a TCP port the permission allows. "" if kept, else
 * which field breaks which promise.
 */
static void val_check(const struct tf_policy *p, const struct tf_rule_val *v, const char *where,
		      char *buf, size_t len)
{
	const __u8 ported = TF_PB_TCP | TF_PB_UDP | TF_PB_TLS;
	unsigned int j, port;

	if (v->all_ports & ~ported)
		snprintf(buf, len, "%s: all_ports 0x%x beyond TCP|UDP|TLS", where, v->all_ports);
	else if (v->all_ports & ~v->protos)
		snprintf(buf, len, "%s: all_ports 0x%x not within protos 0x%x", where, v->all_ports,
			 v->protos);
	else if (v->cls > p->max_cls)
		snprintf(buf, len, "%s: cls %u past max_cls %u", where, v->cls, p->max_cls);
	else if (!!v->cls != !!(v->protos & ~v->all_ports & ported))
		snprintf(buf, len, "%s: cls %u with port-limited protos 0x%x", where, v->cls,
			 v->protos & ~v->all_ports & ported);
	else if ((v->protos & TF_PB_TLS) && !(v->protos & TF_PB_TCP))
		snprintf(buf, len, "%s: protos 0x%x: TLS ports without TCP", where, v->protos);
	else if ((v->all_ports & TF_PB_TLS) && !(v->all_ports & TF_PB_TCP))
		snprintf(buf, len, "%s: all_ports 0x%x: every port TLS, not every port TCP", where,
			 v->all_ports);
	if (buf[0])
		return;
	for (j = 0; j < p->nchunks; j++)
		if (p->chunks[j].cls == v->cls && (v->all_ports & chunk_bit(&p->chunks[j]))) {
			snprintf(buf, len,
				 "%s: chunk %u (proto %u) of cls %u for a set of all ports", where,
				 j, p->chunks[j].proto, v->cls);
			return;
		}
	if (!(v->protos & TF_PB_TLS) || (v->all_ports & TF_PB_TLS))
		return;
	for (port = 0; port <= 65535; port++)
		if (class_has(p, v->cls, TF_PB_TLS, (__u16)port) &&
		    !val_has(p, v, TF_PB_TCP, (__u16)port)) {
			snprintf(buf, len, "%s: TLS port %u is not an allowed TCP port", where,
				 port);
			return;
		}
}

/*
 * Structural promises of policy.h and abi.h, checked on any compiled
 * policy: each entry's and name's permissions (val_check), and chunks that
 * name a class, a set (TCP, UDP, TLS) and some port, once each. Returns
 * "consistent", or the first promise broken, naming the field.
 */
static const char *policy_check(const struct tf_policy *p, char *buf, size_t len)
{
	char where[64];
	unsigned int i, j;

	buf[0] = '\0';
	for (i = 0; i < p->nentries && !buf[0]; i++) {
		snprintf(where, sizeof(where), "entry %u", i);
		val_check(p, &p->entries[i].val, where, buf, len);
	}
	for (i = 0; i < p->nnames && !buf[0]; i++) {
		snprintf(where, sizeof(where), "name %u exact", i);
		val_check(p, &p->names[i].exact, where, buf, len);
		snprintf(where, sizeof(where), "name %u sub", i);
		if (!buf[0])
			val_check(p, &p->names[i].sub, where, buf, len);
	}
	for (i = 0; i < p->nchunks && !buf[0]; i++) {
		const struct tf_policy_chunk *c = &p->chunks[i];

		if (!c->cls || c->cls > p->max_cls)
			snprintf(buf, len, "chunk %u: cls %u out of 1..%u", i, c->cls, p->max_cls);
		else if (!chunk_bit(c))
			snprintf(buf, len, "chunk %u: proto %u neither TCP, UDP nor TF_PORTS_TLS",
				 i, c->proto);
		else if (!(c->bits.w[0] | c->bits.w[1] | c->bits.w[2] | c->bits.w[3]))
			snprintf(buf, len, "chunk %u: bits empty", i);
		for (j = 0; j < i && !buf[0]; j++)
			if (p->chunks[j].cls == c->cls && p->chunks[j].proto == c->proto &&
			    p->chunks[j].hi == c->hi)
				snprintf(buf, len, "chunk %u: same cls, proto and hi as chunk %u",
					 i, j);
	}
	return buf[0] ? buf : "consistent";
}

/* The oracle for TLS ports: does a rule containing ip make TCP port a TLS port? CIDR rules only. */
static int rules_tls(const struct tf_rule *rules, unsigned int n, const struct tf_ip *ip,
		     __u16 port)
{
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		const struct tf_rule *r = &rules[i];

		if (!tf_cidr_contains(&r->cidr, ip) || !(r->protos & TF_PB_TCP) ||
		    r->tls != TF_TLS_ON)
			continue;
		if (!r->nranges)
			return 1;
		for (k = 0; k < r->nranges; k++)
			if (port >= r->ranges[k].lo && port <= r->ranges[k].hi)
				return 1;
	}
	return 0;
}

/* What the compiled policy says: the longest entry containing ip, its TLS ports. */
static int policy_tls(const struct tf_policy *p, const struct tf_ip *ip, __u16 port)
{
	const struct tf_policy_entry *best = NULL;
	struct tf_cidr c;
	unsigned int i;

	for (i = 0; i < p->nentries; i++) {
		c.ip.family = p->entries[i].family;
		memcpy(c.ip.addr, p->entries[i].addr, 16);
		c.prefixlen = p->entries[i].prefixlen;
		if (tf_cidr_contains(&c, ip) && (!best || c.prefixlen > best->prefixlen))
			best = &p->entries[i];
	}
	return best && val_has(p, &best->val, TF_PB_TLS, port);
}

struct probe {
	const char *addr;
	__u8 proto;
	__u16 port;
	int want; /* 1: allowed; ALLOW_TLS: allowed, and a TLS port */
};

#define ALLOW_TLS 3

struct policy_case {
	const char *desc;
	const char *rules[MAX_CASE_RULES + 1];
	struct probe probes[16];
};

static const struct policy_case policy_cases[] = {
	{ "no rules deny everything",
	  { NULL },
	  {
		  { "10.0.0.1", IPPROTO_TCP, 80, 0 },
		  { "2001:db8::1", IPPROTO_ICMPV6, 0, 0 },
	  } },
	{ "nested /16 tcp 80 and /24 udp 53",
	  { "{'cidr':'10.1.0.0/16','proto':'tcp','ports':[80]}",
	    "{'cidr':'10.1.2.0/24','proto':'udp','ports':[53]}", NULL },
	  {
		  { "10.1.2.3", IPPROTO_TCP, 80, 1 },
		  { "10.1.2.3", IPPROTO_UDP, 53, 1 },
		  { "10.1.2.3", IPPROTO_TCP, 53, 0 },
		  { "10.1.2.3", IPPROTO_UDP, 80, 0 },
		  { "10.1.2.3", IPPROTO_TCP, 81, 0 },
		  { "10.1.2.3", IPPROTO_ICMP, 0, 0 },
		  { "10.1.3.3", IPPROTO_TCP, 80, 1 },
		  { "10.1.3.3", IPPROTO_UDP, 53, 0 },
		  { "10.2.0.1", IPPROTO_TCP, 80, 0 },
	  } },
	{ "ranges crossing 256-port chunks",
	  { "{'cidr':'10.0.0.0/8','proto':'tcp','ports':['250-260','65530-65535',1]}", NULL },
	  {
		  { "10.9.9.9", IPPROTO_TCP, 249, 0 },
		  { "10.9.9.9", IPPROTO_TCP, 250, 1 },
		  { "10.9.9.9", IPPROTO_TCP, 255, 1 },
		  { "10.9.9.9", IPPROTO_TCP, 256, 1 },
		  { "10.9.9.9", IPPROTO_TCP, 260, 1 },
		  { "10.9.9.9", IPPROTO_TCP, 261, 0 },
		  { "10.9.9.9", IPPROTO_TCP, 65529, 0 },
		  { "10.9.9.9", IPPROTO_TCP, 65535, 1 },
		  { "10.9.9.9", IPPROTO_TCP, 1, 1 },
		  { "10.9.9.9", IPPROTO_TCP, 0, 0 },
		  { "10.9.9.9", IPPROTO_UDP, 250, 0 },
	  } },
	{ "any without ports allows every protocol",
	  { "{'cidr':'192.0.2.0/24','proto':'any'}", NULL },
	  {
		  { "192.0.2.7", IPPROTO_TCP, 0, 1 },
		  { "192.0.2.7", IPPROTO_TCP, 65535, 1 },
		  { "192.0.2.7", IPPROTO_UDP, 12345, 1 },
		  { "192.0.2.7", IPPROTO_ICMP, 0, 1 },
		  { "192.0.2.7", IPPROTO_GRE_, 0, 1 },
		  { "192.0.3.7", IPPROTO_TCP, 80, 0 },
	  } },
	{ "any with ports is TCP and UDP on those ports",
	  { "{'cidr':'192.0.2.0/24','proto':'any','ports':[443]}", NULL },
	  {
		  { "192.0.2.7", IPPROTO_TCP, 443, 1 },
		  { "192.0.2.7", IPPROTO_UDP, 443, 1 },
		  { "192.0.2.7", IPPROTO_TCP, 80, 0 },
		  { "192.0.2.7", IPPROTO_ICMP, 0, 0 },
		  { "192.0.2.7", IPPROTO_GRE_, 0, 0 },
	  } },
	{ "icmp per family",
	  { "{'cidr':'198.51.100.0/24','proto':'icmp'}", "{'cidr':'2001:db8::/32','proto':'icmp'}",
	    NULL },
	  {
		  { "198.51.100.1", IPPROTO_ICMP, 0, 1 },
		  { "198.51.100.1", IPPROTO_ICMPV6, 0, 0 },
		  { "198.51.100.1", IPPROTO_TCP, 80, 0 },
		  { "2001:db8::1", IPPROTO_ICMPV6, 0, 1 },
		  { "2001:db8::1", IPPROTO_ICMP, 0, 0 },
		  { "2001:db9::1", IPPROTO_ICMPV6, 0, 0 },
	  } },
	{ "IPv6 nesting",
	  { "{'cidr':'2001:db8::/32','proto':'tcp','ports':[443]}",
	    "{'cidr':'2001:db8:1::/48','proto':'udp','ports':[53]}",
	    "{'cidr':'2001:db8:1::53','proto':'tcp'}", "{'cidr':'::/0','proto':'icmp'}", NULL },
	  {
		  { "2001:db8:1::1", IPPROTO_TCP, 443, 1 },
		  { "2001:db8:1::1", IPPROTO_UDP, 53, 1 },
		  { "2001:db8:1::1", IPPROTO_TCP, 22, 0 },
		  { "2001:db8:1::53", IPPROTO_TCP, 22, 1 },
		  { "2001:db8:1::53", IPPROTO_UDP, 53, 1 },
		  { "2001:db8:2::1", IPPROTO_UDP, 53, 0 },
		  { "2001:db8:2::1", IPPROTO_TCP, 443, 1 },
		  { "fd00::1", IPPROTO_ICMPV6, 0, 1 },
		  { "fd00::1", IPPROTO_TCP, 443, 0 },
		  { "10.0.0.1", IPPROTO_ICMP, 0, 0 },
	  } },
	{ "overlapping rules on one prefix",
	  { "{'cidr':'10.0.0.0/8','proto':'tcp','ports':['80-90']}",
	    "{'cidr':'10.0.0.0/8','proto':'tcp','ports':['85-100']}",
	    "{'cidr':'10.0.0.0/8','proto':'udp','ports':[53]}",
	    "{'cidr':'10.0.0.0/8','proto':'udp'}", NULL },
	  {
		  { "10.0.0.1", IPPROTO_TCP, 79, 0 },
		  { "10.0.0.1", IPPROTO_TCP, 80, 1 },
		  { "10.0.0.1", IPPROTO_TCP, 95, 1 },
		  { "10.0.0.1", IPPROTO_TCP, 100, 1 },
		  { "10.0.0.1", IPPROTO_TCP, 101, 0 },
		  { "10.0.0.1", IPPROTO_UDP, 9999, 1 },
	  } },
	{ "all ports on a parent absorb a child's ports",
	  { "{'cidr':'0.0.0.0/0','proto':'tcp'}", "{'cidr':'10.0.0.1','proto':'tcp','ports':[22]}",
	    "{'cidr':'10.0.0.1','proto':'udp','ports':[53]}", NULL },
	  {
		  { "10.0.0.1", IPPROTO_TCP, 23, 1 },
		  { "10.0.0.1", IPPROTO_UDP, 53, 1 },
		  { "10.0.0.1", IPPROTO_UDP, 54, 0 },
		  { "8.8.8.8", IPPROTO_TCP, 1, 1 },
		  { "8.8.8.8", IPPROTO_UDP, 53, 0 },
	  } },
	{ "\"tls\": true on ports: those are TLS ports",
	  { "{'cidr':'198.51.100.0/24','proto':'tcp','ports':[443,8443],'tls':true}", NULL },
	  {
		  { "198.51.100.9", IPPROTO_TCP, 443, ALLOW_TLS },
		  { "198.51.100.9", IPPROTO_TCP, 8443, ALLOW_TLS },
		  { "198.51.100.9", IPPROTO_TCP, 80, 0 },
		  { "198.51.101.9", IPPROTO_TCP, 443, 0 },
	  } },
	{ "\"tls\": true without ports: every TCP port",
	  { "{'cidr':'192.0.2.0/24','proto':'tcp','tls':true}",
	    "{'cidr':'192.0.2.0/24','proto':'udp','ports':[443]}", NULL },
	  {
		  { "192.0.2.1", IPPROTO_TCP, 1, ALLOW_TLS },
		  { "192.0.2.1", IPPROTO_TCP, 443, ALLOW_TLS },
		  { "192.0.2.1", IPPROTO_TCP, 65535, ALLOW_TLS },
		  { "192.0.2.1", IPPROTO_UDP, 443, 1 },
	  } },
	{ "a TLS child under a plain parent, and a plain child under a TLS parent",
	  { "{'cidr':'10.0.0.0/8','proto':'tcp'}",
	    "{'cidr':'10.1.0.0/16','proto':'tcp','ports':[443],'tls':true}",
	    "{'cidr':'2001:db8::/32','proto':'tcp','ports':['440-450'],'tls':true}",
	    "{'cidr':'2001:db8:1::/48','proto':'tcp','ports':[80,445]}", NULL },
	  {
		  { "10.1.2.3", IPPROTO_TCP, 443, ALLOW_TLS },
		  { "10.1.2.3", IPPROTO_TCP, 80, 1 },
		  { "10.2.0.1", IPPROTO_TCP, 443, 1 },
		  { "2001:db8:1::1", IPPROTO_TCP, 445, ALLOW_TLS },
		  { "2001:db8:1::1", IPPROTO_TCP, 80, 1 },
		  { "2001:db8:2::1", IPPROTO_TCP, 440, ALLOW_TLS },
		  { "2001:db8:2::1", IPPROTO_TCP, 80, 0 },
	  } },
	{ "\"tls\": false beside \"tls\": true on one prefix: the union",
	  { "{'cidr':'203.0.113.0/24','proto':'tcp','ports':[443],'tls':false}",
	    "{'cidr':'203.0.113.0/24','proto':'tcp','ports':[443,8443],'tls':true}", NULL },
	  {
		  { "203.0.113.5", IPPROTO_TCP, 443, ALLOW_TLS },
		  { "203.0.113.5", IPPROTO_TCP, 8443, ALLOW_TLS },
	  } },
};

static void test_policy_cases(void)
{
	struct tf_rule rules[MAX_CASE_RULES];
	char what[256], buf[256];
	struct tf_policy p;
	struct tf_ip ip;
	size_t i, k;
	int n, allowed, tls;

	for (i = 0; i < sizeof(policy_cases) / sizeof(policy_cases[0]); i++) {
		const struct policy_case *c = &policy_cases[i];

		n = compile_fixture(c->rules, rules, &p);
		snprintf(what, sizeof(what), "%s: compiles", c->desc);
		CHECK_EQ(what, n >= 0, 1);
		if (n < 0)
			continue;
		snprintf(what, sizeof(what), "%s: consistent", c->desc);
		CHECK_STR(what, policy_check(&p, buf, sizeof(buf)), "consistent");
		for (k = 0; k < sizeof(c->probes) / sizeof(c->probes[0]) && c->probes[k].addr;
		     k++) {
			const struct probe *pr = &c->probes[k];

			snprintf(what, sizeof(what), "%s: %s proto %u port %u %s", c->desc,
				 pr->addr, pr->proto, pr->port, pr->want ? "allowed" : "denied");
			allowed = pr->want != 0;
			if (tf_parse_ip(pr->addr, &ip)) {
				CHECK_STR(what, "unparsable fixture address", pr->addr);
				continue;
			}
			CHECK_EQ(what,
				 tf_policy_allows(&p, ip.family, ip.addr, pr->proto, pr->port),
				 allowed);
			snprintf(what, sizeof(what), "%s: %s proto %u port %u: oracle agrees",
				 c->desc, pr->addr, pr->proto, pr->port);
			CHECK_EQ(what,
				 rules_allow(rules, (unsigned int)n, &ip, pr->proto, pr->port),
				 allowed);
			if (pr->proto != IPPROTO_TCP)
				continue;
			tls = pr->want == ALLOW_TLS;
			snprintf(what, sizeof(what), "%s: %s port %u %s a TLS port", c->desc,
				 pr->addr, pr->port, tls ? "is" : "is not");
			CHECK_EQ(what, policy_tls(&p, &ip, pr->port), tls);
			snprintf(what, sizeof(what), "%s: %s port %u: TLS oracle agrees", c->desc,
				 pr->addr, pr->port);
			CHECK_EQ(what, rules_tls(rules, (unsigned int)n, &ip, pr->port), tls);
		}
		tf_policy_free(&p);
	}
}

static const struct tf_policy_entry *entry_for(const struct tf_policy *p, const char *cidr)
{
	struct tf_cidr c;
	unsigned int i;

	if (tf_parse_cidr(cidr, &c))
		return NULL;
	for (i = 0; i < p->nentries; i++)
		if (p->entries[i].family == c.ip.family && p->entries[i].prefixlen == c.prefixlen &&
		    !memcmp(p->entries[i].addr, c.ip.addr, 16))
			return &p->entries[i];
	return NULL;
}

static void test_layout(void)
{
	static const char *const shared[] = { "{'cidr':'10.0.0.0/8','proto':'tcp','ports':[80]}",
					      "{'cidr':'11.0.0.0/8','proto':'tcp','ports':[80]}",
					      "{'cidr':'10.1.0.0/16','proto':'tcp','ports':[80]}",
					      "{'cidr':'10.2.0.0/16','proto':'udp'}",
					      "{'cidr':'2001:db8::/32','proto':'tcp','ports':[80]}",
					      NULL };
	static const char *const chunks[] = {
		"{'cidr':'10.0.0.0/8','proto':'tcp','ports':['250-260']}",
		"{'cidr':'10.0.0.0/16','proto':'tcp'}", "{'cidr':'10.0.0.0/24','proto':'any'}",
		"{'cidr':'10.0.0.0/8','proto':'udp','ports':[53]}", NULL
	};
	struct tf_rule rules[MAX_CASE_RULES];
	const struct tf_policy_entry *e, *e16, *e24;
	struct tf_policy p;
	char buf[256];

	CHECK_EQ("shared: compiles", compile_fixture(shared, rules, &p), 5);
	CHECK_EQ("shared: one entry per distinct prefix", p.nentries, 5);
	CHECK_EQ("shared: equal unions share one class", p.nclasses, 1);
	CHECK_EQ("shared: one chunk", p.nchunks, 1);
	CHECK_EQ("shared: chunk is TCP", p.chunks[0].proto, IPPROTO_TCP);
	CHECK_EQ("shared: chunk is ports 0-255", p.chunks[0].hi, 0);
	CHECK_EQ("shared: chunk holds port 80 only",
		 p.chunks[0].bits.w[1] == 1ULL << 16 && !p.chunks[0].bits.w[0] &&
			 !p.chunks[0].bits.w[2] && !p.chunks[0].bits.w[3],
		 1);
	e = entry_for(&p, "10.2.0.0/16");
	CHECK_EQ("shared: /16 udp entry present", e != NULL, 1);
	CHECK_EQ("shared: /16 udp inherits the tcp class", e ? e->val.cls : 0, 1);
	CHECK_EQ("shared: /16 udp all ports", e ? e->val.all_ports : 0, TF_PB_UDP);
	CHECK_EQ("shared: /16 protos", e ? e->val.protos : 0, TF_PB_TCP | TF_PB_UDP);
	tf_policy_free(&p);

	CHECK_EQ("chunks: compiles", compile_fixture(chunks, rules, &p), 4);
	CHECK_EQ("chunks: three entries", p.nentries, 3);
	CHECK_EQ("chunks: two classes", p.nclasses, 2);
	/* class 1: tcp 250-260 + udp 53 (3 chunks); class 2: udp 53 only (1 chunk) */
	CHECK_EQ("chunks: only non-empty chunks", p.nchunks, 4);
	e = entry_for(&p, "10.0.0.0/8");
	e16 = entry_for(&p, "10.0.0.0/16");
	e24 = entry_for(&p, "10.0.0.0/24");
	CHECK_EQ("chunks: entries present", e && e16 && e24, 1);
	if (e && e16 && e24) {
		CHECK_EQ("chunks: /8 all_ports", e->val.all_ports, 0);
		CHECK_EQ("chunks: /8 protos", e->val.protos, TF_PB_TCP | TF_PB_UDP);
		CHECK_EQ("chunks: /16 tcp on all ports", e16->val.all_ports, TF_PB_TCP);
		CHECK_EQ("chunks: /16 needs a class for udp 53",
			 e16->val.cls != 0 && e16->val.cls != e->val.cls, 1);
		CHECK_EQ("chunks: /24 any: all_ports", e24->val.all_ports, TF_PB_TCP | TF_PB_UDP);
		CHECK_EQ("chunks: /24 any: protos", e24->val.protos,
			 TF_PB_TCP | TF_PB_UDP | TF_PB_ICMP | TF_PB_OTHER);
		CHECK_EQ("chunks: /24 any: no class", e24->val.cls, 0);
	}
	CHECK_STR("chunks: consistent", policy_check(&p, buf, sizeof(buf)), "consistent");
	tf_policy_free(&p);
	tf_policy_free(&p);
	tf_policy_free(NULL);
	CHECK_EQ("free is idempotent", p.nentries == 0 && !p.entries && !p.chunks, 1);
}

/* xorshift64*: the same sequence on every libc. */
static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static unsigned int rnd(unsigned int n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (unsigned int)((rng_state * 0x2545f4914f6cdd1dULL) >> 32) % n;
}

/* Addresses from a small pool, so random prefixes nest and overlap. */
static void random_ip(struct tf_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (rnd(5) < 3) {
		ip->family = TF_FAM_IPV4;
		ip->addr[0] = rnd(8) ? 10 : (__u8)rnd(256);
		ip->addr[1] = (__u8)rnd(2);
		ip->addr[2] = (__u8)rnd(4);
		ip->addr[3] = (__u8)rnd(256);
	} else {
		ip->family = TF_FAM_IPV6;
		ip->addr[0] = 0x20;
		ip->addr[1] = 0x01;
		ip->addr[2] = 0x0d;
		ip->addr[3] = rnd(8) ? 0xb8 : (__u8)rnd(256);
		ip->addr[7] = (__u8)rnd(2);
		ip->addr[14] = (__u8)rnd(4);
		ip->addr[15] = (__u8)rnd(256);
	}
}

static __u16 random_port(void)
{
	static const __u16 edges[] = { 0, 1, 255, 256, 257, 511, 512, 65279, 65280, 65534, 65535 };

	if (!rnd(4))
		return edges[rnd(sizeof(edges) / sizeof(edges[0]))];
	return rnd(2) ? (__u16)rnd(700) : (__u16)(65535 - rnd(400));
}

static void random_rule_json(char *buf, size_t size)
{
	static const char *const protos[] = { "tcp", "udp", "icmp", "any", NULL };
	const char *proto = protos[rnd(5)];
	char cidr[TF_ADDRSTRLEN];
	unsigned int bits, max, i, nports;
	struct tf_cidr c;
	size_t n;

	random_ip(&c.ip);
	max = c.ip.family == TF_FAM_IPV4 ? 32 : 128;
	bits = rnd(10) ? max - rnd(max == 32 ? 17 : 25) : rnd(max + 1);
	for (i = bits; i < max; i++)
		c.ip.addr[i / 8] &= (__u8) ~(0x80 >> (i % 8));
	c.prefixlen = (__u8)bits;
	n = (size_t)snprintf(buf, size, "{'cidr':'%s'", tf_fmt_cidr(&c, cidr));
	if (proto)
		n += (size_t)snprintf(buf + n, size - n, ",'proto':'%s'", proto);
	nports = proto && strcmp(proto, "icmp") && rnd(2) ? 1 + rnd(5) : 0;
	for (i = 0; i < nports; i++) {
		unsigned int lo = random_port(), hi;

		lo = lo ? lo : 1;
		hi = rnd(3) ? lo : lo + rnd(300);
		hi = hi > 65535 ? 65535 : hi;
		if (lo == hi)
			n += (size_t)snprintf(buf + n, size - n, "%s%u", i ? "," : ",'ports':[",
					      lo);
		else
			n += (size_t)snprintf(buf + n, size - n, "%s'%u-%u'",
					      i ? "," : ",'ports':[", lo, hi);
	}
	if (nports)
		n += (size_t)snprintf(buf + n, size - n, "]");
	if (proto && (!strcmp(proto, "tcp") || !strcmp(proto, "any")) && !rnd(3))
		n += (size_t)snprintf(buf + n, size - n, ",'tls':%s", rnd(2) ? "true" : "false");
	else if (!rnd(4))
		n += (size_t)snprintf(buf + n, size - n, ",'action':'deny'");
	snprintf(buf + n, size - n, "}");
}

static void test_random(void)
{
	static const __u8 probe_protos[] = {
		IPPROTO_TCP,  IPPROTO_UDP,    IPPROTO_TCP,  IPPROTO_UDP,
		IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_GRE_,
	};
	struct tf_rule rules[48];
	char json[1024], what[128], problem[256] = "consistent", buf[256];
	unsigned int round, nrules, i, bad, tls_bad;
	struct tf_policy p;
	struct tf_ip ip;

	for (round = 0; round < 60; round++) {
		nrules = 1 + rnd(48);
		for (i = 0, bad = 0; i < nrules; i++) {
			random_rule_json(json, sizeof(json));
			if (parse_rule(json, &rules[i])) {
				printf("FAIL: random round %u: fixture `%s' does not parse\n",
				       round, json);
				bad++;
			}
		}
		snprintf(what, sizeof(what), "random round %u: %u rules compile", round, nrules);
		CHECK_EQ(what, !bad && !tf_policy_compile(rules, nrules, &p), 1);
		if (bad)
			continue;
		if (!strcmp(problem, "consistent"))
			snprintf(problem, sizeof(problem), "%s",
				 policy_check(&p, buf, sizeof(buf)));
		for (i = 0, bad = 0, tls_bad = 0; i < 2000; i++) {
			__u8 proto = probe_protos[rnd(sizeof(probe_protos))];
			__u16 port = random_port();
			int got, want;

			random_ip(&ip);
			got = tf_policy_allows(&p, ip.family, ip.addr, proto, port);
			want = rules_allow(rules, nrules, &ip, proto, port);
			if (got != want && !bad++) {
				char a[TF_ADDRSTRLEN];

				printf("# first mismatch: %s proto %u port %u: got %d, want %d\n",
				       tf_fmt_ip(ip.family, ip.addr, a), proto, port, got, want);
			}
			if (proto != IPPROTO_TCP)
				continue;
			got = policy_tls(&p, &ip, port);
			want = rules_tls(rules, nrules, &ip, port);
			if (got != want && !tls_bad++) {
				char a[TF_ADDRSTRLEN];

				printf("# first TLS mismatch: %s port %u: got %d, want %d\n",
				       tf_fmt_ip(ip.family, ip.addr, a), port, got, want);
			}
		}
		snprintf(what, sizeof(what), "random round %u: 2000 probes agree with the oracle",
			 round);
		CHECK_EQ(what, bad, 0);
		snprintf(what, sizeof(what), "random round %u: TLS ports agree with the oracle",
			 round);
		CHECK_EQ(what, tls_bad, 0);
		tf_policy_free(&p);
	}
	CHECK_STR("random: every policy consistent", problem, "consistent");
}

/* The chunks of class cls in p, as a run: its first index, or -1; *n: how many. */
static int class_run(const struct tf_policy *p, unsigned int cls, unsigned int *n)
{
	unsigned int i, j;

	for (i = 0; i < p->nchunks && p->chunks[i].cls != cls; i++)
		;
	for (j = i; j < p->nchunks && p->chunks[j].cls == cls; j++)
		;
	*n = j - i;
	return i < p->nchunks ? (int)i : -1;
}

static int runs_equal(const struct tf_policy *a, int ia, unsigned int na, const struct tf_policy *b,
		      int ib, unsigned int nb)
{
	unsigned int k;

	if (ia < 0 || ib < 0 || na != nb)
		return 0;
	for (k = 0; k < na; k++)
		if (a->chunks[ia + k].proto != b->chunks[ib + k].proto ||
		    a->chunks[ia + k].hi != b->chunks[ib + k].hi ||
		    memcmp(&a->chunks[ia + k].bits, &b->chunks[ib + k].bits, sizeof(a->chunks[0].bits)))
			return 0;
	return 1;
}

/*
 * tf_policy_rebase(), as a rule change applied in place uses it: policy B
 * (A's rules and one more, or one fewer) numbered as A. B still agrees
 * with the oracle everywhere, a class of B that is one of A's has A's
 * number and the same chunks, a new one is numbered above A's and is none
 * of A's, entries come in tf_policy_entry_cmp() order (the merge
 * tf_dp_policy_apply() relies on), and past 65535 B is left as it was.
 */
static void test_rebase(void)
{
	char json[1024], what[160], buf[256], problem[256] = "consistent";
	unsigned int round, nrules, i, c, bad, na, nb, agree, order, numbered;
	struct tf_rule rules[49];
	struct tf_policy a, b;
	struct tf_ip ip;
	int ia, ib, ret;

	for (round = 0, agree = 0, order = 0, numbered = 0; round < 60; round++) {
		nrules = 2 + rnd(47);
		for (i = 0, bad = 0; i < nrules; i++) {
			random_rule_json(json, sizeof(json));
			bad += parse_rule(json, &rules[i]) != 0;
		}
		/* Even rounds: B adds rule nrules - 1 to A; odd ones: B takes it away. */
		if (bad || tf_policy_compile(rules, round % 2 ? nrules : nrules - 1, &a)) {
			CHECK_EQ("rebase: A compiles", 0, 1);
			continue;
		}
		if (tf_policy_compile(rules, round % 2 ? nrules - 1 : nrules, &b)) {
			CHECK_EQ("rebase: B compiles", 0, 1);
			tf_policy_free(&a);
			continue;
		}
		snprintf(what, sizeof(what), "rebase round %u: B numbered as A", round);
		CHECK_EQ(what, tf_policy_rebase(&b, &a), 0);
		for (i = 1; i < a.nentries; i++)
			order += tf_policy_entry_cmp(&a.entries[i - 1], &a.entries[i]) >= 0;
		for (i = 1; i < b.nentries; i++)
			order += tf_policy_entry_cmp(&b.entries[i - 1], &b.entries[i]) >= 0;
		for (i = 0; i < b.nchunks; i++) {
			c = b.chunks[i].cls;
			if (i && b.chunks[i - 1].cls == c)
				continue;
			ib = class_run(&b, c, &nb);
			ia = class_run(&a, c, &na);
			if (c <= a.max_cls)
				numbered += !runs_equal(&a, ia, na, &b, ib, nb);
			for (ia = 0; c > a.max_cls && ia < (int)a.nchunks; ia++)
				if ((!ia || a.chunks[ia - 1].cls != a.chunks[ia].cls) &&
				    class_run(&a, a.chunks[ia].cls, &na) == ia)
					numbered += runs_equal(&a, ia, na, &b, ib, nb);
		}
		if (!strcmp(problem, "consistent"))
			snprintf(problem, sizeof(problem), "%s", policy_check(&b, buf, sizeof(buf)));
		for (i = 0; i < 500; i++) {
			__u16 port = random_port();
			__u8 proto = rnd(2) ? IPPROTO_TCP : IPPROTO_UDP;

			random_ip(&ip);
			agree += tf_policy_allows(&b, ip.family, ip.addr, proto, port) !=
				 rules_allow(rules, round % 2 ? nrules - 1 : nrules, &ip, proto, port);
			if (proto == IPPROTO_TCP)
				agree += policy_tls(&b, &ip, port) !=
					 rules_tls(rules, round % 2 ? nrules - 1 : nrules, &ip, port);
		}
		tf_policy_free(&a);
		tf_policy_free(&b);
	}
	CHECK_EQ("rebase: 60 rounds, 500 probes each: B agrees with the oracle", agree, 0);
	CHECK_EQ("rebase: entries in tf_policy_entry_cmp() order", order, 0);
	CHECK_EQ("rebase: a class numbered as one of A's is that class, a new one none of A's",
		 numbered, 0);
	CHECK_STR("rebase: every rebased policy consistent", problem, "consistent");

	/* Past 65535 numbers: -E2BIG, B as it was (written whole instead). */
	CHECK_EQ("rebase: A parses", parse_rule("{'cidr':'198.51.100.0/24','proto':'tcp','ports':[80]}",
						 &rules[0]), 0);
	CHECK_EQ("rebase: B's rule parses",
		 parse_rule("{'cidr':'203.0.113.0/24','proto':'tcp','ports':[81]}", &rules[1]), 0);
	CHECK_EQ("rebase: A", tf_policy_compile(rules, 1, &a), 0);
	CHECK_EQ("rebase: B", tf_policy_compile(rules, 2, &b), 0);
	a.max_cls = 65535;
	ret = tf_policy_rebase(&b, &a);
	CHECK_EQ("rebase: a new class past 65535: -E2BIG", ret, -E2BIG);
	for (i = 0, bad = 0; i < b.nchunks; i++)
		bad += b.chunks[i].cls > b.nclasses;
	CHECK_TRUE("... and B keeps its own numbers", bad == 0 && b.max_cls == b.nclasses);
	tf_policy_free(&a);
	tf_policy_free(&b);
}

/*
 * 0 if a and b say the same: the same entries (keys, all_ports, protos) and
 * names, each class with the same chunks, whatever their numbers.
 */
static int same_policy(const struct tf_policy *a, const struct tf_policy *b, char *why, size_t len)
{
	const struct tf_rule_val *va[2], *vb[2];
	unsigned int i, k, na, nb;
	int ia, ib;

	if (a->nentries != b->nentries || a->nnames != b->nnames) {
		snprintf(why, len, "%u entries and %u names, want %u and %u", a->nentries, a->nnames,
			 b->nentries, b->nnames);
		return -1;
	}
	for (i = 0; i < a->nentries + a->nnames; i++) {
		if (i < a->nentries) {
			const struct tf_policy_entry *x = &a->entries[i], *y = &b->entries[i];

			if (x->family != y->family || x->prefixlen != y->prefixlen ||
			    memcmp(x->addr, y->addr, sizeof(x->addr))) {
				snprintf(why, len, "entry %u: another prefix", i);
				return -1;
			}
			va[0] = &x->val, vb[0] = &y->val, va[1] = vb[1] = NULL;
		} else {
			const struct tf_policy_name *x = &a->names[i - a->nentries],
						    *y = &b->names[i - a->nentries];

			if (x->len != y->len || memcmp(x->name, y->name, x->len)) {
				snprintf(why, len, "name %u: another name", i - a->nentries);
				return -1;
			}
			va[0] = &x->exact, vb[0] = &y->exact, va[1] = &x->sub, vb[1] = &y->sub;
		}
		for (k = 0; k < 2 && va[k]; k++) {
			ia = class_run(a, va[k]->cls, &na);
			ib = class_run(b, vb[k]->cls, &nb);
			if (va[k]->all_ports != vb[k]->all_ports || va[k]->protos != vb[k]->protos ||
			    !va[k]->cls != !vb[k]->cls ||
			    (va[k]->cls && !runs_equal(a, ia, na, b, ib, nb))) {
				snprintf(why, len, "%s %u: another permission",
					 i < a->nentries ? "entry" : "name",
					 i < a->nentries ? i : i - a->nentries);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * tf_policy_add_cidr() against the compiler: rules added one by one to a
 * policy of random rules, each step said the same as tf_policy_compile() of
 * all of them, numbered as the step before (a class kept keeps its number
 * and its chunks), consistent, and agreeing with the oracle.
 */
static void test_add_cidr(void)
{
	char what[400], why[300] = "", buf[256], problem[256] = "consistent";
	unsigned int round, nrules, first, i, c, bad, na, nb, steps, differ, numbered, agree;
	static char texts[48][1024];
	struct tf_rule rules[48];
	struct tf_policy cur, next, whole;
	struct tf_ip ip;
	int ia, ib;

	for (round = 0, steps = 0, differ = 0, numbered = 0, agree = 0; round < 40; round++) {
		nrules = 1 + rnd(47);
		for (i = 0, bad = 0; i < nrules; i++) {
			random_rule_json(texts[i], sizeof(texts[i]));
			bad += parse_rule(texts[i], &rules[i]) != 0;
		}
		first = rnd(nrules);
		if (bad || tf_policy_compile(rules, first, &cur)) {
			CHECK_EQ("add_cidr: the first rules compile", 0, 1);
			continue;
		}
		for (i = first; i < nrules; i++, steps++) {
			snprintf(what, sizeof(what), "add_cidr round %u: rule %u added", round, i);
			CHECK_EQ(what, tf_policy_add_cidr(&cur, &rules[i], &next), 0);
			if (tf_policy_compile(rules, i + 1, &whole)) {
				CHECK_EQ("add_cidr: the rules compile whole", 0, 1);
				break;
			}
			if (same_policy(&next, &whole, buf, sizeof(buf)) && !differ++) {
				snprintf(why, sizeof(why), "round %u, rule %u: %s", round, i, buf);
				for (c = 0; c <= i; c++)
					printf("# %s rule %u: %s\n", c < first ? "first" : "added", c,
					       texts[c]);
			}
			for (c = 0; c < next.nchunks; c++) {
				if (next.chunks[c].cls > cur.max_cls ||
				    (c && next.chunks[c - 1].cls == next.chunks[c].cls))
					continue;
				ia = class_run(&cur, next.chunks[c].cls, &na);
				ib = class_run(&next, next.chunks[c].cls, &nb);
				numbered += !runs_equal(&cur, ia, na, &next, ib, nb);
			}
			if (!strcmp(problem, "consistent"))
				snprintf(problem, sizeof(problem), "%s",
					 policy_check(&next, buf, sizeof(buf)));
			tf_policy_free(&whole);
			tf_policy_free(&cur);
			cur = next;
		}
		for (i = 0; i < 300; i++) {
			__u16 port = random_port();
			__u8 proto = rnd(2) ? IPPROTO_TCP : IPPROTO_UDP;

			random_ip(&ip);
			agree += tf_policy_allows(&cur, ip.family, ip.addr, proto, port) !=
				 rules_allow(rules, nrules, &ip, proto, port);
			if (proto == IPPROTO_TCP)
				agree += policy_tls(&cur, &ip, port) != rules_tls(rules, nrules, &ip, port);
		}
		tf_policy_free(&cur);
	}
	snprintf(what, sizeof(what), "add_cidr: %u rules added one by one, each as the compiler says%s%s",
		 steps, differ ? ": " : "", why);
	CHECK_EQ(what, differ, 0);
	CHECK_EQ("add_cidr: a class kept keeps its number and its chunks", numbered, 0);
	CHECK_STR("add_cidr: every step consistent", problem, "consistent");
	CHECK_EQ("add_cidr: the last step agrees with the oracle (300 probes a round)", agree, 0);
}

static void host_rule(struct tf_rule *r, __u8 family, unsigned int i, __u8 protos, __u16 port)
{
	memset(r, 0, sizeof(*r));
	r->kind = TF_RULE_CIDR;
	r->cidr.ip.family = family;
	r->cidr.prefixlen = family == TF_FAM_IPV4 ? 32 : 128;
	r->cidr.ip.addr[0] = family == TF_FAM_IPV4 ? 10 : 0x20;
	r->cidr.ip.addr[family == TF_FAM_IPV4 ? 1 : 13] = (__u8)(i >> 16);
	r->cidr.ip.addr[family == TF_FAM_IPV4 ? 2 : 14] = (__u8)(i >> 8);
	r->cidr.ip.addr[family == TF_FAM_IPV4 ? 3 : 15] = (__u8)i;
	r->protos = protos;
	r->nranges = 1;
	r->ranges[0].lo = r->ranges[0].hi = port;
}

static void test_scale(void)
{
	const unsigned int n = 100000;
	struct tf_rule *rules = calloc(n + 1, sizeof(*rules));
	struct tf_policy p;
	unsigned int i;

	if (!rules) {
		CHECK_EQ("scale: allocate rules", 0, 1);
		return;
	}
	for (i = 0; i < n; i++)
		host_rule(&rules[i], TF_FAM_IPV4, i, TF_PB_TCP, (__u16)(i % 1000 + 1));
	CHECK_EQ("scale: 100k /32 rules compile", tf_policy_compile(rules, n, &p), 0);
	CHECK_EQ("scale: 100k entries", p.nentries, n);
	CHECK_EQ("scale: 1000 classes", p.nclasses, 1000);
	CHECK_EQ("scale: one chunk per class", p.nchunks, 1000);
	CHECK_EQ("scale: rule 4242 allows its port",
		 tf_policy_allows(&p, TF_FAM_IPV4, rules[4242].cidr.ip.addr, IPPROTO_TCP, 243), 1);
	CHECK_EQ("scale: rule 4242 denies another",
		 tf_policy_allows(&p, TF_FAM_IPV4, rules[4242].cidr.ip.addr, IPPROTO_TCP, 244), 0);
	tf_policy_free(&p);

	for (i = 0; i < n; i++)
		host_rule(&rules[i], TF_FAM_IPV6, i, TF_PB_UDP, (__u16)(i % 1000 + 1));
	CHECK_EQ("scale: 100k /128 rules compile", tf_policy_compile(rules, n, &p), 0);
	CHECK_EQ("scale: 100k IPv6 entries", p.nentries, n);
	tf_policy_free(&p);

	/* Port sets 1..65535 on TCP: exactly the class limit; one more is too many. */
	for (i = 0; i < 65535; i++)
		host_rule(&rules[i], TF_FAM_IPV4, i, TF_PB_TCP, (__u16)(i + 1));
	CHECK_EQ("classes: 65535 compile", tf_policy_compile(rules, 65535, &p), 0);
	CHECK_EQ("classes: 65535 classes", p.nclasses, 65535);
	tf_policy_free(&p);
	host_rule(&rules[65535], TF_FAM_IPV4, 65535, TF_PB_UDP, 1);
	CHECK_EQ("classes: 65536 is E2BIG", tf_policy_compile(rules, 65536, &p), -E2BIG);
	CHECK_EQ("classes: failed compile leaves an empty policy", p.nentries == 0 && !p.entries,
		 1);
	free(rules);
}

/* Oracle for host rules, straight from the rules: exact name, or strictly below a wildcard. */
static int rules_allow_name(const struct tf_rule *rules, unsigned int n, const char *q, __u8 proto,
			    __u16 port)
{
	size_t ql = strlen(q), hl;
	unsigned int i;
	__u8 bit = proto_bit(TF_FAM_IPV4, proto);
	int allowed = 0;

	for (i = 0; i < n; i++) {
		const struct tf_rule *r = &rules[i];

		if (r->kind != TF_RULE_HOST || !rule_covers(r, bit, port))
			continue;
		hl = strlen(r->host);
		if (r->wildcard ? !(ql > hl + 1 && q[ql - hl - 1] == '.' &&
				    !strcmp(q + ql - hl, r->host)) :
				  strcmp(q, r->host))
			continue;
		if (r->deny)
			return 0;
		allowed = 1;
	}
	return allowed;
}

/* The compiled answer, as the datapath computes it from tf_names and tf_ports. */
static int policy_allows_name(const struct tf_policy *p, const char *q, __u8 proto, __u16 port)
{
	__u8 rev[TF_DNS_NAME_MAX];
	struct tf_rule_val v;
	unsigned int len = tf_host_reverse(q, rev);
	int sub;

	if (tf_policy_name_perm(p, rev, len, 0, &v, &sub) < 0)
		return 0;
	return tf_policy_perm_allows(p, &v, TF_FAM_IPV4, proto, port);
}

static void test_names(void)
{
	static const char *const fixed[] = {
		"{'host':'example.com','proto':'tcp','ports':[443]}",
		"{'host':'*.example.com','proto':'tcp','ports':[80]}",
		"{'host':'x.a.example.com','proto':'udp','ports':[53]}",
		NULL,
	};
	static const struct {
		const char *q;
		__u8 proto;
		__u16 port;
		int allowed;
	} probes[] = {
		{ "example.com", IPPROTO_TCP, 443, 1 },
		{ "example.com", IPPROTO_TCP, 80, 0 }, /* the wildcard is strictly below */
		{ "www.example.com", IPPROTO_TCP, 80, 1 },
		{ "www.example.com", IPPROTO_TCP, 443, 0 },
		{ "evilexample.com", IPPROTO_TCP, 443, 0 },
		{ "a.b.example.com", IPPROTO_TCP, 80, 1 },
		{ "x.a.example.com", IPPROTO_UDP, 53, 1 },
		{ "x.a.example.com", IPPROTO_TCP, 80, 1 }, /* inherited from the wildcard */
		{ "y.x.a.example.com", IPPROTO_UDP, 53, 0 },
		{ "y.x.a.example.com", IPPROTO_TCP, 80, 1 },
		{ "com", IPPROTO_TCP, 443, 0 },
		{ "example.org", IPPROTO_TCP, 443, 0 },
	};
	static const char *const labels[] = { "a", "b", "ab", "c" };
	struct tf_rule rules[MAX_CASE_RULES], *rr;
	struct tf_policy p;
	char what[256], q[64], json[256];
	unsigned int round, i, k, nr, depth, ports, bad = 0, probes_run = 0;
	int n;
	size_t off;

	n = compile_fixture(fixed, rules, &p);
	CHECK_EQ("host fixture compiles", n, 3);
	CHECK_EQ("host fixture: one name entry per distinct name", p.nnames, 2);
	for (i = 0; n > 0 && i < sizeof(probes) / sizeof(probes[0]); i++) {
		snprintf(what, sizeof(what), "name %s %s/%u %s", probes[i].q,
			 probes[i].proto == IPPROTO_TCP ? "tcp" : "udp", probes[i].port,
			 probes[i].allowed ? "allowed" : "denied");
		CHECK_EQ(what, policy_allows_name(&p, probes[i].q, probes[i].proto, probes[i].port),
			 probes[i].allowed);
		CHECK_EQ(what,
			 rules_allow_name(rules, (unsigned int)n, probes[i].q, probes[i].proto,
					  probes[i].port),
			 probes[i].allowed);
	}
	tf_policy_free(&p);

	/* Random host rules over a small label alphabet, so names nest and collide. */
	rr = calloc(MAX_CASE_RULES, sizeof(*rr));
	for (round = 0; rr && round < 200; round++) {
		nr = 1 + rnd(MAX_CASE_RULES - 1);
		for (i = 0, k = 0; i < nr; i++) {
			depth = 1 + rnd(3);
			off = (size_t)snprintf(json, sizeof(json), "{'host':'%s",
					       rnd(3) ? "" : "*.");
			for (; depth; depth--)
				off += (size_t)snprintf(json + off, sizeof(json) - off, "%s.",
							labels[rnd(4)]);
			ports = rnd(3);
			snprintf(json + off, sizeof(json) - off, "zz','proto':'%s'%s%s}",
				 rnd(2) ? "tcp" : "udp",
				 ports == 0 ? "" :
				 ports == 1 ? ",'ports':[80,'1000-1300']" :
					      ",'ports':[443]",
				 rnd(4) ? "" : ",'action':'deny'");
			if (!parse_rule(json, &rr[k]))
				k++;
		}
		if (tf_policy_compile(rr, k, &p)) {
			bad++;
			continue;
		}
		for (i = 0; i < 200; i++) {
			static const __u16 ports_probe[] = { 80, 443, 1000, 1299, 1301, 22 };
			__u8 proto = rnd(2) ? IPPROTO_TCP : IPPROTO_UDP;
			__u16 port = ports_probe[rnd(6)];

			depth = 1 + rnd(4);
			for (off = 0; depth; depth--)
				off += (size_t)snprintf(q + off, sizeof(q) - off, "%s.",
							labels[rnd(4)]);
			snprintf(q + off, sizeof(q) - off, "zz");
			probes_run++;
			if (policy_allows_name(&p, q, proto, port) !=
			    rules_allow_name(rr, k, q, proto, port))
				bad++;
		}
		tf_policy_free(&p);
	}
	free(rr);
	CHECK_EQ("random host rules: compiled names agree with the rules", bad, 0);
	CHECK_EQ("random host rules: probes run", probes_run, 200 * 200);
}

/* Which TCP ports carry the SNI check (TF_PB_TLS), as the datapath reads them. */
static void test_tls_ports(void)
{
	static const char *const cidr_all[] = {
		"{'cidr':'198.51.100.0/24','proto':'tcp','tls':true}", NULL
	};
	static const char *const cidr_none[] = {
		"{'cidr':'198.51.100.0/24','proto':'tcp','ports':[443]}", NULL
	};
	static const char *const host_all[] = { "{'host':'a.test','proto':'tcp','tls':true}",
						NULL };
	static const char *const host_443[] = { "{'host':'a.test','proto':'tcp','ports':[80,443]}",
						NULL };
	static const char *const host_off[] = {
		"{'host':'a.test','proto':'tcp','ports':[443],'tls':false}", NULL
	};
	static const char *const host_nested[] = {
		"{'host':'*.a.test','proto':'tcp','ports':[443,8443],'tls':true}",
		"{'host':'b.a.test','proto':'tcp','ports':[80]}", "{'host':'a.test','proto':'any'}",
		NULL
	};
	struct tf_rule rules[MAX_CASE_RULES];
	struct tf_policy p;
	char buf[256];
	unsigned int i, tls443;

	CHECK_EQ("\"tls\": true without ports, CIDR rule: compiles",
		 compile_fixture(cidr_all, rules, &p), 1);
	CHECK_STR("\"tls\": true without ports, CIDR rule: consistent",
		  policy_check(&p, buf, sizeof(buf)), "consistent");
	CHECK_EQ("\"tls\": true without ports, CIDR rule: one entry", p.nentries, 1);
	if (p.nentries == 1)
		CHECK_EQ("\"tls\": true without ports: every TCP port of a CIDR rule is a TLS port",
			 p.entries[0].val.all_ports & TF_PB_TLS, TF_PB_TLS);
	tf_policy_free(&p);
	CHECK_EQ("a CIDR rule without \"tls\": compiles", compile_fixture(cidr_none, rules, &p), 1);
	CHECK_STR("a CIDR rule without \"tls\": consistent", policy_check(&p, buf, sizeof(buf)),
		  "consistent");
	if (p.nentries)
		CHECK_EQ("a CIDR rule without \"tls\" has no TLS port",
			 p.entries[0].val.protos & TF_PB_TLS, 0);
	tf_policy_free(&p);
	CHECK_EQ("\"tls\": true without ports, host rule: compiles",
		 compile_fixture(host_all, rules, &p), 1);
	CHECK_STR("\"tls\": true without ports, host rule: consistent",
		  policy_check(&p, buf, sizeof(buf)), "consistent");
	CHECK_EQ("\"tls\": true without ports, host rule: one name", p.nnames, 1);
	if (p.nnames == 1)
		CHECK_EQ("\"tls\": true without ports: every TCP port of a host rule is a TLS port",
			 p.names[0].exact.all_ports & TF_PB_TLS, TF_PB_TLS);
	tf_policy_free(&p);
	CHECK_EQ("a host rule on 80 and 443: 443 alone is a TLS port (compile)",
		 compile_fixture(host_443, rules, &p), 1);
	CHECK_STR("a host rule on 80 and 443: consistent", policy_check(&p, buf, sizeof(buf)),
		  "consistent");
	for (i = 0, tls443 = 0; i < p.nchunks; i++) {
		if (p.chunks[i].proto != TF_PORTS_TLS)
			continue;
		if (p.chunks[i].hi == 443 >> 8)
			tls443 |=
				(unsigned int)(p.chunks[i].bits.w[(443 & 0xff) / 64] >> (443 % 64) &
					       1);
		if (p.chunks[i].hi == 80 >> 8)
			tls443 |= 2; /* ports 0-255 hold a TLS port: 80 */
	}
	CHECK_EQ("a host rule on 80 and 443: 443 alone is a TLS port", tls443, 1);
	tf_policy_free(&p);
	CHECK_EQ("\"tls\": false: compiles", compile_fixture(host_off, rules, &p), 1);
	CHECK_STR("\"tls\": false: consistent", policy_check(&p, buf, sizeof(buf)), "consistent");
	if (p.nnames)
		CHECK_EQ("\"tls\": false: no TLS port", p.names[0].exact.protos & TF_PB_TLS, 0);
	tf_policy_free(&p);
	CHECK_EQ("nested host rules with and without \"tls\": compile",
		 compile_fixture(host_nested, rules, &p), 3);
	CHECK_STR("nested host rules with and without \"tls\": consistent",
		  policy_check(&p, buf, sizeof(buf)), "consistent");
	tf_policy_free(&p);
}

/* The two shapes docs/deny.md promises, named. */
static void test_deny(void)
{
	static const char *const cidrs[] = {
		"{'cidr':'0.0.0.0/0','proto':'tcp'}",
		"{'cidr':'203.0.113.0/24','action':'deny'}",
		"{'cidr':'198.51.100.0/24','proto':'tcp','ports':['1-1000']}",
		"{'cidr':'198.51.100.7','proto':'tcp','ports':[22,'500-600'],'action':'deny'}",
		NULL,
	};
	static const char *const hosts[] = {
		"{'host':'*.github.com','proto':'tcp','ports':[443]}",
		"{'host':'gist.github.com','action':'deny'}",
		"{'host':'*.raw.github.com','proto':'tcp','ports':[443],'action':'deny'}",
		NULL,
	};
	struct tf_rule rules[MAX_CASE_RULES];
	struct tf_policy p;
	struct tf_ip ip;
	char buf[256];

	CHECK_EQ("deny: CIDR fixture compiles", compile_fixture(cidrs, rules, &p), 4);
	CHECK_STR("deny: CIDR fixture consistent", policy_check(&p, buf, sizeof(buf)),
		  "consistent");
	CHECK_EQ("deny: 192.0.2.1 parses", tf_parse_ip("192.0.2.1", &ip), 0);
	CHECK_EQ("deny: 0.0.0.0/0 allows 192.0.2.1:80",
		 tf_policy_allows(&p, ip.family, ip.addr, IPPROTO_TCP, 80), 1);
	CHECK_EQ("deny: 203.0.113.9 parses", tf_parse_ip("203.0.113.9", &ip), 0);
	CHECK_EQ("deny: ... except 203.0.113.0/24, denied whatever the port",
		 tf_policy_allows(&p, ip.family, ip.addr, IPPROTO_TCP, 80), 0);
	CHECK_EQ("deny: ... 203.0.113.9 is covered by a deny rule",
		 tf_policy_denies(&p, ip.family, ip.addr, IPPROTO_TCP, 80), 1);
	CHECK_EQ("deny: 198.51.100.7 parses", tf_parse_ip("198.51.100.7", &ip), 0);
	CHECK_EQ("deny: a longer deny takes its ports only: 198.51.100.7:22 denied",
		 tf_policy_allows(&p, ip.family, ip.addr, IPPROTO_TCP, 22), 0);
	CHECK_EQ("deny: ... :550 denied",
		 tf_policy_allows(&p, ip.family, ip.addr, IPPROTO_TCP, 550), 0);
	CHECK_EQ("deny: ... :80 allowed", tf_policy_allows(&p, ip.family, ip.addr, IPPROTO_TCP, 80),
		 1);
	CHECK_EQ("deny: ... :2000 allowed by 0.0.0.0/0",
		 tf_policy_allows(&p, ip.family, ip.addr, IPPROTO_TCP, 2000), 1);
	tf_policy_free(&p);

	CHECK_EQ("deny: host fixture compiles", compile_fixture(hosts, rules, &p), 3);
	CHECK_STR("deny: host fixture consistent", policy_check(&p, buf, sizeof(buf)),
		  "consistent");
	CHECK_EQ("deny: *.github.com allows api.github.com",
		 policy_allows_name(&p, "api.github.com", IPPROTO_TCP, 443), 1);
	CHECK_EQ("deny: ... except gist.github.com",
		 policy_allows_name(&p, "gist.github.com", IPPROTO_TCP, 443), 0);
	CHECK_EQ("deny: a deny of gist.github.com is not of the names below it",
		 policy_allows_name(&p, "x.gist.github.com", IPPROTO_TCP, 443), 1);
	CHECK_EQ("deny: *.raw.github.com denies below raw.github.com",
		 policy_allows_name(&p, "a.raw.github.com", IPPROTO_TCP, 443), 0);
	CHECK_EQ("deny: ... not raw.github.com itself",
		 policy_allows_name(&p, "raw.github.com", IPPROTO_TCP, 443), 1);
	tf_policy_free(&p);
}

int main(void)
{
	test_deny();
	test_names();
	test_tls_ports();
	test_policy_cases();
	test_layout();
	test_random();
	test_rebase();
	test_add_cidr();
	test_scale();
	return CHECK_EXIT();
}
