// SPDX-License-Identifier: GPL-2.0
/* Loading, map writes and attachment of the tapfence datapath. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "tapfence.skel.h"
#include "common/log.h"
#include "datapath.h"

/* uapi values newer than Debian 12's headers (include/uapi/linux/bpf.h, 6.6). */
#define TF_BPF_TCX_INGRESS 46
#define TF_BPF_TCX_EGRESS  47
#define TF_BPF_F_BEFORE    (1U << 3)

struct floor_range {
	const char *cidr;
	__u16 reason;
};

/* The hard floor: no session rule can open these. */
static const struct floor_range floor_builtin[] = {
	{ "0.0.0.0/8", TF_REASON_FLOOR_THIS_NET },
	{ "10.0.0.0/8", TF_REASON_FLOOR_PRIVATE },
	{ "100.64.0.0/10", TF_REASON_FLOOR_CGNAT },
	{ "127.0.0.0/8", TF_REASON_FLOOR_LOOPBACK },
	{ "169.254.0.0/16", TF_REASON_FLOOR_LINK_LOCAL },
	{ "169.254.169.254/32", TF_REASON_FLOOR_METADATA },
	{ "172.16.0.0/12", TF_REASON_FLOOR_PRIVATE },
	{ "192.0.0.0/24", TF_REASON_FLOOR_RESERVED },		/* IETF protocol assignments */
	{ "192.168.0.0/16", TF_REASON_FLOOR_PRIVATE },
	{ "224.0.0.0/4", TF_REASON_FLOOR_MULTICAST },
	{ "240.0.0.0/4", TF_REASON_FLOOR_RESERVED },
	{ "255.255.255.255/32", TF_REASON_FLOOR_RESERVED },
	{ "::/128", TF_REASON_FLOOR_THIS_NET },
	{ "::1/128", TF_REASON_FLOOR_LOOPBACK },
	{ "::/96", TF_REASON_FLOOR_V4MAPPED },			/* IPv4-compatible (deprecated) */
	{ "::ffff:0:0/96", TF_REASON_FLOOR_V4MAPPED },
	{ "2002::/16", TF_REASON_FLOOR_RESERVED },		/* 6to4: embeds any IPv4 address */
	{ "fec0::/10", TF_REASON_FLOOR_RESERVED },		/* site-local (deprecated) */
	{ "fc00::/7", TF_REASON_FLOOR_ULA },
	{ "fd00:ec2::254/128", TF_REASON_FLOOR_METADATA },	/* AWS IMDS over IPv6 */
	{ "fe80::/10", TF_REASON_FLOOR_LINK_LOCAL },
	{ "ff00::/8", TF_REASON_FLOOR_MULTICAST },
};

/* NAT64 prefixes: the well-known one and the local-use one (RFC 8215); "floor":{"nat64":false} lifts them. */
static const char *const floor_nat64[] = { "64:ff9b::/96", "64:ff9b:1::/48" };

static const char *map_pin_path(const struct tf_dp *dp, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/maps/%s", dp->cfg->pin_dir, name);
	return buf;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	char *p;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Per-CPU scratch, not state: never pinned, so its size may change across upgrades. */
/* Maps holding state worth pinning: not rodata, not per-run scratch, not the zeroed template. */
static int map_is_state(const struct bpf_map *map)
{
	static const char *const scratch[] = { "tf_dnsbuf", "tf_tlsscratch", "tf_tlszero" };
	size_t i;

	if (bpf_map__is_internal(map))
		return 0;
	for (i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
		if (!strcmp(bpf_map__name(map), scratch[i]))
			return 0;
	return 1;
}

/* A pinned map keeps the size it was created with; say so when the config asks for another. */
static void warn_resized(const struct bpf_map *map, int fd, const char *path)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.max_entries == bpf_map__max_entries(map))
		return;
	pr_warn("pinned map `%s' keeps %u entries, not the configured %u "
		"(tapfenced --cleanup, then start again, to resize)\n",
		path, info.max_entries, bpf_map__max_entries(map));
}

/* Reuse every map already pinned; after load, pin the rest. */
/*
 * Pinned maps are adopted only from a build with this ABI: their keys and
 * values are what the programs read. Pins from another (or from before the
 * marker) refuse the start, and the old programs keep enforcing.
 */
static int maps_check_abi(const struct tf_dp *dp)
{
	char path[PATH_MAX], probe[PATH_MAX];
	__u32 zero = 0, abi = 0;
	int fd, err = 0;

	fd = bpf_obj_get(map_pin_path(dp, "tf_abi", path, sizeof(path)));
	if (fd < 0) {
		if (access(map_pin_path(dp, "tf_sessions", probe, sizeof(probe)), F_OK))
			return 0;	/* nothing pinned yet */
	} else if (bpf_map_lookup_elem(fd, &zero, &abi)) {
		err = -errno;
	}
	if (fd >= 0)
		close(fd);
	if (!err && abi == TF_ABI_VERSION)
		return 0;
	pr_warn("the maps pinned in `%s/maps' have ABI %u, this build has ABI %u: "
		"run tapfenced --cleanup to start over (the pinned programs keep enforcing meanwhile)\n",
		dp->cfg->pin_dir, abi, TF_ABI_VERSION);
	return -EPROTO;
}

static int maps_reuse(struct tf_dp *dp)
{
	struct bpf_map *map;
	char path[PATH_MAX];
	int fd, err;

	err = maps_check_abi(dp);
	if (err)
		return err;
	bpf_object__for_each_map(map, dp->skel->obj) {
		if (map_is_state(map)) {
			map_pin_path(dp, bpf_map__name(map), path, sizeof(path));
			fd = bpf_obj_get(path);
			if (fd < 0)
				continue;
			warn_resized(map, fd, path);
			err = bpf_map__reuse_fd(map, fd);
			close(fd);
			if (err) {
				pr_warn("pinned map `%s' cannot be reused (%s); "
					"run tapfenced --cleanup to start over\n", path, strerror(-err));
				return err;
			}
		}
	}
	return 0;
}

