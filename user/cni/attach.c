// SPDX-License-Identifier: GPL-2.0
/*
 * From prevResult to a session spec: which device tapfence attaches to, the
 * guest's MAC and addresses, the gateway's.
 *
 * The guest is the sandbox interface: the one in CNI_NETNS named CNI_IFNAME
 * (else the one the addresses name), with the addresses prevResult assigned
 * it. The device is, in this order:
 *   - the config's `device', looked up in prevResult, then in CNI_NETNS, then
 *     in the plugin's namespace;
 *   - a tap in CNI_NETNS listed in prevResult (tc-redirect-tap's): the VM's
 *     own device, whose frames are the guest's before anything redirects them;
 *   - the host-side interface (ptp's veth; bridge's veth, not the bridge).
 * The gateway is the host-side interface's MAC (the bridge's, with bridge)
 * and the gateways prevResult gives the guest's addresses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cni.h"
#include "daemon/jcheck.h"
#include "daemon/spec.h"

struct iface {
	const char *name;
	const char *mac;     /* NULL if prevResult has none */
	const char *sandbox; /* NULL or "" for a host-side interface */
};

#define MAX_IFACES 64

struct result {
	struct iface ifs[MAX_IFACES];
	unsigned int nifs;
	json_t *ips;
};

static int parse_ifaces(const json_t *prev, struct result *r, struct cni_err *e)
{
	char err[TF_ERR_MAX], where[48];
	json_t *ifs, *v;
	size_t i;
	int ret;

	ret = tf_jget(prev, "prevResult", "interfaces", JSON_ARRAY, 1, &ifs, err, sizeof(err));
	if (!ret)
		ret = tf_jget(prev, "prevResult", "ips", JSON_ARRAY, 1, &r->ips, err, sizeof(err));
	if (ret) {
		cni_detail(e, "tapfence-cni is chained after the plugin that creates the "
			      "interfaces and assigns the addresses (ptp, bridge)");
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s", err);
	}
	if (json_array_size(ifs) > MAX_IFACES)
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
				"prevResult.interfaces: %zu entries, more than %d",
				json_array_size(ifs), MAX_IFACES);
	json_array_foreach(ifs, i, v) {
		struct iface *f = &r->ifs[i];

		snprintf(where, sizeof(where), "prevResult.interfaces[%zu]", i);
		if (!json_is_object(v))
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s: not an object", where);
		ret = tf_jget_str(v, where, "name", 1, &f->name, err, sizeof(err));
		if (!ret)
			ret = tf_jget_str(v, where, "mac", 0, &f->mac, err, sizeof(err));
		if (!ret)
			ret = tf_jget_str(v, where, "sandbox", 0, &f->sandbox, err, sizeof(err));
		if (ret)
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s", err);
		if (f->sandbox && !*f->sandbox)
			f->sandbox = NULL;
		if (f->mac && !*f->mac)
			f->mac = NULL;
	}
	r->nifs = (unsigned int)json_array_size(ifs);
	return 0;
}

static int find_iface(const struct result *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->nifs; i++)
		if (!strcmp(r->ifs[i].name, name))
			return (int)i;
	return -1;
}

static int parse_mac(const char *s, const char *where, __u8 mac[6], struct cni_err *e)
{
	char q[TF_JQUOTE_MAX];

	if (tf_parse_mac(s, mac))
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s.mac: invalid MAC `%s'", where,
				tf_jquote_str(s, q));
	return 0;
}

/* The sandbox interface: CNI_IFNAME in CNI_NETNS, else the first one an address names. */
static int sandbox_iface(const struct result *r, const struct cni_env *env, struct cni_err *e)
{
	json_t *ip, *idx;
	unsigned int i;
	size_t k;

	for (i = 0; i < r->nifs; i++)
		if (r->ifs[i].sandbox && !strcmp(r->ifs[i].sandbox, env->netns) &&
		    !strcmp(r->ifs[i].name, env->ifname))
			return (int)i;
	json_array_foreach(r->ips, k, ip) {
		idx = json_object_get(ip, "interface");
		if (json_is_integer(idx) && json_integer_value(idx) >= 0 &&
		    json_integer_value(idx) < r->nifs && r->ifs[json_integer_value(idx)].sandbox)
			return (int)json_integer_value(idx);
	}
	return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
			"prevResult.interfaces: no sandbox interface `%s' in `%s'", env->ifname,
			env->netns);
}

