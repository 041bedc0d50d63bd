// SPDX-License-Identifier: GPL-2.0
/* Test that DNS queries and answers are judged by content and that only what the session's resolver answered to a query the guest made becomes reachable, for its TTL. */
/*
 * Two parts. First the parser (include/tapfence/dns.h) alone, in
 * userspace, on messages built byte by byte. Then the datapath through
 * BPF_PROG_TEST_RUN on the real object, loaded by tf_dp_open() without
 * pinning in a private network namespace, with sessions set up as the
 * daemon does (spec parser, policy compiler, map writers). Skb test runs
 * judge on ifindex 1 (net/bpf/test_run.c keeps the loopback device), so
 * the judged session sits on ifindex 1; session B on ifindex 2 only owns
 * addresses. Queries are judged by tc_from_guest and again by
 * xdp_from_guest.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <tapfence/abi.h>
#include <tapfence/dns.h>
#include "../fuzz/dns_walk.h"
#include "fixture.h"
#include "pkt.h"

#define R(x) TF_REASON_##x

/* ---- DNS messages, byte by byte ---------------------------------------- */

struct msg {
	__u8 b[4096];
	unsigned int len;
};

static void m_u8(struct msg *m, unsigned int v)
{
	if (m->len < sizeof(m->b))
		m->b[m->len++] = (__u8)v;
}

static void m_u16(struct msg *m, unsigned int v)
{
	m_u8(m, v >> 8);
	m_u8(m, v);
}

static void m_u32(struct msg *m, __u32 v)
{
	m_u16(m, v >> 16);
	m_u16(m, v & 0xffff);
}

static void m_hdr(struct msg *m, unsigned int id, unsigned int flags, unsigned int qd,
		  unsigned int an, unsigned int ns, unsigned int ar)
{
	m->len = 0;
	m_u16(m, id);
	m_u16(m, flags);
	m_u16(m, qd);
	m_u16(m, an);
	m_u16(m, ns);
	m_u16(m, ar);
}

/*
 * A name from a spec: dotted labels, then either the root label or, after
 * '@', a compression pointer to that offset: "www.github.com",
 * "cdn@12" (label cdn, then a pointer to 12), "@12", "" (the root).
 * Returns the offset it starts at.
 */
static unsigned int m_name(struct msg *m, const char *spec)
{
	unsigned int start = m->len;
	const char *p = spec, *at = strchr(spec, '@'), *end = at ? at : spec + strlen(spec);
	const char *dot;

	while (p < end) {
		dot = memchr(p, '.', (size_t)(end - p));
		if (!dot)
			dot = end;
		m_u8(m, (unsigned int)(dot - p));
		while (p < dot)
			m_u8(m, (unsigned char)*p++);
		p = dot < end ? dot + 1 : end;
	}
	if (at)
		m_u16(m, 0xc000 | (unsigned int)atoi(at + 1));
	else
		m_u8(m, 0);
	return start;
}

static void m_question(struct msg *m, const char *name, unsigned int type, unsigned int class)
{
	m_name(m, name);
	m_u16(m, type);
	m_u16(m, class);
}

/* A query as a stub resolver sends it: RD set, one question of class IN. */
static void m_query(struct msg *m, unsigned int id, const char *name, unsigned int type)
{
	m_hdr(m, id, 0x0100, 1, 0, 0, 0);
	m_question(m, name, type, DNS_C_IN);
}

/* An answer's header and question; records follow (ancount of them). */
static void m_answer(struct msg *m, unsigned int id, unsigned int flags, const char *qname,
		     unsigned int qtype, unsigned int ancount)
{
	m_hdr(m, id, 0x8180 | flags, 1, ancount, 0, 0);
	m_question(m, qname, qtype, DNS_C_IN);
}

static void m_rr(struct msg *m, const char *owner, unsigned int type, __u32 ttl, const __u8 *rd,
		 unsigned int rdlen)
{
	unsigned int i;

	m_name(m, owner);
	m_u16(m, type);
	m_u16(m, DNS_C_IN);
	m_u32(m, ttl);
	m_u16(m, rdlen);
	for (i = 0; i < rdlen; i++)
		m_u8(m, rd[i]);
}

static void m_a(struct msg *m, const char *owner, __u32 ttl, const char *addr)
{
	__u8 a[16];
	int fam = pk_addr(addr, a);

	m_rr(m, owner, fam == 4 ? DNS_T_A : DNS_T_AAAA, ttl, a, fam == 4 ? 4 : 16);
}

static void m_cname(struct msg *m, const char *owner, __u32 ttl, const char *target)
{
	unsigned int at;

	m_name(m, owner);
	m_u16(m, DNS_T_CNAME);
	m_u16(m, DNS_C_IN);
	m_u32(m, ttl);
	at = m->len;
	m_u16(m, 0);
	m_name(m, target);
	m->b[at] = (__u8)((m->len - at - 2) >> 8);
	m->b[at + 1] = (__u8)(m->len - at - 2);
}

/* An EDNS0 OPT pseudo-record (RFC 6891), UDP size 1232, in the additional section. */
static void m_opt(struct msg *m)
{
	m_u8(m, 0);
	m_u16(m, 41);
	m_u16(m, 1232);
	m_u32(m, 0);
	m_u16(m, 0);
}

static void m_set16(struct msg *m, unsigned int off, unsigned int v)
{
	m->b[off] = (__u8)(v >> 8);
	m->b[off + 1] = (__u8)v;
}

/* The reversed form of a dotted name, as host rules and tf_dnsq keep it. */
static unsigned int rev_of(const char *fwd, __u8 out[TF_DNS_NAME_MAX])
{
	size_t n = strlen(fwd), i;

	memset(out, 0, TF_DNS_NAME_MAX);
	for (i = 0; i < n; i++)
		out[i] = (__u8)fwd[n - 1 - i];
	out[n] = '.';
	return (unsigned int)n + 1;
}

/* ---- Part 1: the parser in userspace ------------------------------------ */

static struct dns_parse P;

/* Parse m as a copy of exactly m->len bytes, so a read past the end is an ASan error too. */
static int parse(const struct msg *m, int answer, const char *want_fwd, unsigned int want_qtype)
{
	__u8 want[TF_DNS_NAME_MAX];
	unsigned int wlen = want_fwd ? rev_of(want_fwd, want) : 0;
	__u8 *copy = malloc(m->len ? m->len : 1);
	int st;

	memcpy(copy, m->b, m->len);
	dns_parse_start(&P, (__u8)answer, want_fwd ? want : NULL, (__u16)wlen, (__u16)want_qtype);
	st = dns_parse_run(&P, copy, m->len);
	free(copy);
	return st;
}

static const char *fwd_name(const struct dns_parse *p, char *buf)
{
	unsigned int n = p->nchain ? p->chain_len[0] : 0;

	memcpy(buf, p->chain[0], n);
	buf[n] = '\0';
	return buf;
}

static const char *rev_name(const struct dns_parse *p, char *buf)
{
	memcpy(buf, p->rev, p->rev_len);
	buf[p->rev_len] = '\0';
	return buf;
}

enum qv {
	QV_PLAIN,
	QV_QD2, /* two questions */
	QV_QD0,
	QV_QR,	   /* a response sent by the guest */
	QV_OPCODE, /* opcode UPDATE */
	QV_TC,
	QV_AN1, /* an answer record in a query */
	QV_NS1,
	QV_OPT, /* EDNS0 OPT in the additional section: fine */
	QV_AR2,
	QV_CUT,	    /* the message stops inside the name */
	QV_NOTAIL,  /* no type and class after the name */
	QV_CH,	    /* class CHAOS */
	QV_LABEL40, /* an 0x40 extended label type */
	QV_HDRONLY, /* 12 bytes */
};

struct qcase {
	const char *desc;
	const char *name; /* a name spec, see m_name() */
	unsigned int qtype;
	enum qv v;
	int status;
	const char *rev; /* the reversed form, for DNS_OK */
};

