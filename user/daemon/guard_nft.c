// SPDX-License-Identifier: GPL-2.0
/*
 * The guard's kernel half (docs/guard.md): in the current network
 * namespace, two tables, "inet tapfence" and "bridge tapfence", each a
 * prerouting chain at priority -500 (before conntrack and everything
 * else there) that drops what comes in on a device matching the
 * operator's patterns unless it carries the guard mark, and clears the
 * mark on what it accepts:
 *
 *   table inet tapfence {      (and the same in table bridge tapfence)
 *     chain guard { type filter hook prerouting priority -500; policy accept;
 *       meta mark & MARK != 0 meta mark set meta mark & ~MARK accept
 *       iifname "tap*" drop
 *       ... one rule per pattern } }
 *
 * The inet chain sees every IPv4 and IPv6 packet a guarded device brings
 * in, routed or for the host; the bridge chain every frame it brings into
 * a bridge. The patterns are matched per packet, so a device is covered
 * from its creation, with no daemon involved, and across the daemon's
 * death. (A netdev ingress chain with prefix hooks would hook each device
 * instead, but Debian 12's nft, 1.0.6, loops forever listing a ruleset
 * holding one: every operator's `nft list ruleset' would hang.)
 *
 * Written as one nfnetlink batch, so the tables are replaced atomically
 * (created if absent, deleted, created whole): a restart with new patterns
 * never leaves a moment with none.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include "guard_nft.h"
#include "nl.h"

#define GUARD_TABLE    "tapfence"
#define GUARD_CHAIN    "guard"
#define GUARD_PRIORITY (-500)
#define NF_PREROUTING  0 /* NF_INET_PRE_ROUTING and NF_BR_PRE_ROUTING */

struct msgbuf {
	char b[8192];
	size_t len;
	int err; /* -EMSGSIZE once something did not fit */
	__u32 seq;
};

static void *put(struct msgbuf *m, const void *p, size_t n)
{
	void *at = m->b + m->len;
	size_t pad = NLMSG_ALIGN(n);

	if (m->err || m->len + pad > sizeof(m->b)) {
		m->err = -EMSGSIZE;
		return NULL;
	}
	memset(at, 0, pad);
	if (p)
		memcpy(at, p, n);
	m->len += pad;
	return at;
}

static void attr(struct msgbuf *m, __u16 type, const void *p, size_t n)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + n, .nla_type = type };

	put(m, &a, sizeof(a));
	put(m, p, n);
}

static void attr_str(struct msgbuf *m, __u16 type, const char *s)
{
	attr(m, type, s, strlen(s) + 1);
}

static void attr_be32(struct msgbuf *m, __u16 type, __u32 v)
{
	v = htonl(v);
	attr(m, type, &v, sizeof(v));
}

/* Open a nested attribute: its offset, closed by nest_end(). */
static size_t nest(struct msgbuf *m, __u16 type)
{
	size_t at = m->len;
	struct nlattr a = { .nla_len = 0, .nla_type = type | NLA_F_NESTED };

	put(m, &a, sizeof(a));
	return at;
}

static void nest_end(struct msgbuf *m, size_t at)
{
	if (!m->err)
		((struct nlattr *)(m->b + at))->nla_len = m->len - at;
}

/* A message header and its nfgenmsg; closed by msg_end(). */
static size_t msg(struct msgbuf *m, __u16 type, __u16 flags, __u8 family, __u16 res_id)
{
	struct nlmsghdr h = { .nlmsg_type = type,
			      .nlmsg_flags = NLM_F_REQUEST | flags,
			      .nlmsg_seq = ++m->seq };
	struct nfgenmsg g = { .nfgen_family = family,
			      .version = NFNETLINK_V0,
			      .res_id = htons(res_id) };
	size_t at = m->len;

	put(m, &h, sizeof(h));
	put(m, &g, sizeof(g));
	return at;
}

static void msg_end(struct msgbuf *m, size_t at)
{
	if (!m->err)
		((struct nlmsghdr *)(m->b + at))->nlmsg_len = m->len - at;
}

static size_t nft_msg(struct msgbuf *m, __u8 family, int type, __u16 flags)
{
	return msg(m, (NFNL_SUBSYS_NFTABLES << 8) | type, flags | NLM_F_ACK, family, 0);
}