static int maps_pin(struct tf_dp *dp)
{
	struct bpf_map *map;
	char path[PATH_MAX];
	int err;

	bpf_object__for_each_map(map, dp->skel->obj) {
		if (!map_is_state(map) || bpf_map__is_pinned(map))
			continue;
		map_pin_path(dp, bpf_map__name(map), path, sizeof(path));
		if (access(path, F_OK) == 0)
			continue;	/* reused */
		err = bpf_map__pin(map, path);
		if (err) {
			pr_warn("cannot pin map at `%s': %s\n", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

static struct bpf_map *slot_outer(struct tapfence_bpf *skel, enum tf_slot_map which)
{
	switch (which) {
	case TF_SLOT_FLOWS:
		return skel->maps.tf_flows;
	case TF_SLOT_DNSQ:
		return skel->maps.tf_dnsq;
	case TF_SLOT_TLSBUF:
		return skel->maps.tf_tlsbuf;
	case TF_SLOT_TLSBIND:
		return skel->maps.tf_tlsbind;
	default:
		return skel->maps.tf_learned;
	}
}

/* A session's own table of kind which (sid 0: the inner-map template). */
static int slot_map_create(const struct tf_config *cfg, enum tf_slot_map which, __u32 sid)
{
	static const char *const names[TF_SLOT_MAPS] = {
		"tf_flows", "tf_dnsq", "tf_learned", "tf_tlsbuf", "tf_tlsbind",
	};
	enum bpf_map_type type = BPF_MAP_TYPE_LRU_HASH;
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	char name[BPF_OBJ_NAME_LEN];
	__u32 key, value, max;
	int fd;

	switch (which) {
	case TF_SLOT_FLOWS:
		key = sizeof(struct tf_flow_key), value = sizeof(struct tf_flow);
		max = cfg->flows_per_session;
		break;
	case TF_SLOT_DNSQ:
		key = sizeof(struct tf_dnsq_key), value = sizeof(struct tf_dnsq);
		max = cfg->dns_queries;
		break;
	case TF_SLOT_TLSBUF:
		/* A plain hash (no eviction of a hello being read), not preallocated (maps.bpf.h). */
		type = BPF_MAP_TYPE_HASH;
		opts.map_flags = BPF_F_NO_PREALLOC;
		key = sizeof(struct tf_flow_key), value = sizeof(struct tf_tls_buf);
		max = cfg->tls_pending;
		break;
	case TF_SLOT_TLSBIND:
		key = sizeof(struct tf_bind_key), value = sizeof(__u64);
		max = cfg->learned_entries;
		break;
	default:
		key = sizeof(struct tf_learn_key), value = sizeof(struct tf_learned);
		max = cfg->learned_entries;
		break;
	}
	snprintf(name, sizeof(name), "%s_%u", names[which], sid);
	fd = bpf_map_create(type, name, key, value, max, &opts);
	return fd < 0 ? -errno : fd;
}

/* Load-time knobs (rodata), set between open and load of every instance. */
static void set_knobs(struct tapfence_bpf *skel, const struct tf_config *cfg)
{
	skel->rodata->cfg_ttl_min_s = cfg->dns_ttl_min_s;
	skel->rodata->cfg_ttl_max_s = cfg->dns_ttl_max_s;
	skel->rodata->cfg_dnsq_timeout_s = cfg->dns_query_timeout_s;
	skel->rodata->cfg_tls_timeout_s = cfg->tls_timeout_s;
	skel->rodata->cfg_tls_ech_outer = cfg->tls_ech_outer;
	skel->rodata->cfg_events_per_s = cfg->events_per_s;
	skel->rodata->cfg_events_burst = cfg->events_burst;
	skel->rodata->cfg_to_tcp_syn_s = cfg->to_tcp_syn_sent_s;
	skel->rodata->cfg_to_tcp_est_s = cfg->to_tcp_established_s;
	skel->rodata->cfg_to_tcp_fin_s = cfg->to_tcp_fin_s;
	skel->rodata->cfg_to_tcp_rst_s = cfg->to_tcp_rst_s;
	skel->rodata->cfg_to_udp_s = cfg->to_udp_s;
	skel->rodata->cfg_to_udp_replied_s = cfg->to_udp_replied_s;
	skel->rodata->cfg_to_icmp_s = cfg->to_icmp_s;
	skel->rodata->cfg_to_other_s = cfg->to_other_s;
	if (cfg->events_per_s) {
		skel->rodata->cfg_event_interval_ns = 1000000000ULL / cfg->events_per_s;
		skel->rodata->cfg_event_tau_ns =
			(__u64)(cfg->events_burst ? cfg->events_burst - 1 : 0) *
			skel->rodata->cfg_event_interval_ns;
	}
}

int tf_dp_open(struct tf_dp *dp, const struct tf_config *cfg, int pin)
{
	int inner[TF_SLOT_MAPS] = { -1, -1, -1, -1, -1 };
	struct tapfence_bpf *skel;
	__u32 zero = 0, abi;
	char path[PATH_MAX];
	int err, i;

	memset(dp, 0, sizeof(*dp));
	memset(dp->slot_fd, 0xff, sizeof(dp->slot_fd));	/* all -1 */
	dp->cfg = cfg;
	dp->pinned = pin;
	skel = tapfence_bpf__open();
	if (!skel)
		return -errno;
	dp->skel = skel;

	set_knobs(skel, cfg);
	bpf_map__set_max_entries(skel->maps.tf_rules, cfg->rule_entries);
	bpf_map__set_max_entries(skel->maps.tf_ports, cfg->port_entries);
	bpf_map__set_max_entries(skel->maps.tf_names, cfg->name_entries);
	bpf_map__set_max_entries(skel->maps.tf_floor, cfg->floor_entries);
	bpf_map__set_max_entries(skel->maps.tf_events, cfg->ringbuf_bytes);
	/* Inner-map templates for the per-slot tables (sizes from the config). */
	for (i = 0; i < TF_SLOT_MAPS; i++) {
		inner[i] = slot_map_create(cfg, i, 0);
		if (inner[i] < 0) {
			err = inner[i];
			goto cleanup;
		}
		err = bpf_map__set_inner_map_fd(slot_outer(skel, i), inner[i]);
		if (err)
			goto cleanup;
	}
	if (pin) {
		snprintf(path, sizeof(path), "%s/maps", cfg->pin_dir);
		err = mkdir_p(path, 0700);
		if (err) {
			pr_warn("cannot create `%s': %s\n", path, strerror(-err));
			goto cleanup;
		}
		snprintf(path, sizeof(path), "%s/links", cfg->pin_dir);
		err = mkdir_p(path, 0700);
		if (err) {
			pr_warn("cannot create `%s': %s\n", path, strerror(-err));
			goto cleanup;
		}
		err = maps_reuse(dp);
		if (err)
			goto cleanup;
	}
	err = tapfence_bpf__load(skel);
	if (err) {
		pr_warn("cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	if (pin) {
		err = maps_pin(dp);
		if (err)
			goto cleanup;
	}
	abi = TF_ABI_VERSION;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.tf_abi), &zero, &abi, BPF_ANY)) {
		err = -errno;
		goto cleanup;
	}
	for (i = 0; i < TF_SLOT_MAPS; i++)
		close(inner[i]);
	return 0;

cleanup:
	for (i = 0; i < TF_SLOT_MAPS; i++)
		if (inner[i] >= 0)
			close(inner[i]);
	tf_dp_close(dp);
	return err;
}

void tf_dp_close(struct tf_dp *dp)
{
	unsigned int m, sid;

	if (!dp)
		return;
	for (m = 0; m < TF_SLOT_MAPS; m++)
		for (sid = 0; sid < TF_MAX_SESSIONS; sid++)
			if (dp->slot_fd[m][sid] > 0)
				close(dp->slot_fd[m][sid]);
	memset(dp->slot_fd, 0xff, sizeof(dp->slot_fd));
	free(dp->host);
	dp->host = NULL;
	dp->nhost = 0;
	xdp_program__close(dp->xdp);
	dp->xdp = NULL;
	tapfence_bpf__destroy(dp->xdp_skel);
	dp->xdp_skel = NULL;
	tapfence_bpf__destroy(dp->skel);
	dp->skel = NULL;
}

static void floor_key(const struct tf_cidr *c, struct tf_floor_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = TF_FLOOR_KEY_FIXED_BITS + c->prefixlen;
	k->family = c->ip.family;
	memcpy(k->addr, c->ip.addr, 16);
}

static int floor_put(int fd, const struct tf_cidr *c, __u8 action, __u16 reason)
{
	struct tf_floor_key k;
	struct tf_floor_val v = { .reason = reason, .action = action };

	floor_key(c, &k);
	return bpf_map_update_elem(fd, &k, &v, BPF_ANY) ? -errno : 0;
}

/* 1 if key k is one of the n in keep. */
static int floor_kept(const struct tf_floor_key *keep, unsigned int n, const struct tf_floor_key *k)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!memcmp(&keep[i], k, sizeof(*k)))
			return 1;
	return 0;
}

