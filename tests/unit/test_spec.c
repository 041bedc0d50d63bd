// SPDX-License-Identifier: GPL-2.0
/* Test that session specs, rules, MACs and CIDRs parse strictly, fail with messages naming the field and quoting the value, and round-trip. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <tapfence/abi.h>
#include "daemon/spec.h"
#include "check.h"

#define A16 "aaaaaaaaaaaaaaaa"

static const struct tf_spec_limits lim = { .max_rules = 4 };

/* Fixtures are written with ' for ", to stay readable. */
static json_t *jq(const char *s)
{
	char buf[4096];
	size_t i;

	for (i = 0; s[i] && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = '\0';
	return json_loads(buf, 0, NULL);
}

static const char *base =
	"{'id':'s1','ifname':'tap-s1',"
	"'guest':{'mac':'02:00:00:00:00:02','ipv4':'10.10.0.2','ipv6':'fd00::2'},"
	"'gateway':{'mac':'02:00:00:00:00:01','ipv4':'10.10.0.1','ipv6':'fd00::1'},"
	"'resolver':{'ipv4':'10.10.0.1','port':53},"
	"'allow':[{'cidr':'198.51.100.0/24','proto':'tcp','ports':[80,'8000-8100']}]}";

/* RFC 7396 merge patch: objects merge, null deletes the key, anything else replaces. */
static void apply_patch(json_t *target, json_t *patch)
{
	const char *k;
	json_t *v, *t;

	json_object_foreach(patch, k, v) {
		t = json_object_get(target, k);
		if (json_is_null(v))
			json_object_del(target, k);
		else if (json_is_object(v) && json_is_object(t))
			apply_patch(t, v);
		else
			json_object_set(target, k, v);
	}
}

/* The base spec with a patch applied, or NULL if the fixture is not JSON. */
static json_t *patched(const char *patch)
{
	json_t *j = jq(base), *p = jq(patch);

	if (!j || !p) {
		json_decref(j);
		j = NULL;
	} else {
		apply_patch(j, p);
	}
	json_decref(p);
	return j;
}

static int ip_equal(const struct tf_ip *a, const struct tf_ip *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

static int spec_equal(const struct tf_spec *a, const struct tf_spec *b)
{
	unsigned int i;

	if (strcmp(a->id, b->id) || strcmp(a->ifname, b->ifname) ||
	    memcmp(a->guest_mac, b->guest_mac, 6) || memcmp(a->gw_mac, b->gw_mac, 6) ||
	    a->has_ip4 != b->has_ip4 || a->has_ip6 != b->has_ip6 ||
	    !ip_equal(&a->guest_ip4, &b->guest_ip4) || !ip_equal(&a->guest_ip6, &b->guest_ip6) ||
	    !ip_equal(&a->gw_ip4, &b->gw_ip4) || !ip_equal(&a->gw_ip6, &b->gw_ip6) ||
	    !ip_equal(&a->resolver, &b->resolver) || a->resolver_port != b->resolver_port ||
	    a->audit != b->audit || a->on_deny != b->on_deny || a->nrules != b->nrules)
		return 0;
	for (i = 0; i < a->nrules; i++)
		if (!tf_rule_equal(&a->rules[i], &b->rules[i]))
			return 0;
	return 1;
}

/* parse(to_json(s)) must give s back. */
static void check_round_trip(const char *desc, const struct tf_spec *s)
{
	char what[TF_ERR_MAX + 256], err[TF_ERR_MAX] = "";
	struct tf_spec back;
	json_t *j = tf_spec_to_json(s);
	int ret;

	snprintf(what, sizeof(what), "%s: to_json", desc);
	CHECK_EQ(what, j != NULL, 1);
	ret = tf_spec_from_json(j, &lim, &back, err, sizeof(err));
	snprintf(what, sizeof(what), "%s: round trip parses%s%s", desc, *err ? ": " : "", err);
	CHECK_EQ(what, ret, 0);
	snprintf(what, sizeof(what), "%s: round trip is equal", desc);
	CHECK_EQ(what, spec_equal(s, &back), 1);
	tf_spec_free(&back);
	json_decref(j);
}

struct spec_case {
	const char *desc;
	const char *patch; /* merge patch over base */
	const char *err;   /* NULL: accepted; else the exact message */
};

static const struct spec_case spec_cases[] = {
	/* accepted */
	{ "base spec", "{}", NULL },
	{ "IPv4 only", "{'guest':{'ipv6':null},'gateway':{'ipv6':null}}", NULL },
	{ "IPv6 only, resolver at the gateway's global address",
	  "{'guest':{'ipv4':null},'gateway':{'ipv4':null},'resolver':{'ipv4':null,'ipv6':'fd00::1'}}",
	  NULL },
	{ "IPv6 without gateway ipv6, resolver at its derived link-local",
	  "{'guest':{'ipv4':null},'gateway':{'ipv4':null,'ipv6':null},"
	  "'resolver':{'ipv4':null,'ipv6':'fe80::ff:fe00:1'}}",
	  NULL },
	{ "guest ipv6 without gateway ipv6", "{'gateway':{'ipv6':null}}", NULL },
	{ "explicit null guest ipv6", "{'guest':{'ipv6':null},'gateway':{'ipv6':null}}", NULL },
	{ "no resolver", "{'resolver':null}", NULL },
	{ "resolver port omitted", "{'resolver':{'port':null}}", NULL },
	{ "resolver port 5353", "{'resolver':{'port':5353}}", NULL },
	{ "no allow", "{'allow':null}", NULL },
	{ "audit mode", "{'mode':'audit'}", NULL },
	{ "enforce mode", "{'mode':'enforce'}", NULL },
	{ "on_deny reject", "{'on_deny':'reject','mode':'audit'}", NULL },
	{ "on_deny drop", "{'on_deny':'drop'}", NULL },
	{ "an unknown mode", "{'mode':'permissive'}",
	  "mode: `permissive' is not enforce or audit" },
	{ "deny rules, CIDR and host, beside an allow of the same CIDR",
	  "{'allow':[{'cidr':'10.0.0.0/8','action':'deny'},{'cidr':'10.0.0.0/8'},"
	  "{'host':'gist.github.com','action':'deny'},{'host':'*.github.com','action':'allow'}]}",
	  NULL },
	{ "an unknown action", "{'allow':[{'cidr':'10.0.0.0/8','action':'block'}]}",
	  "allow[0].action: `block' is not allow or deny" },
	{ "a deny rule with tls", "{'allow':[{'cidr':'10.0.0.0/8','action':'deny','tls':true}]}",
	  "allow[0].tls: a deny rule has no SNI check" },
	{ "an unknown on_deny", "{'on_deny':'bounce'}", "on_deny: `bounce' is not drop or reject" },
	{ "empty allow", "{'allow':[]}", NULL },
	{ "upper-case MAC", "{'guest':{'mac':'02:AB:cd:EF:00:02'}}", NULL },
	{ "63-char id", "{'id':'" A16 A16 A16 "aaaaaaaaaaaaaaa'}", NULL },
	{ "id with . - _", "{'id':'vm-1.a_b'}", NULL },
	{ "15-char ifname", "{'ifname':'abcdefghijklmno'}", NULL },
	{ "rules of every proto",
	  "{'allow':[{'cidr':'0.0.0.0/0','proto':'icmp'},{'cidr':'::/0'},"
	  "{'cidr':'2001:db8::/32','proto':'udp','ports':[53]},{'cidr':'10.1.2.3','proto':'any','ports':['1-65535']}]}",
	  NULL },
	{ "same CIDR, different protos",
	  "{'allow':[{'cidr':'10.0.0.0/8','proto':'tcp'},{'cidr':'10.0.0.0/8','proto':'udp'},"
	  "{'cidr':'10.0.0.0/8','proto':'any','ports':[80]},{'cidr':'10.0.0.0/8','proto':'tcp','ports':[80]}]}",
	  NULL },

	/* top level */
	{ "unknown top-level field", "{'alow':[]}", "unknown field `alow'" },
	{ "id missing", "{'id':null}", "id: missing" },
	{ "id not a string", "{'id':5}", "id: expected a string, not `5'" },
	{ "id with a space", "{'id':'s 1'}",
	  "id: invalid session id `s 1' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	{ "empty id", "{'id':''}", "id: invalid session id `' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	{ "id ..", "{'id':'..'}", "id: invalid session id `..' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	{ "id .", "{'id':'.'}", "id: invalid session id `.' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	/* Ids name state files and link pins: nothing that walks a path. */
	{ "id with /", "{'id':'a/b'}",
	  "id: invalid session id `a/b' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	{ "id ../x", "{'id':'../x'}",
	  "id: invalid session id `../x' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	/* ',' stands for '.' in link pin names (bpffs refuses dots): an id never has one. */
	{ "id with ,", "{'id':'vm,1'}",
	  "id: invalid session id `vm,1' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	{ "id ...", "{'id':'...'}", NULL },
	{ "64-char id", "{'id':'" A16 A16 A16 A16 "'}",
	  "id: invalid session id `" A16 A16 A16 A16 "' (want 1-63 of A-Z a-z 0-9 _ . -)" },
	{ "ifname missing", "{'ifname':null}", "ifname: missing" },
	{ "empty ifname", "{'ifname':''}", "ifname: invalid interface name `'" },
	{ "ifname with /", "{'ifname':'tap/0'}", "ifname: invalid interface name `tap/0'" },
	{ "ifname with a space", "{'ifname':'tap 0'}", "ifname: invalid interface name `tap 0'" },
	{ "ifname with a tab", "{'ifname':'tap\\t0'}", "ifname: invalid interface name `tap?0'" },
	{ "ifname with :", "{'ifname':'tap:0'}", "ifname: invalid interface name `tap:0'" },
	{ "ifname .", "{'ifname':'.'}", "ifname: invalid interface name `.'" },
	{ "ifname ..", "{'ifname':'..'}", "ifname: invalid interface name `..'" },
	{ "16-char ifname", "{'ifname':'abcdefghijklmnop'}",
	  "ifname: invalid interface name `abcdefghijklmnop'" },

	/* guest and gateway */
	{ "guest missing", "{'guest':null}", "guest: missing" },
	{ "guest not an object", "{'guest':'02:00:00:00:00:02'}",
	  "guest: expected an object, not `02:00:00:00:00:02'" },
	{ "unknown guest field", "{'guest':{'ip':'10.0.0.2'}}", "guest: unknown field `ip'" },
	{ "guest.mac missing", "{'guest':{'mac':null}}", "guest.mac: missing" },
	{ "guest.mac not hex", "{'guest':{'mac':'zz:00:00:00:00:01'}}",
	  "guest.mac: invalid MAC `zz:00:00:00:00:01'" },
	{ "guest.mac short", "{'guest':{'mac':'02:00:00:00:00'}}",
	  "guest.mac: invalid MAC `02:00:00:00:00'" },
	{ "guest.mac single digits", "{'guest':{'mac':'2:0:0:0:0:2'}}",
	  "guest.mac: invalid MAC `2:0:0:0:0:2'" },
	{ "guest.mac dashes", "{'guest':{'mac':'02-00-00-00-00-02'}}",
	  "guest.mac: invalid MAC `02-00-00-00-00-02'" },
	{ "guest.mac trailing space", "{'guest':{'mac':'02:00:00:00:00:02 '}}",
	  "guest.mac: invalid MAC `02:00:00:00:00:02 '" },
	{ "guest.mac multicast", "{'guest':{'mac':'01:00:5e:00:00:01'}}",
	  "guest.mac: multicast MAC `01:00:5e:00:00:01' not allowed" },
	{ "guest.mac broadcast", "{'guest':{'mac':'ff:ff:ff:ff:ff:ff'}}",
	  "guest.mac: multicast MAC `ff:ff:ff:ff:ff:ff' not allowed" },
	{ "guest.mac all-zero", "{'guest':{'mac':'00:00:00:00:00:00'}}",
	  "guest.mac: all-zero MAC `00:00:00:00:00:00' not allowed" },
	{ "gateway missing", "{'gateway':null}", "gateway: missing" },
	{ "gateway.mac missing", "{'gateway':{'mac':null}}", "gateway.mac: missing" },
	{ "gateway.mac invalid", "{'gateway':{'mac':'02:00:00:00:00:0g'}}",
	  "gateway.mac: invalid MAC `02:00:00:00:00:0g'" },
	{ "gateway.mac multicast", "{'gateway':{'mac':'03:00:00:00:00:01'}}",
	  "gateway.mac: multicast MAC `03:00:00:00:00:01' not allowed" },
	{ "gateway.mac all-zero", "{'gateway':{'mac':'00:00:00:00:00:00'}}",
	  "gateway.mac: all-zero MAC `00:00:00:00:00:00' not allowed" },
	{ "gateway.mac is the guest's", "{'gateway':{'mac':'02:00:00:00:00:02'}}",
	  "gateway.mac: `02:00:00:00:00:02' is the guest's MAC" },
	{ "guest without addresses", "{'guest':{'ipv4':null,'ipv6':null}}",
	  "guest: needs an ipv4 or an ipv6 address" },
	{ "guest.ipv4 not a string", "{'guest':{'ipv4':167772162}}",
	  "guest.ipv4: expected a string, not `167772162'" },
	{ "guest.ipv4 octet too big", "{'guest':{'ipv4':'10.10.0.256'}}",
	  "guest.ipv4: invalid IPv4 address `10.10.0.256'" },
	{ "guest.ipv4 short form", "{'guest':{'ipv4':'10.2'}}",
	  "guest.ipv4: invalid IPv4 address `10.2'" },
	{ "guest.ipv4 leading space", "{'guest':{'ipv4':' 10.10.0.2'}}",
	  "guest.ipv4: invalid IPv4 address ` 10.10.0.2'" },
	{ "guest.ipv4 with a prefix", "{'guest':{'ipv4':'10.10.0.2/24'}}",
	  "guest.ipv4: invalid IPv4 address `10.10.0.2/24'" },
	{ "guest.ipv4 holding IPv6", "{'guest':{'ipv4':'fd00::2'}}",
	  "guest.ipv4: invalid IPv4 address `fd00::2'" },
	{ "guest.ipv4 0.0.0.0", "{'guest':{'ipv4':'0.0.0.0'}}",
	  "guest.ipv4: this-network address `0.0.0.0' not allowed" },
	{ "guest.ipv4 broadcast", "{'guest':{'ipv4':'255.255.255.255'}}",
	  "guest.ipv4: broadcast address `255.255.255.255' not allowed" },
	{ "guest.ipv4 multicast", "{'guest':{'ipv4':'224.0.0.1'}}",
	  "guest.ipv4: multicast address `224.0.0.1' not allowed" },
	{ "guest.ipv4 loopback", "{'guest':{'ipv4':'127.0.0.2'}}",
	  "guest.ipv4: loopback address `127.0.0.2' not allowed" },
	{ "guest.ipv6 holding IPv4", "{'guest':{'ipv6':'10.10.0.2'}}",
	  "guest.ipv6: invalid IPv6 address `10.10.0.2'" },
	{ "guest.ipv6 ::", "{'guest':{'ipv6':'::'}}",
	  "guest.ipv6: unspecified address `::' not allowed" },
	{ "guest.ipv6 ::1", "{'guest':{'ipv6':'::1'}}",
	  "guest.ipv6: loopback address `::1' not allowed" },
	{ "guest.ipv6 multicast", "{'guest':{'ipv6':'ff02::1'}}",
	  "guest.ipv6: multicast address `ff02::1' not allowed" },
	{ "guest.ipv6 link-local", "{'guest':{'ipv6':'fe80::2'}}",
	  "guest.ipv6: link-local address `fe80::2' not allowed" },
	{ "guest.ipv6 link-local, top of fe80::/10", "{'guest':{'ipv6':'febf::2'}}",
	  "guest.ipv6: link-local address `febf::2' not allowed" },
	{ "gateway.ipv4 multicast", "{'gateway':{'ipv4':'239.1.1.1'}}",
	  "gateway.ipv4: multicast address `239.1.1.1' not allowed" },
	{ "gateway.ipv6 link-local", "{'gateway':{'ipv6':'fe80::1'}}",
	  "gateway.ipv6: link-local address `fe80::1' not allowed" },
	{ "gateway.ipv4 missing", "{'gateway':{'ipv4':null}}",
	  "gateway.ipv4: missing (guest.ipv4 is set)" },
	{ "gateway.ipv4 without guest.ipv4", "{'guest':{'ipv4':null}}",
	  "gateway.ipv4: `10.10.0.1' set but guest.ipv4 is not" },
	{ "gateway.ipv6 without guest.ipv6", "{'guest':{'ipv6':null}}",
	  "gateway.ipv6: `fd00::1' set but guest.ipv6 is not" },
	{ "gateway.ipv4 is the guest's", "{'gateway':{'ipv4':'10.10.0.2'}}",
	  "gateway.ipv4: `10.10.0.2' is the guest's address" },
	{ "gateway.ipv6 is the guest's", "{'gateway':{'ipv6':'fd00::2'}}",
	  "gateway.ipv6: `fd00::2' is the guest's address" },

	/* resolver */
	{ "resolver not an object", "{'resolver':'10.10.0.1'}",
	  "resolver: expected an object, not `10.10.0.1'" },
	{ "unknown resolver field", "{'resolver':{'host':'ns'}}",
	  "resolver: unknown field `host'" },
	{ "resolver with both families", "{'resolver':{'ipv6':'fd00::1'}}",
	  "resolver: needs exactly one of ipv4 and ipv6" },
	{ "resolver without address", "{'resolver':{'ipv4':null}}",
	  "resolver: needs exactly one of ipv4 and ipv6" },
	{ "resolver.ipv4 invalid", "{'resolver':{'ipv4':'ns1'}}",
	  "resolver.ipv4: invalid IPv4 address `ns1'" },
	{ "resolver.ipv4 not the gateway", "{'resolver':{'ipv4':'10.10.0.53'}}",
	  "resolver.ipv4: `10.10.0.53' is not the gateway's address 10.10.0.1 "
	  "(the resolver lives at the gateway)" },
	{ "resolver.ipv6 not the gateway", "{'resolver':{'ipv4':null,'ipv6':'fd00::53'}}",
	  "resolver.ipv6: `fd00::53' is not the gateway's address fd00::1 or fe80::ff:fe00:1 "
	  "(the resolver lives at the gateway)" },
	{ "resolver.ipv6 without gateway ipv6",
	  "{'gateway':{'ipv6':null},'resolver':{'ipv4':null,'ipv6':'fd00::1'}}",
	  "resolver.ipv6: `fd00::1' is not the gateway's address (none) or fe80::ff:fe00:1 "
	  "(the resolver lives at the gateway)" },
	{ "resolver.ipv6 for an IPv4-only guest",
	  "{'guest':{'ipv6':null},'gateway':{'ipv6':null},"
	  "'resolver':{'ipv4':null,'ipv6':'fe80::ff:fe00:1'}}",
	  "resolver.ipv6: `fe80::ff:fe00:1' but the guest has no IPv6 address" },
	{ "resolver.port 0", "{'resolver':{'port':0}}",
	  "resolver.port: port `0' out of range 1-65535" },
	{ "resolver.port 65536", "{'resolver':{'port':65536}}",
	  "resolver.port: port `65536' out of range 1-65535" },
	{ "resolver.port as a string", "{'resolver':{'port':'53'}}",
	  "resolver.port: expected an integer, not `53'" },

	/* allow */
	{ "allow not an array", "{'allow':{}}", "allow: expected an array, not `{}'" },
	{ "more rules than the limit",
	  "{'allow':[{'cidr':'10.0.0.1'},{'cidr':'10.0.0.2'},{'cidr':'10.0.0.3'},"
	  "{'cidr':'10.0.0.4'},{'cidr':'10.0.0.5'}]}",
	  "allow: 5 rules, more than the limit of 4" },
	{ "rule not an object", "{'allow':['10.0.0.0/8']}",
	  "allow[0]: expected an object, not `10.0.0.0/8'" },
	{ "unknown rule field",
	  "{'allow':[{'cidr':'10.0.0.0/8'},{'cidr':'10.0.0.0/16','prot':'tcp'}]}",
	  "allow[1]: unknown field `prot'" },
	{ "host rule", "{'allow':[{'host':'example.com','proto':'tcp','ports':[443]}]}", NULL },
	{ "wildcard host rule", "{'allow':[{'host':'*.npmjs.org','proto':'tcp','ports':[443]}]}",
	  NULL },
	{ "host and cidr in one rule", "{'allow':[{'host':'a.com','cidr':'1.2.3.0/24'}]}",
	  "allow[0]: a rule has either \"cidr\" or \"host\", not both" },
	{ "host: empty label", "{'allow':[{'host':'a..com'}]}",
	  "allow[0].host: invalid host name `a..com' (labels of a-z 0-9 - _, at most 247 "
	  "characters, \"*.\" only in front of two or more labels, no IP literals)" },
	{ "host: IP literal", "{'allow':[{'host':'198.51.100.1'}]}",
	  "allow[0].host: invalid host name `198.51.100.1' (labels of a-z 0-9 - _, at most 247 "
	  "characters, \"*.\" only in front of two or more labels, no IP literals)" },
	{ "host: TLD wildcard", "{'allow':[{'host':'*.com'}]}",
	  "allow[0].host: invalid host name `*.com' (labels of a-z 0-9 - _, at most 247 "
	  "characters, \"*.\" only in front of two or more labels, no IP literals)" },
	{ "host: wildcard inside", "{'allow':[{'host':'a.*.com'}]}",
	  "allow[0].host: invalid host name `a.*.com' (labels of a-z 0-9 - _, at most 247 "
	  "characters, \"*.\" only in front of two or more labels, no IP literals)" },
	{ "host: bad character", "{'allow':[{'host':'exa mple.com'}]}",
	  "allow[0].host: invalid host name `exa mple.com' (labels of a-z 0-9 - _, at most 247 "
	  "characters, \"*.\" only in front of two or more labels, no IP literals)" },
	{ "host: label starts with -", "{'allow':[{'host':'-a.com'}]}",
	  "allow[0].host: invalid host name `-a.com' (labels of a-z 0-9 - _, at most 247 "
	  "characters, \"*.\" only in front of two or more labels, no IP literals)" },
	{ "host: label over 63",
	  "{'allow':[{'host':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com'}]}",
	  "allow[0].host: invalid host name `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com' "
	  "(labels of a-z 0-9 - _, at most 247 characters, \"*.\" only in front of two or more "
	  "labels, no IP literals)" },
	{ "host: unknown field", "{'allow':[{'host':'a.com','cidr2':'x'}]}",
	  "allow[0]: unknown field `cidr2'" },
	{ "duplicate host rule (case, trailing dot)",
	  "{'allow':[{'host':'GitHub.com.'},{'host':'github.com'}]}",
	  "allow[1]: duplicate of allow[0] `{\"host\":\"github.com\",\"proto\":\"any\"}'" },
	{ "cidr missing", "{'allow':[{'proto':'tcp'}]}", "allow[0].cidr: missing" },
	{ "cidr /33",
	  "{'allow':[{'cidr':'10.0.0.0/8'},{'cidr':'10.0.0.0/16'},{'cidr':'10.0.0.0/33'}]}",
	  "allow[2].cidr: invalid CIDR `10.0.0.0/33'" },
	{ "cidr /129", "{'allow':[{'cidr':'2001:db8::/129'}]}",
	  "allow[0].cidr: invalid CIDR `2001:db8::/129'" },
	{ "cidr host bits", "{'allow':[{'cidr':'10.0.0.1/8'}]}",
	  "allow[0].cidr: invalid CIDR `10.0.0.1/8'" },
	{ "cidr IPv6 host bits", "{'allow':[{'cidr':'2001:db8::1/64'}]}",
	  "allow[0].cidr: invalid CIDR `2001:db8::1/64'" },
	{ "cidr garbage", "{'allow':[{'cidr':'example'}]}",
	  "allow[0].cidr: invalid CIDR `example'" },
	{ "cidr trailing chars", "{'allow':[{'cidr':'10.0.0.0/8x'}]}",
	  "allow[0].cidr: invalid CIDR `10.0.0.0/8x'" },
	{ "cidr leading space", "{'allow':[{'cidr':' 10.0.0.0/8'}]}",
	  "allow[0].cidr: invalid CIDR ` 10.0.0.0/8'" },
	{ "cidr trailing space", "{'allow':[{'cidr':'10.0.0.0/8 '}]}",
	  "allow[0].cidr: invalid CIDR `10.0.0.0/8 '" },
	{ "cidr not a string", "{'allow':[{'cidr':10}]}",
	  "allow[0].cidr: expected a string, not `10'" },
	{ "unknown proto", "{'allow':[{'cidr':'10.0.0.0/8','proto':'sctp'}]}",
	  "allow[0].proto: unknown protocol `sctp' (want tcp, udp, icmp or any)" },
	{ "proto is case-sensitive", "{'allow':[{'cidr':'10.0.0.0/8','proto':'TCP'}]}",
	  "allow[0].proto: unknown protocol `TCP' (want tcp, udp, icmp or any)" },
	{ "proto as a number", "{'allow':[{'cidr':'10.0.0.0/8','proto':6}]}",
	  "allow[0].proto: expected a string, not `6'" },
	{ "ports with icmp", "{'allow':[{'cidr':'10.0.0.0/8','proto':'icmp','ports':[8]}]}",
	  "allow[0].ports: ports given for proto `icmp'" },
	{ "empty ports", "{'allow':[{'cidr':'10.0.0.0/8','proto':'tcp','ports':[]}]}",
	  "allow[0].ports: empty list (omit \"ports\" for every port)" },
	{ "ports not an array", "{'allow':[{'cidr':'10.0.0.0/8','proto':'tcp','ports':80}]}",
	  "allow[0].ports: expected an array, not `80'" },
	{ "port 0", "{'allow':[{'cidr':'10.0.0.0/8','proto':'tcp','ports':[80,0]}]}",
	  "allow[0].ports[1]: port `0' out of range 1-65535" },
	{ "port 65536", "{'allow':[{'cidr':'10.0.0.0/8','proto':'udp','ports':[65536]}]}",
	  "allow[0].ports[0]: port `65536' out of range 1-65535" },
	{ "negative port", "{'allow':[{'cidr':'10.0.0.0/8','proto':'udp','ports':[-1]}]}",
	  "allow[0].ports[0]: port `-1' out of range 1-65535" },
	{ "range from 0", "{'allow':[{'cidr':'10.0.0.0/8','ports':['0-10']}]}",
	  "allow[0].ports[0]: port range `0-10' out of range 1-65535" },
	{ "range past 65535", "{'allow':[{'cidr':'10.0.0.0/8','ports':['10-65536']}]}",
	  "allow[0].ports[0]: port range `10-65536' out of range 1-65535" },
	{ "huge range", "{'allow':[{'cidr':'10.0.0.0/8','ports':['1-99999999999999999999999']}]}",
	  "allow[0].ports[0]: port range `1-99999999999999999999999' out of range 1-65535" },
	{ "reversed range", "{'allow':[{'cidr':'10.0.0.0/8','ports':[22,'90-80']}]}",
	  "allow[0].ports[1]: port range `90-80' is reversed" },
	{ "range without hi", "{'allow':[{'cidr':'10.0.0.0/8','ports':['80-']}]}",
	  "allow[0].ports[0]: invalid port range `80-' (want \"lo-hi\")" },
	{ "port as a string", "{'allow':[{'cidr':'10.0.0.0/8','ports':['80']}]}",
	  "allow[0].ports[0]: invalid port range `80' (want \"lo-hi\")" },
	{ "range with spaces", "{'allow':[{'cidr':'10.0.0.0/8','ports':['80 - 90']}]}",
	  "allow[0].ports[0]: invalid port range `80 - 90' (want \"lo-hi\")" },
	{ "range with a sign", "{'allow':[{'cidr':'10.0.0.0/8','ports':['80-+90']}]}",
	  "allow[0].ports[0]: invalid port range `80-+90' (want \"lo-hi\")" },
	{ "range trailing chars", "{'allow':[{'cidr':'10.0.0.0/8','ports':['80-90x']}]}",
	  "allow[0].ports[0]: invalid port range `80-90x' (want \"lo-hi\")" },
	{ "port as a boolean", "{'allow':[{'cidr':'10.0.0.0/8','ports':[true]}]}",
	  "allow[0].ports[0]: invalid port `true' (want a number or \"lo-hi\")" },
	{ "port as a real", "{'allow':[{'cidr':'10.0.0.0/8','ports':[80.5]}]}",
	  "allow[0].ports[0]: invalid port `80.5' (want a number or \"lo-hi\")" },
	{ "duplicate rule after canonicalisation",
	  "{'allow':[{'cidr':'10.0.0.0/8','proto':'tcp','ports':[80,81]},{'cidr':'10.0.0.0/8'},"
	  "{'cidr':'10.0.0.0/8','proto':'tcp','ports':['80-81']},{'cidr':'10.0.0.0/8','proto':'any'}]}",
	  "allow[2]: duplicate of allow[0] `{\"cidr\":\"10.0.0.0/8\",\"proto\":\"tcp\",\"ports\":[\"80-81\"]}'" },
};

static void test_spec_cases(void)
{
	char what[TF_ERR_MAX + 256], err[TF_ERR_MAX];
	struct tf_spec s;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(spec_cases) / sizeof(spec_cases[0]); i++) {
		const struct spec_case *c = &spec_cases[i];
		json_t *j = patched(c->patch);

		snprintf(what, sizeof(what), "%s: fixture is JSON", c->desc);
		CHECK_EQ(what, j != NULL, 1);
		strcpy(err, "");
		ret = tf_spec_from_json(j, &lim, &s, err, sizeof(err));
		snprintf(what, sizeof(what), "%s: %s%s%s", c->desc,
			 c->err ? "rejected" : "accepted", !c->err && *err ? ": " : "",
			 c->err ? "" : err);
		CHECK_EQ(what, ret, c->err ? -EINVAL : 0);
		if (c->err) {
			snprintf(what, sizeof(what), "%s: message", c->desc);
			CHECK_STR(what, err, c->err);
			CHECK_EQ("rejected spec is left empty", s.nrules == 0 && !s.rules, 1);
		} else if (!ret) {
			check_round_trip(c->desc, &s);
		}
		tf_spec_free(&s);
		json_decref(j);
	}
}

static void test_spec_values(void)
{
	char err[TF_ERR_MAX] = "";
	const __u8 gmac[6] = { 2, 0, 0, 0, 0, 2 }, wmac[6] = { 2, 0, 0, 0, 0, 1 };
	const __u8 gw4[4] = { 10, 10, 0, 1 };
	struct tf_spec s;
	json_t *j = patched("{'resolver':{'port':null}}");

	CHECK_EQ("values: parses", tf_spec_from_json(j, &lim, &s, err, sizeof(err)), 0);
	CHECK_STR("values: id", s.id, "s1");
	CHECK_STR("values: ifname", s.ifname, "tap-s1");
	CHECK_EQ("values: guest mac", memcmp(s.guest_mac, gmac, 6), 0);
	CHECK_EQ("values: gateway mac", memcmp(s.gw_mac, wmac, 6), 0);
	CHECK_EQ("values: has_ip4", s.has_ip4, 1);
	CHECK_EQ("values: has_ip6", s.has_ip6, 1);
	CHECK_EQ("values: guest ip4 family", s.guest_ip4.family, TF_FAM_IPV4);
	CHECK_EQ("values: guest ip4 last byte", s.guest_ip4.addr[3], 2);
	CHECK_EQ("values: IPv4 rest is zero", s.guest_ip4.addr[4] | s.guest_ip4.addr[15], 0);
	CHECK_EQ("values: gateway ip6 family", s.gw_ip6.family, TF_FAM_IPV6);
	CHECK_EQ("values: resolver family", s.resolver.family, TF_FAM_IPV4);
	CHECK_EQ("values: resolver address", memcmp(s.resolver.addr, gw4, 4), 0);
	CHECK_EQ("values: resolver port defaults to 53", s.resolver_port, 53);
	CHECK_EQ("values: one rule", s.nrules, 1);
	CHECK_EQ("values: rule kind", s.rules[0].kind, TF_RULE_CIDR);
	CHECK_EQ("values: rule prefixlen", s.rules[0].cidr.prefixlen, 24);
	CHECK_EQ("values: rule protos", s.rules[0].protos, TF_PB_TCP);
	CHECK_EQ("values: rule nranges", s.rules[0].nranges, 2);
	tf_spec_free(&s);
	json_decref(j);

	j = patched("{'resolver':null,'guest':{'ipv4':null},'gateway':{'ipv4':null}}");
	CHECK_EQ("values v6: parses", tf_spec_from_json(j, &lim, &s, err, sizeof(err)), 0);
	CHECK_EQ("values v6: no ip4", s.has_ip4 || s.guest_ip4.family || s.gw_ip4.family, 0);
	CHECK_EQ("values v6: no resolver", s.resolver.family, 0);
	tf_spec_free(&s);
	json_decref(j);
}

struct rule_case {
	const char *desc;
	const char *json;
	__u8 protos;
	const char *ranges; /* "lo-hi lo-hi ..." after sort and merge */
};

static const struct rule_case rule_cases[] = {
	{ "proto defaults to any", "{'cidr':'10.0.0.0/8'}",
	  TF_PB_TCP | TF_PB_UDP | TF_PB_ICMP | TF_PB_OTHER, "" },
	{ "any without ports: all four", "{'cidr':'10.0.0.0/8','proto':'any'}",
	  TF_PB_TCP | TF_PB_UDP | TF_PB_ICMP | TF_PB_OTHER, "" },
	{ "any with ports: TCP and UDP", "{'cidr':'10.0.0.0/8','proto':'any','ports':[53]}",
	  TF_PB_TCP | TF_PB_UDP, "53-53" },
	{ "tcp without ports: every port", "{'cidr':'10.0.0.0/8','proto':'tcp'}", TF_PB_TCP, "" },
	{ "udp", "{'cidr':'10.0.0.0/8','proto':'udp','ports':[53,'5353-5353']}", TF_PB_UDP,
	  "53-53 5353-5353" },
	{ "icmp", "{'cidr':'10.0.0.0/8','proto':'icmp'}", TF_PB_ICMP, "" },
	{ "ports sorted and merged",
	  "{'cidr':'10.0.0.0/8','proto':'tcp','ports':[443,'8000-8100',80,'8050-8200',81,'1-1','8201-8201']}",
	  TF_PB_TCP, "1-1 80-81 443-443 8000-8201" },
	{ "nested ranges", "{'cidr':'10.0.0.0/8','proto':'tcp','ports':['1-65535',80,'100-200']}",
	  TF_PB_TCP, "1-65535" },
	{ "top port", "{'cidr':'10.0.0.0/8','proto':'tcp','ports':[65535,'65534-65535']}",
	  TF_PB_TCP, "65534-65535" },
};

static void test_rule_cases(void)
{
	char what[256], got[1024], err[TF_ERR_MAX] = "";
	struct tf_rule r;
	unsigned int k;
	size_t i, n;

	for (i = 0; i < sizeof(rule_cases) / sizeof(rule_cases[0]); i++) {
		const struct rule_case *c = &rule_cases[i];
		json_t *j = jq(c->json);

		snprintf(what, sizeof(what), "rule %s: parses", c->desc);
		CHECK_EQ(what, tf_rule_from_json(j, "rule", &r, err, sizeof(err)), 0);
		snprintf(what, sizeof(what), "rule %s: protos", c->desc);
		CHECK_EQ(what, r.protos, c->protos);
		for (k = 0, n = 0, got[0] = '\0'; k < r.nranges; k++)
			n += snprintf(got + n, sizeof(got) - n, "%s%u-%u", k ? " " : "",
				      r.ranges[k].lo, r.ranges[k].hi);
		snprintf(what, sizeof(what), "rule %s: ranges", c->desc);
		CHECK_STR(what, got, c->ranges);
		json_decref(j);
	}
}

static void test_host_names(void)
{
	static const struct {
		const char *in, *host;
		int wildcard;
		const char *rev;
	} ok[] = {
		{ "github.com", "github.com", 0, "moc.buhtig." },
		{ "GitHub.COM.", "github.com", 0, "moc.buhtig." },
		{ "*.npmjs.org", "npmjs.org", 1, "gro.sjmpn." },
		{ "_dmarc.x-y.example", "_dmarc.x-y.example", 0, "elpmaxe.y-x.cramd_." },
		{ "localhost", "localhost", 0, "tsohlacol." },
	};
	char host[TF_HOST_MAX + 1], what[128];
	__u8 rev[TF_DNS_NAME_MAX];
	unsigned int n;
	size_t i;
	int w;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(what, sizeof(what), "host `%s' parses", ok[i].in);
		CHECK_EQ(what, tf_host_parse(ok[i].in, host, &w), 0);
		snprintf(what, sizeof(what), "host `%s' canonical", ok[i].in);
		CHECK_STR(what, host, ok[i].host);
		snprintf(what, sizeof(what), "host `%s' wildcard", ok[i].in);
		CHECK_EQ(what, w, ok[i].wildcard);
		n = tf_host_reverse(host, rev);
		snprintf(what, sizeof(what), "host `%s' reversed", ok[i].in);
		CHECK_EQ(what, n == strlen(ok[i].rev) && !memcmp(rev, ok[i].rev, n), 1);
	}
	memset(host, 'a', sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	host[63] = host[127] = host[191] = '.';
	CHECK_EQ("247-character host accepted", tf_host_parse(host, host, &w), 0);
	{
		char longer[TF_HOST_MAX + 3];

		memset(longer, 'a', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = 0;
		longer[63] = longer[127] = longer[191] = '.';
		CHECK_EQ("248-character host refused", tf_host_parse(longer, host, &w), -EINVAL);
	}
}

static void test_rule_json(void)
{
	char err[TF_ERR_MAX] = "";
	struct tf_rule r, back;
	json_t *j = jq("{'cidr':'198.51.100.0/24','proto':'tcp','ports':['8000-8100',80]}"), *out;
	char *text;

	CHECK_EQ("rule to_json: parses", tf_rule_from_json(j, "rule", &r, err, sizeof(err)), 0);
	out = tf_rule_to_json(&r);
	text = json_dumps(out, JSON_COMPACT);
	CHECK_STR("rule to_json: canonical text", text,
		  "{\"cidr\":\"198.51.100.0/24\",\"proto\":\"tcp\",\"ports\":[80,\"8000-8100\"]}");
	CHECK_EQ("rule to_json: parses back",
		 tf_rule_from_json(out, "rule", &back, err, sizeof(err)), 0);
	CHECK_EQ("rule to_json: equal", tf_rule_equal(&r, &back), 1);
	free(text);
	json_decref(out);
	json_decref(j);

	j = jq("{'cidr':'2001:db8::/32'}");
	CHECK_EQ("rule to_json all ports: parses",
		 tf_rule_from_json(j, "rule", &r, err, sizeof(err)), 0);
	out = tf_rule_to_json(&r);
	text = json_dumps(out, JSON_COMPACT);
	CHECK_STR("rule to_json all ports: ports omitted", text,
		  "{\"cidr\":\"2001:db8::/32\",\"proto\":\"any\"}");
	free(text);
	json_decref(out);
	json_decref(j);

	j = jq("{'cidr':'10.0.0.0/8','proto':'any','ports':[53]}");
	CHECK_EQ("rule to_json any+ports: parses",
		 tf_rule_from_json(j, "rule", &r, err, sizeof(err)), 0);
	out = tf_rule_to_json(&r);
	text = json_dumps(out, JSON_COMPACT);
	CHECK_STR("rule to_json any+ports: stays any", text,
		  "{\"cidr\":\"10.0.0.0/8\",\"proto\":\"any\",\"ports\":[53]}");
	free(text);
	json_decref(out);
	json_decref(j);

	CHECK_EQ("rule NULL: rejected", tf_rule_from_json(NULL, "rule", &r, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR("rule NULL: message", err, "rule: missing");
	j = jq("[1]");
	CHECK_EQ("rule not an object: rejected",
		 tf_rule_from_json(j, "rule 3", &r, err, sizeof(err)), -EINVAL);
	CHECK_STR("rule not an object: message uses where", err,
		  "rule 3: expected an object, not `[1]'");
	json_decref(j);
}

static void test_too_many_ports(void)
{
	char err[TF_ERR_MAX] = "";
	json_t *j = jq("{'cidr':'10.0.0.0/8','proto':'tcp'}"), *ports = json_array();
	struct tf_rule r;
	int i;

	for (i = 1; i <= TF_RULE_MAX_RANGES; i++)
		json_array_append_new(ports, json_integer(2 * i));
	json_object_set(j, "ports", ports);
	CHECK_EQ("64 port entries: accepted",
		 tf_rule_from_json(j, "allow[0]", &r, err, sizeof(err)), 0);
	CHECK_EQ("64 port entries: 64 ranges", r.nranges, TF_RULE_MAX_RANGES);
	json_array_append_new(ports, json_integer(1000));
	CHECK_EQ("65 port entries: rejected",
		 tf_rule_from_json(j, "allow[0]", &r, err, sizeof(err)), -EINVAL);
	CHECK_STR("65 port entries: message", err,
		  "allow[0].ports: 65 entries, more than the limit of 64");
	json_decref(ports);
	json_decref(j);
}

static void test_parse_text(void)
{
	char err[TF_ERR_MAX] = "", buf[4096];
	struct tf_spec s;
	const char *text;
	json_t *j;
	size_t i;

	for (i = 0; base[i]; i++)
		buf[i] = base[i] == '\'' ? '"' : base[i];
	buf[i] = '\0';
	CHECK_EQ("parse text: base", tf_spec_parse(buf, strlen(buf), &lim, &s, err, sizeof(err)),
		 0);
	tf_spec_free(&s);
	CHECK_EQ("parse text: truncated", tf_spec_parse(buf, 10, &lim, &s, err, sizeof(err)),
		 -EINVAL);
	CHECK_CONTAINS("parse text: truncated message", err, "invalid JSON at line 1");
	text = "{\"id\":\"a\",\"id\":\"b\"}";
	CHECK_EQ("parse text: duplicate key",
		 tf_spec_parse(text, strlen(text), &lim, &s, err, sizeof(err)), -EINVAL);
	CHECK_CONTAINS("parse text: duplicate key message", err, "duplicate object key");
	CHECK_EQ("spec NULL: rejected", tf_spec_from_json(NULL, &lim, &s, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR("spec NULL: message", err, "session spec: missing");
	text = "[]";
	CHECK_EQ("parse text: array", tf_spec_parse(text, strlen(text), &lim, &s, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR("parse text: array message", err, "session spec: expected an object, not `[]'");

	j = patched("{'id':'" A16 A16 A16 A16 A16 A16 A16 "!'}");
	CHECK_EQ("long id: rejected", tf_spec_from_json(j, &lim, &s, err, sizeof(err)), -EINVAL);
	CHECK_STR("long id: quoted value is cut", err,
		  "id: invalid session id `" A16 A16 A16 A16
		  "aaaa...' (want 1-63 of A-Z a-z 0-9 _ . -)");
	json_decref(j);

	j = patched("{}");
	json_object_set_new(j, "id", json_stringn("a\0b", 3));
	CHECK_EQ("id with NUL: rejected", tf_spec_from_json(j, &lim, &s, err, sizeof(err)),
		 -EINVAL);
	CHECK_STR("id with NUL: message", err, "id: `a' contains a NUL byte");
	json_decref(j);
}

static int parse_rule(const char *json, struct tf_rule *r)
{
	char err[TF_ERR_MAX];
	json_t *j = jq(json);
	int ret = tf_rule_from_json(j, "rule", r, err, sizeof(err));

	json_decref(j);
	return ret;
}

/* A wildcard without its apex gets a warning naming both; with the apex, none. */
static void test_wildcard_warnings(void)
{
	char err[TF_ERR_MAX];
	struct tf_spec s = {};
	struct tf_rule r = {};
	json_t *j = patched("{'allow':[{'host':'*.github.com','proto':'tcp','ports':[443]},"
			    "{'host':'*.npmjs.org','proto':'tcp','ports':[443]},"
			    "{'host':'npmjs.org','proto':'tcp','ports':[443]}]}"),
	       *w;

	CHECK_EQ("wildcards: parse", tf_spec_from_json(j, &lim, &s, err, sizeof(err)), 0);
	w = tf_spec_warnings(&s, NULL);
	CHECK_EQ("wildcards: one warning (*.github.com without github.com)", json_array_size(w), 1);
	CHECK_EQ("wildcards: it names the rule and the apex",
		 json_array_size(w) &&
			 strstr(json_string_value(json_array_get(w, 0)),
				"allow[0]: `*.github.com' matches the names below github.com, not "
				"github.com itself") != NULL,
		 1);
	json_decref(w);
	CHECK_EQ("wildcards: a rule *.npmjs.org", parse_rule("{'host':'*.npmjs.org'}", &r), 0);
	w = tf_spec_warnings(&s, &r);
	CHECK_EQ("wildcards: rule.add of *.npmjs.org (its apex is there): no warning",
		 json_array_size(w), 0);
	json_decref(w);
	CHECK_EQ("wildcards: a rule *.github.com", parse_rule("{'host':'*.github.com'}", &r), 0);
	w = tf_spec_warnings(&s, &r);
	CHECK_EQ("wildcards: rule.add of *.github.com: its warning", json_array_size(w), 1);
	json_decref(w);
	tf_spec_free(&s);
	json_decref(j);
}

static void test_add_del_copy(void)
{
	char err[TF_ERR_MAX] = "";
	struct tf_rule a, b, c;
	struct tf_spec s, copy;
	json_t *j = patched("{}");

	CHECK_EQ("add/del: base parses", tf_spec_from_json(j, &lim, &s, err, sizeof(err)), 0);
	CHECK_EQ("add/del: rule a",
		 parse_rule("{'cidr':'10.0.0.0/8','proto':'udp','ports':[53]}", &a), 0);
	CHECK_EQ("add/del: rule b", parse_rule("{'cidr':'10.0.0.0/8','proto':'udp'}", &b), 0);
	CHECK_EQ("add/del: rule c", parse_rule("{'cidr':'2001:db8::/32'}", &c), 0);
	CHECK_EQ("add a", tf_spec_add_rule(&s, &a, 3), 0);
	CHECK_EQ("add a again: EEXIST", tf_spec_add_rule(&s, &a, 3), -EEXIST);
	CHECK_EQ("add b", tf_spec_add_rule(&s, &b, 3), 0);
	CHECK_EQ("add c past max: E2BIG", tf_spec_add_rule(&s, &c, 3), -E2BIG);
	CHECK_EQ("three rules", s.nrules, 3);
	CHECK_EQ("copy", tf_spec_copy(&copy, &s), 0);
	CHECK_EQ("copy has its own rules", copy.rules != s.rules, 1);
	CHECK_EQ("copy is equal", spec_equal(&copy, &s), 1);
	CHECK_EQ("del a", tf_spec_del_rule(&s, &a), 0);
	CHECK_EQ("del a again: ENOENT", tf_spec_del_rule(&s, &a), -ENOENT);
	CHECK_EQ("del c never added: ENOENT", tf_spec_del_rule(&s, &c), -ENOENT);
	CHECK_EQ("two rules left", s.nrules, 2);
	CHECK_EQ("order kept after del", tf_rule_equal(&s.rules[1], &b), 1);
	CHECK_EQ("copy unchanged by del", copy.nrules, 3);
	CHECK_EQ("add c after del", tf_spec_add_rule(&s, &c, 3), 0);
	check_round_trip("after add/del", &s);
	tf_spec_free(&copy);
	tf_spec_free(&s);
	tf_spec_free(&s);
	tf_spec_free(NULL);
	CHECK_EQ("free is idempotent", s.nrules == 0 && !s.rules, 1);
	json_decref(j);
}

struct cidr_case {
	const char *in;
	int ret;
	const char *out; /* tf_fmt_cidr of the result */
};

static const struct cidr_case cidr_cases[] = {
	{ "10.0.0.0/8", 0, "10.0.0.0/8" },
	{ "10.1.2.3", 0, "10.1.2.3/32" },
	{ "0.0.0.0/0", 0, "0.0.0.0/0" },
	{ "10.128.0.0/9", 0, "10.128.0.0/9" },
	{ "2001:db8::/32", 0, "2001:db8::/32" },
	{ "2001:DB8:0:0::/64", 0, "2001:db8::/64" },
	{ "::/0", 0, "::/0" },
	{ "2001:db8::1", 0, "2001:db8::1/128" },
	{ "10.0.0.0/33", -EINVAL, NULL },
	{ "2001:db8::/129", -EINVAL, NULL },
	{ "10.0.0.0/0", -EINVAL, NULL },
	{ "10.64.0.0/9", -EINVAL, NULL },
	{ "10.0.0.0/", -EINVAL, NULL },
	{ "/8", -EINVAL, NULL },
	{ "10.0.0.0/08", -EINVAL, NULL },
	{ "10.0.0.0/+8", -EINVAL, NULL },
	{ "10.0.0.0/-8", -EINVAL, NULL },
	{ "10.0.0.0/8/8", -EINVAL, NULL },
	{ "10.0.0.0/1000", -EINVAL, NULL },
	{ "10.0.0/24", -EINVAL, NULL },
	{ "010.0.0.0/8", -EINVAL, NULL },
	{ "10.0.0.0 /8", -EINVAL, NULL },
	{ "", -EINVAL, NULL },
};

static void test_addr(void)
{
	char what[128], buf[TF_ADDRSTRLEN];
	struct tf_cidr c;
	struct tf_ip ip;
	__u8 mac[6], ll[16];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cidr_cases) / sizeof(cidr_cases[0]); i++) {
		ret = tf_parse_cidr(cidr_cases[i].in, &c);
		snprintf(what, sizeof(what), "cidr `%s': %s", cidr_cases[i].in,
			 cidr_cases[i].ret ? "rejected" : "accepted");
		CHECK_EQ(what, ret, cidr_cases[i].ret);
		if (!ret && cidr_cases[i].out) {
			snprintf(what, sizeof(what), "cidr `%s': formats", cidr_cases[i].in);
			CHECK_STR(what, tf_fmt_cidr(&c, buf), cidr_cases[i].out);
		}
	}
	CHECK_EQ("mac: mixed case", tf_parse_mac("02:aB:cd:EF:00:01", mac), 0);
	CHECK_STR("mac: formats lower-case", tf_fmt_mac(mac, buf), "02:ab:cd:ef:00:01");
	CHECK_EQ("mac: 7 octets", tf_parse_mac("02:00:00:00:00:01:00", mac), -EINVAL);
	CHECK_EQ("mac: 3-digit octet", tf_parse_mac("02:00:00:00:00:001", mac), -EINVAL);
	CHECK_EQ("mac: leading space", tf_parse_mac(" 2:00:00:00:00:01", mac), -EINVAL);
	CHECK_EQ("mac: no separators", tf_parse_mac("02000000000100000", mac), -EINVAL);
	CHECK_EQ("mac: NULL", tf_parse_mac(NULL, mac), -EINVAL);
	CHECK_EQ("ip: NULL", tf_parse_ip(NULL, &ip), -EINVAL);

	CHECK_EQ("ll: mac parses", tf_parse_mac("52:54:00:12:34:56", mac), 0);
	tf_ip6_ll_from_mac(mac, ll);
	CHECK_STR("ll: EUI-64 with the U/L bit flipped", tf_fmt_ip(TF_FAM_IPV6, ll, buf),
		  "fe80::5054:ff:fe12:3456");

	CHECK_EQ("contains: /8 parses", tf_parse_cidr("10.0.0.0/8", &c), 0);
	CHECK_EQ("contains: inside", tf_parse_ip("10.255.1.1", &ip) || !tf_cidr_contains(&c, &ip),
		 0);
	CHECK_EQ("contains: outside", tf_parse_ip("11.0.0.0", &ip) || tf_cidr_contains(&c, &ip), 0);
	CHECK_EQ("contains: other family", tf_parse_ip("a00::", &ip) || tf_cidr_contains(&c, &ip),
		 0);
	CHECK_EQ("contains: /0 parses", tf_parse_cidr("::/0", &c), 0);
	CHECK_EQ("contains: ::/0 holds any IPv6",
		 tf_parse_ip("2001:db8::1", &ip) || !tf_cidr_contains(&c, &ip), 0);
	CHECK_EQ("contains: /9 parses", tf_parse_cidr("10.128.0.0/9", &c), 0);
	CHECK_EQ("contains: /9 bit boundary in",
		 tf_parse_ip("10.200.0.1", &ip) || !tf_cidr_contains(&c, &ip), 0);
	CHECK_EQ("contains: /9 bit boundary out",
		 tf_parse_ip("10.127.0.1", &ip) || tf_cidr_contains(&c, &ip), 0);
}

int main(void)
{
	test_host_names();
	test_addr();
	test_spec_cases();
	test_spec_values();
	test_rule_cases();
	test_rule_json();
	test_too_many_ports();
	test_parse_text();
	test_add_del_copy();
	test_wildcard_warnings();
	return CHECK_EXIT();
}