static void table_msg(struct msgbuf *m, __u8 family, int type, __u16 flags)
{
	size_t at = nft_msg(m, family, type, flags);

	attr_str(m, NFTA_TABLE_NAME, GUARD_TABLE);
	msg_end(m, at);
}

/* One expression: its name, then its data nest (closed by the caller). */
static size_t expr(struct msgbuf *m, const char *name, size_t *data)
{
	size_t at = nest(m, NFTA_LIST_ELEM);

	attr_str(m, NFTA_EXPR_NAME, name);
	*data = nest(m, NFTA_EXPR_DATA);
	return at;
}

static void expr_end(struct msgbuf *m, size_t at, size_t data)
{
	nest_end(m, data);
	nest_end(m, at);
}

static void data_value(struct msgbuf *m, __u16 type, const void *p, size_t n)
{
	size_t at = nest(m, type);

	attr(m, NFTA_DATA_VALUE, p, n);
	nest_end(m, at);
}

static void meta(struct msgbuf *m, __u32 key, int set)
{
	size_t e, d;

	e = expr(m, "meta", &d);
	attr_be32(m, NFTA_META_KEY, key);
	attr_be32(m, set ? NFTA_META_SREG : NFTA_META_DREG, NFT_REG_1);
	expr_end(m, e, d);
}

static void bitwise(struct msgbuf *m, __u32 mask)
{
	__u32 zero = 0;
	size_t e, d;

	e = expr(m, "bitwise", &d);
	attr_be32(m, NFTA_BITWISE_SREG, NFT_REG_1);
	attr_be32(m, NFTA_BITWISE_DREG, NFT_REG_1);
	attr_be32(m, NFTA_BITWISE_LEN, sizeof(__u32));
	data_value(m, NFTA_BITWISE_MASK, &mask,
		   sizeof(mask)); /* the register holds the mark as is */
	data_value(m, NFTA_BITWISE_XOR, &zero, sizeof(zero));
	expr_end(m, e, d);
}

static void immediate(struct msgbuf *m, int verdict)
{
	size_t e, d, v, c;

	e = expr(m, "immediate", &d);
	attr_be32(m, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
	v = nest(m, NFTA_IMMEDIATE_DATA);
	c = nest(m, NFTA_DATA_VERDICT);
	attr_be32(m, NFTA_VERDICT_CODE, verdict);
	nest_end(m, c);
	nest_end(m, v);
	expr_end(m, e, d);
}

static void cmp(struct msgbuf *m, int op, const void *p, size_t n)
{
	size_t e, d;

	e = expr(m, "cmp", &d);
	attr_be32(m, NFTA_CMP_SREG, NFT_REG_1);
	attr_be32(m, NFTA_CMP_OP, op);
	data_value(m, NFTA_CMP_DATA, p, n);
	expr_end(m, e, d);
}

static size_t rule_begin(struct msgbuf *m, __u8 family, size_t *list)
{
	size_t at = nft_msg(m, family, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND);

	attr_str(m, NFTA_RULE_TABLE, GUARD_TABLE);
	attr_str(m, NFTA_RULE_CHAIN, GUARD_CHAIN);
	*list = nest(m, NFTA_RULE_EXPRESSIONS);
	return at;
}

static void rule_end(struct msgbuf *m, size_t at, size_t list)
{
	nest_end(m, list);
	msg_end(m, at);
}

/* meta mark & mark != 0 meta mark set meta mark & ~mark accept */
static void rule_marked(struct msgbuf *m, __u8 family, __u32 mark)
{
	__u32 zero = 0;
	size_t at, list;

	at = rule_begin(m, family, &list);
	meta(m, NFT_META_MARK, 0);
	bitwise(m, mark);
	cmp(m, NFT_CMP_NEQ, &zero, sizeof(zero));
	meta(m, NFT_META_MARK, 0);
	bitwise(m, ~mark);
	meta(m, NFT_META_MARK, 1);
	immediate(m, NF_ACCEPT);
	rule_end(m, at, list);
}

/*
 * iifname "tap*" drop: the name's first bytes ("tap", as nft compiles a
 * wildcard), or the whole name with its NUL.
 */
static void rule_drop(struct msgbuf *m, __u8 family, const char *pat)
{
	char name[16] = "";
	size_t at, list, n = strlen(pat);

	snprintf(name, sizeof(name), "%s", pat);
	if (n && name[n - 1] == '*')
		n--;
	else
		n++;
	at = rule_begin(m, family, &list);
	meta(m, NFT_META_IIFNAME, 0);
	cmp(m, NFT_CMP_EQ, name, n);
	immediate(m, NF_DROP);
	rule_end(m, at, list);
}

static void chain(struct msgbuf *m, __u8 family)
{
	size_t at = nft_msg(m, family, NFT_MSG_NEWCHAIN, NLM_F_CREATE), hook;

	attr_str(m, NFTA_CHAIN_TABLE, GUARD_TABLE);
	attr_str(m, NFTA_CHAIN_NAME, GUARD_CHAIN);
	hook = nest(m, NFTA_CHAIN_HOOK);
	attr_be32(m, NFTA_HOOK_HOOKNUM, NF_PREROUTING);
	attr_be32(m, NFTA_HOOK_PRIORITY, (__u32)GUARD_PRIORITY);
	nest_end(m, hook);
	attr_be32(m, NFTA_CHAIN_POLICY, NF_ACCEPT);
	attr_str(m, NFTA_CHAIN_TYPE, "filter");
	msg_end(m, at);
}

static const __u8 families[] = { NFPROTO_INET, NFPROTO_BRIDGE };

/* Send the batch; 0 when every message was acknowledged, else the first error. */
static int run(struct msgbuf *m)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tmo = { .tv_sec = 2 };
	char buf[8192];
	int fd, err = 0, acks = 0, want = 0;
	struct nlmsghdr *h;
	ssize_t n;
	size_t off;

	if (m->err)
		return m->err;
	/* Every message but the batch begin and end asks for an ack. */
	for (off = 0; off < m->len; off += NLMSG_ALIGN(h->nlmsg_len)) {
		h = (struct nlmsghdr *)(m->b + off);
		want += !!(h->nlmsg_flags & NLM_F_ACK);
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (fd < 0)
		return -errno;
	/* An aborted batch need not acknowledge every message: never wait long for the rest. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	if (sendto(fd, m->b, m->len, 0, (struct sockaddr *)&sa, sizeof(sa)) != (ssize_t)m->len) {
		err = -errno;
		goto out;
	}
	while (acks < want && !err) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			err = -errno;
			break;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			acks++;
			if (tf_nl_error(h) && !err)
				err = tf_nl_error(h); /* a cut-short ack too: -EPROTO */
		}
	}