static const char n63[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static char long247[256], long248[256], rev247[256];

static const struct qcase qcases[] = {
	{ "query github.com A", "github.com", DNS_T_A, QV_PLAIN, DNS_OK, "moc.buhtig." },
	{ "query www.GitHub.COM AAAA, lowered", "www.GitHub.COM", DNS_T_AAAA, QV_PLAIN, DNS_OK,
	  "moc.buhtig.www." },
	{ "query CNAME", "a.b", DNS_T_CNAME, QV_PLAIN, DNS_OK, "b.a." },
	{ "query a label with - and _", "_x-y.z9", DNS_T_A, QV_PLAIN, DNS_OK, "9z.y-x_." },
	{ "query with an EDNS0 OPT record", "github.com", DNS_T_A, QV_OPT, DNS_OK, "moc.buhtig." },
	{ "query TXT", "github.com", 16, QV_PLAIN, DNS_QTYPE, NULL },
	{ "query ANY", "github.com", 255, QV_PLAIN, DNS_QTYPE, NULL },
	{ "query NULL", "github.com", 10, QV_PLAIN, DNS_QTYPE, NULL },
	{ "query HTTPS", "github.com", 65, QV_PLAIN, DNS_QTYPE, NULL },
	{ "query SVCB", "github.com", 64, QV_PLAIN, DNS_QTYPE, NULL },
	{ "query MX", "github.com", 15, QV_PLAIN, DNS_QTYPE, NULL },
	{ "query class CHAOS", "version.bind", DNS_T_A, QV_CH, DNS_QTYPE, NULL },
	{ "query with two questions", "github.com", DNS_T_A, QV_QD2, DNS_MALFORMED, NULL },
	{ "query with no question", "github.com", DNS_T_A, QV_QD0, DNS_MALFORMED, NULL },
	{ "query with QR set", "github.com", DNS_T_A, QV_QR, DNS_MALFORMED, NULL },
	{ "query with opcode UPDATE", "github.com", DNS_T_A, QV_OPCODE, DNS_MALFORMED, NULL },
	{ "query with TC set", "github.com", DNS_T_A, QV_TC, DNS_MALFORMED, NULL },
	{ "query carrying an answer record", "github.com", DNS_T_A, QV_AN1, DNS_MALFORMED, NULL },
	{ "query carrying an authority record", "github.com", DNS_T_A, QV_NS1, DNS_MALFORMED,
	  NULL },
	{ "query with two additional records", "github.com", DNS_T_A, QV_AR2, DNS_MALFORMED, NULL },
	{ "query with a compressed name", "www@12", DNS_T_A, QV_PLAIN, DNS_MALFORMED, NULL },
	{ "query for the root", "", DNS_T_A, QV_PLAIN, DNS_MALFORMED, NULL },
	{ "query with a space in a label", "git hub.com", DNS_T_A, QV_PLAIN, DNS_MALFORMED, NULL },
	{ "query with a ! in a label", "github!.com", DNS_T_A, QV_PLAIN, DNS_MALFORMED, NULL },
	{ "query with a NUL in a label", "git\x01hub.com", DNS_T_A, QV_PLAIN, DNS_MALFORMED, NULL },
	{ "query cut inside its name", "github.com", DNS_T_A, QV_CUT, DNS_MALFORMED, NULL },
	{ "query without type and class", "github.com", DNS_T_A, QV_NOTAIL, DNS_MALFORMED, NULL },
	{ "query with a 0x40 label type", "github.com", DNS_T_A, QV_LABEL40, DNS_MALFORMED, NULL },
	{ "query of a bare header", "github.com", DNS_T_A, QV_HDRONLY, DNS_MALFORMED, NULL },
	{ "query of 247 name bytes", long247, DNS_T_A, QV_PLAIN, DNS_OK, rev247 },
	{ "query of 248 name bytes: too long", long248, DNS_T_A, QV_PLAIN, DNS_MALFORMED, NULL },
};

static void build_query(struct msg *m, const struct qcase *c)
{
	static const __u16 flags[] = { [QV_QR] = 0x8100, [QV_OPCODE] = 0x2900, [QV_TC] = 0x0300 };
	unsigned int f = c->v < sizeof(flags) / sizeof(flags[0]) && flags[c->v] ? flags[c->v] :
										  0x0100;

	m_hdr(m, 0x1234, f,
	      c->v == QV_QD2 ? 2 :
	      c->v == QV_QD0 ? 0 :
			       1,
	      c->v == QV_AN1, c->v == QV_NS1,
	      c->v == QV_OPT ? 1 :
	      c->v == QV_AR2 ? 2 :
			       0);
	if (c->v == QV_HDRONLY)
		return;
	if (c->v == QV_LABEL40) {
		m_u8(m, 0x41);
		m_u8(m, 'x');
	}
	m_question(m, c->name, c->qtype, c->v == QV_CH ? 3 : DNS_C_IN);
	if (c->v == QV_QD2)
		m_question(m, "example.org", DNS_T_A, DNS_C_IN);
	if (c->v == QV_OPT || c->v == QV_AR2)
		m_opt(m);
	if (c->v == QV_AR2)
		m_opt(m);
	if (c->v == QV_CUT)
		m->len = 12 + 4;
	if (c->v == QV_NOTAIL)
		m->len -= 4;
}

static void test_parse_queries(void)
{
	char what[160], buf[300];
	struct msg m;
	size_t i;
	int st;

	for (i = 0; i < sizeof(qcases) / sizeof(qcases[0]); i++) {
		build_query(&m, &qcases[i]);
		st = parse(&m, 0, NULL, 0);
		snprintf(what, sizeof(what), "parser: %s: status", qcases[i].desc);
		CHECK_EQ(what, st, qcases[i].status);
		if (qcases[i].status != DNS_OK)
			continue;
		snprintf(what, sizeof(what), "parser: %s: reversed form", qcases[i].desc);
		CHECK_STR(what, rev_name(&P, buf), qcases[i].rev);
		snprintf(what, sizeof(what), "parser: %s: id and type", qcases[i].desc);
		CHECK_EQ(what, P.id << 16 | P.qtype, 0x1234 << 16 | qcases[i].qtype);
	}
	m_query(&m, 1, "www.GitHub.com", DNS_T_A);
	parse(&m, 0, NULL, 0);
	CHECK_STR("parser: forward form of a query, lowered", fwd_name(&P, buf), "www.github.com");
	/*
	 * Bytes after the question would reach the resolver unjudged (a UDP GSO
	 * write can carry a second query there): only one exact EDNS0 OPT may follow.
	 */
	m_query(&m, 1, "a.b", DNS_T_A);
	m.len += 3;
	CHECK_EQ("parser: query with trailing bytes", parse(&m, 0, NULL, 0), DNS_MALFORMED);
	m_query(&m, 1, "a.b", DNS_T_A);
	m_set16(&m, 10, 1);
	m_opt(&m);
	CHECK_EQ("parser: query with an EDNS0 OPT record", parse(&m, 0, NULL, 0), DNS_OK);
	m.len += 1;
	CHECK_EQ("parser: query with a byte after its OPT record", parse(&m, 0, NULL, 0),
		 DNS_MALFORMED);
	m_query(&m, 1, "a.b", DNS_T_A);
	m_opt(&m);
	CHECK_EQ("parser: query with an OPT record arcount does not announce",
		 parse(&m, 0, NULL, 0), DNS_MALFORMED);
	m_query(&m, 1, "a.b", DNS_T_A);
	m_set16(&m, 10, 1);
	CHECK_EQ("parser: query whose announced OPT record is missing", parse(&m, 0, NULL, 0),
		 DNS_MALFORMED);
	m.len = TF_DNS_MSG_MAX + 1;
	CHECK_EQ("parser: query longer than TF_DNS_MSG_MAX", parse(&m, 0, NULL, 0), DNS_MALFORMED);
}

/* The addresses an answer parse collected, as "a/ttl,b/ttl"; "-" for none. */
static const char *recs(const struct dns_parse *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < p->nrec && o < len; i++) {
		inet_ntop(p->rec[i].family == TF_FAM_IPV4 ? AF_INET : AF_INET6, p->rec[i].addr, a,
			  sizeof(a));
		o += (size_t)snprintf(buf + o, len - o, "%s%s/%u", i ? "," : "", a, p->rec[i].ttl);
	}
	return o ? buf : "-";
}

static void check_answer(const char *desc, const struct msg *m, const char *want,
			 unsigned int qtype, int status, int matched, const char *learnt, int lost)
{
	static struct dns_parse ref;
	char what[200], buf[1024];
	__u8 rev[TF_DNS_NAME_MAX];
	int st = parse(m, 1, want, qtype);

	snprintf(what, sizeof(what), "parser: %s: the same with every owner walked", desc);
	dns_parse_walk_all(&ref, m->b, m->len, rev, (__u16)rev_of(want, rev), (__u16)qtype);
	CHECK_TRUE(what, dns_same_outcome(&P, &ref));

	snprintf(what, sizeof(what), "parser: %s: status", desc);
	CHECK_EQ(what, st, status);
	snprintf(what, sizeof(what), "parser: %s: matched", desc);
	CHECK_EQ(what, P.matched, matched);
	if (!learnt)
		return;
	snprintf(what, sizeof(what), "parser: %s: records", desc);
	CHECK_STR(what, recs(&P, buf, sizeof(buf)), learnt);
	snprintf(what, sizeof(what), "parser: %s: records lost", desc);
	CHECK_EQ(what, P.lost, lost);
}

/*
 * An answer to a.test: a CNAME whose target, b.x...x.a.test, follows jumps
 * pointers (through label fragments in the data of a record of type 99),
 * then an A record owned by a pointer to that target. Taken whole, the
 * owner follows the target's pointers and its own.
 */
static void m_jumpy(struct msg *m, unsigned int jumps)
{
	__u8 frag[4 * TF_DNS_JUMPS_MAX], target[4];
	unsigned int i, prev = TF_DNS_HDR_LEN, at;
	char owner[16];

	m_answer(m, 7, 0, "a.test", DNS_T_A, 3);
	at = m->len + 12; /* the data of a record owned by "@12" */
	for (i = 0; i + 1 < jumps; i++) {
		frag[4 * i] = 1;
		frag[4 * i + 1] = 'x';
		frag[4 * i + 2] = (__u8)(0xc0 | prev >> 8);
		frag[4 * i + 3] = (__u8)prev;
		prev = at + 4 * i;
	}
	m_rr(m, "@12", 99, 60, frag, 4 * (jumps - 1));
	at = m->len + 12;
	target[0] = 1;
	target[1] = 'b';
	target[2] = (__u8)(0xc0 | prev >> 8);
	target[3] = (__u8)prev;
	m_rr(m, "@12", DNS_T_CNAME, 300, target, sizeof(target));
	snprintf(owner, sizeof(owner), "@%u", at);
	m_a(m, owner, 60, "203.0.113.30");
}

