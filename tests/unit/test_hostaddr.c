// SPDX-License-Identifier: GPL-2.0
/* Test that a dump of the local routing table yields exactly the host's local, broadcast and anycast prefixes. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <tapfence/abi.h>
#include "daemon/hostaddr.h"
#include "check.h"

#define SEQ 7

struct dump {
	char buf[4096];
	size_t len;
};

/* Append one route message of dump seq: family, table, type, destination prefix. */
static void put_route(struct dump *d, __u16 msg, __u16 flags, __u32 seq, __u8 family,
		      unsigned char table, unsigned char type, const char *dst, __u8 dst_len)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)(d->buf + d->len);
	struct rtmsg *rt = NLMSG_DATA(nh);
	struct rtattr *a = (struct rtattr *)((char *)rt + NLMSG_ALIGN(sizeof(*rt)));
	size_t alen = family == AF_INET ? 4 : 16;

	memset(nh, 0, NLMSG_SPACE(sizeof(*rt)) + RTA_SPACE(16));
	nh->nlmsg_type = msg;
	nh->nlmsg_flags = flags | NLM_F_MULTI;
	nh->nlmsg_seq = seq;
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(*rt));
	rt->rtm_family = family;
	rt->rtm_table = table;
	rt->rtm_type = type;
	rt->rtm_dst_len = dst_len;
	if (dst) {
		a->rta_type = RTA_DST;
		a->rta_len = RTA_LENGTH(alen);
		inet_pton(family, dst, RTA_DATA(a));
		nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_SPACE(alen);
	}
	d->len += NLMSG_ALIGN(nh->nlmsg_len);
}

static void put_done(struct dump *d, __u16 flags)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)(d->buf + d->len);

	memset(nh, 0, NLMSG_SPACE(sizeof(int)));
	nh->nlmsg_type = NLMSG_DONE;
	nh->nlmsg_flags = flags | NLM_F_MULTI;
	nh->nlmsg_seq = SEQ;
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(int));
	d->len += NLMSG_ALIGN(nh->nlmsg_len);
}

static int has(const struct tf_cidr *out, unsigned int n, const char *cidr)
{
	struct tf_cidr c;
	unsigned int i;

	if (tf_parse_cidr(cidr, &c))
		return 0;
	for (i = 0; i < n; i++)
		if (out[i].prefixlen == c.prefixlen && out[i].ip.family == c.ip.family &&
		    !memcmp(out[i].ip.addr, c.ip.addr, 16))
			return 1;
	return 0;
}

int main(void)
{
	static struct dump d;
	struct tf_cidr out[8];
	unsigned int n = 0, over = 0;
	struct nlmsghdr *nh;
	struct nlmsgerr *e;
	int ret;

	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL, "203.0.113.1", 32);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_BROADCAST, "203.0.113.255",
		  32);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL, "192.0.2.0", 24);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_MAIN, RTN_UNICAST, "198.51.100.0",
		  24);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_MAIN, RTN_LOCAL, "198.51.100.9", 32);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET6, RT_TABLE_LOCAL, RTN_LOCAL, "2001:db8:99::1",
		  128);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET6, RT_TABLE_LOCAL, RTN_ANYCAST,
		  "2001:db8:99::", 128);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET6, RT_TABLE_LOCAL, RTN_MULTICAST, "ff00::", 8);
	put_route(&d, RTM_NEWROUTE, 0, SEQ + 1, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL, "203.0.113.9",
		  32);
	ret = tf_hostaddr_parse(d.buf, d.len, SEQ, out, 8, &n, &over);
	CHECK_EQ("a dump without NLMSG_DONE yet: more to come", ret, 0);
	CHECK_EQ("local, broadcast, AnyIP and anycast routes of the local table only", n, 5);
	CHECK_EQ("an address", has(out, n, "203.0.113.1"), 1);
	CHECK_EQ("a subnet broadcast", has(out, n, "203.0.113.255"), 1);
	CHECK_EQ("an AnyIP prefix keeps its length", has(out, n, "192.0.2.0/24"), 1);
	CHECK_EQ("an IPv6 address", has(out, n, "2001:db8:99::1"), 1);
	CHECK_EQ("an IPv6 subnet-router anycast address", has(out, n, "2001:db8:99::"), 1);
	CHECK_EQ("not a route of the main table", has(out, n, "198.51.100.9"), 0);
	CHECK_EQ("not a message of another dump", has(out, n, "203.0.113.9"), 0);

	d.len = 0;
	put_done(&d, 0);
	CHECK_EQ("NLMSG_DONE ends the dump",
		 tf_hostaddr_parse(d.buf, d.len, SEQ, out, 8, &n, &over), 1);

	n = over = 0;
	d.len = 0;
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL, "203.0.113.1", 32);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL, "203.0.113.2", 32);
	put_route(&d, RTM_NEWROUTE, 0, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL, "203.0.113.3", 32);
	put_done(&d, 0);
	ret = tf_hostaddr_parse(d.buf, d.len, SEQ, out, 2, &n, &over);
	CHECK_EQ("past max: the dump still completes", ret, 1);
	CHECK_EQ("past max: max kept", n, 2);
	CHECK_EQ("past max: the rest counted", over, 1);

	n = over = 0;
	d.len = 0;
	put_route(&d, RTM_NEWROUTE, NLM_F_DUMP_INTR, SEQ, AF_INET, RT_TABLE_LOCAL, RTN_LOCAL,
		  "203.0.113.1", 32);
	put_done(&d, 0);
	CHECK_EQ("a dump interrupted by a change is to be redone",
		 tf_hostaddr_parse(d.buf, d.len, SEQ, out, 8, &n, &over), -EAGAIN);

	d.len = 0;
	nh = (struct nlmsghdr *)d.buf;
	memset(nh, 0, NLMSG_SPACE(sizeof(*e)));
	nh->nlmsg_type = NLMSG_ERROR;
	nh->nlmsg_seq = SEQ;
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
	e = NLMSG_DATA(nh);
	e->error = -EINVAL;
	d.len = NLMSG_ALIGN(nh->nlmsg_len);
	CHECK_EQ("an NLMSG_ERROR is its error",
		 tf_hostaddr_parse(d.buf, d.len, SEQ, out, 8, &n, &over), -EINVAL);
	/* Cut short before its error field: refused, never read as an ack (user/daemon/nl.h). */
	e->error = 0;
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(e->error) - 1);
	d.len = NLMSG_ALIGN(nh->nlmsg_len);
	CHECK_EQ("an NLMSG_ERROR cut short is a protocol error",
		 tf_hostaddr_parse(d.buf, d.len, SEQ, out, 8, &n, &over), -EPROTO);
	return CHECK_EXIT();
}