out:
	close(fd);
	return err;
}

int tf_guard_nft_here(const char (*pats)[16], unsigned int n, __u32 mark)
{
	struct msgbuf m = {};
	unsigned int f, i;
	size_t at;

	at = msg(&m, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	msg_end(&m, at);
	for (f = 0; f < sizeof(families); f++) {
		table_msg(&m, families[f], NFT_MSG_NEWTABLE, NLM_F_CREATE);
		table_msg(&m, families[f], NFT_MSG_DELTABLE, 0);
		table_msg(&m, families[f], NFT_MSG_NEWTABLE, NLM_F_CREATE);
		chain(&m, families[f]);
		rule_marked(&m, families[f], mark);
		for (i = 0; i < n; i++)
			rule_drop(&m, families[f], pats[i]);
	}
	at = msg(&m, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	msg_end(&m, at);
	return run(&m);
}

int tf_guard_nft_ensure_here(const char (*pats)[16], unsigned int n, __u32 mark, int *rewritten)
{
	struct msgbuf m = {};
	unsigned int f;
	int err;

	/* Both tables there (a GET of each, acknowledged): nothing to do. */
	for (f = 0; f < sizeof(families); f++)
		table_msg(&m, families[f], NFT_MSG_GETTABLE, 0);
	err = run(&m);
	*rewritten = 0;
	if (err != -ENOENT)
		return err;
	*rewritten = 1;
	return tf_guard_nft_here(pats, n, mark);
}

/* Remove them (0 if there were none). */
int tf_guard_nft_remove_here(void)
{
	struct msgbuf m = {};
	unsigned int f;
	size_t at;

	at = msg(&m, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	msg_end(&m, at);
	for (f = 0; f < sizeof(families); f++) {
		table_msg(&m, families[f], NFT_MSG_NEWTABLE, NLM_F_CREATE);
		table_msg(&m, families[f], NFT_MSG_DELTABLE, 0);
	}
	at = msg(&m, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	msg_end(&m, at);
	return run(&m);
}
