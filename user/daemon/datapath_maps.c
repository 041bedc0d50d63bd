// SPDX-License-Identifier: GPL-2.0
/*
 * Map writes: a session's device entry and guest addresses, its policy
 * generations (rules, port classes, names) and their switch, learnt
 * addresses carried across generations, the sweep of leftovers, counters.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "datapath_int.h"

void tf_dp_session_value(const struct tf_dp *dp, const struct tf_spec *spec, __u32 sid, __u32 ver,
			 struct tf_session *v)
{
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->sid = sid;
	v->policy_ver = ver;
	v->rules_ver = ver;
	if (spec->audit)
		v->flags |= TF_SF_AUDIT;
	if (sid < TF_MAX_SESSIONS && dp->via_guard[sid])
		v->flags |= TF_SF_VIA_GUARD;
	if (spec->on_deny == TF_ON_DENY_REJECT ||
	    (spec->on_deny == TF_ON_DENY_DEFAULT && dp->cfg->on_deny_reject))
		v->flags |= TF_SF_REJECT;
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
	for (i = 0; i < spec->nrules; i++) {
		if (spec->rules[i].kind == TF_RULE_HOST && !spec->rules[i].deny)
			v->flags |= TF_SF_HOSTS;
		if (spec->rules[i].kind == TF_RULE_CIDR && spec->rules[i].deny)
			v->flags |= TF_SF_DENY;
	}
	if (spec->resolver.family == TF_FAM_IPV4) {
		v->flags |= TF_SF_RESOLVER4;
		memcpy(&v->resolver_ip4, spec->resolver.addr, 4);
	} else if (spec->resolver.family == TF_FAM_IPV6) {
		v->flags |= TF_SF_RESOLVER6;
		memcpy(v->resolver_ip6, spec->resolver.addr, 16);
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
 * What an entry for the name the guest asked (reversed form, len bytes)
 * gets under new, as a query for it would: 0 with *idx, *sub and *perm
 * rewritten, or -1 if new gives it nothing. By the name itself, not by the
 * entry that allowed it: a deny rule added for gist.github.com must reach
 * an address learnt for it through an allow of *.github.com.
 */
static int rederive(const struct tf_policy *new, const __u8 *name, __u16 len, __u16 *idx, __u8 *sub,
		    struct tf_rule_val *perm)
{
	int s, i;

	if (!len || len > TF_DNS_NAME_MAX)
		return -1;
	i = tf_policy_name_perm(new, name, len, 0, perm, &s);
	if (i < 0)
		return -1;
	*idx = (__u16)i;
	*sub = (__u8)s;
	return 0;
}

/* Rebase the entries of slot sid's table which (one with generation fields, g). */
static void rebase_table(struct tf_dp *dp, enum tf_slot_map which, const struct tf_slot_gen *g,
			 __u32 sid, __u32 ver, const struct tf_policy *new)
{
	const struct tf_slot_desc *t = &tf_slot_descs[which];
	int fd, more;
	__u8 key[512], next[512], val[512];
	struct tf_rule_val perm;
	__u32 cur;
	__u16 idx, len;
	__u8 sub;

	if (t->key_size > sizeof(key) || t->value_size > sizeof(val))
		return;
	fd = tf_dp_slot_open(dp, which, sid);
	if (fd < 0) {
		/* Its entries stay of their old generation, which the datapath no longer takes. */
		pr_warn("slot %u: cannot open its %s: %s (its entries are not carried over)\n", sid,
			t->name, strerror(-fd));
		return;
	}
	for (more = !bpf_map_get_next_key(fd, NULL, next); more;) {
		memcpy(key, next, t->key_size);
		more = !bpf_map_get_next_key(fd, key, next);
		if (bpf_map_lookup_elem(fd, key, val))
			continue;
		/*
		 * Already of generation ver, its name_idx is new's: an entry the
		 * datapath wrote from a query this rebase moved before (an answer
		 * landing mid-rebase). Rederiving it from old would give it
		 * whatever old's entry at that index has under new.
		 */
		memcpy(&cur, val + g->ver, sizeof(cur));
		if (new &&cur == ver)
			continue;
		memcpy(&len, val + g->name_len, sizeof(len));
		if (new && !rederive(new, val + g->name, len, &idx, &sub, &perm)) {
			memcpy(val + g->name_idx, &idx, sizeof(idx));
			memcpy(val + g->sub, &sub, sizeof(sub));
			memcpy(val + g->perm, &perm, sizeof(perm));
			memcpy(val + g->ver, &ver, sizeof(ver));
			if (!bpf_map_update_elem(fd, key, val, BPF_EXIST))
				continue;
		}
		bpf_map_delete_elem(fd, key);
	}
	close(fd);
}

