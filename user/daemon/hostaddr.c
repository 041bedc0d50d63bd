// SPDX-License-Identifier: GPL-2.0
/*
 * The host's own addresses into the hard floor. A guest with a broad rule
 * would otherwise reach every service listening on the host, and a tunnel
 * endpoint there (VXLAN, GENEVE, GRE, FOU, WireGuard) would decapsulate
 * what it sent and route the inner packet anywhere.
 *
 * What the host accepts as its own is what the kernel's local table holds:
 * a local route per address (and AnyIP prefixes), a broadcast route per
 * IPv4 subnet broadcast, an anycast route per IPv6 subnet-router anycast
 * address. So the daemon dumps RT_TABLE_LOCAL, IPv4 and IPv6, at start and
 * again whenever a notification on the subscribed socket says a local
 * route or an address changed (or notifications were lost, ENOBUFS). A
 * notification is only a trigger: applying notifications one by one
 * races with the dump, while a fresh dump is the state itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <tapfence/abi.h>

#include "common/log.h"
#include "daemon.h"
#include "hostaddr.h"
#include "nl.h"

#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

#define NL_BUF	   32768
#define DUMP_TRIES 4 /* dumps interrupted by a change (NLM_F_DUMP_INTR) are redone */

static __u32 route_table(const struct rtmsg *rt, size_t len)
{
	const struct rtattr *a = RTM_RTA(rt);
	__u32 table = rt->rtm_table;

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == RTA_TABLE && RTA_PAYLOAD(a) >= 4)
			memcpy(&table, RTA_DATA(a), 4);
	return table;
}

/* Zero the bits of c past its prefix: a key with host bits set would be a second key for it. */
static void cidr_mask(struct tf_cidr *c)
{
	unsigned int i, bits = c->prefixlen;

	for (i = 0; i<16; i++, bits = bits> 8 ? bits - 8 : 0)
		c->ip.addr[i] &= bits >= 8 ? 0xff : (__u8)(0xff << (8 - bits));
}

/* A local, broadcast or anycast route of the local table as a prefix; 0 if it is one. */
static int route_prefix(const struct nlmsghdr *nh, struct tf_cidr *c)
{
	const struct rtmsg *rt = NLMSG_DATA(nh);
	size_t len = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*rt)), alen;
	const struct rtattr *a;

	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*rt)))
		return -EINVAL;
	if (route_table(rt, len) != RT_TABLE_LOCAL)
		return -ENOENT;
	if (rt->rtm_type != RTN_LOCAL && rt->rtm_type != RTN_BROADCAST &&
	    rt->rtm_type != RTN_ANYCAST)
		return -ENOENT;
	memset(c, 0, sizeof(*c));
	if (rt->rtm_family == AF_INET && rt->rtm_dst_len <= 32)
		c->ip.family = TF_FAM_IPV4;
	else if (rt->rtm_family == AF_INET6 && rt->rtm_dst_len <= 128)
		c->ip.family = TF_FAM_IPV6;
	else
		return -ENOENT;
	alen = c->ip.family == TF_FAM_IPV4 ? 4 : 16;
	c->prefixlen = rt->rtm_dst_len;
	for (a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == RTA_DST && RTA_PAYLOAD(a) == alen)
			memcpy(c->ip.addr, RTA_DATA(a), alen);
	cidr_mask(c);
	return 0;
}

int tf_hostaddr_parse(const void *buf, size_t len, __u32 seq, struct tf_cidr *out, unsigned int max,
		      unsigned int *n, unsigned int *over)
{
	const struct nlmsghdr *nh;
	int intr = 0;

	for (nh = buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
		if (nh->nlmsg_seq != seq)
			continue;
		if (nh->nlmsg_flags & NLM_F_DUMP_INTR)
			intr = 1;
		switch (nh->nlmsg_type) {
		case NLMSG_DONE:
			return intr ? -EAGAIN : 1;
		case NLMSG_ERROR:
			return tf_nl_error(nh) ?: -EPROTO;
		case RTM_NEWROUTE:
			if (*n < max && !route_prefix(nh, &out[*n]))
				(*n)++;
			else if (*n >= max && !route_prefix(nh, &(struct tf_cidr){}))
				(*over)++;
			break;
		default:
			break;
		}
	}
	return intr ? -EAGAIN : 0;
}

/* One dump of family's local table into out; 0, or -errno. */
static int dump_family(int fd, __u8 family, __u32 seq, struct tf_cidr *out, unsigned int max,
		       unsigned int *n, unsigned int *over, char *buf)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
	} req = {
		.nh = {
			.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
			.nlmsg_type = RTM_GETROUTE,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = seq,
		},
		.rt = { .rtm_family = family, .rtm_table = RT_TABLE_LOCAL },
	};
	ssize_t len;
	int ret;

	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		len = recv(fd, buf, NL_BUF, 0);
		if (len < 0)
			return -errno;
		ret = tf_hostaddr_parse(buf, len, seq, out, max, n, over);
		if (ret)
			return ret < 0 ? ret : 0;
	}
}