/*
 * Whether host prefix c gets an entry of its own. Not when an operator
 * exception covers it: tf_floor is an LPM, so a host /32 would beat a
 * broader exception, and an exception is the operator's explicit say.
 * Not inside fe80::/10: every IPv6 device has a link-local address (and
 * its anycast), the built-in fe80::/10 entry denies them all, and an entry
 * per tap would fill the map.
 */
static int floor_host_wanted(const struct tf_config *cfg, const struct tf_cidr *c)
{
	static const struct tf_cidr ll = { { TF_FAM_IPV6, { 0xfe, 0x80 } }, 10 };
	struct tf_cidr e;
	unsigned int i;

	if (tf_cidr_contains(&ll, &c->ip) && c->prefixlen >= ll.prefixlen)
		return 0;
	for (i = 0; i < cfg->nfloor_exceptions; i++) {
		e = cfg->floor_exceptions[i];
		if (e.prefixlen <= c->prefixlen && tf_cidr_contains(&e, &c->ip))
			return 0;
	}
	return 1;
}

/*
 * Write the floor: built-in ranges, the operator's, then every host prefix
 * (floor.host and dp->host) as floor_host. New entries are written before
 * stale ones are removed, so a floor change never opens a window in which
 * a range is unprotected, and none is removed while the host list is
 * incomplete. A host entry that cannot be written does not
 * stop the others; it is counted (floor_errors), dp->floor_failed says how
 * many are missing, and the write fails.
 */
static int floor_write(struct tf_dp *dp, unsigned int *swept)
{
	const struct tf_config *cfg = dp->cfg;
	int fd = bpf_map__fd(dp->skel->maps.tf_floor);
	unsigned int cap = bpf_map__max_entries(dp->skel->maps.tf_floor);
	struct tf_floor_key *keep = NULL, k, next;
	unsigned int nkeep = 0, nhost = 0, failed = 0, i, n;
	const struct tf_cidr *h;
	char buf[TF_ADDRSTRLEN];
	struct tf_cidr c;
	int err = 0, more, ret;

	*swept = 0;
	n = sizeof(floor_builtin) / sizeof(floor_builtin[0]) + sizeof(floor_nat64) / sizeof(floor_nat64[0]) +
	    cfg->nfloor_extra + cfg->nfloor_exceptions + cfg->nfloor_host + dp->nhost;
	keep = calloc(n, sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	for (i = 0; i < sizeof(floor_builtin) / sizeof(floor_builtin[0]); i++) {
		err = tf_parse_cidr(floor_builtin[i].cidr, &c);
		if (err)
			goto cleanup;
		err = floor_put(fd, &c, TF_FLOOR_DENY, floor_builtin[i].reason);
		if (err)
			goto cleanup;
		floor_key(&c, &keep[nkeep++]);
	}
	for (i = 0; cfg->nat64_floor && i < sizeof(floor_nat64) / sizeof(floor_nat64[0]); i++) {
		err = tf_parse_cidr(floor_nat64[i], &c);
		if (err)
			goto cleanup;
		err = floor_put(fd, &c, TF_FLOOR_DENY, TF_REASON_FLOOR_NAT64);
		if (err)
			goto cleanup;
		floor_key(&c, &keep[nkeep++]);
	}
	for (i = 0; i < cfg->nfloor_extra; i++) {
		err = floor_put(fd, &cfg->floor_extra[i], TF_FLOOR_DENY, TF_REASON_FLOOR_OPERATOR);
		if (err)
			goto cleanup;
		floor_key(&cfg->floor_extra[i], &keep[nkeep++]);
	}
	for (i = 0; i < cfg->nfloor_exceptions; i++) {
		err = floor_put(fd, &cfg->floor_exceptions[i], TF_FLOOR_EXEMPT, 0);
		if (err)
			goto cleanup;
		floor_key(&cfg->floor_exceptions[i], &keep[nkeep++]);
	}
	for (i = 0; i < cfg->nfloor_host + dp->nhost; i++) {
		h = i < cfg->nfloor_host ? &cfg->floor_host[i] : &dp->host[i - cfg->nfloor_host];
		floor_key(h, &k);
		/* A prefix the table above already has (127.0.0.0/8, ::1) keeps its reason. */
		if (!floor_host_wanted(cfg, h) || floor_kept(keep, nkeep, &k))
			continue;
		ret = nkeep < cap ? floor_put(fd, h, TF_FLOOR_DENY, TF_REASON_FLOOR_HOST) : -E2BIG;
		if (ret) {
			if (!failed++)
				tf_fmt_cidr(h, buf);
			err = ret;
			continue;
		}
		keep[nkeep++] = k;
		nhost++;
	}
	if (failed)
		pr_warn("cannot floor %u host addresses (the first: %s): %s; tf_floor holds %u entries "
			"(limits.floor_entries)\n", failed, buf, strerror(-err), cap);
	/*
	 * Sweep what an earlier run, config or address left, unless the host
	 * list is cut short: an address still there but not in it would lose
	 * its entry. (An entry that could not be written was not there: a
	 * write over an existing key never runs out of room.)
	 */
	for (more = !dp->host_short && !bpf_map_get_next_key(fd, NULL, &next); more;) {
		k = next;
		more = !bpf_map_get_next_key(fd, &k, &next);
		if (!floor_kept(keep, nkeep, &k) && !bpf_map_delete_elem(fd, &k))
			(*swept)++;
	}
	dp->floor_host = nhost;
cleanup:
	dp->floor_failed = failed;
	dp->floor_errors += failed;
	free(keep);
	return err;
}

int tf_dp_write_floor(struct tf_dp *dp)
{
	unsigned int swept;
	int err = floor_write(dp, &swept);

	/* A full map may have had room only once the stale entries were swept. */
	if (err == -ENOSPC && swept)
		err = floor_write(dp, &swept);
	if (err)
		pr_warn("cannot write the hard floor: %s\n", strerror(-err));
	return err;
}

int tf_dp_set_host_floor(struct tf_dp *dp, const struct tf_cidr *host, unsigned int n, int complete)
{
	struct tf_cidr *copy = NULL;

	if (n) {
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, host, n * sizeof(*copy));
	}
	free(dp->host);
	dp->host = copy;
	dp->nhost = n;
	dp->host_short = !complete;
	return tf_dp_write_floor(dp);
}