/*
 * Every entry keeps what the new policy gives the name entry it was allowed
 * through, or goes if that is nothing. Both generations are written while
 * this runs (tf_dp_policy_switch()), so an entry always points at a
 * generation whose port classes exist.
 */
void tf_dp_names_rebase(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *new)
{
	enum tf_slot_map m;

	for (m = 0; m < TF_SLOT_MAPS; m++)
		if (tf_slot_descs[m].gen)
			rebase_table(dp, m, tf_slot_descs[m].gen, sid, ver, new);
}

int tf_dp_policy_switch(struct tf_dp *dp, __u32 sid, const struct tf_sess_key *dev,
			const struct tf_dp_gen *from, const struct tf_dp_gen *to)
{
	struct tf_session v;
	int err;

	/*
	 * Learnt addresses and outstanding queries move to the new
	 * generation before the switch: from the switch on, every flow is
	 * re-judged by it at its next packet, and one through a learnt
	 * address must find the address there. Until the switch, flows are
	 * judged by the old generation and need no address (only new flows
	 * to learnt addresses wait, as they would after).
	 */
	if (to->ver != from->ver)
		tf_dp_names_rebase(dp, sid, to->ver, to->policy);
	tf_dp_session_value(dp, to->spec, sid, to->ver, &v);
	if (to->pver)
		v.policy_ver = to->pver;
	err = tf_dp_session_set(dp, dev, &v);
	if (err && to->ver != from->ver)
		tf_dp_names_rebase(dp, sid, from->ver, from->policy);
	return err;
}

/*
 * Make the entries of generation ver from's into to's: delete from's
 * entries that to has not (a delete needs no room), write the chunks of to's
 * new classes (numbered above from's), then to's entries that from has not
 * or has otherwise. Entries come sorted (tf_policy_entry_cmp()), so one
 * merge finds each. Run with from and to swapped, it undoes a run that
 * failed part way: every step is idempotent.
 */
static int policy_delta(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *from,
			const struct tf_policy *to)
{
	int rfd = bpf_map__fd(dp->skel->maps.tf_rules);
	int pfd = bpf_map__fd(dp->skel->maps.tf_ports);
	const struct tf_policy_entry *a, *b;
	struct tf_rule_key rk;
	struct tf_port_key pk;
	unsigned int i, k;
	int d;

	for (i = 0, k = 0; i < from->nentries; i++) {
		a = &from->entries[i];
		/* Most entries are the same, at the same place: one compare of the whole. */
		if (k < to->nentries && !memcmp(&to->entries[k], a, sizeof(*a))) {
			k++;
			continue;
		}
		for (d = 1; k < to->nentries && (d = tf_policy_entry_cmp(&to->entries[k], a)) < 0;)
			k++;
		if (!d)
			continue;
		rule_key(sid, ver, a, &rk);
		if (bpf_map_delete_elem(rfd, &rk) && errno != ENOENT)
			return -errno;
	}
	for (i = 0; i < to->nchunks; i++) {
		if (to->chunks[i].cls <= from->max_cls)
			continue;
		port_key(sid, ver, &to->chunks[i], &pk);
		if (bpf_map_update_elem(pfd, &pk, &to->chunks[i].bits, BPF_ANY))
			return -errno;
	}
	for (i = 0, k = 0; k < to->nentries; k++) {
		b = &to->entries[k];
		if (i < from->nentries && !memcmp(&from->entries[i], b, sizeof(*b))) {
			i++;
			continue;
		}
		for (d = -1; i < from->nentries && (d = tf_policy_entry_cmp(&from->entries[i], b)) < 0;)
			i++;
		if (!d && !memcmp(&from->entries[i].val, &b->val, sizeof(b->val)))
			continue;
		rule_key(sid, ver, b, &rk);
		if (bpf_map_update_elem(rfd, &rk, &b->val, BPF_ANY))
			return -errno;
	}
	return 0;
}

