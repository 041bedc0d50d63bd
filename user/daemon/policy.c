// SPDX-License-Identifier: GPL-2.0
/*
 * Policy compiler. Sorted by (family, address, length), the distinct rule
 * prefixes come out in the depth-first order of the binary trie they form:
 * each prefix after every prefix that contains it, and those containing the
 * current one are exactly the chain kept on a stack. One pass that carries
 * each ancestor's accumulated permission on the stack thus flattens the
 * rules in O(n log n) without materialising the trie, whose /128 paths
 * would cost 128 nodes per IPv6 host rule.
 *
 * A permission is: protocols allowed on every port (all_ports, TCP/UDP
 * only), protocols allowed at all (protos, ICMP and OTHER are plain bits),
 * and the TCP and UDP ports allowed beyond all_ports, as sorted merged
 * range lists interned as numbered classes, so equal unions share one.
 * A third list, the TLS ports (TF_PB_TLS), holds the TCP ports where a
 * connection must show an allowed SNI: a union too, so a port is checked
 * when any rule that allows it there asks for the check (docs/tls.md).
 * Rules are expected canonical, as tf_rule_from_json() makes them.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <tapfence/perm.h>
#include "policy.h"

#define MAX_CLASSES 65535 /* tf_rule_val.cls is a __u16; 0 means none */
#define STACK_MAX   129	  /* strictly nested prefixes: lengths 0..128 */

#define NSETS	 3   /* TCP ports, UDP ports, TLS ports (TCP ports with an SNI check) */
#define TLS_PORT 443 /* a host rule's TLS port unless it says "tls" */

static const __u8 tf_pbit[NSETS] = { TF_PB_TCP, TF_PB_UDP, TF_PB_TLS };
static const __u8 tf_ipproto[NSETS] = { IPPROTO_TCP, IPPROTO_UDP, TF_PORTS_TLS };
static const struct tf_port_range tls_default = { TLS_PORT, TLS_PORT };

struct pset {
	unsigned int n;
	struct tf_port_range *r; /* sorted, merged */
};

struct pclass {
	struct pset set[NSETS]; /* [0] TCP, [1] UDP, [2] TLS */
	__u32 hash;
};

struct perm {
	__u8 all_ports;
	__u8 protos;
	unsigned int cls;
};

struct compiler {
	const struct tf_rule *rules;
	unsigned int *order;	/* rule indices sorted by prefix */
	struct pclass *classes; /* [0]: the empty class */
	unsigned int nclasses, cap_classes;
	unsigned int *slots; /* open-addressing table of class ids, 0 = free */
	unsigned int nslots;
	struct tf_port_range *scratch[NSETS]; /* the permission being built */
	unsigned int nscratch[NSETS], cap_scratch[NSETS];
	unsigned int cap_chunks;
};

static int cmp_u(unsigned int a, unsigned int b)
{
	return (a > b) - (a < b);
}

static int prefix_cmp(const struct tf_cidr *a, const struct tf_cidr *b)
{
	int d = cmp_u(a->ip.family, b->ip.family);

	if (!d)
		d = memcmp(a->ip.addr, b->ip.addr, sizeof(a->ip.addr));
	return d ? d : cmp_u(a->prefixlen, b->prefixlen);
}

static int order_cmp(const void *a, const void *b, void *rules)
{
	const struct tf_rule *r = rules;

	return prefix_cmp(&r[*(const unsigned int *)a].cidr, &r[*(const unsigned int *)b].cidr);
}

static int prefix_contains(const struct tf_cidr *outer, const struct tf_cidr *inner)
{
	return outer->prefixlen <= inner->prefixlen && tf_cidr_contains(outer, &inner->ip);
}

static int append(struct compiler *cc, unsigned int k, const struct tf_port_range *r,
		  unsigned int n)
{
	unsigned int need = cc->nscratch[k] + n, cap = cc->cap_scratch[k];
	struct tf_port_range *p;

	if (!n)
		return 0;
	if (need > cap) {
		cap = need > 2 * cap ? need : 2 * cap;
		p = realloc(cc->scratch[k], cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		cc->scratch[k] = p;
		cc->cap_scratch[k] = cap;
	}
	memcpy(cc->scratch[k] + cc->nscratch[k], r, n * sizeof(*r));
	cc->nscratch[k] = need;
	return 0;
}

/* FNV-1a over the scratch sets. */
static __u32 scratch_hash(const struct compiler *cc)
{
	__u32 h = 2166136261u;
	unsigned int k;
	size_t i;

	for (k = 0; k < NSETS; k++) {
		const unsigned char *b = (const unsigned char *)cc->scratch[k];

		h = (h ^ cc->nscratch[k]) * 16777619u;
		for (i = 0; i < cc->nscratch[k] * sizeof(*cc->scratch[k]); i++)
			h = (h ^ b[i]) * 16777619u;
	}
	return h;
}

static int scratch_equal(const struct compiler *cc, const struct pclass *c)
{
	unsigned int k;

	for (k = 0; k < NSETS; k++)
		if (c->set[k].n != cc->nscratch[k] ||
		    (c->set[k].n &&
		     memcmp(c->set[k].r, cc->scratch[k], c->set[k].n * sizeof(*c->set[k].r))))
			return 0;
	return 1;
}

static int grow_slots(struct compiler *cc)
{
	unsigned int i, s, n = cc->nslots ? 2 * cc->nslots : 64, mask = n - 1;
	unsigned int *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 1; i <= cc->nclasses; i++) {
		for (s = cc->classes[i].hash & mask; slots[s]; s = (s + 1) & mask)
			;
		slots[s] = i;
	}
	free(cc->slots);
	cc->slots = slots;
	cc->nslots = n;
	return 0;
}