/* The guest's addresses: the first of each family prevResult gives the sandbox interface. */
static int guest_addrs(const struct result *r, int sbx, struct cni_attach *a, struct cni_err *e)
{
	const char *addr, *gw;
	char err[TF_ERR_MAX], where[48], q[TF_JQUOTE_MAX], buf[TF_ADDRSTRLEN];
	struct tf_ip ip, gip;
	json_t *v, *idx;
	char *slash;
	size_t i;
	int ret;

	json_array_foreach(r->ips, i, v) {
		snprintf(where, sizeof(where), "prevResult.ips[%zu]", i);
		if (!json_is_object(v))
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s: not an object", where);
		idx = json_object_get(v, "interface");
		if (idx && (!json_is_integer(idx) || json_integer_value(idx) != sbx))
			continue;
		ret = tf_jget_str(v, where, "address", 1, &addr, err, sizeof(err));
		if (!ret)
			ret = tf_jget_str(v, where, "gateway", 0, &gw, err, sizeof(err));
		if (ret)
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s", err);
		snprintf(buf, sizeof(buf), "%s", addr);
		slash = strchr(buf, '/');
		if (slash)
			*slash = '\0';
		if (tf_parse_ip(buf, &ip))
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
					"%s.address: invalid address `%s'", where,
					tf_jquote_str(addr, q));
		if (gw && tf_parse_ip(gw, &gip))
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
					"%s.gateway: invalid address `%s'", where,
					tf_jquote_str(gw, q));
		if (gw && gip.family != ip.family)
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
					"%s.gateway: `%s' is not of the address's family", where,
					tf_jquote_str(gw, q));
		if (ip.family == TF_FAM_IPV4 && !a->guest4.family) {
			if (!gw) {
				cni_detail(
					e,
					"the guest's IPv4 gateway is the session's gateway.ipv4");
				return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s.gateway: missing",
						where);
			}
			a->guest4 = ip;
			a->gw4 = gip;
		} else if (ip.family == TF_FAM_IPV6 && !a->guest6.family) {
			a->guest6 = ip;
			if (gw)
				a->gw6 = gip;
		}
	}
	if (!a->guest4.family && !a->guest6.family)
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
				"prevResult.ips: no address for the sandbox interface `%s'",
				r->ifs[sbx].name);
	return 0;
}

/* 1 if prevResult's interface i is a tap in the sandbox. */
static int is_tap(const struct cni_env *env, const struct iface *f)
{
	struct cni_link l;

	return f->sandbox && !strcmp(f->sandbox, env->netns) &&
	       !cni_link_get(env->netns, f->name, &l) && !strcmp(l.driver, "tun") &&
	       !strcmp(l.bus, "tap");
}

static int link_err(struct cni_err *e, const char *name, const char *ns, int err)
{
	return cni_fail(e, CNI_ERR_CONFIG, -err, "interface `%s' %s: %s", name,
			ns ? "in CNI_NETNS" : "in the plugin's namespace", strerror(-err));
}

/* The host-side interfaces' indexes in hosts; how many. */
static unsigned int host_ifaces(const struct result *r, int hosts[MAX_IFACES])
{
	unsigned int i, n = 0;

	for (i = 0; i < r->nifs; i++)
		if (!r->ifs[i].sandbox)
			hosts[n++] = (int)i;
	return n;
}

/*
 * The gateway's MAC: that of the one host-side interface, or, of several,
 * of the bridge among them (bridge: the guest's gateway is the bridge's
 * address). dev is the device's index when it is host-side, else -1.
 */
static int gateway_mac(const struct result *r, int dev, struct cni_attach *a, struct cni_err *e)
{
	int hosts[MAX_IFACES], gw = -1, ret;
	unsigned int n = host_ifaces(r, hosts), i;
	struct cni_link l;
	char where[48];

	if (n == 1) {
		gw = hosts[0];
	} else {
		for (i = 0; i < n && gw < 0; i++)
			if (!cni_link_get(NULL, r->ifs[hosts[i]].name, &l) &&
			    !strcmp(l.driver, "bridge"))
				gw = hosts[i];
		if (gw < 0)
			gw = dev;
	}
	if (gw < 0) {
		cni_detail(e, "the gateway's MAC is the host-side interface's; name the device "
			      "with `device' if prevResult lists none or several");
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
				"prevResult.interfaces: %s host-side interface for the gateway",
				n ? "more than one" : "no");
	}
	snprintf(where, sizeof(where), "prevResult.interfaces[%d]", gw);
	if (r->ifs[gw].mac)
		return parse_mac(r->ifs[gw].mac, where, a->gw_mac, e);
	ret = cni_link_get(NULL, r->ifs[gw].name, &l);
	if (ret)
		return link_err(e, r->ifs[gw].name, NULL, ret);
	memcpy(a->gw_mac, l.mac, 6);
	return 0;
}

/* The device when the config does not name it: a tap in the sandbox, else the host side. */
static int pick_device(const struct result *r, const struct cni_env *env, int sbx, int *dev,
		       struct cni_err *e)
{
	int hosts[MAX_IFACES], tap = -1, veth = -1;
	unsigned int n, i;
	struct cni_link l;