int tf_dp_policy_apply(struct tf_dp *dp, __u32 sid, const struct tf_sess_key *dev,
		       const struct tf_dp_gen *from, const struct tf_dp_gen *to, __u32 *now,
		       int *mixed)
{
	struct tf_dp_gen mid = *from, back = *from;
	int err;

	*now = from->pver;
	*mixed = 0;
	mid.pver = from->pver + 1;
	back.pver = to->pver;
	err = tf_dp_policy_switch(dp, sid, dev, from, &mid);
	if (err)
		return err;
	*now = mid.pver;
	err = policy_delta(dp, sid, to->ver, from->policy, to->policy);
	if (!err)
		err = tf_dp_policy_switch(dp, sid, dev, &mid, to);
	if (!err) {
		*now = to->pver;
		return 0;
	}
	/* Back to from's entries, under a version of their own: flows of the transition go again. */
	if (policy_delta(dp, sid, from->ver, to->policy, from->policy)) {
		pr_warn("slot %u: cannot write policy %u back in full after a failed change\n", sid,
			from->pver);
		*mixed = 1;
	}
	tf_dp_policy_prune(dp, sid, from->ver, to->policy, from->policy);
	if (!tf_dp_policy_switch(dp, sid, dev, &mid, &back))
		*now = back.pver;
	return err;
}

void tf_dp_policy_prune(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *from,
			const struct tf_policy *to)
{
	unsigned int n = (from->max_cls > to->max_cls ? from->max_cls : to->max_cls) + 1, i;
	int pfd = bpf_map__fd(dp->skel->maps.tf_ports);
	unsigned char *keep = calloc(n, 1);
	struct tf_port_key pk;

	if (!keep)
		return; /* chunks of a class nothing points at: room taken, nothing allowed */
	for (i = 0; i < to->nchunks; i++)
		keep[to->chunks[i].cls] = 1;
	for (i = 0; i < from->nchunks; i++) {
		if (keep[from->chunks[i].cls])
			continue;
		port_key(sid, ver, &from->chunks[i], &pk);
		bpf_map_delete_elem(pfd, &pk);
	}
	free(keep);
}

int tf_dp_policy_change(struct tf_dp *dp, __u32 sid, const struct tf_sess_key *dev,
			const struct tf_dp_gen *from, const struct tf_dp_gen *to)
{
	int err = tf_dp_policy_write(dp, sid, to->ver, to->policy);

	if (!err)
		err = tf_dp_policy_switch(dp, sid, dev, from, to);
	if (err)
		tf_dp_policy_erase(dp, sid, to->ver, to->policy); /* from is still in force */
	return err;
}

/*
 * Entries a batch lookup of a learnt-address table starts with; doubled
 * while a bucket holds more than that (ENOSPC), up to the table's size.
 */
#define LEARNED_BATCH 128

/*
 * In batch lookups (a walk by key was two system calls an entry, and
 * `tapfence top' walks every session's table each time it refreshes). An
 * entry the datapath adds or removes meanwhile may be seen or not, as with
 * any walk of a live table.
 */
int tf_dp_learned(struct tf_dp *dp, __u32 sid,
		  int (*fn)(const struct tf_learn_key *k, const struct tf_learned *v, void *ctx),
		  void *ctx)
{
	int lfd = tf_dp_slot_open(dp, TF_SLOT_LEARNED, sid), started = 0, more = 1, err = 0;
	__u32 cap = LEARNED_BATCH, count, i, in = 0, out;
	struct tf_learn_key *keys;
	struct tf_learned *vals;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	void *p;

	if (lfd < 0)
		return lfd;
	keys = calloc(cap, sizeof(*keys));
	vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals)
		err = -ENOMEM;
	while (!err && more) {
		count = cap;
		if (bpf_map_lookup_batch(lfd, started ? &in : NULL, &out, keys, vals, &count,
					 &opts)) {
			if (errno == ENOSPC && !count && cap < dp->cfg->learned_entries) {
				cap *= 2;
				if (!(p = reallocarray(keys, cap, sizeof(*keys)))) {
					err = -ENOMEM;
					break;
				}
				keys = p;
				if (!(p = reallocarray(vals, cap, sizeof(*vals)))) {
					err = -ENOMEM;
					break;
				}
				vals = p;
				continue; /* nothing was read: from the same bucket again */
			}
			if (errno != ENOENT) {
				err = -errno;
				break;
			}
			more = 0; /* ENOENT: this batch was the last */
		}
		for (i = 0; i < count && !err; i++)
			err = fn(&keys[i], &vals[i], ctx);
		in = out;
		started = 1;
	}
	free(keys);
	free(vals);
	close(lfd);
	return err;
}