void tf_dp_session_value(const struct tf_spec *spec, __u32 sid, __u32 ver, struct tf_session *v)
{
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->sid = sid;
	v->policy_ver = ver;
	memcpy(v->guest_mac, spec->guest_mac, 6);
	memcpy(v->gw_mac, spec->gw_mac, 6);
	if (spec->has_ip4) {
		v->flags |= TF_SF_IPV4;
		memcpy(&v->guest_ip4, spec->guest_ip4.addr, 4);
		memcpy(&v->gw_ip4, spec->gw_ip4.addr, 4);
	}
	if (spec->has_ip6) {
		v->flags |= TF_SF_IPV6;
		memcpy(v->guest_ip6, spec->guest_ip6.addr, 16);
		tf_ip6_ll_from_mac(spec->guest_mac, v->guest_ip6_ll);
		if (spec->gw_ip6.family == TF_FAM_IPV6)
			memcpy(v->gw_ip6, spec->gw_ip6.addr, 16);
		tf_ip6_ll_from_mac(spec->gw_mac, v->gw_ip6_ll);
	}
	v->resolver_port = htons(spec->resolver_port);
	for (i = 0; i < spec->nrules; i++)
		if (spec->rules[i].kind == TF_RULE_HOST)
			v->flags |= TF_SF_HOSTS;
	if (spec->resolver.family == TF_FAM_IPV4) {
		v->flags |= TF_SF_RESOLVER4;
		memcpy(&v->resolver_ip4, spec->resolver.addr, 4);
	} else if (spec->resolver.family == TF_FAM_IPV6) {
		v->flags |= TF_SF_RESOLVER6;
		memcpy(v->resolver_ip6, spec->resolver.addr, 16);
	}
}