static void test_parse_answers(void)
{
	struct msg m;
	unsigned int i, at;
	char a[32];

	m_answer(&m, 7, 0, "github.com", DNS_T_A, 1);
	m_a(&m, "@12", 60, "140.82.112.3");
	check_answer("one A record, owner compressed", &m, "github.com", DNS_T_A, DNS_OK, 1,
		     "140.82.112.3/60", 0);
	check_answer("same answer, another question stored", &m, "gitlab.com", DNS_T_A,
		     DNS_MISMATCH, 0, "-", 0);
	check_answer("same answer, AAAA stored", &m, "github.com", DNS_T_AAAA, DNS_MISMATCH, 0,
		     NULL, 0);
	check_answer("same answer, a parent name stored", &m, "com", DNS_T_A, DNS_MISMATCH, 0, NULL,
		     0);

	m_answer(&m, 7, 0, "GiThUb.CoM", DNS_T_A, 1);
	m_a(&m, "gItHuB.cOm", 60, "140.82.112.4");
	check_answer("0x20 case in question and owner", &m, "github.com", DNS_T_A, DNS_OK, 1,
		     "140.82.112.4/60", 0);

	m_answer(&m, 7, 0, "www.example.com", DNS_T_A, 5);
	m_cname(&m, "@12", 300, "cdn.example.net");
	m_a(&m, "unrelated.org", 60, "203.0.113.99");
	m_cname(&m, "cdn.example.net", 100, "edge@12"); /* edge.www.example.com */
	m_a(&m, "edge.www.example.com", 600, "203.0.113.10");
	m_a(&m, "@12", 30, "203.0.113.11");
	check_answer("CNAME chain, an unrelated record, TTL the chain's smallest", &m,
		     "www.example.com", DNS_T_A, DNS_OK, 1, "203.0.113.10/100,203.0.113.11/30", 0);

	m_answer(&m, 7, 0, "www.example.com", DNS_T_A, 2);
	m_a(&m, "cdn.example.net", 60, "203.0.113.12");
	m_cname(&m, "@12", 300, "cdn.example.net");
	check_answer("A record before the CNAME leading to it: not learnt", &m, "www.example.com",
		     DNS_T_A, DNS_OK, 1, "-", 0);

	m_answer(&m, 7, 0, "a.test", DNS_T_A, 5);
	m_cname(&m, "@12", 60, "b.test");
	m_cname(&m, "b.test", 60, "c.test");
	m_cname(&m, "c.test", 60, "d.test");
	m_cname(&m, "d.test", 60, "e.test");
	m_a(&m, "e.test", 60, "203.0.113.13");
	check_answer("CNAME chain longer than TF_DNS_CHAIN_MAX", &m, "a.test", DNS_T_A, DNS_OK, 1,
		     "-", 1);

	m_answer(&m, 7, 0, "a.test", DNS_T_A, 2);
	m_cname(&m, "@12", 60, "b!.test");
	m_a(&m, "b!.test", 60, "203.0.113.14");
	check_answer("CNAME to a name no host rule can be", &m, "a.test", DNS_T_A, DNS_OK, 1, "-",
		     1);

	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_rr(&m, "@12", 99, 60, (const __u8 *)"abcd", 4);
	check_answer("a record of another type is skipped", &m, "a.test", DNS_T_A, DNS_OK, 1, "-",
		     0);

	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 0x80000001u, "203.0.113.15");
	check_answer("a TTL with the top bit set is zero", &m, "a.test", DNS_T_A, DNS_OK, 1,
		     "203.0.113.15/0", 0);

	m_answer(&m, 7, 0, "a.test", DNS_T_A, TF_DNS_LEARN_MAX + 2);
	for (i = 0; i < TF_DNS_LEARN_MAX + 2; i++) {
		snprintf(a, sizeof(a), "203.0.113.%u", 100 + i);
		m_a(&m, "@12", 60, a);
	}
	check_answer("more address records than TF_DNS_LEARN_MAX", &m, "a.test", DNS_T_A, DNS_OK, 1,
		     NULL, 0);
	CHECK_EQ("parser: more than TF_DNS_LEARN_MAX: collected", P.nrec, TF_DNS_LEARN_MAX);
	CHECK_EQ("parser: more than TF_DNS_LEARN_MAX: lost", P.lost, 1);

	m_answer(&m, 7, 0, "a.test", DNS_T_A, TF_DNS_RR_MAX + 1);
	for (i = 0; i < TF_DNS_RR_MAX + 1; i++)
		m_rr(&m, "@12", 99, 60, (const __u8 *)"", 0);
	check_answer("more answer records than TF_DNS_RR_MAX", &m, "a.test", DNS_T_A, DNS_OK, 1,
		     "-", 1);

	m_answer(&m, 7, 0, "a.test", DNS_T_AAAA, 1);
	m_a(&m, "@12", 60, "2001:db8::7");
	m_set16(&m, 10, 1); /* arcount */
	m_opt(&m);
	check_answer("AAAA with an EDNS0 OPT record", &m, "a.test", DNS_T_AAAA, DNS_OK, 1,
		     "2001:db8::7/60", 0);

	m_answer(&m, 7, 3, "a.test", DNS_T_A, 0); /* NXDOMAIN */
	check_answer("NXDOMAIN", &m, "a.test", DNS_T_A, DNS_OK, 1, "-", 0);
	m_answer(&m, 7, 0x0200, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.16");
	check_answer("TC set", &m, "a.test", DNS_T_A, DNS_TRUNCATED, 1, "-", 0);

	/* Compression: loops, forward pointers, pointers into the header, chains */
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	at = m.len;
	m_u16(&m, 0xc000 | at); /* points at itself */
	m_u16(&m, DNS_T_A);
	check_answer("owner pointing at itself", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	at = m.len;
	m_u8(&m, 1);
	m_u8(&m, 'x');
	m_u16(&m, 0xc000 | at); /* x, then back to x: a loop */
	check_answer("owner looping through a label", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL,
		     0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_u16(&m, 0xc000 | (m.len + 2)); /* forward */
	m_name(&m, "a.test");
	check_answer("owner pointing forward", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@4", 60, "203.0.113.17");
	check_answer("owner pointing into the header", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1,
		     NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 3);
	m_cname(&m, "@12", 60, "b@14"); /* b.test */
	at = m.len;
	m_rr(&m, "@12", 99, 60, (const __u8 *)"", 0);
	m.b[at] = 0xc0; /* owner: a pointer to the CNAME's target, itself ending in a pointer */
	m.b[at + 1] = (__u8)(at - 4);
	m_a(&m, "b@14", 60, "203.0.113.18");
	check_answer("pointer to a name ending in a pointer", &m, "a.test", DNS_T_A, DNS_OK, 1,
		     "203.0.113.18/60", 0);
	m_jumpy(&m, TF_DNS_JUMPS_MAX - 1);
	check_answer("owner: a pointer to a target of TF_DNS_JUMPS_MAX - 1 pointers", &m, "a.test",
		     DNS_T_A, DNS_OK, 1, "203.0.113.30/60", 0);
	m_jumpy(&m, TF_DNS_JUMPS_MAX);
	check_answer("owner: a pointer to a target of TF_DNS_JUMPS_MAX pointers: one too many", &m,
		     "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 2);
	at = m.len + 12;
	m_cname(&m, "@12", 30, "@12");
	snprintf(a, sizeof(a), "@%u", at);
	m_a(&m, a, 60, "203.0.113.31");
	/* Owned by the asked name (the first chain name it equals): the CNAME's TTL not taken. */
	check_answer("a CNAME to the asked name, an A record owned by a pointer to its target", &m,
		     "a.test", DNS_T_A, DNS_OK, 1, "203.0.113.31/60", 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.19");
	m.b[m.len - 4 - 10 - 2] = 0x80; /* the pointer's first byte: label type 0x80 */
	check_answer("owner with an 0x80 label type", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL,
		     0);

	/* Truncations and lengths */
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.20");
	m.len -= 1;
	check_answer("A record cut short", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 2);
	m_a(&m, "@12", 60, "203.0.113.21");
	check_answer("fewer records than ancount", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL,
		     0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_rr(&m, "@12", DNS_T_A, 60, (const __u8 *)"\xcb\x00\x71\x16\x00", 5);
	check_answer("A record of 5 bytes", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	m_cname(&m, "@12", 60, "b.test");
	m.b[m.len - 8 - 1] += 1; /* rdlength one more than the target */
	m_u8(&m, 0);
	check_answer("CNAME whose target does not fill its data", &m, "a.test", DNS_T_A,
		     DNS_MALFORMED, 1, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 0);
	m_set16(&m, 2, 0x0100); /* QR clear */
	check_answer("answer without QR", &m, "a.test", DNS_T_A, DNS_MALFORMED, 0, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 0);
	m_set16(&m, 4, 0);
	check_answer("answer without a question", &m, "a.test", DNS_T_A, DNS_MALFORMED, 0, NULL, 0);
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 0);
	m.len = TF_DNS_MSG_MAX + 1;
	check_answer("answer longer than TF_DNS_MSG_MAX", &m, "a.test", DNS_T_A, DNS_MALFORMED, 0,
		     NULL, 0);

	/* A name at the wire limit: 255 bytes (4 labels of 63, a 59, root) */
	m_answer(&m, 7, 0, "a.test", DNS_T_A, 1);
	for (i = 0; i < 3; i++) {
		m_u8(&m, 63);
		for (at = 0; at < 63; at++)
			m_u8(&m, 'a');
	}
	m_u8(&m, 61);
	for (at = 0; at < 61; at++)
		m_u8(&m, 'b');
	m_u8(&m, 0);
	m_u16(&m, 99);
	m_u16(&m, DNS_C_IN);
	m_u32(&m, 60);
	m_u16(&m, 0);
	check_answer("owner of 255 wire bytes", &m, "a.test", DNS_T_A, DNS_OK, 1, "-", 0);
	m.b[12 + 8 + 4 + 3 * 64] = 62; /* the 61-byte label claims 62: 256 wire bytes */
	check_answer("owner of 256 wire bytes", &m, "a.test", DNS_T_A, DNS_MALFORMED, 1, NULL, 0);
}

/* ---- Part 2: the datapath ----------------------------------------------- */

#define IFINDEX_B 2
#define SID_A	  1
#define SID_B	  2
#define SID_C	  3

#define B6 "2001:db8:b::2" /* session B's guest: another session's address */

/* Session A: host rules, one CIDR rule, the resolver at the gateway over IPv4. */
static const char spec_a[] = SPEC_A_HEAD "'allow':["
					 "{'host':'github.com','proto':'tcp','ports':[443]},"
					 "{'host':'*.npmjs.org','proto':'tcp','ports':[443]},"
					 "{'host':'example.com','proto':'tcp','ports':[80]},"
					 "{'host':'*.example.com','proto':'tcp','ports':[8080]},"
					 "{'host':'a.test','proto':'tcp','ports':[443]},"
					 "{'cidr':'198.51.100.0/24','proto':'tcp','ports':[22]}]}";

static const char spec_b[] =
	"{'id':'b','ifname':'tap-b',"
	"'guest':{'mac':'02:00:00:00:00:12','ipv4':'10.20.0.2','ipv6':'" B6 "'},"
	"'gateway':{'mac':'02:00:00:00:00:11','ipv4':'10.20.0.1','ipv6':'2001:db8:b::1'},"
	"'allow':[]}";

/* Session C: IPv6 only, resolver at the gateway's global address. */
static const char spec_c[] = "{'id':'c','ifname':'tap-c',"
			     "'guest':{'mac':'" GMAC "','ipv6':'" G6 "'},"
			     "'gateway':{'mac':'" HMAC "','ipv6':'" GW6 "'},"
			     "'resolver':{'ipv6':'" GW6 "'},"
			     "'allow':[{'host':'github.com','proto':'tcp','ports':[443]}]}";

/* An operator exception to the floor: answers in it are learnt. */
static const char operator_config[] = "{'floor':{'exceptions':['10.99.0.0/16']}}";

/* Ethernet + IPv4/IPv6 + UDP carrying m; from the guest or to it. */
static void fr_udp(struct frame *f, int to_guest, const char *src, const char *dst, unsigned int sp,
		   unsigned int dp, const struct msg *m)
{
	__u8 s[16], d[16];
	int fam = pk_addr(src, s);
	unsigned int ip = fam == 4 ? 20 : 40, o = 14, ul = 8 + m->len;

	pk_addr(dst, d);
	memset(f->d, 0, 14 + ip + 8);
	pk_mac(to_guest ? GMAC : HMAC, f->d);
	pk_mac(to_guest ? HMAC : GMAC, f->d + 6);
	pk_put16(f->d + 12, fam == 4 ? 0x0800 : 0x86dd);
	if (fam == 4) {
		f->d[o] = 0x45;
		pk_put16(f->d + o + 2, ip + ul);
		f->d[o + 8] = 64;
		f->d[o + 9] = IPPROTO_UDP;
		memcpy(f->d + o + 12, s, 4);
		memcpy(f->d + o + 16, d, 4);
	} else {
		f->d[o] = 0x60;
		pk_put16(f->d + o + 4, ul);
		f->d[o + 6] = IPPROTO_UDP;
		f->d[o + 7] = 64;
		memcpy(f->d + o + 8, s, 16);
		memcpy(f->d + o + 24, d, 16);
	}
	o += ip;
	pk_put16(f->d + o, sp);
	pk_put16(f->d + o + 2, dp);
	pk_put16(f->d + o + 4, ul);
	memcpy(f->d + o + 8, m->b, m->len);
	f->len = o + 8 + m->len;
}

/* A TCP packet from the guest (flags PK_SYN, PK_ACK ...). */
static void fr_tcp(struct frame *f, const char *src, const char *dst, unsigned int sp,
		   unsigned int dp, __u8 flags)
{
	struct pk p = { .src = src,
			.dst = dst,
			.proto = IPPROTO_TCP,
			.sport = (__u16)sp,
			.dport = (__u16)dp,
			.flags = flags };
	struct pk_frame pf;

	if (pk_build(&p, GMAC, HMAC, &pf)) {
		f->len = 0;
		return;
	}
	memcpy(f->d, pf.data, pf.len);
	f->len = pf.len;
}

static void fr_udp_plain(struct frame *f, const char *src, const char *dst, unsigned int sp,
			 unsigned int dp)
{
	struct msg m = { .len = 4 };

	fr_udp(f, 0, src, dst, sp, dp, &m);
}

static void query(struct env *e, const char *desc, unsigned int gport, unsigned int id,
		  const char *name, unsigned int qtype, int allow, const char *counters,
		  const char *events)
{
	struct frame f;
	struct msg m;

	m_query(&m, id, name, qtype);
	fr_udp(&f, 0, G4, GW4, gport, 53, &m);
	judge(e, FROM, &f, desc, allow, counters, events);
}

static void answer(struct env *e, const char *desc, unsigned int gport, const struct msg *m,
		   int allow, const char *counters, const char *events)
{
	struct frame f;

	fr_udp(&f, 1, GW4, G4, 53, gport, m);
	judge(e, TO, &f, desc, allow, counters, events);
}

static void syn(struct env *e, const char *desc, const char *dst, unsigned int dport, int allow,
		const char *counters)
{
	struct frame f;

	fr_tcp(&f, strchr(dst, ':') ? G6 : G4, dst, 50000, dport, PK_SYN);
	judge(e, FROM, &f, desc, allow, counters, NULL);
}

static int learned_get(struct env *e, __u32 sid, const char *addr, struct tf_learned *v)
{
	struct tf_learn_key k = { .sid = sid };

	k.family = (__u8)pk_addr(addr, k.addr);
	return slot_op(e, TF_SLOT_LEARNED, sid, BPF_MAP_LOOKUP_ELEM, &k, v);
}

static int dnsq_get(struct env *e, __u32 sid, unsigned int gport, unsigned int id,
		    struct tf_dnsq *v)
{
	struct tf_dnsq_key k = { .sid = sid, .gport = htons((__u16)gport), .id = htons((__u16)id) };

	return slot_op(e, TF_SLOT_DNSQ, sid, BPF_MAP_LOOKUP_ELEM, &k, v);
}

/* Seconds until a learnt address expires, rounded; -1 if it is not learnt. */
static long learned_ttl(struct env *e, const char *addr)
{
	struct tf_learned v;

	if (learned_get(e, SID_A, addr, &v))
		return -1;
	return (long)((v.expires_ns - now_ns() + 500000000ULL) / 1000000000ULL);
}

/* Seconds until session A's binding of addr to name ends, rounded; -1 if there is none. */
static long bind_ttl(struct env *e, const char *addr, const char *name)
{
	struct tf_bind_key k = { 0 };
	__u64 exp;

	k.family = (__u8)pk_addr(addr, k.addr);
	rev_of(name, k.name);
	if (slot_op(e, TF_SLOT_TLSBIND, SID_A, BPF_MAP_LOOKUP_ELEM, &k, &exp))
		return -1;
	return (long)((exp - now_ns() + 500000000ULL) / 1000000000ULL);
}

/*
 * An answer for name with one A record addr at ttl, to a query it answers
 * (gport and id 41070 + i, 0x2070 + i).
 */
static void learn_once(struct env *e, unsigned int i, const char *name, const char *addr, __u32 ttl,
		       const char *desc)
{
	struct msg m;

	query(e, desc, 41070 + i, 0x2070 + i, name, DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2070 + i, 0, name, DNS_T_A, 1);
	m_a(&m, "@12", ttl, addr);
	answer(e, desc, 41070 + i, &m, 1, "allow_dns_answer+1", NULL);
}

/*
 * An answer repeating an address already learnt for the same name is
 * refreshed in place (dns_learn_one()): its TTL still rules, shorter or
 * longer, for the address and for its binding; the same address answered
 * for another name is learnt anew, and each name keeps its binding.
 */
static void test_refresh(struct env *e)
{
	const char *a = "203.0.113.90";
	struct tf_learned l;
	__u8 rev[TF_DNS_NAME_MAX];

	learn_once(e, 0, "a.test", a, 100, "a.test at 203.0.113.90, TTL 100");
	CHECK_EQ("learnt for 100 s", learned_ttl(e, a), 100);
	CHECK_EQ("bound to a.test for 100 s", bind_ttl(e, a, "a.test"), 100);
	learn_once(e, 1, "a.test", a, 10, "the same answer, TTL 10");
	CHECK_EQ("refreshed to 10 s: a shorter TTL shortens it", learned_ttl(e, a), 10);
	CHECK_EQ("its binding refreshed to 10 s", bind_ttl(e, a, "a.test"), 10);
	learn_once(e, 2, "a.test", a, 3000, "the same answer, TTL 3000");
	CHECK_EQ("refreshed to 3000 s", learned_ttl(e, a), 3000);
	CHECK_EQ("its binding refreshed to 3000 s", bind_ttl(e, a, "a.test"), 3000);
	learn_once(e, 3, "github.com", a, 20, "github.com at the same address, TTL 20");
	CHECK_EQ("learnt anew for 20 s", learned_ttl(e, a), 20);
	CHECK_EQ("with github.com's name", learned_get(e, SID_A, a, &l), 0);
	rev_of("github.com", rev);
	CHECK_FIELD("with github.com's name", l, name_len, 11);
	CHECK_MEM("with github.com's name: the name", l.name, rev, 11);
	CHECK_EQ("bound to github.com for 20 s", bind_ttl(e, a, "github.com"), 20);
	CHECK_EQ("still bound to a.test for 3000 s", bind_ttl(e, a, "a.test"), 3000);
	learn_once(e, 4, "github.com", a, 40, "github.com again, TTL 40");
	CHECK_EQ("refreshed to 40 s", learned_ttl(e, a), 40);
	CHECK_EQ("github.com's binding refreshed to 40 s", bind_ttl(e, a, "github.com"), 40);
	CHECK_EQ("a.test's binding untouched", bind_ttl(e, a, "a.test"), 3000);
}

/* ---- step tables ---------------------------------------------------------------- */

/* An answer's record: an A or AAAA (data an address) or a CNAME (data a name). */
struct rr {
	unsigned int type; /* 0 ends the list; DNS_T_A for an address of either family */
	const char *owner;
	__u32 ttl;
	const char *data;
};

enum step_kind { S_QUERY, S_ANSWER, S_TCP, S_UDP, S_LEARNT };

/*
 * One step of a DNS scenario: a frame and what must come of it (verdict,
 * counters, events), or a look at what the session learnt.
 *   S_QUERY:  the guest's query id for name (qtype) from port gport.
 *   S_ANSWER: the resolver's answer id to port gport for name (qtype), the
 *             header flags 0x8180 | flags, records rr.
 *   S_TCP:    the guest's TCP segment (flags) from port gport to addr:port.
 *   S_UDP:    the guest's 4-byte datagram from port gport to addr:port.
 *   S_LEARNT: addr is learnt for ttl seconds (-1: not learnt).
 */
struct step {
	enum step_kind kind;
	const char *desc;
	unsigned int gport, id;
	const char *name;
	unsigned int qtype, flags; /* S_TCP: the TCP flags */
	struct rr rr[8];
	const char *addr;
	unsigned int port;
	long ttl;
	struct expect x;
};

#define QUERY(d, gp, i, n, t, ...)                                                            \
	{                                                                                     \
		S_QUERY, d, .gport = gp, .id = i, .name = n, .qtype = t, .x = { __VA_ARGS__ } \
	}
#define ANSWER(d, gp, i, fl, n, t, recs, ...)                                          \
	{                                                                              \
		S_ANSWER, d, .gport = gp, .id = i, .name = n, .qtype = t, .flags = fl, \
			     .rr = { UNPAREN recs },                                   \
			     .x = { __VA_ARGS__ }                                      \
	}
#define TCP_TO(d, gp, a, p, fl, ...)                                                           \
	{                                                                                      \
		S_TCP, d, .gport = gp, .addr = a, .port = p, .flags = fl, .x = { __VA_ARGS__ } \
	}
#define SYN_TO(d, a, p, ...) TCP_TO(d, 50000, a, p, PK_SYN, __VA_ARGS__)
#define UDP_TO(d, gp, a, p, ...)                                                  \
	{                                                                         \
		S_UDP, d, .gport = gp, .addr = a, .port = p, .x = { __VA_ARGS__ } \
	}
#define LEARNT(d, a, t)                          \
	{                                        \
		S_LEARNT, d, .addr = a, .ttl = t \
	}
#define UNPAREN(...) __VA_ARGS__
#define A(owner, ttl, addr)               \
	{                                 \
		DNS_T_A, owner, ttl, addr \
	}
#define CNAME(owner, ttl, target)               \
	{                                       \
		DNS_T_CNAME, owner, ttl, target \
	}

/* The guest and its resolver, as the session under test has them. */
struct peers {
	const char *guest, *resolver;
};

static const struct peers v4 = { G4, GW4 }, v6 = { G6, GW6 };

static void step_answer(struct msg *m, const struct step *s)
{
	unsigned int n = 0, i;

	while (n < N(s->rr) && s->rr[n].type)
		n++;
	m_answer(m, s->id, s->flags, s->name, s->qtype, n);
	for (i = 0; i < n; i++) {
		if (s->rr[i].type == DNS_T_CNAME)
			m_cname(m, s->rr[i].owner, s->rr[i].ttl, s->rr[i].data);
		else
			m_a(m, s->rr[i].owner, s->rr[i].ttl, s->rr[i].data);
	}
}

static void run_steps(struct env *e, const struct peers *p, const struct step *s, size_t n)
{
	struct frame f;
	struct msg m;
	size_t i;

	for (i = 0; i < n; i++, s++) {
		switch (s->kind) {
		case S_QUERY:
			m_query(&m, s->id, s->name, s->qtype);
			fr_udp(&f, 0, p->guest, p->resolver, s->gport, 53, &m);
			judge_expect(e, FROM, &f, s->desc, &s->x);
			break;
		case S_ANSWER:
			step_answer(&m, s);
			fr_udp(&f, 1, p->resolver, p->guest, 53, s->gport, &m);
			judge_expect(e, TO, &f, s->desc, &s->x);
			break;
		case S_TCP:
			fr_tcp(&f, strchr(s->addr, ':') ? G6 : G4, s->addr, s->gport, s->port,
			       (__u8)s->flags);
			judge_expect(e, FROM, &f, s->desc, &s->x);
			break;
		case S_UDP:
			fr_udp_plain(&f, strchr(s->addr, ':') ? G6 : G4, s->addr, s->gport,
				     s->port);
			judge_expect(e, FROM, &f, s->desc, &s->x);
			break;
		case S_LEARNT:
			CHECK_EQ(s->desc, learned_ttl(e, s->addr), s->ttl);
			break;
		}
	}
}

/* Queries, in order: the names and types that go out or not. */
static const struct step q_first[] = {
	QUERY("query github.com", 40001, 0x1111, "github.com", DNS_T_A, 1, "allow_dns+1",
	      "allow_dns[github.com]"),
};
static const struct step q_names[] = {
	QUERY("query GitHub.COM, mixed case", 40002, 0x1112, "GitHub.COM", DNS_T_AAAA, 1,
	      "allow_dns+1", "allow_dns[github.com]"),
	QUERY("query github.com CNAME", 40003, 0x1113, "github.com", DNS_T_CNAME, 1, "allow_dns+1",
	      NULL),
	QUERY("query www.github.com: only github.com itself is allowed", 40004, 0x1114,
	      "www.github.com", DNS_T_A, 0, "dns_name_denied+1", "dns_name_denied[www.github.com]"),
	QUERY("query gitlab.com", 40005, 0x1115, "gitlab.com", DNS_T_A, 0, "dns_name_denied+1",
	      "dns_name_denied[gitlab.com]"),
	QUERY("query npmjs.org: *.npmjs.org is only below it", 40006, 0x1116, "npmjs.org", DNS_T_A,
	      0, "dns_name_denied+1", NULL),
	QUERY("query registry.npmjs.org", 40007, 0x1117, "registry.npmjs.org", DNS_T_A, 1,
	      "allow_dns+1", "allow_dns[registry.npmjs.org]"),
};
static const struct step q_wild[] = {
	QUERY("query a.b.npmjs.org", 40008, 0x1118, "a.b.npmjs.org", DNS_T_A, 1, "allow_dns+1",
	      NULL),
	QUERY("query evilnpmjs.org", 40009, 0x1119, "evilnpmjs.org", DNS_T_A, 0,
	      "dns_name_denied+1", NULL),
	QUERY("query example.com (exact rule)", 40010, 0x111a, "example.com", DNS_T_A, 1,
	      "allow_dns+1", NULL),
	QUERY("query www.example.com (wildcard rule)", 40011, 0x111b, "www.example.com", DNS_T_A, 1,
	      "allow_dns+1", NULL),
	QUERY("query a.b.example.com", 40012, 0x111c, "a.b.example.com", DNS_T_A, 1, "allow_dns+1",
	      NULL),
	QUERY("query evilexample.com", 40013, 0x111d, "evilexample.com", DNS_T_A, 0,
	      "dns_name_denied+1", "dns_name_denied[evilexample.com]"),
	QUERY("query example.com.evil.org", 40014, 0x111e, "example.com.evil.org", DNS_T_A, 0,
	      "dns_name_denied+1", NULL),
	QUERY("query com", 40015, 0x111f, "com", DNS_T_A, 0, "dns_name_denied+1", NULL),
	QUERY("query github.com TXT", 40016, 0x1120, "github.com", 16, 0, "dns_qtype+1",
	      "dns_qtype[github.com]"),
	QUERY("query github.com ANY", 40017, 0x1121, "github.com", 255, 0, "dns_qtype+1", NULL),
	QUERY("query github.com NULL", 40018, 0x1122, "github.com", 10, 0, "dns_qtype+1", NULL),
	QUERY("query github.com HTTPS", 40019, 0x1123, "github.com", 65, 0, "dns_qtype+1", NULL),
	QUERY("query github.com SVCB", 40020, 0x1124, "github.com", 64, 0, "dns_qtype+1", NULL),
	QUERY("query a name with a bad byte", 40021, 0x1125, "git!hub.com", DNS_T_A, 0,
	      "dns_malformed+1", "dns_malformed[]"), /* no name that is not a host name */
};

/* The same port again: every query is judged, not just a flow's first. */
static const struct step q_again[] = {
	QUERY("second query on an allowed port, for a denied name", 40001, 0x112b, "gitlab.com",
	      DNS_T_A, 0, "dns_name_denied+1", NULL),
	QUERY("third query on that port, allowed", 40001, 0x112c, "github.com", DNS_T_A, 1,
	      "allow_dns+1", NULL),
};

/* DNS anywhere else */
static const struct step q_elsewhere[] = {
	TCP_TO("TCP SYN to the resolver's port", 40030, GW4, 53, PK_SYN, 0, "dns_tcp+1",
	       "dns_tcp[]"),
	TCP_TO("TCP ACK to the resolver's port", 40030, GW4, 53, PK_ACK, 0, "dns_tcp+1", NULL),
	UDP_TO("UDP to 8.8.8.8:53", 40031, "8.8.8.8", 53, 0, "dns_not_resolver+1", NULL),
	TCP_TO("DNS over TLS to 1.1.1.1:853", 40032, "1.1.1.1", 853, PK_SYN, 0,
	       "dns_not_resolver+1", NULL),
	TCP_TO("DNS over TLS to the resolver", 40033, GW4, 853, PK_SYN, 0, "dns_not_resolver+1",
	       NULL),
	UDP_TO("DNS over QUIC to 1.1.1.1:853", 40034, "1.1.1.1", 853, 0, "dns_not_resolver+1",
	       NULL),
	UDP_TO("mDNS", 5353, "224.0.0.251", 5353, 0, "dns_not_resolver+1", NULL),
	UDP_TO("LLMNR", 40035, "224.0.0.252", 5355, 0, "dns_not_resolver+1", NULL),
	UDP_TO("LLMNR over IPv6", 40036, "ff02::1:3", 5355, 0, "dns_not_resolver+1", NULL),
};

/* Queries: which names, types and shapes go out. Run with TC and with XDP. */
static void test_queries(struct env *e)
{
	struct tf_dnsq q;
	struct frame f;
	struct msg m;
	char what[128];
	__u8 rev[TF_DNS_NAME_MAX];

	run_steps(e, &v4, q_first, N(q_first));
	snprintf(what, sizeof(what), "%s: the query is outstanding", prog_name(e, FROM));
	CHECK_EQ(what, dnsq_get(e, SID_A, 40001, 0x1111, &q), 0);
	snprintf(what, sizeof(what), "%s: outstanding query (TLS on 443)", prog_name(e, FROM));
	rev_of("github.com", rev);
	CHECK_FIELD(what, q, name_len, 11);
	CHECK_MEM(what, q.name, rev, 11);
	CHECK_FIELD(what, q, qtype, DNS_T_A);
	CHECK_FIELD(what, q, perm.protos, TF_PB_TCP | TF_PB_TLS);
	CHECK_FIELD(what, q, sub, 0);
	CHECK_FIELD(what, q, ver, 1);
	run_steps(e, &v4, q_names, N(q_names));
	snprintf(what, sizeof(what), "%s: a wildcard's query is recorded as below its entry",
		 prog_name(e, FROM));
	CHECK_EQ(what, dnsq_get(e, SID_A, 40007, 0x1117, &q), 0);
	CHECK_FIELD(what, q, sub, 1);
	run_steps(e, &v4, q_wild, N(q_wild));

	m_hdr(&m, 0x1126, 0x0100, 2, 0, 0, 0);
	m_question(&m, "github.com", DNS_T_A, DNS_C_IN);
	m_question(&m, "gitlab.com", DNS_T_A, DNS_C_IN);
	fr_udp(&f, 0, G4, GW4, 40022, 53, &m);
	judge(e, FROM, &f, "query with two questions", 0, "dns_malformed+1", NULL);
	m_hdr(&m, 0x1127, 0x0100, 1, 0, 0, 0);
	m_question(&m, "www@12", DNS_T_A, DNS_C_IN);
	fr_udp(&f, 0, G4, GW4, 40023, 53, &m);
	judge(e, FROM, &f, "query with compression", 0, "dns_malformed+1", NULL);
	m_hdr(&m, 0x1128, 0x0100, 1, 0, 0, 1);
	m_question(&m, "github.com", DNS_T_A, DNS_C_IN);
	m_opt(&m);
	fr_udp(&f, 0, G4, GW4, 40024, 53, &m);
	judge(e, FROM, &f, "query with EDNS0", 1, "allow_dns+1", NULL);
	m.len = 11;
	fr_udp(&f, 0, G4, GW4, 40025, 53, &m);
	judge(e, FROM, &f, "query of 11 bytes", 0, "dns_malformed+1", NULL);
	m_query(&m, 0x1129, "github.com", DNS_T_A);
	fr_udp(&f, 0, G4, GW4, 40026, 53, &m);
	pk_put16(f.d + 14 + 20 + 4, 8 + m.len + 1); /* UDP length past the IP packet */
	judge(e, FROM, &f, "query whose UDP length exceeds the IP packet", 0, "dns_malformed+1",
	      NULL);
	m_query(&m, 0x112a, "github.com", DNS_T_A);
	m.len = TF_DNS_MSG_MAX + 1;
	fr_udp(&f, 0, G4, GW4, 40027, 53, &m);
	judge(e, FROM, &f, "query longer than TF_DNS_MSG_MAX", 0, "dns_malformed+1", NULL);

	run_steps(e, &v4, q_again, N(q_again));
	run_steps(e, &v4, q_elsewhere, N(q_elsewhere));
}

static void tf_learned_del(struct env *e, const char *addr)
{
	struct tf_learn_key k = { .sid = SID_A };

	k.family = (__u8)pk_addr(addr, k.addr);
	slot_op(e, TF_SLOT_LEARNED, SID_A, BPF_MAP_DELETE_ELEM, &k, NULL);
}

/*
 * Per-session DNS tables: session A flooding queries (more than its table
 * holds) evicts only its own oldest entries; B's outstanding query and
 * learnt address stay.
 */
/*
 * tf_dp_learned() reads a table in batches (`session show', `top'): every
 * entry once, across batches, none of an empty table, and it stops at the
 * callback's first non-zero.
 */
#define WALK_N 700

struct walk {
	__u32 sid, n, bad, stop_at;
	__u8 seen[WALK_N];
};

static int walk_one(const struct tf_learn_key *k, const struct tf_learned *v, void *ctx)
{
	struct walk *w = ctx;
	__u32 i = (__u32)k->addr[2] << 8 | k->addr[3];

	(void)v;
	if (k->sid != w->sid || k->family != TF_FAM_IPV4 || i >= WALK_N || w->seen[i]++)
		w->bad++;
	return ++w->n == w->stop_at ? 7 : 0;
}

static void test_learned_walk(struct env *e, __u32 sid)
{
	struct tf_learn_key k = { .sid = sid, .family = TF_FAM_IPV4, .addr = { 10, 99 } };
	struct tf_learned l = { .expires_ns = now_ns() + 60 * 1000000000ULL };
	int fd = tf_dp_slot_open(&e->dp, TF_SLOT_LEARNED, sid);
	struct walk w = { .sid = sid };
	unsigned int i, added = 0;

	CHECK_TRUE("learnt-address walk: the table opens", fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ("learnt-address walk: an empty table", tf_dp_learned(&e->dp, sid, walk_one, &w),
		 0);
	CHECK_EQ("learnt-address walk: ... gives no entry", w.n, 0);
	for (i = 0; i < WALK_N; i++) {
		k.addr[2] = i >> 8;
		k.addr[3] = i & 0xff;
		added += !bpf_map_update_elem(fd, &k, &l, BPF_NOEXIST);
	}
	CHECK_TRUE("learnt-address walk: more entries than two batches", added > 2 * 128);
	CHECK_EQ("learnt-address walk: a full walk", tf_dp_learned(&e->dp, sid, walk_one, &w), 0);
	CHECK_EQ("learnt-address walk: ... gives every entry the table holds", w.n,
		 slot_count(e, TF_SLOT_LEARNED, sid));
	CHECK_EQ("learnt-address walk: ... each once, each one of those written", w.bad, 0);
	memset(&w, 0, sizeof(w));
	w.sid = sid;
	w.stop_at = 200;
	CHECK_EQ("learnt-address walk: the callback's non-zero is returned",
		 tf_dp_learned(&e->dp, sid, walk_one, &w), 7);
	CHECK_EQ("learnt-address walk: ... and the walk stops there", w.n, 200);
	for (i = 0; i < WALK_N; i++) {
		k.addr[2] = i >> 8;
		k.addr[3] = i & 0xff;
		bpf_map_delete_elem(fd, &k);
	}
	close(fd);
}

static void test_isolation(struct env *e)
{
	struct tf_dnsq_key bq = { .sid = SID_B, .gport = htons(45000), .id = htons(0x4242) };
	struct tf_learn_key bl = { .sid = SID_B, .family = TF_FAM_IPV4 };
	struct tf_dnsq q = { .ver = 1, .qtype = DNS_T_A };
	struct tf_learned l = { .ver = 1 };
	unsigned int i, n = e->cfg.dns_queries * 2 + 10;
	char what[128];
	int qfd = tf_dp_slot_open(&e->dp, TF_SLOT_DNSQ, SID_B);
	int lfd = tf_dp_slot_open(&e->dp, TF_SLOT_LEARNED, SID_B);
	struct result r;
	struct msg m;
	struct frame f;

	inet_pton(AF_INET, "198.51.100.99", bl.addr);
	l.expires_ns = now_ns() + 60000000000ULL;
	CHECK_TRUE("B has its own query table", qfd >= 0);
	CHECK_TRUE("B has its own learnt-address table", lfd >= 0);
	if (qfd < 0 || lfd < 0)
		return;
	CHECK_EQ("B's outstanding query", bpf_map_update_elem(qfd, &bq, &q, BPF_ANY), 0);
	CHECK_EQ("B's learnt address", bpf_map_update_elem(lfd, &bl, &l, BPF_ANY), 0);
	for (i = 0; i < n; i++) {
		m_query(&m, 0x6000 + i, "github.com", DNS_T_A);
		fr_udp(&f, 0, G4, GW4, 46000 + i, 53, &m);
		run(e, FROM, &f, &r);
	}
	/* LRU eviction is approximate (per-CPU free lists): count, don't name, what was evicted. */
	snprintf(what, sizeof(what), "A's flood of %u queries: A's table holds at most its %u", n,
		 e->cfg.dns_queries);
	CHECK_TRUE(what, slot_count(e, TF_SLOT_DNSQ, SID_A) <= e->cfg.dns_queries);
	CHECK_EQ("A's latest query is outstanding",
		 dnsq_get(e, SID_A, 46000 + n - 1, 0x6000 + n - 1, &q), 0);
	CHECK_EQ("B's outstanding query survived A's flood", bpf_map_lookup_elem(qfd, &bq, &q), 0);
	CHECK_EQ("B's learnt address survived A's flood", bpf_map_lookup_elem(lfd, &bl, &l), 0);
	close(qfd);
	close(lfd);
}

/* Answers that match their query or do not: id, port, name, type, case. */
static const struct step a_matching[] = {
	QUERY("query github.com", 41002, 0x2002, "github.com", DNS_T_A, 1, "allow_dns+1", NULL),
	ANSWER("answer with another id", 41002, 0x2003, 0, "github.com", DNS_T_A,
	       (A("@12", 60, "140.82.112.5")), 0, "dns_unmatched+1", NULL),
	ANSWER("answer to another port", 41003, 0x2002, 0, "github.com", DNS_T_A,
	       (A("@12", 60, "140.82.112.5")), 0, "dns_unmatched+1", NULL),
	ANSWER("answer for another name", 41002, 0x2002, 0, "gitlab.com", DNS_T_A,
	       (A("@12", 60, "140.82.112.5")), 0, "dns_unmatched+1", NULL),
	ANSWER("answer for another type", 41002, 0x2002, 0, "github.com", DNS_T_AAAA,
	       (A("@12", 60, "2001:db8::5")), 0, "dns_unmatched+1", NULL),
};

static const struct step a_case[] = {
	LEARNT("unmatched answers teach nothing", "140.82.112.5", -1),
	ANSWER("answer with 0x20 case randomisation", 41002, 0x2002, 0, "gItHuB.cOm", DNS_T_A,
	       (A("@12", 60, "140.82.112.5")), 1, "allow_dns_answer+1",
	       "allow_dns_answer[github.com]"),
	LEARNT("0x20 answer: 140.82.112.5 is learnt", "140.82.112.5", 60),
};

/* A CNAME chain; the wildcard's permission (tcp 8080). */
static const struct step a_cname[] = {
	QUERY("query www.example.com", 41010, 0x2010, "www.example.com", DNS_T_A, 1, "allow_dns+1",
	      NULL),
	ANSWER("CNAME chain answer", 41010, 0x2010, 0, "www.example.com", DNS_T_A,
	       (CNAME("@12", 300, "cdn.example.net"), A("unrelated.org", 60, "203.0.113.99"),
		CNAME("cdn.example.net", 300, "edge.cdn.test"),
		A("edge.cdn.test", 120, "203.0.113.10"), A("cdn.example.net", 120, "203.0.113.11")),
	       1, "allow_dns_answer+1", NULL),
	LEARNT("the chain's end 203.0.113.10 is learnt", "203.0.113.10", 120),
	LEARNT("a chain name's 203.0.113.11 is learnt", "203.0.113.11", 120),
	LEARNT("unrelated 203.0.113.99 is not learnt", "203.0.113.99", -1),
	SYN_TO("SYN to 203.0.113.10:8080 (the wildcard's port)", "203.0.113.10", 8080, 1,
	       "allow_learned+1"),
	SYN_TO("SYN to 203.0.113.10:443", "203.0.113.10", 443, 0, "port_not_allowed+1"),
	SYN_TO("SYN to 203.0.113.99:8080", "203.0.113.99", 8080, 0, "no_rule+1"),
};

/* Rebinding: addresses the floor or another session holds are not learnt. */
static const struct step a_rebind[] = {
	QUERY("query a.test", 41030, 0x2030, "a.test", DNS_T_A, 1, "allow_dns+1", NULL),
	ANSWER("answer with rebinding addresses", 41030, 0x2030, 0, "a.test", DNS_T_A,
	       (A("@12", 60, "10.0.0.1"), A("@12", 60, "169.254.169.254"),
		A("@12", 60, "127.0.0.1"), A("@12", 60, B6),
		A("@12", 60, "10.99.0.5") /* an operator exception */,
		A("@12", 60, "203.0.113.50")),
	       1, "dns_rebind+4,allow_dns_answer+1",
	       "dns_rebind[a.test],dns_rebind[a.test],dns_rebind[a.test],dns_rebind[a.test],"
	       "allow_dns_answer[a.test]"),
};

static const struct step a_rebind_learnt[] = {
	LEARNT("10.0.0.1 is not learnt", "10.0.0.1", -1),
	LEARNT("169.254.169.254 is not learnt", "169.254.169.254", -1),
	LEARNT("127.0.0.1 is not learnt", "127.0.0.1", -1),
	LEARNT("session B's address is not learnt", B6, -1),
	LEARNT("10.99.0.5 (floor exception) is learnt", "10.99.0.5", 60),
	LEARNT("203.0.113.50 beside them is learnt", "203.0.113.50", 60),
	SYN_TO("SYN to 10.99.0.5:443, learnt in a floor exception", "10.99.0.5", 443, 1,
	       "allow_learned+1"),
	SYN_TO("SYN to 10.0.0.1:443", "10.0.0.1", 443, 0, "floor_private+1"),
};

/* TTLs, clamped to the operator's limits. */
static const struct step a_ttl[] = {
	QUERY("query a.test", 41040, 0x2040, "a.test", DNS_T_A, 1, "allow_dns+1", NULL),
	ANSWER("answer with TTLs 0, 1, 100, 99999, 2^31+1", 41040, 0x2040, 0, "a.test", DNS_T_A,
	       (A("@12", 0, "203.0.113.60"), A("@12", 1, "203.0.113.61"),
		A("@12", 100, "203.0.113.62"), A("@12", 99999, "203.0.113.63"),
		A("@12", 0x80000001u, "203.0.113.64")),
	       1, "allow_dns_answer+1", NULL),
	LEARNT("TTL 0 is clamped to the minimum (5 s)", "203.0.113.60", 5),
	LEARNT("TTL 1 is clamped to the minimum (5 s)", "203.0.113.61", 5),
	LEARNT("TTL 100 stays", "203.0.113.62", 100),
	LEARNT("TTL 99999 is clamped to the maximum (3600 s)", "203.0.113.63", 3600),
	LEARNT("TTL 2^31+1 counts as 0 (RFC 2181), clamped to 5 s", "203.0.113.64", 5),
};

/* The TC bit and rcodes. */
static const struct step a_rcodes[] = {
	QUERY("query a.test", 41050, 0x2050, "a.test", DNS_T_A, 1, "allow_dns+1", NULL),
	ANSWER("truncated answer", 41050, 0x2050, 0x0200, "a.test", DNS_T_A,
	       (A("@12", 60, "203.0.113.70")), 0, "dns_truncated+1", "dns_truncated[a.test]"),
	LEARNT("truncated answer: nothing learnt", "203.0.113.70", -1),
	ANSWER("the full answer after a truncated one", 41050, 0x2050, 0, "a.test", DNS_T_A,
	       (A("@12", 60, "203.0.113.70")), 0, "dns_unmatched+1", NULL),
	QUERY("query a.test", 41051, 0x2051, "a.test", DNS_T_A, 1, "allow_dns+1", NULL),
	ANSWER("NXDOMAIN answer", 41051, 0x2051, 3, "a.test", DNS_T_A, (), 1, "allow_dns_answer+1",
	       "allow_dns_answer[a.test]"),
};

/* AAAA, and a learnt address inside a CIDR rule. */
static const struct step a_aaaa_cidr[] = {
	QUERY("query github.com AAAA", 41060, 0x2060, "github.com", DNS_T_AAAA, 1, "allow_dns+1",
	      NULL),
	ANSWER("AAAA answer", 41060, 0x2060, 0, "github.com", DNS_T_AAAA,
	       (A("@12", 60, "2001:db8:1::10")), 1, "allow_dns_answer+1", NULL),
	SYN_TO("SYN to learnt [2001:db8:1::10]:443", "2001:db8:1::10", 443, 1, "allow_learned+1"),
	QUERY("query github.com", 41061, 0x2061, "github.com", DNS_T_A, 1, "allow_dns+1", NULL),
	ANSWER("answer inside a CIDR rule's range", 41061, 0x2061, 0, "github.com", DNS_T_A,
	       (A("@12", 60, "198.51.100.7")), 1, "allow_dns_answer+1", NULL),
	SYN_TO("SYN to 198.51.100.7:443, learnt", "198.51.100.7", 443, 1, "allow_learned+1"),
	SYN_TO("SYN to 198.51.100.7:22, the CIDR rule", "198.51.100.7", 22, 1, "allow_rule+1"),
	SYN_TO("SYN to 198.51.100.7:25, neither", "198.51.100.7", 25, 0, "port_not_allowed+1"),
};

/* Session C: the same over IPv6, the message 20 bytes further into the frame. */
static const struct step ipv6_steps[] = {
	QUERY("IPv6 query github.com", 42001, 0x3001, "github.com", DNS_T_AAAA, 1, "allow_dns+1",
	      "allow_dns[github.com]"),
	QUERY("IPv6 query gitlab.com", 42002, 0x3002, "gitlab.com", DNS_T_AAAA, 0,
	      "dns_name_denied+1", NULL),
	ANSWER("IPv6 answer", 42001, 0x3001, 0, "github.com", DNS_T_AAAA,
	       (A("@12", 60, "2001:db8:2::20")), 1, "allow_dns_answer+1",
	       "allow_dns_answer[github.com]"),
	SYN_TO("IPv6 SYN to the learnt address", "2001:db8:2::20", 443, 1, "allow_learned+1"),
	TCP_TO("IPv6 TCP to the resolver", 50001, GW6, 53, PK_SYN, 0, "dns_tcp+1", NULL),
};

/* Answers: what is matched, what is learnt, and what the guest may then reach. */
static void test_answers(struct env *e)
{
	struct tf_learned l;
	struct tf_dnsq q;
	struct frame f;
	struct msg m;
	char a[32], what[128], want[512];
	unsigned int i;
	size_t o;
	__u8 rev[TF_DNS_NAME_MAX];

	syn(e, "SYN to 140.82.112.3:443 before any answer", "140.82.112.3", 443, 0, "no_rule+1");

	query(e, "query github.com", 41001, 0x2001, "github.com", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2001, 0, "github.com", DNS_T_A, 1);
	m_a(&m, "@12", 60, "140.82.112.3");
	answer(e, "its answer", 41001, &m, 1, "allow_dns_answer+1", "allow_dns_answer[github.com]");
	CHECK_EQ("the answered query is no longer outstanding",
		 dnsq_get(e, SID_A, 41001, 0x2001, &q), -ENOENT);
	CHECK_EQ("140.82.112.3 is learnt", learned_get(e, SID_A, "140.82.112.3", &l), 0);
	rev_of("github.com", rev);
	CHECK_FIELD("140.82.112.3 is learnt with github.com's", l, name_len, 11);
	CHECK_MEM("140.82.112.3 is learnt with github.com's: name", l.name, rev, 11);
	CHECK_FIELD("140.82.112.3 is learnt with github.com's", l, perm.protos,
		    TF_PB_TCP | TF_PB_TLS);
	CHECK_FIELD("140.82.112.3 is learnt with github.com's", l, sub, 0);
	CHECK_FIELD("140.82.112.3 is learnt in this generation", l, ver, 1);
	{
		struct tf_bind_key bk = { .family = TF_FAM_IPV4 };
		__u64 exp = 0;

		pk_addr("140.82.112.3", bk.addr);
		memcpy(bk.name, rev, 11);
		CHECK_EQ("140.82.112.3 is bound to github.com for SNI checks",
			 slot_op(e, TF_SLOT_TLSBIND, SID_A, BPF_MAP_LOOKUP_ELEM, &bk, &exp), 0);
		CHECK_TRUE("the binding ends with the TTL",
			   exp > now_ns() && exp <= now_ns() + 61000000000ULL);
	}
	CHECK_EQ("140.82.112.3 expires with the TTL (60 s)", learned_ttl(e, "140.82.112.3"), 60);
	CHECK_EQ("140.82.112.3 is not learnt for session B",
		 learned_get(e, SID_B, "140.82.112.3", &l), -ENOENT);
	answer(e, "the same answer again", 41001, &m, 0, "dns_unmatched+1", "dns_unmatched[]");

	/* A query older than the operator's dns_query_timeout_s matches nothing. */
	query(e, "query github.com, answered late", 41009, 0x2009, "github.com", DNS_T_A, 1,
	      "allow_dns+1", NULL);
	CHECK_EQ("the late query is outstanding", dnsq_get(e, SID_A, 41009, 0x2009, &q), 0);
	q.created_ns -= (__u64)(e->cfg.dns_query_timeout_s + 1) * 1000000000ULL;
	{
		struct tf_dnsq_key k = { .sid = SID_A, .gport = htons(41009), .id = htons(0x2009) };

		CHECK_EQ("age the outstanding query past the timeout",
			 slot_op(e, TF_SLOT_DNSQ, SID_A, BPF_MAP_UPDATE_ELEM, &k, &q), 0);
	}
	m_answer(&m, 0x2009, 0, "github.com", DNS_T_A, 1);
	m_a(&m, "@12", 60, "140.82.112.9");
	answer(e, "an answer after the query timed out", 41009, &m, 0, "dns_unmatched+1",
	       "dns_unmatched[]");
	CHECK_EQ("nothing is learnt from it", learned_get(e, SID_A, "140.82.112.9", &l), -ENOENT);
	CHECK_EQ("the timed-out query is gone", dnsq_get(e, SID_A, 41009, 0x2009, &q), -ENOENT);
	m_answer(&m, 0x2001, 0, "github.com", DNS_T_A, 1);
	m_a(&m, "@12", 60, "140.82.112.3");
	syn(e, "SYN to learnt 140.82.112.3:443", "140.82.112.3", 443, 1, "allow_learned+1");
	{
		/* Learnt across a policy switch the daemon's rebase already passed: worth nothing. */
		struct tf_learn_key k = { .sid = SID_A, .family = TF_FAM_IPV4 };
		__u32 ver = l.ver;

		inet_pton(AF_INET, "140.82.112.3", k.addr);
		l.ver = ver + 7;
		CHECK_EQ("mark 140.82.112.3 learnt in another generation",
			 slot_op(e, TF_SLOT_LEARNED, SID_A, BPF_MAP_UPDATE_ELEM, &k, &l), 0);
		syn(e, "SYN to 140.82.112.3:443, learnt in another generation", "140.82.112.3", 443,
		    0, "no_rule+1");
		l.ver = ver;
		CHECK_EQ("back to this generation",
			 slot_op(e, TF_SLOT_LEARNED, SID_A, BPF_MAP_UPDATE_ELEM, &k, &l), 0);
	}
	syn(e, "SYN to learnt 140.82.112.3:80, not its port", "140.82.112.3", 80, 0,
	    "port_not_allowed+1");
	syn(e, "SYN to 140.82.112.4:443, not learnt", "140.82.112.4", 443, 0, "no_rule+1");

	/* Matching */
	run_steps(e, &v4, a_matching, N(a_matching));
	CHECK_EQ("unmatched answers leave the query outstanding",
		 dnsq_get(e, SID_A, 41002, 0x2002, &q), 0);
	run_steps(e, &v4, a_case, N(a_case));
	m_answer(&m, 0x2009, 0, "github.com", DNS_T_A, 1);
	m_a(&m, "@12", 60, "140.82.112.6");
	fr_udp(&f, 1, GW4, G4, 5353, 41009, &m);
	judge(e, TO, &f, "answer from the resolver's address, another port", 0, "unsolicited+1",
	      NULL);
	fr_udp(&f, 1, "10.10.0.9", G4, 53, 41009, &m);
	judge(e, TO, &f, "answer from another address", 0, "unsolicited+1", NULL);

	/* CNAME chain; the wildcard's permission (tcp 8080) */
	run_steps(e, &v4, a_cname, N(a_cname));

	/* Many records */
	query(e, "query a.test", 41020, 0x2020, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2020, 0, "a.test", DNS_T_A, TF_DNS_LEARN_MAX + 2);
	for (i = 0; i < TF_DNS_LEARN_MAX + 2; i++) {
		snprintf(a, sizeof(a), "203.0.113.%u", 100 + i);
		m_a(&m, "@12", 60, a);
	}
	answer(e, "answer with more records than TF_DNS_LEARN_MAX", 41020, &m, 1,
	       "dns_learn_limit+1,allow_dns_answer+1",
	       "dns_learn_limit[a.test],allow_dns_answer[a.test]");
	snprintf(a, sizeof(a), "203.0.113.%u", 100 + TF_DNS_LEARN_MAX - 1);
	CHECK_EQ("the last record within the limit is learnt", learned_ttl(e, a), 60);
	snprintf(a, sizeof(a), "203.0.113.%u", 100 + TF_DNS_LEARN_MAX);
	CHECK_EQ("the first record past the limit is not", learned_ttl(e, a), -1);

	/* Rebinding */
	run_steps(e, &v4, a_rebind, N(a_rebind));
	o = 0;
	want[0] = '\0';
	for (i = 0; i < 4 && i < (unsigned int)e->nev; i++) {
		char s[INET6_ADDRSTRLEN];

		inet_ntop(e->ev[i].family == 4 ? AF_INET : AF_INET6, e->ev[i].daddr, s, sizeof(s));
		o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%s", i ? "," : "", s);
	}
	CHECK_STR("dns_rebind events carry the refused addresses", want,
		  "10.0.0.1,169.254.169.254,127.0.0.1," B6);
	run_steps(e, &v4, a_rebind_learnt, N(a_rebind_learnt));

	/* TTLs */
	run_steps(e, &v4, a_ttl, N(a_ttl));
	test_refresh(e);

	/* Expiry: a connection outlives it, a new one does not */
	fr_tcp(&f, G4, "203.0.113.62", 50001, 443, PK_SYN);
	judge(e, FROM, &f, "SYN to learnt 203.0.113.62:443", 1, "allow_learned+1", NULL);
	if (!learned_get(e, SID_A, "203.0.113.62", &l)) {
		struct tf_learn_key k = { .sid = SID_A, .family = 4 };

		pk_addr("203.0.113.62", k.addr);
		l.expires_ns = now_ns() - 1;
		slot_op(e, TF_SLOT_LEARNED, SID_A, BPF_MAP_UPDATE_ELEM, &k, &l);
	}
	fr_tcp(&f, G4, "203.0.113.62", 50001, 443, PK_ACK);
	judge(e, FROM, &f, "ACK of that connection after the TTL ended", 1, "allow_flow+1", NULL);
	fr_tcp(&f, G4, "203.0.113.62", 50002, 443, PK_SYN);
	judge(e, FROM, &f, "new SYN after the TTL ended", 0, "no_rule+1", NULL);

	/* TC, rcodes, EDNS0, malformed */
	run_steps(e, &v4, a_rcodes, N(a_rcodes));

	query(e, "query a.test", 41052, 0x2052, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2052, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.71");
	m_set16(&m, 10, 1);
	m_opt(&m);
	answer(e, "answer with an EDNS0 OPT record", 41052, &m, 1, "allow_dns_answer+1", NULL);
	CHECK_EQ("EDNS0 answer: 203.0.113.71 is learnt", learned_ttl(e, "203.0.113.71"), 60);

	query(e, "query a.test", 41053, 0x2053, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2053, 0, "a.test", DNS_T_A, 2);
	m_a(&m, "@12", 60, "203.0.113.72");
	i = m.len;
	m_u16(&m, 0xc000 | i);
	m_u16(&m, DNS_T_A);
	answer(e, "answer with a compression loop", 41053, &m, 0, "dns_malformed+1",
	       "dns_malformed[a.test]");
	CHECK_EQ("compression loop: nothing learnt, not even the record before it",
		 learned_ttl(e, "203.0.113.72"), -1);

	query(e, "query a.test", 41054, 0x2054, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2054, 0, "a.test", DNS_T_A, 1);
	m_u16(&m, 0xc000 | (m.len + 2));
	m_a(&m, "a.test", 60, "203.0.113.73");
	answer(e, "answer with a forward pointer", 41054, &m, 0, "dns_malformed+1", NULL);

	query(e, "query a.test", 41055, 0x2055, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2055, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.74");
	m.len -= 2;
	answer(e, "answer cut inside a record", 41055, &m, 0, "dns_malformed+1", NULL);

	query(e, "query a.test", 41056, 0x2056, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2056, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.75");
	m.len = TF_DNS_MSG_MAX + 1;
	answer(e, "answer longer than TF_DNS_MSG_MAX", 41056, &m, 0, "dns_malformed+1", NULL);

	m_answer(&m, 0x2057, 0, "a.test", DNS_T_A, 0);
	m.len = 11;
	answer(e, "answer of 11 bytes", 41057, &m, 0, "dns_malformed+1", NULL);

	query(e, "query a.test", 41058, 0x2058, "a.test", DNS_T_A, 1, "allow_dns+1", NULL);
	m_answer(&m, 0x2058, 0, "a.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "203.0.113.76");
	fr_udp(&f, 1, GW4, G4, 53, 41058, &m);
	pk_put16(f.d + 14 + 6, 0x2000); /* more fragments */
	judge(e, TO, &f, "answer in IP fragments", 0, "fragment+1", NULL);
	CHECK_EQ("fragmented answer: nothing learnt", learned_ttl(e, "203.0.113.76"), -1);
	CHECK_EQ("fragmented answer: the query stays outstanding",
		 dnsq_get(e, SID_A, 41058, 0x2058, &q), 0);

	/* AAAA, and a learnt address inside a CIDR rule */
	run_steps(e, &v4, a_aaaa_cidr, N(a_aaaa_cidr));
	tf_learned_del(e, "198.51.100.7");
	syn(e, "SYN to 198.51.100.7:443 once forgotten", "198.51.100.7", 443, 0,
	    "port_not_allowed+1");

	snprintf(what, sizeof(what), "answers: every outstanding query of the tests is consumed");
	CHECK_EQ(what, dnsq_get(e, SID_A, 41030, 0x2030, &q), -ENOENT);
}

static void test_ipv6(struct env *e)
{
	run_steps(e, &v6, ipv6_steps, N(ipv6_steps));
}

static void test_datapath(void)
{
	static struct env e;
	struct sess a, b, c;
	int ret;

	libbpf_set_print(quiet_libbpf);
	ret = private_netns();
	CHECK_EQ("a private network namespace with lo up", ret, 0);
	if (ret)
		return;
	if (env_open(&e, operator_config)) {
		env_close(&e);
		return;
	}
	CHECK_EQ("set up session B on ifindex 2", session_add(&e, &b, spec_b, SID_B, IFINDEX_B), 0);
	test_learned_walk(&e, SID_B);
	ret = session_add(&e, &a, spec_a, SID_A, IFINDEX_LO);
	CHECK_EQ("set up session A (host rules) on ifindex 1", ret, 0);
	if (!ret) {
		e.sid = SID_A;
		for (e.xdp = 0; e.xdp < 2; e.xdp++)
			test_queries(&e);
		e.xdp = 0;
		test_answers(&e);
		test_isolation(&e);
	}
	session_del(&e, &a);
	ret = session_add(&e, &c, spec_c, SID_C, IFINDEX_LO);
	CHECK_EQ("set up session C (IPv6 resolver) on ifindex 1", ret, 0);
	if (!ret) {
		e.sid = SID_C;
		for (e.xdp = 0; e.xdp < 2; e.xdp++)
			test_ipv6(&e);
	}
	session_del(&e, &c);
	session_del(&e, &b);
	env_close(&e);
}

static const char spec_r1[] = SPEC_A_HEAD "'allow':["
					  "{'host':'a.test','proto':'tcp','ports':[443]},"
					  "{'host':'b.test','proto':'tcp'},"
					  "{'host':'c.test','proto':'tcp','ports':[443]}]}";
static const char spec_r2[] = SPEC_A_HEAD "'allow':["
					  "{'host':'b.test','proto':'tcp'},"
					  "{'host':'c.test','proto':'tcp','ports':[443]}]}";

/*
 * A rule change while an answer lands: policy 2 drops a.test's rule, so
 * c.test's name entry moves from index 2 to 1 (old index 1 is b.test,
 * all TCP ports). The query is rebased to generation 2 first; its answer
 * then writes a learnt address of generation 2 with the new index; the
 * rebase reaching that address (run again here, as the learnt table's
 * pass would) must leave it alone, not rederive it from the old policy,
 * which would give it b.test's permission.
 */
static void test_rebase_race(void)
{
	static struct env e;
	struct tf_session v;
	struct sess a, n = {};
	struct msg m;

	if (env_open(&e, "{}")) {
		env_close(&e);
		return;
	}
	CHECK_EQ("rebase race: session A, policy 1",
		 session_add(&e, &a, spec_r1, SID_A, IFINDEX_LO), 0);
	e.sid = SID_A;
	query(&e, "rebase race: query c.test", 41000, 0x3000, "c.test", DNS_T_A, 1, NULL, NULL);
	CHECK_EQ("rebase race: policy 2 parses", spec_parse(spec_r2, &e.cfg, &n.spec), 0);
	CHECK_EQ("rebase race: policy 2 compiles",
		 tf_policy_compile(n.spec.rules, n.spec.nrules, &n.pol), 0);
	CHECK_EQ("rebase race: policy 2 written", tf_dp_policy_write(&e.dp, SID_A, 2, &n.pol), 0);
	tf_dp_names_rebase(&e.dp, SID_A, 2, &n.pol);
	m_answer(&m, 0x3000, 0, "c.test", DNS_T_A, 1);
	m_a(&m, "@12", 60, "192.0.2.77");
	answer(&e, "rebase race: the answer lands mid-rebase", 41000, &m, 1, NULL, NULL);
	tf_dp_names_rebase(&e.dp, SID_A, 2, &n.pol);
	tf_dp_session_value(&e.dp, &n.spec, SID_A, 2, &v);
	CHECK_EQ("rebase race: switched to policy 2", tf_dp_session_set(&e.dp, &a.dev, &v), 0);
	syn(&e, "rebase race: c.test's address keeps c.test's ports (22 denied)", "192.0.2.77", 22,
	    0, NULL);
	syn(&e, "rebase race: ... and 443 allowed", "192.0.2.77", 443, 1, NULL);
	tf_spec_free(&n.spec);
	tf_policy_free(&n.pol);
	session_del(&e, &a);
	env_close(&e);
}

int main(void)
{
	size_t i;

	/* 3 labels of 63 and one of 55 (247 bytes dotted), and one byte more */
	snprintf(long247, sizeof(long247), "%s.%s.%s.%.55s", n63, n63, n63, n63);
	snprintf(long248, sizeof(long248), "%s.%s.%s.%.56s", n63, n63, n63, n63);
	for (i = 0; i < 247; i++)
		rev247[i] = long247[246 - i];
	rev247[247] = '.';
	test_parse_queries();
	test_parse_answers();
	test_datapath();
	test_rebase_race();
	return CHECK_EXIT();
}