/* Class c's sets: the scratch sets copied, in one allocation (set[0].r, which frees it). */
static int class_set(struct compiler *cc, struct pclass *c)
{
	struct tf_port_range *r;
	unsigned int k, n = 0;

	for (k = 0; k < NSETS; k++)
		n += cc->nscratch[k];
	r = malloc((n ? n : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (k = 0; k < NSETS; k++) {
		c->set[k].r = r;
		c->set[k].n = cc->nscratch[k];
		if (c->set[k].n)
			memcpy(r, cc->scratch[k], c->set[k].n * sizeof(*r));
		r += c->set[k].n;
	}
	return 0;
}

/* The class id of the scratch sets, made if new: 1..MAX_CLASSES or -errno. */
static int intern(struct compiler *cc)
{
	unsigned int s, id, mask = cc->nslots - 1;
	__u32 h = scratch_hash(cc);
	struct pclass *c;

	for (s = h & mask; (id = cc->slots[s]); s = (s + 1) & mask)
		if (cc->classes[id].hash == h && scratch_equal(cc, &cc->classes[id]))
			return (int)id;
	if (cc->nclasses == MAX_CLASSES)
		return -E2BIG;
	if (cc->nclasses + 1 == cc->cap_classes) {
		c = realloc(cc->classes, 2 * cc->cap_classes * sizeof(*c));
		if (!c)
			return -ENOMEM;
		cc->classes = c;
		cc->cap_classes *= 2;
	}
	c = &cc->classes[cc->nclasses + 1];
	if (class_set(cc, c))
		return -ENOMEM;
	c->hash = h;
	id = ++cc->nclasses;
	cc->slots[s] = id;
	if (2 * cc->nclasses > cc->nslots && grow_slots(cc))
		return -ENOMEM;
	return (int)id;
}

/* out's port class: the scratch sets interned (0 if they are all empty). 0 or -errno. */
static int take_class(struct compiler *cc, struct perm *out)
{
	int ret;

	out->cls = 0;
	if (!cc->nscratch[0] && !cc->nscratch[1] && !cc->nscratch[2])
		return 0;
	ret = intern(cc);
	if (ret < 0)
		return ret;
	out->cls = (unsigned int)ret;
	return 0;
}

/*
 * The TLS ports rule r adds: with "tls": true all its TCP ports, with
 * "tls": false none, else (host rules only) port 443 if it allows it.
 * *all: every port. Returns the ranges and their count.
 */
static unsigned int rule_tls(const struct tf_rule *r, const struct tf_port_range **out, int *all)
{
	unsigned int i;

	*all = 0;
	if (!(r->protos & TF_PB_TCP) || r->tls == TF_TLS_OFF)
		return 0;
	if (r->tls == TF_TLS_ON) {
		*all = !r->nranges;
		*out = r->ranges;
		return r->nranges;
	}
	if (r->kind != TF_RULE_HOST)
		return 0;
	for (i = 0; i < r->nranges; i++)
		if (r->ranges[i].lo <= TLS_PORT && TLS_PORT <= r->ranges[i].hi)
			break;
	if (r->nranges && i == r->nranges)
		return 0;
	*out = &tls_default;
	return 1;
}

/*
 * The permission of the prefix of rules order[from..to): its parent's and
 * its own rules' of the one action (deny: the deny rules, else the allow
 * rules).
 */
static int group_perm(struct compiler *cc, unsigned int from, unsigned int to, int deny,
		      const struct perm *parent, struct perm *out)
{
	const struct pclass *pc = &cc->classes[parent->cls];
	const struct tf_port_range *tls = NULL;
	const struct tf_rule *r;
	unsigned int i, k, n;
	int ret, added, all;

	out->all_ports = parent->all_ports;
	out->protos = parent->protos;
	for (i = from; i < to; i++) {
		r = &cc->rules[cc->order[i]];
		if (r->deny != deny)
			continue;
		out->protos |= r->protos;
		if (!r->nranges)
			out->all_ports |= r->protos & (TF_PB_TCP | TF_PB_UDP);
		if (rule_tls(r, &tls, &all) || all) {
			out->protos |= TF_PB_TLS;
			out->all_ports |= all ? TF_PB_TLS : 0;
		}
	}
	for (k = 0; k < NSETS; k++) {
		cc->nscratch[k] = 0;
		if (out->all_ports & tf_pbit[k])
			continue; /* every port: no set, no chunks */
		ret = append(cc, k, pc->set[k].r, pc->set[k].n);
		for (i = from, added = 0; !ret && i < to; i++) {
			r = &cc->rules[cc->order[i]];
			if (r->deny != deny)
				continue;
			if (k == 2) {
				n = rule_tls(r, &tls, &all);
			} else {
				n = (r->protos & tf_pbit[k]) ? r->nranges : 0;
				tls = r->ranges;
			}
			if (n) {
				ret = append(cc, k, tls, n);
				added = 1;
			}
		}
		if (ret)
			return ret;
		if (added)
			cc->nscratch[k] = tf_ranges_merge(cc->scratch[k], cc->nscratch[k]);
	}
	return take_class(cc, out);
}

/* The ports of set k that p allows: every one (*all), or the ranges returned (*n of them). */
static const struct tf_port_range *perm_ports(const struct compiler *cc, const struct perm *p,
					      unsigned int k, int *all, unsigned int *n)
{
	const struct pset *ps = &cc->classes[p->cls].set[k];

	*all = !!(p->all_ports & tf_pbit[k]);
	*n = (p->protos & tf_pbit[k]) && !*all ? ps->n : 0;
	return ps->r;
}

/* Append to scratch set k the ports of a (all, or n ranges) not in d (likewise). */
static int ports_minus(struct compiler *cc, unsigned int k, int a_all,
		       const struct tf_port_range *a, unsigned int na, int d_all,
		       const struct tf_port_range *d, unsigned int nd)
{
	static const struct tf_port_range every = { 0, 65535 };
	struct tf_port_range cur;
	unsigned int i, j = 0;
	int ret = 0;

	if (d_all)
		return 0;
	if (a_all) {
		a = &every;
		na = 1;
	}
	for (i = 0; !ret && i < na; i++) {
		cur = a[i];
		for (; j < nd && d[j].hi < cur.lo; j++)
			;
		while (!ret && j < nd && d[j].lo <= cur.hi) {
			if (d[j].lo > cur.lo) {
				struct tf_port_range part = { cur.lo, d[j].lo - 1 };

				ret = append(cc, k, &part, 1);
			}
			if (d[j].hi >= cur.hi)
				break;
			cur.lo = d[j].hi + 1;
			j++;
		}
		if (!ret && (j == nd || d[j].lo > cur.hi))
			ret = append(cc, k, &cur, 1);
	}
	return ret;
}

/*
 * What allow permission a leaves once deny permission d is taken out of
 * it: deny wins, port by port and protocol by protocol. A's TLS ports lose
 * the TCP ports d takes, so they stay a subset of the TCP ports left.
 */
static int perm_minus(struct compiler *cc, const struct perm *a, const struct perm *d,
		      struct perm *out)
{
	const struct tf_port_range *ar, *dr;
	unsigned int k, na, nd;
	int a_all, d_all, ret;

	out->protos = a->protos & ~(d->protos & (TF_PB_ICMP | TF_PB_OTHER));
	out->all_ports = 0;
	for (k = 0; k < NSETS; k++) {
		cc->nscratch[k] = 0;
		ar = perm_ports(cc, a, k, &a_all, &na);
		/* What d takes from set k: its TCP ports for the TLS set. */
		dr = perm_ports(cc, d, k == 2 ? 0 : k, &d_all, &nd);
		if (a_all && !d_all && !nd) {
			out->all_ports |= tf_pbit[k];
			continue;
		}
		ret = ports_minus(cc, k, a_all, ar, na, d_all, dr, nd);
		if (ret)
			return ret;
		if (!cc->nscratch[k])
			out->protos &= ~tf_pbit[k];
	}
	return take_class(cc, out);
}

/* Bits lo..hi (0..255) of a chunk; bit i is bit i % 64 of w[i / 64]. */
static void set_bits(struct tf_port_bits *b, unsigned int lo, unsigned int hi)
{
	unsigned int w, from, to;

	for (w = lo / 64; w <= hi / 64; w++) {
		from = w == lo / 64 ? lo % 64 : 0;
		to = w == hi / 64 ? hi % 64 : 63;
		b->w[w] |= (~0ULL >> (63 - to)) & (~0ULL << from);
	}
}

static struct tf_policy_chunk *new_chunk(struct compiler *cc, struct tf_policy *p)
{
	struct tf_policy_chunk *c;

	unsigned int cap = cc->cap_chunks ? 2 * cc->cap_chunks : 16;

	if (p->nchunks == cc->cap_chunks) {
		c = realloc(p->chunks, cap * sizeof(*c));
		if (!c)
			return NULL;
		p->chunks = c;
		cc->cap_chunks = cap;
	}
	c = &p->chunks[p->nchunks++];
	memset(c, 0, sizeof(*c));
	return c;
}

/* The non-empty 256-port chunks of one set, in port order. */
static int emit_chunks(struct compiler *cc, struct tf_policy *p, unsigned int cls, unsigned int k)
{
	const struct pset *s = &cc->classes[cls].set[k];
	struct tf_policy_chunk *c = NULL;
	unsigned int i, port, end;

	for (i = 0; i < s->n; i++) {
		for (port = s->r[i].lo; port <= s->r[i].hi; port = end + 1) {
			end = (port | 0xff) < s->r[i].hi ? (port | 0xff) : s->r[i].hi;
			if (!c || c->hi != port >> 8) {
				c = new_chunk(cc, p);
				if (!c)
					return -ENOMEM;
				c->cls = (__u16)cls;
				c->proto = tf_ipproto[k];
				c->hi = (__u8)(port >> 8);
			}
			set_bits(&c->bits, port & 0xff, end & 0xff);
		}
	}
	return 0;
}

static void rule_val(const struct perm *p, struct tf_rule_val *v)
{
	v->cls = (__u16)p->cls;
	v->all_ports = p->all_ports;
	v->protos = p->protos;
}

struct name_ref {
	__u8 rev[TF_DNS_NAME_MAX];
	unsigned int len;
	unsigned int rule;
	int wildcard;
};

static int name_ref_cmp(const void *a, const void *b)
{
	const struct name_ref *x = a, *y = b;
	unsigned int n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->rev, y->rev, n);

	if (!d)
		d = cmp_u(x->len, y->len);
	return d ? d : cmp_u(x->wildcard, y->wildcard);
}

/*
 * Sorted bytewise, reversed names come in depth-first order of the label
 * tree (a prefix sorts before everything it prefixes, and those follow it
 * contiguously), so the stack of enclosing names is the ancestor chain.
 */
static int compile_names(struct compiler *cc, unsigned int nrules, struct tf_policy *out)
{
	struct {
		unsigned int ref;
		struct perm sub, dsub; /* what names below it inherit: allowed, denied */
	} *stack = NULL;
	static const struct perm none;
	const struct perm *parent, *dparent;
	struct name_ref *refs = NULL;
	struct tf_policy_name *n;
	unsigned int *order = NULL, *saved = cc->order, nrefs = 0, depth = 0, i, j, w;
	struct perm exact, sub, dexact, dsub, e, b;
	int ret = -ENOMEM;

	for (i = 0; i < nrules; i++)
		nrefs += cc->rules[i].kind == TF_RULE_HOST;
	if (!nrefs)
		return 0;
	refs = calloc(nrefs, sizeof(*refs));
	order = calloc(nrefs, sizeof(*order));
	stack = calloc(nrefs, sizeof(*stack));
	out->names = calloc(nrefs, sizeof(*out->names));
	if (!refs || !order || !stack || !out->names)
		goto cleanup;
	for (i = 0, j = 0; i < nrules; i++) {
		if (cc->rules[i].kind != TF_RULE_HOST)
			continue;
		refs[j].len = tf_host_reverse(cc->rules[i].host, refs[j].rev);
		refs[j].rule = i;
		refs[j++].wildcard = cc->rules[i].wildcard;
	}
	qsort(refs, nrefs, sizeof(*refs), name_ref_cmp);
	for (i = 0; i < nrefs; i++)
		order[i] = refs[i].rule;
	cc->order = order; /* group_perm() reads rule indices from here */

	for (i = 0; i < nrefs; i = j) {
		for (w = i; w < nrefs && refs[w].len == refs[i].len &&
			    !memcmp(refs[w].rev, refs[i].rev, refs[i].len) && !refs[w].wildcard;
		     w++)
			;
		for (j = w; j < nrefs && refs[j].len == refs[i].len &&
			    !memcmp(refs[j].rev, refs[i].rev, refs[i].len);
		     j++)
			;
		while (depth && !(refs[stack[depth - 1].ref].len < refs[i].len &&
				  !memcmp(refs[stack[depth - 1].ref].rev, refs[i].rev,
					  refs[stack[depth - 1].ref].len)))
			depth--;
		parent = depth ? &stack[depth - 1].sub : &none;
		dparent = depth ? &stack[depth - 1].dsub : &none;
		/* Allowed and denied are flattened apart; the entry holds what deny leaves. */
		ret = group_perm(cc, i, w, 0, parent, &exact);
		if (!ret)
			ret = group_perm(cc, w, j, 0, parent, &sub);
		if (!ret)
			ret = group_perm(cc, i, w, 1, dparent, &dexact);
		if (!ret)
			ret = group_perm(cc, w, j, 1, dparent, &dsub);
		if (!ret)
			ret = perm_minus(cc, &exact, &dexact, &e);
		if (!ret)
			ret = perm_minus(cc, &sub, &dsub, &b);
		if (ret)
			goto cleanup;
		n = &out->names[out->nnames++];
		memcpy(n->name, refs[i].rev, sizeof(n->name));
		n->len = (__u16)refs[i].len;
		rule_val(&e, &n->exact);
		rule_val(&b, &n->sub);
		stack[depth].ref = i;
		stack[depth].sub = sub;
		stack[depth++].dsub = dsub;
	}
	ret = 0;
cleanup:
	cc->order = saved;
	free(refs);
	free(order);
	free(stack);
	return ret;
}

int tf_policy_name_perm(const struct tf_policy *p, const __u8 *name, unsigned int len, int below,
			struct tf_rule_val *perm, int *sub)
{
	int best = -1;
	unsigned int i;

	for (i = 0; i < p->nnames; i++)
		if (p->names[i].len <= len && !memcmp(p->names[i].name, name, p->names[i].len) &&
		    (best < 0 || p->names[i].len > p->names[best].len))
			best = (int)i;
	if (best < 0)
		return -1;
	*sub = below || p->names[best].len != len;
	*perm = *sub ? p->names[best].sub : p->names[best].exact;
	return perm->protos ? best : -1;
}

/*
 * The CIDR rules of one action, flattened into out's entries; deny rules'
 * entries have TF_FAM_DENY in their family (a tf_rules key of its own).
 */
static int compile_cidrs(struct compiler *cc, unsigned int nrules, int deny, struct tf_policy *out)
{
	struct {
		struct tf_cidr cidr;
		struct perm perm;
	} stack[STACK_MAX];
	static const struct perm none;
	const struct tf_rule *rules = cc->rules;
	struct tf_policy_entry *e;
	unsigned int depth = 0, i, j, ncidr;
	struct perm perm;
	int ret;

	for (i = 0, ncidr = 0; i < nrules; i++)
		if (rules[i].kind == TF_RULE_CIDR && rules[i].deny == deny)
			cc->order[ncidr++] = i;
	qsort_r(cc->order, ncidr, sizeof(*cc->order), order_cmp, (void *)rules);

	for (i = 0; i < ncidr; i = j) {
		const struct tf_cidr *c = &rules[cc->order[i]].cidr;

		for (j = i + 1; j < ncidr && !prefix_cmp(c, &rules[cc->order[j]].cidr); j++)
			;
		while (depth && !prefix_contains(&stack[depth - 1].cidr, c))
			depth--;
		ret = group_perm(cc, i, j, deny, depth ? &stack[depth - 1].perm : &none, &perm);
		if (ret)
			return ret;
		e = &out->entries[out->nentries++];
		e->family = c->ip.family | (deny ? TF_FAM_DENY : 0);
		e->prefixlen = c->prefixlen;
		memcpy(e->addr, c->ip.addr, sizeof(e->addr));
		rule_val(&perm, &e->val);
		stack[depth].cidr = *c;
		stack[depth++].perm = perm;
	}
	return 0;
}

/* What a compiler holds: its classes (each one allocation, from set[0].r), slots and scratch. */
static void compiler_free(struct compiler *cc)
{
	unsigned int i, k;

	for (i = 1; cc->classes && i <= cc->nclasses; i++)
		free(cc->classes[i].set[0].r);
	free(cc->classes);
	free(cc->slots);
	for (k = 0; k < NSETS; k++)
		free(cc->scratch[k]);
}

int tf_policy_compile(const struct tf_rule *rules, unsigned int nrules, struct tf_policy *out)
{
	struct compiler cc = { .rules = rules, .cap_classes = 64 };
	unsigned int i, k;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	cc.classes = calloc(cc.cap_classes, sizeof(*cc.classes));
	cc.order = malloc((nrules ? nrules : 1) * sizeof(*cc.order));
	out->entries = calloc(nrules ? nrules : 1, sizeof(*out->entries));
	if (!cc.classes || !cc.order || !out->entries || grow_slots(&cc))
		goto cleanup;
	ret = compile_cidrs(&cc, nrules, 0, out);
	if (!ret)
		ret = compile_cidrs(&cc, nrules, 1, out);
	if (!ret)
		ret = compile_names(&cc, nrules, out);
	if (ret)
		goto cleanup;

	for (i = 1; i <= cc.nclasses; i++) {
		for (k = 0; k < NSETS; k++) {
			ret = emit_chunks(&cc, out, i, k);
			if (ret)
				goto cleanup;
		}
	}
	out->nclasses = cc.nclasses;
	out->max_cls = cc.nclasses;
	ret = 0;
cleanup:
	compiler_free(&cc);
	free(cc.order);
	if (ret)
		tf_policy_free(out);
	return ret;
}

/*
 * cc's class table seeded with p's classes under p's numbers: each one's
 * port sets rebuilt from its chunks (bit runs, merged as the compiler
 * merges them), so that interning finds them and a new class is numbered
 * above p->max_cls. A number p does not use stays an empty class, which
 * interning never returns (take_class() makes no class of empty sets).
 */
static int seed_classes(struct compiler *cc, const struct tf_policy *p)
{
	const struct tf_policy_chunk *ch;
	struct tf_port_range one;
	unsigned int i, j, k, b, n, port;
	struct pclass *c;

	cc->cap_classes = p->max_cls + 2;
	cc->classes = calloc(cc->cap_classes, sizeof(*cc->classes));
	if (!cc->classes)
		return -ENOMEM;
	cc->nclasses = p->max_cls;
	for (i = 0; i < p->nchunks; i = j) {
		for (k = 0; k < NSETS; k++)
			cc->nscratch[k] = 0;
		for (j = i; j < p->nchunks && p->chunks[j].cls == p->chunks[i].cls; j++) {
			ch = &p->chunks[j];
			for (k = 0; k < NSETS && tf_ipproto[k] != ch->proto; k++)
				;
			for (b = 0; k < NSETS && b < 256; b++) {
				port = (unsigned int)ch->hi << 8 | b;
				if (!tf_port_bits_has(&ch->bits, (__u16)port))
					continue;
				n = cc->nscratch[k];
				if (n && cc->scratch[k][n - 1].hi + 1u == port) {
					cc->scratch[k][n - 1].hi = (__u16)port;
					continue;
				}
				one.lo = one.hi = (__u16)port;
				if (append(cc, k, &one, 1))
					return -ENOMEM;
			}
		}
		c = &cc->classes[p->chunks[i].cls];
		c->hash = scratch_hash(cc);
		if (class_set(cc, c))
			return -ENOMEM;
	}
	while (2 * cc->nclasses + 2 > cc->nslots)
		if (grow_slots(cc))
			return -ENOMEM;
	return 0;
}

static struct perm perm_of(const struct tf_rule_val *v)
{
	return (struct perm){ .all_ports = v->all_ports, .protos = v->protos, .cls = v->cls };
}

/* The index of the first entry of p not before e (tf_policy_entry_cmp()); *eq: it is e's key. */
static unsigned int entry_find(const struct tf_policy *p, const struct tf_policy_entry *e, int *eq)
{
	unsigned int lo = 0, hi = p->nentries, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (tf_policy_entry_cmp(&p->entries[mid], e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*eq = lo < p->nentries && !tf_policy_entry_cmp(&p->entries[lo], e);
	return lo;
}

/* Is entry e (of the same family as c) within prefix c? */
static int entry_within(const struct tf_policy_entry *e, const struct tf_policy_entry *c)
{
	struct tf_cidr pfx = { .ip.family = c->family & ~TF_FAM_DENY, .prefixlen = c->prefixlen };
	struct tf_ip ip = { .family = e->family & ~TF_FAM_DENY };

	memcpy(pfx.ip.addr, c->addr, sizeof(pfx.ip.addr));
	memcpy(ip.addr, e->addr, sizeof(ip.addr));
	return e->family == c->family && e->prefixlen >= c->prefixlen && tf_cidr_contains(&pfx, &ip);
}

/* The permission of the longest entry of p that strictly contains e (none: all zero). */
static struct perm entry_parent(const struct tf_policy *p, const struct tf_policy_entry *e)
{
	struct tf_policy_entry a = *e;
	unsigned int i, len, bits;
	int eq;

	for (len = e->prefixlen; len-- > 0;) {
		memset(a.addr, 0, sizeof(a.addr));
		for (bits = 0; bits < len; bits += 8)
			a.addr[bits / 8] = e->addr[bits / 8] &
					   (len - bits >= 8 ? 0xff : (__u8)(0xff << (8 - (len - bits))));
		a.prefixlen = (__u8)len;
		i = entry_find(p, &a, &eq);
		if (eq)
			return perm_of(&p->entries[i].val);
	}
	return (struct perm){ 0 };
}

/*
 * Policy old with one CIDR rule r more (allow or deny), computed from old
 * rather than from all the rules: what tf_policy_compile() of old's rules
 * and r gives, numbered as old (tf_policy_rebase()). r's prefix and every
 * entry within it take r's permission besides their own (an entry holds
 * the union of the rules containing it); the others are old's. Classes are
 * interned among old's, a new one numbered above old->max_cls; the chunks
 * of classes nothing refers to any more are left out. test_policy.c checks
 * it against the compiler.
 */
int tf_policy_add_cidr(const struct tf_policy *old, const struct tf_rule *r, struct tf_policy *out)
{
	unsigned int first = 0; /* cc.order: r alone */
	struct compiler cc = { .rules = r, .order = &first };
	struct tf_policy_entry key = { .prefixlen = r->cidr.prefixlen };
	unsigned char *used = NULL;
	unsigned int at, i, k, n;
	struct perm perm, own;
	int ret, eq;

	memset(out, 0, sizeof(*out));
	if (r->kind != TF_RULE_CIDR)
		return -EINVAL;
	key.family = r->cidr.ip.family | (r->deny ? TF_FAM_DENY : 0);
	memcpy(key.addr, r->cidr.ip.addr, sizeof(key.addr));
	ret = seed_classes(&cc, old);
	if (ret)
		goto cleanup;
	ret = -ENOMEM;
	at = entry_find(old, &key, &eq);
	out->nentries = old->nentries + !eq;
	out->entries = malloc(out->nentries * sizeof(*out->entries));
	out->names = old->nnames ? malloc(old->nnames * sizeof(*out->names)) : NULL;
	if (!out->entries || (old->nnames && !out->names))
		goto cleanup;
	memcpy(out->entries, old->entries, at * sizeof(*out->entries));
	memcpy(out->entries + at + !eq, old->entries + at,
	       (old->nentries - at) * sizeof(*out->entries));
	if (!eq) {
		out->entries[at] = key;
		perm = entry_parent(old, &key);
		rule_val(&perm, &out->entries[at].val);
	}
	for (i = at; i < out->nentries && entry_within(&out->entries[i], &key); i++) {
		own = perm_of(&out->entries[i].val);
		ret = group_perm(&cc, 0, 1, r->deny, &own, &perm);
		if (ret)
			goto cleanup;
		rule_val(&perm, &out->entries[i].val);
	}
	out->nnames = old->nnames;
	if (old->nnames)
		memcpy(out->names, old->names, old->nnames * sizeof(*out->names));
	/* Chunks: old's of the classes still referred to, then the new classes'. */
	ret = -ENOMEM;
	used = calloc(cc.nclasses + 1, 1);
	if (!used)
		goto cleanup;
	for (i = 0; i < out->nentries; i++)
		used[out->entries[i].val.cls] = 1;
	for (i = 0; i < out->nnames; i++)
		used[out->names[i].exact.cls] = used[out->names[i].sub.cls] = 1;
	for (i = 0; i < old->nchunks; i++) {
		if (!used[old->chunks[i].cls])
			continue;
		if (!out->nchunks || out->chunks[out->nchunks - 1].cls != old->chunks[i].cls)
			out->nclasses++;
		if (!new_chunk(&cc, out))
			goto cleanup;
		out->chunks[out->nchunks - 1] = old->chunks[i];
	}
	for (i = old->max_cls + 1, n = 0; i <= cc.nclasses; i++) {
		if (!used[i])
			continue;
		for (k = 0, n = out->nchunks; k < NSETS; k++) {
			ret = emit_chunks(&cc, out, i, k);
			if (ret)
				goto cleanup;
		}
		out->nclasses += out->nchunks > n;
	}
	out->max_cls = cc.nclasses;
	ret = 0;
cleanup:
	compiler_free(&cc);
	free(used);
	if (ret)
		tf_policy_free(out);
	return ret;
}

/* A class's chunks: a run of the chunks array (compile_*() emit each class's together). */
struct run {
	unsigned int first, n;
	__u32 hash;
};

static __u32 run_hash(const struct tf_policy_chunk *c, unsigned int n)
{
	const unsigned char *b;
	__u32 h = 2166136261u;
	unsigned int i;
	size_t k;

	for (i = 0; i < n; i++) {
		b = (const unsigned char *)&c[i].proto;
		h = (h ^ b[0]) * 16777619u;
		h = (h ^ c[i].hi) * 16777619u;
		b = (const unsigned char *)&c[i].bits;
		for (k = 0; k < sizeof(c[i].bits); k++)
			h = (h ^ b[k]) * 16777619u;
	}
	return h;
}

static int run_equal(const struct tf_policy *a, const struct run *x, const struct tf_policy *b,
		     const struct run *y)
{
	unsigned int i;

	if (x->n != y->n || x->hash != y->hash)
		return 0;
	for (i = 0; i < x->n; i++) {
		const struct tf_policy_chunk *c = &a->chunks[x->first + i], *d = &b->chunks[y->first + i];

		if (c->proto != d->proto || c->hi != d->hi || memcmp(&c->bits, &d->bits, sizeof(c->bits)))
			return 0;
	}
	return 1;
}

/* runs[cls] for every class of p (n = max_cls + 1 slots; a class without chunks has n = 0). */
static struct run *class_runs(const struct tf_policy *p)
{
	struct run *runs = calloc(p->max_cls + 1, sizeof(*runs));
	unsigned int i, j;

	if (!runs)
		return NULL;
	for (i = 0; i < p->nchunks; i = j) {
		for (j = i + 1; j < p->nchunks && p->chunks[j].cls == p->chunks[i].cls; j++)
			;
		if (p->chunks[i].cls <= p->max_cls) {
			runs[p->chunks[i].cls].first = i;
			runs[p->chunks[i].cls].n = j - i;
			runs[p->chunks[i].cls].hash = run_hash(&p->chunks[i], j - i);
		}
	}
	return runs;
}

static void renumber(struct tf_rule_val *v, const unsigned int *to)
{
	if (v->cls)
		v->cls = (__u16)to[v->cls];
}

int tf_policy_rebase(struct tf_policy *p, const struct tf_policy *old)
{
	struct run *mine = class_runs(p), *theirs = class_runs(old);
	unsigned int *to = calloc(p->max_cls + 1, sizeof(*to)), *slots = NULL;
	unsigned int nslots = 16, next = old->max_cls, i, k;
	int ret = -ENOMEM;

	while (nslots < 2 * (old->max_cls + 1))
		nslots *= 2;
	slots = calloc(nslots, sizeof(*slots));
	if (!mine || !theirs || !to || !slots)
		goto cleanup;
	/* old's classes by the hash of their chunks (open addressing, 0 = free). */
	for (i = 1; i <= old->max_cls; i++) {
		if (!theirs[i].n)
			continue;
		for (k = theirs[i].hash & (nslots - 1); slots[k]; k = (k + 1) & (nslots - 1))
			;
		slots[k] = i;
	}
	for (i = 1; i <= p->max_cls; i++) {
		to[i] = 0;
		if (mine[i].n)
			for (k = mine[i].hash & (nslots - 1); slots[k] && !to[i];
			     k = (k + 1) & (nslots - 1))
				if (run_equal(p, &mine[i], old, &theirs[slots[k]]))
					to[i] = slots[k];
		if (!to[i])
			to[i] = ++next;
	}
	ret = -E2BIG;
	if (next > 65535)
		goto cleanup;
	for (i = 0; i < p->nentries; i++)
		renumber(&p->entries[i].val, to);
	for (i = 0; i < p->nnames; i++) {
		renumber(&p->names[i].exact, to);
		renumber(&p->names[i].sub, to);
	}
	for (i = 0; i < p->nchunks; i++)
		p->chunks[i].cls = (__u16)to[p->chunks[i].cls];
	p->max_cls = next;
	ret = 0;
cleanup:
	free(mine);
	free(theirs);
	free(to);
	free(slots);
	return ret;
}

static int val_equal(const struct tf_rule_val *a, const struct tf_rule_val *b)
{
	return a->cls == b->cls && a->all_ports == b->all_ports && a->protos == b->protos;
}

int tf_policy_names_equal(const struct tf_policy *a, const struct tf_policy *b)
{
	unsigned int i;

	if (a->nnames != b->nnames)
		return 0;
	for (i = 0; i < a->nnames; i++)
		if (a->names[i].len != b->names[i].len ||
		    memcmp(a->names[i].name, b->names[i].name, a->names[i].len) ||
		    !val_equal(&a->names[i].exact, &b->names[i].exact) ||
		    !val_equal(&a->names[i].sub, &b->names[i].sub))
			return 0;
	return 1;
}

int tf_policy_entry_cmp(const struct tf_policy_entry *a, const struct tf_policy_entry *b)
{
	int d = cmp_u(a->family & TF_FAM_DENY, b->family & TF_FAM_DENY);

	if (!d)
		d = cmp_u(a->family, b->family);
	if (!d)
		d = memcmp(a->addr, b->addr, sizeof(a->addr));
	return d ? d : cmp_u(a->prefixlen, b->prefixlen);
}

void tf_policy_free(struct tf_policy *p)
{
	if (!p)
		return;
	free(p->entries);
	free(p->names);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

/* The longest entry of family (TF_FAM_DENY or'ed in for deny entries) containing addr, or NULL. */
static const struct tf_policy_entry *longest(const struct tf_policy *p, __u8 family,
					     const __u8 addr[16])
{
	const struct tf_policy_entry *best = NULL, *e;
	struct tf_ip ip = { .family = family & ~TF_FAM_DENY };
	struct tf_cidr pfx;
	unsigned int i;

	memcpy(ip.addr, addr, sizeof(ip.addr));
	for (i = 0; i < p->nentries; i++) {
		e = &p->entries[i];
		if (e->family != family)
			continue;
		pfx.ip.family = e->family & ~TF_FAM_DENY;
		memcpy(pfx.ip.addr, e->addr, sizeof(pfx.ip.addr));
		pfx.prefixlen = e->prefixlen;
		if (tf_cidr_contains(&pfx, &ip) && (!best || e->prefixlen > best->prefixlen))
			best = e;
	}
	return best;
}

int tf_policy_denies(const struct tf_policy *p, __u8 family, const __u8 addr[16], __u8 proto,
		     __u16 port)
{
	const struct tf_policy_entry *d = longest(p, family | TF_FAM_DENY, addr);

	return d && tf_policy_perm_allows(p, &d->val, family, proto, port);
}

int tf_policy_allows(const struct tf_policy *p, __u8 family, const __u8 addr[16], __u8 proto,
		     __u16 port)
{
	const struct tf_policy_entry *best = longest(p, family, addr);

	return best && tf_policy_perm_allows(p, &best->val, family, proto, port) &&
	       !tf_policy_denies(p, family, addr, proto, port);
}

int tf_policy_perm_allows(const struct tf_policy *p, const struct tf_rule_val *v, __u8 family,
			  __u8 proto, __u16 port)
{
	const struct tf_policy_chunk *c;
	unsigned int i;

	switch (tf_perm_eval(v, tf_perm_bit(proto, family))) {
	case TF_PERM_ALLOW:
		return 1;
	case TF_PERM_PORT:
		for (i = 0; i < p->nchunks; i++) {
			c = &p->chunks[i];
			if (c->cls == v->cls && c->proto == proto && c->hi == port >> 8)
				return tf_port_bits_has(&c->bits, port);
		}
		return 0;
	case TF_PERM_DENY:
		break;
	}
	return 0;
}