/* A fresh slot: zero counters, an empty event-rate bucket on every CPU. */
static int counters_zero(struct tf_dp *dp, __u32 sid)
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(dp->skel->maps.tf_counters);
	int rfd = bpf_map__fd(dp->skel->maps.tf_evrate);
	void *zero;
	__u32 i, idx;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	zero = calloc(ncpu, sizeof(struct tf_evbucket));
	if (!zero)
		return -ENOMEM;
	for (i = 0; i < TF_CNT_SLOTS && !err; i++) {
		idx = sid * TF_CNT_SLOTS + i;
		if (bpf_map_update_elem(fd, &idx, zero, BPF_ANY))
			err = -errno;
	}
	if (!err && bpf_map_update_elem(rfd, &sid, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

int tf_dp_slot_map(struct tf_dp *dp, enum tf_slot_map which, __u32 sid)
{
	if (sid >= TF_MAX_SESSIONS || dp->slot_fd[which][sid] < 0)
		return -ENOENT;
	return dp->slot_fd[which][sid];
}

/*
 * A slot's tables: fresh ones, or (keep, a restart re-adopting the
 * session) the ones it has, so established flows and learnt addresses
 * carry over.
 */
int tf_dp_slot_init(struct tf_dp *dp, __u32 sid, int keep)
{
	enum tf_slot_map m;
	__u32 id;
	int fd, err, outer;

	if (sid == 0 || sid >= TF_MAX_SESSIONS)
		return -EINVAL;
	if (!keep) {
		err = counters_zero(dp, sid);
		if (err)
			return err;
	}
	for (m = 0; m < TF_SLOT_MAPS; m++) {
		outer = bpf_map__fd(slot_outer(dp->skel, m));
		if (dp->slot_fd[m][sid] >= 0) {
			close(dp->slot_fd[m][sid]);
			dp->slot_fd[m][sid] = -1;
		}
		if (keep && !bpf_map_lookup_elem(outer, &sid, &id)) {
			/* Re-adopting runs at start, while the daemon may still look maps up by id. */
			fd = bpf_map_get_fd_by_id(id);
			if (fd < 0)
				return -errno;
			dp->slot_fd[m][sid] = fd;
			continue;
		}
		fd = slot_map_create(dp->cfg, m, sid);
		if (fd < 0)
			return fd;
		if (bpf_map_update_elem(outer, &sid, &fd, BPF_ANY)) {
			err = -errno;
			close(fd);
			return err;
		}
		dp->slot_fd[m][sid] = fd;
	}
	return 0;
}

void tf_dp_slot_release(struct tf_dp *dp, __u32 sid)
{
	enum tf_slot_map m;

	for (m = 0; m < TF_SLOT_MAPS; m++) {
		bpf_map_delete_elem(bpf_map__fd(slot_outer(dp->skel, m)), &sid);
		if (sid < TF_MAX_SESSIONS && dp->slot_fd[m][sid] >= 0) {
			close(dp->slot_fd[m][sid]);
			dp->slot_fd[m][sid] = -1;
		}
	}
}

static void rule_key(__u32 sid, __u32 ver, const struct tf_policy_entry *e, struct tf_rule_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = TF_RULE_KEY_FIXED_BITS + e->prefixlen;
	k->sid = sid;
	k->ver = ver;
	k->family = e->family;
	memcpy(k->addr, e->addr, 16);
}

static void port_key(__u32 sid, __u32 ver, const struct tf_policy_chunk *c, struct tf_port_key *k)
{
	memset(k, 0, sizeof(*k));
	k->sid = sid;
	k->ver = ver;
	k->cls = c->cls;
	k->proto = c->proto;
	k->hi = c->hi;
}

static void name_key(__u32 sid, __u32 ver, const struct tf_policy_name *n, struct tf_name_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = TF_NAME_KEY_FIXED_BITS + 8 * n->len;
	k->sid = sid;
	k->ver = ver;
	memcpy(k->name, n->name, sizeof(k->name));
}

int tf_dp_policy_write(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *p)
{
	int nfd = bpf_map__fd(dp->skel->maps.tf_names);
	struct tf_name_key nk;
	struct tf_name_val nv;
	int rfd = bpf_map__fd(dp->skel->maps.tf_rules);
	int pfd = bpf_map__fd(dp->skel->maps.tf_ports);
	struct tf_rule_key rk;
	struct tf_port_key pk;
	unsigned int i;

	/* Ports first: a rule entry must never point at a class not yet written. */
	for (i = 0; i < p->nchunks; i++) {
		port_key(sid, ver, &p->chunks[i], &pk);
		if (bpf_map_update_elem(pfd, &pk, &p->chunks[i].bits, BPF_ANY))
			return -errno;
	}
	for (i = 0; i < p->nentries; i++) {
		rule_key(sid, ver, &p->entries[i], &rk);
		if (bpf_map_update_elem(rfd, &rk, &p->entries[i].val, BPF_ANY))
			return -errno;
	}
	for (i = 0; i < p->nnames; i++) {
		name_key(sid, ver, &p->names[i], &nk);
		memset(&nv, 0, sizeof(nv));
		nv.exact = p->names[i].exact;
		nv.sub = p->names[i].sub;
		nv.len = p->names[i].len;
		nv.idx = (__u16)i;
		if (bpf_map_update_elem(nfd, &nk, &nv, BPF_ANY))
			return -errno;
	}
	return 0;
}

void tf_dp_policy_erase(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *p)
{
	int rfd = bpf_map__fd(dp->skel->maps.tf_rules);
	int pfd = bpf_map__fd(dp->skel->maps.tf_ports);
	int nfd = bpf_map__fd(dp->skel->maps.tf_names);
	struct tf_name_key nk;
	struct tf_rule_key rk;
	struct tf_port_key pk;
	unsigned int i;

	for (i = 0; i < p->nnames; i++) {
		name_key(sid, ver, &p->names[i], &nk);
		bpf_map_delete_elem(nfd, &nk);
	}
	for (i = 0; i < p->nentries; i++) {
		rule_key(sid, ver, &p->entries[i], &rk);
		bpf_map_delete_elem(rfd, &rk);
	}
	for (i = 0; i < p->nchunks; i++) {
		port_key(sid, ver, &p->chunks[i], &pk);
		bpf_map_delete_elem(pfd, &pk);
	}
}

void tf_dp_policy_sweep(struct tf_dp *dp, __u32 sid, __u32 keep_ver)
{
	int rfd = bpf_map__fd(dp->skel->maps.tf_rules);
	int pfd = bpf_map__fd(dp->skel->maps.tf_ports);
	int nfd = bpf_map__fd(dp->skel->maps.tf_names);
	struct tf_name_key nk, nnext;
	struct tf_rule_key rk, rnext;
	struct tf_port_key pk, pnext;
	int more;

	for (more = !bpf_map_get_next_key(rfd, NULL, &rnext); more;) {
		rk = rnext;
		more = !bpf_map_get_next_key(rfd, &rk, &rnext);
		if (rk.sid == sid && rk.ver != keep_ver)
			bpf_map_delete_elem(rfd, &rk);
	}
	for (more = !bpf_map_get_next_key(pfd, NULL, &pnext); more;) {
		pk = pnext;
		more = !bpf_map_get_next_key(pfd, &pk, &pnext);
		if (pk.sid == sid && pk.ver != keep_ver)
			bpf_map_delete_elem(pfd, &pk);
	}
	for (more = !bpf_map_get_next_key(nfd, NULL, &nnext); more;) {
		nk = nnext;
		more = !bpf_map_get_next_key(nfd, &nk, &nnext);
		if (nk.sid == sid && nk.ver != keep_ver)
			bpf_map_delete_elem(nfd, &nk);
	}
}

/*
 * Move the session's learnt addresses and outstanding queries to policy
 * generation ver: each keeps what the new policy gives the name entry it
 * was allowed through (old->names[idx]), or goes if that is nothing.
 * Runs after the switch and before the old generation is erased, so an
 * entry always points at a generation whose port classes exist.
 */
static int rederive(const struct tf_policy *old, const struct tf_policy *new, __u16 *idx, __u8 *sub,
		    struct tf_rule_val *perm)
{
	const struct tf_policy_name *n;
	int s, i;

	if (*idx >= old->nnames)
		return -1;
	n = &old->names[*idx];
	i = tf_policy_name_perm(new, n->name, n->len, *sub, perm, &s);
	if (i < 0)
		return -1;
	*idx = (__u16)i;
	*sub = (__u8)s;
	return 0;
}

void tf_dp_names_rebase(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *old,
			const struct tf_policy *new)
{
	int lfd = tf_dp_slot_map(dp, TF_SLOT_LEARNED, sid);
	int qfd = tf_dp_slot_map(dp, TF_SLOT_DNSQ, sid);
	struct tf_learn_key lk, lnext;
	struct tf_dnsq_key qk, qnext;
	struct tf_learned lv;
	struct tf_dnsq qv;
	int more;

	for (more = lfd >= 0 && !bpf_map_get_next_key(lfd, NULL, &lnext); more;) {
		lk = lnext;
		more = !bpf_map_get_next_key(lfd, &lk, &lnext);
		if (bpf_map_lookup_elem(lfd, &lk, &lv))
			continue;
		if (new && !rederive(old, new, &lv.name_idx, &lv.sub, &lv.perm)) {
			lv.ver = ver;
			if (!bpf_map_update_elem(lfd, &lk, &lv, BPF_EXIST))
				continue;
		}
		bpf_map_delete_elem(lfd, &lk);
	}
	for (more = qfd >= 0 && !bpf_map_get_next_key(qfd, NULL, &qnext); more;) {
		qk = qnext;
		more = !bpf_map_get_next_key(qfd, &qk, &qnext);
		if (bpf_map_lookup_elem(qfd, &qk, &qv))
			continue;
		if (new && !rederive(old, new, &qv.name_idx, &qv.sub, &qv.perm)) {
			qv.ver = ver;
			if (!bpf_map_update_elem(qfd, &qk, &qv, BPF_EXIST))
				continue;
		}
		bpf_map_delete_elem(qfd, &qk);
	}
}

int tf_dp_learned(struct tf_dp *dp, __u32 sid,
		  int (*fn)(const struct tf_learn_key *k, const struct tf_learned *v, void *ctx),
		  void *ctx)
{
	int lfd = tf_dp_slot_map(dp, TF_SLOT_LEARNED, sid);
	struct tf_learn_key lk, lnext;
	struct tf_learned lv;
	int more, err = 0;

	if (lfd < 0)
		return lfd;
	for (more = !bpf_map_get_next_key(lfd, NULL, &lnext); more && !err;) {
		lk = lnext;
		more = !bpf_map_get_next_key(lfd, &lk, &lnext);
		if (!bpf_map_lookup_elem(lfd, &lk, &lv))
			err = fn(&lk, &lv, ctx);
	}
	return err;
}

int tf_dp_session_set(struct tf_dp *dp, __u32 ifindex, const struct tf_session *v)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_sessions);

	return bpf_map_update_elem(fd, &ifindex, v, BPF_ANY) ? -errno : 0;
}