int tf_dp_session_set(struct tf_dp *dp, const struct tf_sess_key *dev, const struct tf_session *v)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_sessions);

	return bpf_map_update_elem(fd, dev, v, BPF_ANY) ? -errno : 0;
}

int tf_dp_session_get(struct tf_dp *dp, const struct tf_sess_key *dev, struct tf_session *v)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_sessions);

	return bpf_map_lookup_elem(fd, dev, v) ? -errno : 0;
}

void tf_dp_session_unset(struct tf_dp *dp, const struct tf_sess_key *dev)
{
	bpf_map_delete_elem(bpf_map__fd(dp->skel->maps.tf_sessions), dev);
}

int tf_dp_session_install(struct tf_dp *dp, const struct tf_spec *spec, const struct tf_policy *p,
			  __u32 sid, __u32 ver, const struct tf_sess_key *dev, int keep)
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
		tf_dp_names_rebase(dp, sid, ver, p);
	if (!err) {
		tf_dp_session_value(dp, spec, sid, ver, &v);
		err = tf_dp_session_set(dp, dev, &v);
	}
	return err;
}

void tf_dp_session_remove(struct tf_dp *dp, const struct tf_spec *spec, const struct tf_policy *p,
			  __u32 sid, __u32 ver, const struct tf_sess_key *dev)
{
	tf_dp_session_unset(dp, dev);
	tf_dp_addrs_unset(dp, spec);
	tf_dp_policy_erase(dp, sid, ver, p);
	tf_dp_slot_release(dp, sid); /* its flows, queries and learnt addresses go with it */
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

int tf_dp_sessions_each(struct tf_dp *dp,
			int (*fn)(const struct tf_sess_key *dev, const struct tf_session *v,
				  void *ctx),
			void *ctx)
{
	int fd = bpf_map__fd(dp->skel->maps.tf_sessions), more, err;
	struct tf_sess_key k, next;
	struct tf_session v;

	for (more = !bpf_map_get_next_key(fd, NULL, &next); more;) {
		k = next;
		more = !bpf_map_get_next_key(fd, &k, &next);
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		err = fn(&k, &v, ctx);
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
			tf_dp_slot_orphan(dp, sid);
}

/* Keys a batch lookup reads at most: its buffer is this * CPUs * value size. */
#define SUMS_BATCH 512

/*
 * Adds the per-CPU values of entry key of a per-CPU array (ncpu * width
 * 64-bit words, at v) to out[0, width).
 */
static void percpu_add(const __u64 *v, int ncpu, unsigned int width, __u64 *out)
{
	unsigned int w;
	int c;

	for (c = 0; c < ncpu; c++)
		for (w = 0; w < width; w++)
			out[w] += v[(size_t)c * width + w];
}

/*
 * out[i * width + w], for i < n and w < width: word w of the per-CPU
 * values of entry first + i of per-CPU array fd (width 64-bit words an
 * entry), summed over the CPUs. A batch lookup for up to SUMS_BATCH
 * entries (a session's 128 counters were 128 system calls), one lookup an
 * entry where a batch fails.
 */
static int percpu_sums(int fd, __u32 first, __u32 n, unsigned int width, __u64 *out)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	__u32 chunk = n < SUMS_BATCH ? n : SUMS_BATCH, i, at, key, prev, next, count, *keys;
	size_t step;
	__u64 *values;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (ncpu < 0)
		return ncpu;
	step = (size_t)ncpu * width;
	values = calloc(step * chunk, sizeof(*values));
	keys = calloc(chunk, sizeof(*keys));
	if (!values || !keys) {
		err = -ENOMEM;
		goto out;
	}
	memset(out, 0, (size_t)n * width * sizeof(*out));
	for (at = 0; at < n && !err; at += count) {
		count = n - at < chunk ? n - at : chunk;
		/* A batch starts after its in_batch key: the one before, or none for entry 0. */
		prev = first + at - 1;
		if ((!bpf_map_lookup_batch(fd, first + at ? &prev : NULL, &next, keys, values,
					   &count, &opts) ||
		     errno == ENOENT) &&
		    count && keys[0] == first + at && keys[count - 1] == first + at + count - 1) {
			for (i = 0; i < count; i++)
				percpu_add(values + i * step, ncpu, width, out + (at + i) * width);
			continue;
		}
		count = n - at < chunk ? n - at : chunk;
		for (i = 0; i < count && !err; i++) {
			key = first + at + i;
			if (bpf_map_lookup_elem(fd, &key, values))
				err = -errno;
			else
				percpu_add(values, ncpu, width, out + (at + i) * width);
		}
	}
out:
	free(values);
	free(keys);
	return err;
}

int tf_dp_counters(struct tf_dp *dp, __u32 sid, __u64 out[TF_CNT_SLOTS])
{
	__u64 fc[2];
	int err = percpu_sums(bpf_map__fd(dp->skel->maps.tf_counters), sid * TF_CNT_SLOTS,
			      TF_CNT_SLOTS, 1, out);

	if (!err)
		err = percpu_sums(bpf_map__fd(dp->skel->maps.tf_flowcnt), sid, 1, 2, fc);
	if (err)
		return err;
	out[TF_CNT_FLOWS_OPENED] = fc[0];
	out[TF_CNT_FLOWS_REMOVED] = fc[1];
	return 0;
}

int tf_dp_stats(struct tf_dp *dp, __u64 out[TF_STAT_MAX])
{
	return percpu_sums(bpf_map__fd(dp->skel->maps.tf_stats), 0, TF_STAT_MAX, 1, out);
}

static int fill_cmp(const void *a, const void *b)
{
	const struct tf_fill_rec *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/*
 * The iterator's records (struct tf_fill_rec, one a map), sorted by id:
 * *recs (free it), their number or -errno. flows: the flow tables' only.
 * All of the walk or nothing: a missing record would read as an empty table.
 */
static ssize_t fill_read(struct tf_dp *dp, int flows, struct tf_fill_rec **recs)
{
	struct tf_fill_rec *p;
	size_t len = 0, cap = 256 * sizeof(*p);
	ssize_t r;
	int fd, err = 0;

	*recs = NULL;
	if (!dp->fill)
		return -ENOTSUP;
	pthread_mutex_lock(&dp->fill_lock); /* the pool's thread walks too (tf_dp_flows_ask()) */
	dp->skel->bss->fill_flows_only = flows;
	fd = bpf_iter_create(bpf_link__fd(dp->fill));
	if (fd < 0) {
		err = -errno;
		pthread_mutex_unlock(&dp->fill_lock);
		return err;
	}
	do {
		if (len == cap || !*recs) {
			cap = *recs ? 2 * cap : cap;
			p = realloc(*recs, cap);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			*recs = p;
		}
		r = read(fd, (char *)*recs + len, cap - len);
		if (r < 0)
			err = -errno;
		else
			len += (size_t)r;
	} while (r > 0);
	close(fd);
	pthread_mutex_unlock(&dp->fill_lock);
	if (!err && len % sizeof(*p))
		err = -EIO; /* a torn record */
	if (err) {
		free(*recs);
		*recs = NULL;
		return err;
	}
	if (len)
		qsort(*recs, len / sizeof(*p), sizeof(*p), fill_cmp);
	return (ssize_t)(len / sizeof(*p));
}

/*
 * Table m of slot sid, in use: its entries, by the iterator's records, and
 * its size (0 and 0 for a slot not in use); -ENOENT if the slot has no
 * such table or it is not among the records: an unread table is not an
 * empty one. dp->slot_lock held.
 */
static int slot_entries(struct tf_dp *dp, const struct tf_fill_rec *recs, size_t nrecs, int m,
			__u32 sid, __u64 *n, __u64 *cap)
{
	const struct tf_slot_info *si = &dp->slot_info[m][sid];
	struct tf_fill_rec key, *p;

	*n = *cap = 0;
	if (dp->slot_state[sid] != SLOT_USED)
		return 0;
	if (!si->id)
		return -ENOENT;
	key.id = si->id;
	p = nrecs ? bsearch(&key, recs, nrecs, sizeof(*recs), fill_cmp) : NULL;
	if (!p)
		return -ENOENT;
	*n = p->n > 0 ? (__u64)p->n : 0; /* a sum of per-CPU counts, which can dip under 0 */
	*cap = si->max_entries;
	return 0;
}

int tf_dp_fill(struct tf_dp *dp, __u64 out[TF_SLOT_MAPS])
{
	struct tf_fill_rec *recs;
	ssize_t n = fill_read(dp, 0, &recs);
	__u64 v, cap;
	__u32 sid;
	int m;

	memset(out, 0, sizeof(__u64) * TF_SLOT_MAPS);
	if (n < 0)
		return (int)n;
	pthread_mutex_lock(&dp->slot_lock); /* the pool's thread changes the free slots' fds */
	for (m = 0; m < TF_SLOT_MAPS; m++)
		for (sid = 1; sid < TF_MAX_SESSIONS; sid++)
			if (!slot_entries(dp, recs, (size_t)n, m, sid, &v, &cap))
				out[m] += v;
	pthread_mutex_unlock(&dp->slot_lock);
	free(recs);
	return 0;
}

/*
 * The flow counts (opened, removed: two words each) of slots lo..hi, into
 * a new array of hi - lo + 1; NULL with errno on failure.
 */
static __u64 *flowcnt_read(struct tf_dp *dp, __u32 lo, __u32 hi)
{
	__u64 *c = calloc((size_t)(hi - lo + 1) * 2, sizeof(*c));
	int err;

	if (!c)
		return NULL;
	err = percpu_sums(bpf_map__fd(dp->skel->maps.tf_flowcnt), lo, hi - lo + 1, 2, c);
	if (err) {
		free(c);
		errno = -err;
		return NULL;
	}
	return c;
}

int tf_dp_flows(struct tf_dp *dp, const __u32 *sids, unsigned int n, struct tf_flowcount *out)
{
	__u64 *before = NULL, *after = NULL;
	__u32 lo = TF_MAX_SESSIONS, hi = 0;
	struct tf_fill_rec *recs = NULL;
	unsigned int i;
	ssize_t np;
	int err = 0;

	memset(out, 0, n * sizeof(*out));
	for (i = 0; i < n; i++) {
		lo = sids[i] < lo ? sids[i] : lo;
		hi = sids[i] > hi ? sids[i] : hi;
	}
	if (!n)
		return 0;
	/* Opened before the entries are read, removed after: the difference can only fall short. */
	before = flowcnt_read(dp, lo, hi);
	if (!before)
		return -errno;
	np = fill_read(dp, 1, &recs);
	if (np < 0) {
		err = (int)np;
		goto out;
	}
	pthread_mutex_lock(&dp->slot_lock);
	for (i = 0; i < n && !err; i++)
		err = slot_entries(dp, recs, (size_t)np, TF_SLOT_FLOWS, sids[i], &out[i].entries,
				   &out[i].capacity);
	pthread_mutex_unlock(&dp->slot_lock);
	if (err)
		goto out; /* an unread table is not an empty one: no eviction counted from it */
	after = flowcnt_read(dp, lo, hi);
	if (!after) {
		err = -errno; /* an unread count is not zero: it would read as evictions */
		goto out;
	}
	for (i = 0; i < n; i++) {
		out[i].opened = before[(sids[i] - lo) * 2];
		out[i].removed = after[(sids[i] - lo) * 2 + 1];
		if (out[i].opened > out[i].removed + out[i].entries)
			out[i].evicted = out[i].opened - out[i].removed - out[i].entries;
	}
out:
	free(before);
	free(after);
	free(recs);
	return err;
}

struct tf_flowlook *tf_dp_flowlook_new(unsigned int n)
{
	struct tf_flowlook *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->n = n;
	l->sids = calloc(n ?: 1, sizeof(*l->sids));
	l->tags = calloc(n ?: 1, sizeof(*l->tags));
	l->out = calloc(n ?: 1, sizeof(*l->out));
	if (!l->sids || !l->tags || !l->out) {
		tf_dp_flowlook_free(l);
		return NULL;
	}
	return l;
}

void tf_dp_flowlook_free(struct tf_flowlook *l)
{
	if (!l)
		return;
	free(l->sids);
	free(l->tags);
	free(l->out);
	free(l);
}

const char *tf_dp_flows_strerror(int err)
{
	return err == -ENOTSUP ? "no table-fill iterator" : strerror(-err);
}

int tf_dp_flows_told(struct tf_dp *dp, __u32 sid, __u64 told)
{
	if (bpf_map_update_elem(bpf_map__fd(dp->skel->maps.tf_flows_told), &sid, &told, BPF_ANY))
		return -errno;
	return 0;
}

int tf_dp_flows_told_get(struct tf_dp *dp, __u32 sid, __u64 *told)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.tf_flows_told), &sid, told))
		return -errno;
	return 0;
}