/*
 * A full dump, IPv4 then IPv6, on a socket of its own (so that no
 * notification interleaves with it). Blocking, with a timeout: the kernel
 * answers a local-table dump at once.
 */
static int host_dump(struct tf_hostaddr *h, unsigned int max)
{
	struct timeval tv = { .tv_sec = 2 };
	struct tf_cidr *out = NULL;
	unsigned int n = 0, over = 0, try;
	char *buf = NULL;
	int fd, one = 1, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* Strict checking makes the kernel filter by table; without it, route_prefix() does. */
	setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	err = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ? -errno : 0;
	buf = malloc(NL_BUF);
	out = calloc(max, sizeof(*out));
	if (!err && (!buf || !out))
		err = -ENOMEM;
	for (try = 0; !err && try < DUMP_TRIES; try++) {
		n = over = 0;
		err = dump_family(fd, AF_INET, 2 * try + 1, out, max, &n, &over, buf);
		if (!err)
			err = dump_family(fd, AF_INET6, 2 * try + 2, out, max, &n, &over, buf);
		if (err != -EAGAIN)
			break;
		err = 0;
		if (try == DUMP_TRIES - 1)
			err = -EAGAIN;
	}
	close(fd);
	free(buf);
	if (err) {
		free(out);
		return err;
	}
	free(h->addrs);
	h->addrs = out;
	h->n = n;
	h->over = over;
	h->dumps++;
	return 0;
}

/* Dump, then write the floor with what the dump found. */
static int host_refresh(struct tf_daemon *d)
{
	struct tf_hostaddr *h = &d->host;
	unsigned int before = d->dp.floor_host;
	int err;

	/* More local routes than tf_floor holds cannot be written anyway: they are only counted. */
	err = host_dump(h, d->cfg.floor_entries);
	if (err) {
		if (!h->stale)
			pr_warn("cannot read the host's addresses from netlink: %s; new sessions are "
				"refused until a dump succeeds (retried every turn)\n",
				strerror(-err));
		h->stale = 1;
		return err;
	}
	if (h->stale)
		pr_info("the host's addresses are read again\n");
	h->stale = 0;
	err = tf_dp_set_host_floor(&d->dp, h->addrs, h->n, !h->over);
	if (!err && h->over) {
		pr_warn("cannot floor %u host addresses past limits.floor_entries (%u)\n", h->over,
			d->cfg.floor_entries);
		d->dp.floor_errors += h->over;
		err = -E2BIG;
	}
	if (err)
		pr_warn("the hard floor misses %u host addresses: new sessions are refused until "
			"they are written\n",
			d->dp.floor_failed + h->over);
	else if (d->dp.floor_host != before || h->dumps == 1)
		pr_info("hard floor: %u host address entries\n", d->dp.floor_host);
	return err;
}

int tf_host_start(struct tf_daemon *d)
{
	struct tf_hostaddr *h = &d->host;
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE | RTMGRP_IPV4_IFADDR |
			     RTMGRP_IPV6_IFADDR,
	};
	int rcvbuf = 1 << 20;

	h->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (h->fd < 0) {
		pr_warn("cannot open a netlink socket for the host's addresses: %s\n",
			strerror(errno));
		return -errno;
	}
	/* A burst of changes (a device with many addresses going away) should fit; if not, ENOBUFS. */
	setsockopt(h->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	/* Subscribed before the dump: a change during it is then seen afterwards, never missed. */
	if (bind(h->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		pr_warn("cannot subscribe to the host's address changes: %s\n", strerror(errno));
		return -errno;
	}
	return host_refresh(d);
}

/* 1 if a message says a local route or an address changed. */
static int host_changed(const char *buf, size_t len)
{
	const struct nlmsghdr *nh;
	const struct rtmsg *rt;

	for (nh = (const void *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
		switch (nh->nlmsg_type) {
		case RTM_NEWADDR:
		case RTM_DELADDR:
			return 1;
		case RTM_NEWROUTE:
		case RTM_DELROUTE:
			rt = NLMSG_DATA(nh);
			if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*rt)) &&
			    route_table(rt, nh->nlmsg_len - NLMSG_LENGTH(sizeof(*rt))) ==
				    RT_TABLE_LOCAL)
				return 1;
			break;
		default:
			break;
		}
	}
	return 0;
}

void tf_host_event(struct tf_daemon *d, int readable)
{
	struct tf_hostaddr *h = &d->host;
	char buf[8192];
	int changed = h->stale;
	ssize_t len;

	while (readable) {
		len = recv(h->fd, buf, sizeof(buf), 0);
		if (len < 0 && errno == ENOBUFS) {
			pr_warn("netlink: address notifications lost; reading the host's addresses again\n");
			changed = 1;
			continue;
		}
		if (len <= 0)
			break;
		changed |= host_changed(buf, len);
	}
	if (changed)
		(void)host_refresh(d);
}

int tf_host_floor_ok(const struct tf_daemon *d)
{
	return !d->host.stale && !d->host.over && !d->dp.floor_failed;
}

void tf_host_close(struct tf_hostaddr *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	free(h->addrs);
	h->addrs = NULL;
	h->n = 0;
}