	for (i = 0; i < r->nifs; i++) {
		if ((int)i == sbx || !is_tap(env, &r->ifs[i]))
			continue;
		if (tap >= 0)
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
					"prevResult.interfaces: taps `%s' and `%s' in the sandbox: "
					"name one with `device'",
					r->ifs[tap].name, r->ifs[i].name);
		tap = (int)i;
	}
	if (tap >= 0) {
		*dev = tap;
		return 1;
	}
	n = host_ifaces(r, hosts);
	if (n == 1) {
		*dev = hosts[0];
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (cni_link_get(NULL, r->ifs[hosts[i]].name, &l) || strcmp(l.driver, "veth"))
			continue;
		if (veth >= 0) {
			veth = -1;
			break;
		}
		veth = hosts[i];
	}
	if (veth < 0)
		return cni_fail(
			e, CNI_ERR_CONFIG, EINVAL,
			"prevResult.interfaces: no tap in the sandbox and %s host-side veth: "
			"name the device with `device'",
			n ? "not exactly one" : "no");
	*dev = veth;
	return 0;
}

int cni_attach_from_result(const struct cni_conf *c, const struct cni_env *env,
			   struct cni_attach *a, struct cni_err *e)
{
	struct result r = {};
	struct cni_link l;
	char where[48], q[TF_JQUOTE_MAX];
	int sbx, dev = -1, ret;

	memset(a, 0, sizeof(*a));
	if (!c->prev) {
		cni_detail(e, "tapfence-cni is a chained plugin: put it after the plugin that "
			      "creates the interfaces (ptp, bridge) in the conflist");
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "prevResult: missing");
	}
	ret = parse_ifaces(c->prev, &r, e);
	if (ret)
		return ret;
	sbx = sandbox_iface(&r, env, e);
	if (sbx < 0)
		return sbx;
	snprintf(where, sizeof(where), "prevResult.interfaces[%d]", sbx);
	if (!r.ifs[sbx].mac)
		return cni_fail(e, CNI_ERR_CONFIG, EINVAL, "%s.mac: missing (the guest's MAC)",
				where);
	ret = parse_mac(r.ifs[sbx].mac, where, a->guest_mac, e);
	if (!ret)
		ret = guest_addrs(&r, sbx, a, e);
	if (ret)
		return ret;

	if (c->device) {
		dev = find_iface(&r, c->device);
		if (dev >= 0 && r.ifs[dev].sandbox && strcmp(r.ifs[dev].sandbox, env->netns))
			return cni_fail(e, CNI_ERR_CONFIG, EINVAL,
					"device: `%s' is in sandbox `%s', not in CNI_NETNS",
					tf_jquote_str(c->device, q), r.ifs[dev].sandbox);
		if (dev >= 0)
			a->in_sandbox = !!r.ifs[dev].sandbox;
		else if (!cni_link_get(env->netns, c->device, &l))
			a->in_sandbox = 1;
		else if (cni_link_get(NULL, c->device, &l))
			return cni_fail(
				e, CNI_ERR_CONFIG, ENODEV,
				"device: no interface `%s' in prevResult, in CNI_NETNS or in "
				"the plugin's namespace",
				tf_jquote_str(c->device, q));
		snprintf(a->ifname, sizeof(a->ifname), "%s", c->device);
	} else {
		ret = pick_device(&r, env, sbx, &dev, e);
		if (ret < 0)
			return ret;
		a->in_sandbox = ret;
		snprintf(a->ifname, sizeof(a->ifname), "%s", r.ifs[dev].name);
	}
	if (a->in_sandbox)
		a->netns = env->netns;
	return gateway_mac(&r, a->in_sandbox ? -1 : dev, a, e);
}

static json_t *ends(const __u8 mac[6], const struct tf_ip *ip4, const struct tf_ip *ip6)
{
	char buf[TF_ADDRSTRLEN];
	json_t *o = json_object();

	if (!o || json_object_set_new(o, "mac", json_string(tf_fmt_mac(mac, buf))))
		goto fail;
	if (ip4->family &&
	    json_object_set_new(o, "ipv4", json_string(tf_fmt_ip(ip4->family, ip4->addr, buf))))
		goto fail;
	if (ip6->family &&
	    json_object_set_new(o, "ipv6", json_string(tf_fmt_ip(ip6->family, ip6->addr, buf))))
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

json_t *cni_attach_spec(const struct cni_conf *c, const struct cni_attach *a, const char *id)
{
	struct tf_ip none = {};
	json_t *s = json_object();

	if (!s || json_object_set_new(s, "id", json_string(id)) ||
	    json_object_set_new(s, "ifname", json_string(a->ifname)) ||
	    (a->netns && json_object_set_new(s, "netns", json_string(a->netns))) ||
	    json_object_set_new(s, "guest", ends(a->guest_mac, &a->guest4, &a->guest6)) ||
	    json_object_set_new(s, "gateway",
				ends(a->gw_mac, a->guest4.family ? &a->gw4 : &none,
				     a->guest6.family ? &a->gw6 : &none)) ||
	    (c->resolver && json_object_set(s, "resolver", c->resolver)) ||
	    (c->allow && json_object_set(s, "allow", c->allow))) {
		json_decref(s);
		return NULL;
	}
	return s;
}