int tf_dp_session_get(struct tf_dp *dp, __u32 ifindex, struct tf_session *v)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_sessions);

	return bpf_map_lookup_elem(fd, &ifindex, v) ? -errno : 0;
}

void tf_dp_session_unset(struct tf_dp *dp, __u32 ifindex)
{
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.tf_sessions), &ifindex);
}

int tf_dp_session_install(struct tf_dp *dp, const struct tf_spec *spec, const struct tf_policy *p,
			  __u32 sid, __u32 ver, __u32 ifindex, int keep)
{
	struct tf_session v;
	int err;

	err = tf_dp_slot_init(dp, sid, keep);
	if (!err)
		err = tf_dp_policy_write(dp, sid, ver, p);
	if (!err)
		err = tf_dp_addrs_set(dp, spec, sid);
	/*
	 * A re-adopted slot's learnt addresses move to the new generation
	 * before the switch, so that its flows through them survive their
	 * re-judging (a restart compiles the same saved spec to the same name
	 * entries, so they carry over).
	 */
	if (!err && keep)
		tf_dp_names_rebase(dp, sid, ver, p, p);
	if (!err) {
		tf_dp_session_value(spec, sid, ver, &v);
		err = tf_dp_session_set(dp, ifindex, &v);
	}
	return err;
}

void tf_dp_session_remove(struct tf_dp *dp, const struct tf_spec *spec, const struct tf_policy *p,
			  __u32 sid, __u32 ver, __u32 ifindex)
{
	tf_dp_session_unset(dp, ifindex);
	tf_dp_addrs_unset(dp, spec);
	tf_dp_policy_erase(dp, sid, ver, p);
	tf_dp_slot_release(dp, sid);	/* its flows, queries and learnt addresses go with it */
}

static void addr_key(const struct tf_ip *ip, struct tf_addr_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = ip->family;
	memcpy(k->addr, ip->addr, 16);
}

int tf_dp_addrs_set(struct tf_dp *dp, const struct tf_spec *spec, __u32 sid)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_addrs);
	struct tf_addr_key k;

	if (spec->has_ip4) {
		addr_key(&spec->guest_ip4, &k);
		if (bpf_map_update_elem(fd, &k, &sid, BPF_ANY))
			return -errno;
	}
	if (spec->has_ip6) {
		addr_key(&spec->guest_ip6, &k);
		if (bpf_map_update_elem(fd, &k, &sid, BPF_ANY))
			return -errno;
	}
	return 0;
}

void tf_dp_addrs_unset(struct tf_dp *dp, const struct tf_spec *spec)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_addrs);
	struct tf_addr_key k;

	if (spec->has_ip4) {
		addr_key(&spec->guest_ip4, &k);
		bpf_map_delete_elem(fd, &k);
	}
	if (spec->has_ip6) {
		addr_key(&spec->guest_ip6, &k);
		bpf_map_delete_elem(fd, &k);
	}
}

/*
 * tcx link at the head of the device's chain (BPF_F_BEFORE, no anchor), so
 * no earlier program can pass a packet past us. Raw syscall: Debian 12's
 * libbpf 1.1 predates bpf_program__attach_tcx().
 */
static int tcx_link_create(int prog_fd, __u32 ifindex, __u32 attach_type)
{
	int fd;

	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = prog_fd;
	attr.link_create.target_ifindex = ifindex;
	attr.link_create.attach_type = attach_type;
	attr.link_create.flags = TF_BPF_F_BEFORE;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* The device a tcx link is on (0 once the device is gone); info.tcx shares xdp's offset. */
static __u32 link_ifindex(int fd)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.xdp.ifindex;
}

static void link_path(const struct tf_dp *dp, const char *name, const char *dir, char *buf,
		      size_t len)
{
	snprintf(buf, len, "%s/links/%s-%s", dp->cfg->pin_dir, name, dir);
}

