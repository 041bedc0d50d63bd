// SPDX-License-Identifier: GPL-2.0
/*
 * The hard floor (tf_floor): built-in ranges no session rule can open, the
 * operator's additions and exceptions, and the host's own addresses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "datapath_int.h"

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
	{ "192.0.0.0/24", TF_REASON_FLOOR_RESERVED }, /* IETF protocol assignments */
	{ "192.168.0.0/16", TF_REASON_FLOOR_PRIVATE },
	{ "224.0.0.0/4", TF_REASON_FLOOR_MULTICAST },
	{ "240.0.0.0/4", TF_REASON_FLOOR_RESERVED },
	{ "255.255.255.255/32", TF_REASON_FLOOR_RESERVED },
	{ "::/128", TF_REASON_FLOOR_THIS_NET },
	{ "::1/128", TF_REASON_FLOOR_LOOPBACK },
	{ "::/96", TF_REASON_FLOOR_V4MAPPED }, /* IPv4-compatible (deprecated) */
	{ "::ffff:0:0/96", TF_REASON_FLOOR_V4MAPPED },
	{ "2002::/16", TF_REASON_FLOOR_RESERVED }, /* 6to4: embeds any IPv4 address */
	{ "fec0::/10", TF_REASON_FLOOR_RESERVED }, /* site-local (deprecated) */
	{ "fc00::/7", TF_REASON_FLOOR_ULA },
	{ "fd00:ec2::254/128", TF_REASON_FLOOR_METADATA }, /* AWS IMDS over IPv6 */
	{ "fe80::/10", TF_REASON_FLOOR_LINK_LOCAL },
	{ "ff00::/8", TF_REASON_FLOOR_MULTICAST },
};

/* NAT64 prefixes: the well-known one and the local-use one (RFC 8215); "floor":{"nat64":false} lifts them. */
static const char *const floor_nat64[] = { "64:ff9b::/96", "64:ff9b:1::/48" };

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
	n = sizeof(floor_builtin) / sizeof(floor_builtin[0]) +
	    sizeof(floor_nat64) / sizeof(floor_nat64[0]) + cfg->nfloor_extra +
	    cfg->nfloor_exceptions + cfg->nfloor_host + dp->nhost;
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
			"(limits.floor_entries)\n",
			failed, buf, strerror(-err), cap);
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