/* Returns the link fd or a negative errno. */
/* *adopted: the link was pinned already and updated in place (not ours to detach on failure). */
static int link_attach(struct tf_dp *dp, const char *name, const char *dir, int prog_fd,
		       __u32 ifindex, __u32 attach_type, int *adopted)
{
	char path[PATH_MAX];
	int fd, err;

	*adopted = 0;
	link_path(dp, name, dir, path, sizeof(path));
	if (dp->pinned) {
		fd = bpf_obj_get(path);
		if (fd >= 0 && link_ifindex(fd) == ifindex) {
			/* Same device, maybe a new program: swap in place, no window. */
			err = bpf_link_update(fd, prog_fd, NULL);
			*adopted = !err;
			if (!err)
				return fd;
			pr_warn("cannot update pinned link `%s': %s\n", path, strerror(-err));
			close(fd);
			return err;
		}
		if (fd >= 0) {
			close(fd);
			unlink(path);	/* a link of a device that is gone */
		}
	}
	fd = tcx_link_create(prog_fd, ifindex, attach_type);
	if (fd < 0)
		return fd;
	if (dp->pinned) {
		err = bpf_obj_pin(fd, path);
		if (err) {
			err = -errno;
			pr_warn("cannot pin link at `%s': %s\n", path, strerror(-err));
			close(fd);
			return err;
		}
	}
	return fd;
}

static void link_detach(struct tf_dp *dp, const char *name, const char *dir, int *fd)
{
	char path[PATH_MAX];

	if (*fd >= 0) {
		bpf_link_detach(*fd);
		close(*fd);
		*fd = -1;
	}
	if (dp->pinned) {
		link_path(dp, name, dir, path, sizeof(path));
		unlink(path);
	}
}

/*
 * XDP mode: libxdp loads xdp_from_guest from a second instance of the
 * object whose maps all reuse the first instance's, so both modes judge
 * against the same state. libxdp puts it behind its dispatcher where the
 * kernel allows, and falls back to a single program otherwise.
 */
static int xdp_prepare(struct tf_dp *dp)
{
	struct bpf_program *prog;
	struct bpf_map *map, *ours;
	struct tapfence_bpf *skel;
	int err;

	if (dp->xdp)
		return 0;
	skel = tapfence_bpf__open();
	if (!skel)
		return -errno;
	set_knobs(skel, dp->cfg);
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, prog == skel->progs.xdp_from_guest);
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		ours = bpf_object__find_map_by_name(dp->skel->obj, bpf_map__name(map));
		err = ours ? bpf_map__reuse_fd(map, bpf_map__fd(ours)) : -ENOENT;
		if (err)
			goto cleanup;
	}
	dp->xdp = xdp_program__from_bpf_obj(skel->obj, "xdp");
	err = libxdp_get_error(dp->xdp);
	if (err) {
		dp->xdp = NULL;
		goto cleanup;
	}
	dp->xdp_skel = skel;
	return 0;
cleanup:
	tapfence_bpf__destroy(skel);
	return err;
}

/*
 * Our XDP program already on the device (a restarted daemon): alone on the
 * device, it is replaced by this daemon's in one step, XDP_FLAGS_REPLACE
 * naming the old program, so no packet finds the device without a judge
 * and a new build or new load-time knobs apply (a program's tag does not
 * cover its read-only data, so "the same program" cannot be told from the
 * tag). Behind libxdp's dispatcher it stays (libxdp has no in-place
 * replacement). 1 if handled here, 0 if nothing of ours is there, -errno.
 */
static int xdp_keep_or_replace(struct tf_dp *dp, __u32 ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	struct xdp_program *p;
	int ret = 0, old_fd, new_fd, err;
	__u32 flags;

	if (libxdp_get_error(mp))
		return 0;
	if (!xdp_multiprog__is_legacy(mp)) {
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			ret |= !strcmp(xdp_program__name(p), "xdp_from_guest");
		goto out;
	}
	p = xdp_multiprog__main_prog(mp);
	if (!p || strcmp(xdp_program__name(p), "xdp_from_guest"))
		goto out;
	ret = 1;
	/* Loaded here, not by libxdp (which would put a new program behind its dispatcher). */
	err = xdp_prepare(dp);
	if (!err && bpf_program__fd(dp->xdp_skel->progs.xdp_from_guest) < 0)
		err = tapfence_bpf__load(dp->xdp_skel);
	if (err) {
		ret = err;
		goto out;
	}
	new_fd = bpf_program__fd(dp->xdp_skel->progs.xdp_from_guest);
	if (new_fd < 0) {
		ret = -EBADF;	/* never "replace" with no program: that would detach */
		goto out;
	}
	old_fd = bpf_prog_get_fd_by_id(xdp_program__id(p));
	if (old_fd < 0) {
		ret = -errno;
		goto out;
	}
	flags = XDP_FLAGS_REPLACE;
	switch (xdp_multiprog__attach_mode(mp)) {
	case XDP_MODE_SKB:
		flags |= XDP_FLAGS_SKB_MODE;
		break;
	case XDP_MODE_HW:
		flags |= XDP_FLAGS_HW_MODE;
		break;
	default:
		flags |= XDP_FLAGS_DRV_MODE;
		break;
	}
	opts.old_prog_fd = old_fd;
	if (bpf_xdp_attach((int)ifindex, new_fd, flags, &opts))
		ret = -errno;
	else
		pr_info("ifindex %u: XDP program %u replaced by a new one\n", ifindex,
			xdp_program__id(p));
	close(old_fd);
out:
	xdp_multiprog__close(mp);
	return ret;
}

/* *adopted: our program was on the device already (kept or replaced in place). */
static int xdp_attach(struct tf_dp *dp, __u32 ifindex, int *adopted)
{
	int err = xdp_keep_or_replace(dp, ifindex);

	*adopted = err > 0;
	if (err)
		return err < 0 ? err : 0;
	err = xdp_prepare(dp);
	if (err)
		return err;
	return xdp_program__attach(dp->xdp, ifindex, XDP_MODE_NATIVE, 0);
}

/* Detach every program of ours on the device; other programs stay. */
void tf_dp_xdp_detach(__u32 ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;

	if (libxdp_get_error(mp))
		return;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && !strcmp(xdp_program__name(p), "xdp_from_guest"))
			xdp_multiprog__detach(mp);
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			if (!strcmp(xdp_program__name(p), "xdp_from_guest"))
				xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	}
	xdp_multiprog__close(mp);
}

/*
 * The egress (to guest) link goes first: once ingress is attached the guest
 * can open flows, and their replies must already be judged.
 */
/*
 * A failed attach undoes what it created, never what it adopted: a
 * re-adopted device whose other half cannot be attached keeps both of its
 * pinned halves (docs/security.md: never less).
 */
static void attach_undo(struct tf_dp *dp, const char *name, const char *dir, int *fd, int adopted)
{
	if (!adopted) {
		link_detach(dp, name, dir, fd);
		return;
	}
	close(*fd);
	*fd = -1;
}

/*
 * In XDP mode the tcx ingress link holds tc_gso_guard (bpf/tapfence.bpf.c):
 * XDP cannot see that a guest's GSO write is cut into datagrams after it,
 * TC can. The guard goes on after XDP, so that a device switched from TC
 * mode has its pinned tc_from_guest link replaced only once XDP judges.
 */
int tf_dp_attach(struct tf_dp *dp, const char *name, __u32 ifindex, struct tf_attach *at)
{
	int err, adopted, in_adopted, xdp_adopted = 0, xdp = dp->cfg->attach_mode == TF_ATTACH_XDP;

	at->link_in = at->link_out = -1;
	at->xdp = 0;
	err = link_attach(dp, name, "out", bpf_program__fd(dp->skel->progs.tc_to_guest), ifindex,
			  TF_BPF_TCX_EGRESS, &adopted);
	if (err < 0)
		return err;
	at->link_out = err;
	if (xdp) {
		err = xdp_attach(dp, ifindex, &xdp_adopted);
		if (err) {
			pr_warn("cannot attach XDP to ifindex %u: %s\n", ifindex, strerror(-err));
			attach_undo(dp, name, "out", &at->link_out, adopted);
			return err;
		}
		at->xdp = 1;
	}
	err = link_attach(dp, name, "in",
			  bpf_program__fd(xdp ? dp->skel->progs.tc_gso_guard : dp->skel->progs.tc_from_guest),
			  ifindex, TF_BPF_TCX_INGRESS, &in_adopted);
	if (err < 0) {
		pr_warn("cannot attach tcx ingress to ifindex %u: %s\n", ifindex, strerror(-err));
		if (at->xdp && !xdp_adopted)
			tf_dp_xdp_detach(ifindex);
		at->xdp = 0;
		attach_undo(dp, name, "out", &at->link_out, adopted);
		return err;
	}
	at->link_in = err;
	return 0;
}

void tf_dp_detach(struct tf_dp *dp, const char *name, __u32 ifindex, struct tf_attach *at)
{
	if (at->xdp)
		tf_dp_xdp_detach(ifindex);
	at->xdp = 0;
	link_detach(dp, name, "in", &at->link_in);
	link_detach(dp, name, "out", &at->link_out);
}

void tf_dp_attach_close(struct tf_attach *at)
{
	if (at->link_in >= 0)
		close(at->link_in);
	if (at->link_out >= 0)
		close(at->link_out);
	at->link_in = at->link_out = -1;
}

int tf_dp_sessions_each(struct tf_dp *dp,
			int (*fn)(__u32 ifindex, const struct tf_session *v, void *ctx), void *ctx)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_sessions), more, err;
	__u32 k, next;
	struct tf_session v;

	for (more = !bpf_map_get_next_key(fd, NULL, &next); more;) {
		k = next;
		more = !bpf_map_get_next_key(fd, &k, &next);
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		err = fn(k, &v, ctx);
		if (err)
			return err;
	}
	return 0;
}

/*
 * One pass over a hash or LPM map, deleting the entries whose sid (read at
 * sid_off in the key, or in the value when in_value) keep() refuses.
 */
static void sweep_map(struct bpf_map *map, size_t sid_off, int in_value,
		      int (*keep)(__u32 sid, void *ctx), void *ctx)
{
	int fd = bpf_map__fd(map), more;
	__u8 key[512], next[512], val[512];
	__u32 sid;

	if (bpf_map__key_size(map) > sizeof(key) || bpf_map__value_size(map) > sizeof(val))
		return;
	for (more = !bpf_map_get_next_key(fd, NULL, next); more;) {
		memcpy(key, next, bpf_map__key_size(map));
		more = !bpf_map_get_next_key(fd, key, next);
		if (in_value && bpf_map_lookup_elem(fd, key, val))
			continue;
		memcpy(&sid, (in_value ? val : key) + sid_off, sizeof(sid));
		if (!keep(sid, ctx))
			bpf_map_delete_elem(fd, key);
	}
}

void tf_dp_sweep_orphans(struct tf_dp *dp, int (*keep)(__u32 sid, void *ctx), void *ctx)
{
	struct tapfence_bpf *sk = dp->skel;
	__u32 sid;

	sweep_map(sk->maps.tf_rules, offsetof(struct tf_rule_key, sid), 0, keep, ctx);
	sweep_map(sk->maps.tf_ports, offsetof(struct tf_port_key, sid), 0, keep, ctx);
	sweep_map(sk->maps.tf_names, offsetof(struct tf_name_key, sid), 0, keep, ctx);
	sweep_map(sk->maps.tf_addrs, 0, 1, keep, ctx);
	for (sid = 1; sid < TF_MAX_SESSIONS; sid++)
		if (!keep(sid, ctx))
			tf_dp_slot_release(dp, sid);
}

static int percpu_sum(int fd, __u32 idx, __u64 *values, int ncpu, __u64 *sum)
{
	int i;

	if (bpf_map_lookup_elem(fd, &idx, values))
		return -errno;
	*sum = 0;
	for (i = 0; i < ncpu; i++)
		*sum += values[i];
	return 0;
}

int tf_dp_counters(struct tf_dp *dp, __u32 sid, __u64 out[TF_CNT_SLOTS])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(dp->skel->maps.tf_counters);
	__u64 *values;
	__u32 i;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	values = calloc(ncpu, sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (i = 0; i < TF_CNT_SLOTS && !err; i++)
		err = percpu_sum(fd, sid * TF_CNT_SLOTS + i, values, ncpu, &out[i]);
	free(values);
	return err;
}

int tf_dp_stats(struct tf_dp *dp, __u64 out[TF_STAT_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(dp->skel->maps.tf_stats);
	__u64 *values;
	__u32 i;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	values = calloc(ncpu, sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (i = 0; i < TF_STAT_MAX && !err; i++)
		err = percpu_sum(fd, i, values, ncpu, &out[i]);
	free(values);
	return err;
}

int tf_dp_ringbuf_fd(struct tf_dp *dp)
{
	return bpf_map__fd(dp->skel->maps.tf_events);
}
