// SPDX-License-Identifier: GPL-2.0
/*
 * The per-session tables: each an outer map-in-map of the object with one
 * inner map per slot (flows, outstanding queries, learnt addresses, TLS
 * hellos being read, TLS bindings), described once in tf_slot_descs and
 * created, adopted, inserted and deleted by walking it.
 *
 * Inserting an inner map into its outer map, or deleting it, waits for an
 * RCU grace period (the kernel's maybe_wait_bpf_programs()), about 10 ms
 * here: five per session set up one by one. So slots are recycled instead
 * (docs/performance.md#session-set-up): a released slot keeps its tables,
 * which the pool's thread empties after one grace period for all the slots
 * released meanwhile (no program can still be writing them: their session
 * and address entries went before), and the thread keeps limits.warm_slots
 * slots ready ahead of demand, inserting each kind of table for many slots
 * with one batch update and so one grace period.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath_int.h"

#define POOL_BATCH 64 /* slots filled or cleared per grace period */

struct tf_pool {
	pthread_t thread;
	pthread_cond_t wake;
	int stop;
	int grace_outer, grace_inner; /* a private array of maps, written to wait a grace period */
	unsigned int filled, cleared, dropped; /* since start */
	unsigned int coming;		       /* slots being filled or emptied now */
	pthread_cond_t ready_cv;	       /* and now ready */
	struct tf_flowlook *asked;	       /* tf_dp_flows_ask(), not begun */
};

#define OUTER(m) offsetof(struct tapfence_bpf, maps.m)
#define LIMIT(f) offsetof(struct tf_config, f)

#define GEN(v)                                                                                \
	{                                                                                     \
		offsetof(v, ver), offsetof(v, perm), offsetof(v, name_idx), offsetof(v, sub), \
			offsetof(v, name), offsetof(v, name_len)                              \
	}
/* The types rebase_table() (datapath_maps.c) reads and writes them as. */
#define GEN_TYPES(v)                                                                   \
	_Static_assert(sizeof(((v *)0)->ver) == sizeof(__u32) &&                       \
			       sizeof(((v *)0)->perm) == sizeof(struct tf_rule_val) && \
			       sizeof(((v *)0)->name_idx) == sizeof(__u16) &&          \
			       sizeof(((v *)0)->sub) == sizeof(__u8) &&                \
			       sizeof(((v *)0)->name) == TF_DNS_NAME_MAX &&            \
			       sizeof(((v *)0)->name_len) == sizeof(__u16),            \
		       #v " generation fields")

GEN_TYPES(struct tf_dnsq);
GEN_TYPES(struct tf_learned);

static const struct tf_slot_gen dnsq_gen = GEN(struct tf_dnsq);
static const struct tf_slot_gen learned_gen = GEN(struct tf_learned);

const struct tf_slot_desc tf_slot_descs[TF_SLOT_MAPS] = {
	[TF_SLOT_FLOWS] = { "tf_flows", OUTER(tf_flows), BPF_MAP_TYPE_LRU_HASH, 0,
			    sizeof(struct tf_flow_key), sizeof(struct tf_flow),
			    LIMIT(flows_per_session) },
	[TF_SLOT_DNSQ] = { "tf_dnsq", OUTER(tf_dnsq), BPF_MAP_TYPE_LRU_HASH, 0,
			   sizeof(struct tf_dnsq_key), sizeof(struct tf_dnsq), LIMIT(dns_queries),
			   &dnsq_gen },
	[TF_SLOT_LEARNED] = { "tf_learned", OUTER(tf_learned), BPF_MAP_TYPE_LRU_HASH, 0,
			      sizeof(struct tf_learn_key), sizeof(struct tf_learned),
			      LIMIT(learned_entries), &learned_gen },
	/* A plain hash (no eviction of a hello being read), not preallocated (maps.bpf.h). */
	[TF_SLOT_TLSBUF] = { "tf_tlsbuf", OUTER(tf_tlsbuf), BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC,
			     sizeof(struct tf_flow_key), sizeof(struct tf_tls_buf),
			     LIMIT(tls_pending) },
	[TF_SLOT_TLSBIND] = { "tf_tlsbind", OUTER(tf_tlsbind), BPF_MAP_TYPE_LRU_HASH, 0,
			      sizeof(struct tf_bind_key), sizeof(__u64), LIMIT(learned_entries) },
};

struct bpf_map *tf_slot_outer(struct tapfence_bpf *skel, enum tf_slot_map which)
{
	return *(struct bpf_map **)((char *)skel + tf_slot_descs[which].outer);
}

int tf_slot_create(const struct tf_config *cfg, enum tf_slot_map which, __u32 sid)
{
	const struct tf_slot_desc *t = &tf_slot_descs[which];
	unsigned int max = *(const unsigned int *)((const char *)cfg + t->max);
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = t->flags);
	char name[BPF_OBJ_NAME_LEN];
	int fd;

	snprintf(name, sizeof(name), "%s_%u", t->name, sid);
	fd = bpf_map_create(t->type, name, t->key_size, t->value_size, max, &opts);
	return fd < 0 ? -errno : fd;
}

/* Slot sid's flow counts and evictions told back to 0: its flow table is a new one. */
static int flows_zero(struct tf_dp *dp, __u32 sid)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct tf_flowcnt *zero;

	if (ncpu < 0)
		return ncpu;
	zero = calloc(ncpu, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(bpf_map__fd(dp->skel->maps.tf_flowcnt), &sid, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err ?: tf_dp_flows_told(dp, sid, 0);
}

/*
 * A fresh slot: zero counters and flow counts, an empty event-rate bucket
 * on every CPU, no evictions told.
 */
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
	return err ?: flows_zero(dp, sid);
}

static void slot_pin_path(const struct tf_dp *dp, enum tf_slot_map which, __u32 sid, char *buf,
			  size_t len)
{
	snprintf(buf, len, "%s/slots/%s_%u", dp->cfg->pin_dir, tf_slot_descs[which].name, sid);
}

/*
 * Slot sid's table which is now map id (0: none) of max entries. Under
 * slot_lock: the pool's thread reads the tables of slots in use
 * (tf_dp_flows()) while the main thread makes a restored slot's.
 */
static void slot_info_set(struct tf_dp *dp, enum tf_slot_map which, __u32 sid, __u32 id, __u32 max)
{
	pthread_mutex_lock(&dp->slot_lock);
	dp->slot_info[which][sid].id = id;
	dp->slot_info[which][sid].max_entries = max;
	pthread_mutex_unlock(&dp->slot_lock);
}

/*
 * Slot sid's table which is fd (inserted in its outer map): its id and size
 * noted, and kept, pinned (fd closed) or held. 0, or -errno with fd closed
 * and the slot without such a table as far as the datapath knows.
 */
static int slot_keep(struct tf_dp *dp, enum tf_slot_map which, __u32 sid, int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int err = 0;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!dp->pinned) {
		dp->slot_fd[which][sid] = fd;
	} else {
		slot_pin_path(dp, which, sid, path, sizeof(path));
		unlink(path); /* a table this slot had before */
		if (bpf_obj_pin(fd, path))
			err = -errno;
		close(fd);
		if (err) {
			pr_warn("slot %u: cannot pin `%s': %s\n", sid, path, strerror(-err));
			return err;
		}
	}
	slot_info_set(dp, which, sid, info.id, info.max_entries);
	return 0;
}

/* The datapath lets go of slot sid's table which (its outer map may still hold it). */
static void slot_forget(struct tf_dp *dp, enum tf_slot_map which, __u32 sid)
{
	char path[PATH_MAX];

	if (dp->slot_fd[which][sid] >= 0)
		close(dp->slot_fd[which][sid]);
	dp->slot_fd[which][sid] = -1;
	if (dp->pinned && dp->slot_info[which][sid].id) {
		slot_pin_path(dp, which, sid, path, sizeof(path));
		unlink(path);
	}
	slot_info_set(dp, which, sid, 0, 0);
}

/*
 * The pin must still name the table the slot was given: one renamed or
 * replaced in bpffs (another slot's table, a map of someone else's) is
 * refused, never emptied or rewritten as this slot's.
 */
int tf_dp_slot_open(struct tf_dp *dp, enum tf_slot_map which, __u32 sid)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd;

	if (sid >= TF_MAX_SESSIONS || !dp->slot_info[which][sid].id)
		return -ENOENT;
	if (!dp->pinned) {
		fd = fcntl(dp->slot_fd[which][sid], F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	slot_pin_path(dp, which, sid, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &len) && info.id == dp->slot_info[which][sid].id)
		return fd;
	pr_warn("slot %u: `%s' is not the table the slot was given (map %u, not %u): refused\n",
		sid, path, info.id, dp->slot_info[which][sid].id);
	close(fd);
	return -ESTALE;
}

/*
 * Slot sid's table which: the one the outer map holds (keep), or a new one
 * inserted into it. 0 or -errno.
 */
static int slot_open(struct tf_dp *dp, enum tf_slot_map which, __u32 sid, int keep)
{
	int outer = bpf_map__fd(tf_slot_outer(dp->skel, which)), fd, err;
	__u32 id;

	slot_forget(dp, which, sid);
	if (keep && !bpf_map_lookup_elem(outer, &sid, &id)) {
		/* Re-adopting runs at start, while the daemon may still look maps up by id. */
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			return -errno;
		return slot_keep(dp, which, sid, fd);
	}
	/* A kept slot whose flow table is gone counts from 0 again, or its flows read as evicted. */
	err = keep && which == TF_SLOT_FLOWS ? flows_zero(dp, sid) : 0;
	if (err)
		return err;
	fd = tf_slot_create(dp->cfg, which, sid);
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(outer, &sid, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	return slot_keep(dp, which, sid, fd);
}

static int slot_has_tables(const struct tf_dp *dp, __u32 sid)
{
	enum tf_slot_map m;

	for (m = 0; m < TF_SLOT_MAPS; m++)
		if (dp->slot_info[m][sid].id)
			return 1;
	return 0;
}

/* Delete slot sid's tables from their outer maps (a grace period each) and close them. */
static void slot_drop(struct tf_dp *dp, __u32 sid)
{
	enum tf_slot_map m;

	for (m = 0; m < TF_SLOT_MAPS; m++) {
		bpf_map_delete_elem(bpf_map__fd(tf_slot_outer(dp->skel, m)), &sid);
		slot_forget(dp, m, sid);
	}
}

static void slots_lock(struct tf_dp *dp)
{
	pthread_mutex_lock(&dp->slot_lock);
}

static void slots_unlock(struct tf_dp *dp)
{
	pthread_mutex_unlock(&dp->slot_lock);
}

/* Wake the pool's thread (slot_lock held). */
static void pool_poke(struct tf_dp *dp)
{
	if (dp->pool)
		pthread_cond_signal(&dp->pool->wake);
}

/* The lowest ready slot, else (*cold) the lowest cold one; slot_lock held. */
static __u32 slot_find(const struct tf_dp *dp, __u32 *cold)
{
	__u32 sid;

	*cold = 0;
	for (sid = 1; sid < TF_MAX_SESSIONS; sid++) {
		if (dp->slot_state[sid] == SLOT_READY)
			return sid;
		if (!*cold && dp->slot_state[sid] == SLOT_COLD)
			*cold = sid;
	}
	return 0;
}

/* Slots that have tables (or are getting them): at most limits.max_sessions (their memory). */
static int slots_full(const struct tf_dp *dp)
{
	unsigned int n = 0;
	__u32 sid;

	for (sid = 1; sid < TF_MAX_SESSIONS; sid++)
		n += dp->slot_state[sid] != SLOT_COLD;
	return n >= dp->cfg->max_sessions;
}

__u32 tf_dp_slot_take(struct tf_dp *dp)
{
	struct timespec until;
	__u32 cold, got;

	slots_lock(dp);
	got = slot_find(dp, &cold);
	/* With the budget spent, only a released slot, once emptied, can be had. */
	if (!got && dp->pool && (dp->pool->coming || slots_full(dp))) {
		/* Slots being filled or emptied are ready sooner than one made here (five grace periods). */
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec++;
		while (!got && dp->pool && (dp->pool->coming || slots_full(dp)) &&
		       !pthread_cond_timedwait(&dp->pool->ready_cv, &dp->slot_lock, &until))
			got = slot_find(dp, &cold);
		if (!got)
			got = slot_find(dp, &cold);
	}
	if (got) {
		dp->slot_state[got] = SLOT_TAKEN;
	} else if (cold && !(dp->pool && slots_full(dp))) {
		got = cold;
		dp->slot_state[got] = SLOT_USED;
	}
	pool_poke(dp);
	slots_unlock(dp);
	return got;
}

int tf_dp_slot_hold(struct tf_dp *dp, __u32 sid)
{
	int err = 0;

	if (sid == 0 || sid >= TF_MAX_SESSIONS)
		return -EINVAL;
	slots_lock(dp);
	if (dp->slot_state[sid] == SLOT_COLD)
		dp->slot_state[sid] = SLOT_USED;
	else
		err = -EBUSY;
	slots_unlock(dp);
	return err;
}

/*
 * A slot's tables: fresh ones, or (keep, a restart re-adopting the
 * session) the ones it has, so established flows and learnt addresses
 * carry over. A slot taken ready from the pool has them already.
 */
int tf_dp_slot_init(struct tf_dp *dp, __u32 sid, int keep)
{
	enum tf_slot_map m;
	int err;

	if (sid == 0 || sid >= TF_MAX_SESSIONS)
		return -EINVAL;
	slots_lock(dp);
	if (dp->slot_state[sid] == SLOT_TAKEN) {
		dp->slot_state[sid] = SLOT_USED;
		slots_unlock(dp);
		return 0;
	}
	dp->slot_state[sid] = SLOT_USED;
	slots_unlock(dp);
	if (!keep) {
		err = counters_zero(dp, sid);
		if (err)
			return err;
	}
	for (m = 0; m < TF_SLOT_MAPS; m++) {
		err = slot_open(dp, m, sid, keep);
		if (err)
			return err;
	}
	return 0;
}

void tf_dp_slot_release(struct tf_dp *dp, __u32 sid)
{
	if (sid == 0 || sid >= TF_MAX_SESSIONS)
		return;
	dp->via_guard[sid] = 0;
	slots_lock(dp);
	if (dp->slot_state[sid] == SLOT_TAKEN) {
		dp->slot_state[sid] = SLOT_READY;
		slots_unlock(dp);
		return;
	}
	if (dp->pool && slot_has_tables(dp, sid)) {
		dp->slot_state[sid] = SLOT_DIRTY;
		pool_poke(dp);
		slots_unlock(dp);
		return;
	}
	/* BUSY while its tables go: the pool's thread would fill a COLD one under us. */
	dp->slot_state[sid] = SLOT_BUSY;
	slots_unlock(dp);
	slot_drop(dp, sid);
	slots_lock(dp);
	dp->slot_state[sid] = SLOT_COLD;
	slots_unlock(dp);
}

void tf_dp_slot_orphan(struct tf_dp *dp, __u32 sid)
{
	enum tf_slot_map m;
	int err = 0, any = 0;
	unsigned int n;
	__u32 id, s;

	for (m = 0; m < TF_SLOT_MAPS; m++)
		any |= !bpf_map_lookup_elem(bpf_map__fd(tf_slot_outer(dp->skel, m)), &sid, &id);
	if (!any)
		return;
	slots_lock(dp);
	for (n = 0, s = 1; s < TF_MAX_SESSIONS; s++)
		n += dp->slot_state[s] == SLOT_DIRTY;
	slots_unlock(dp);
	if (n >= dp->cfg->warm_slots) {
		/* Beyond the pool's size: deleted (a grace period each), never adopted. */
		slot_drop(dp, sid);
		return;
	}
	/* Adopted (a table missing from a fill cut short is made), then emptied by the pool. */
	for (m = 0; m < TF_SLOT_MAPS && !err; m++)
		err = slot_open(dp, m, sid, 1);
	if (err) {
		pr_warn("slot %u: cannot adopt its tables: %s (they are deleted)\n", sid,
			strerror(-err));
		slot_drop(dp, sid);
		return;
	}
	slots_lock(dp);
	dp->slot_state[sid] = SLOT_DIRTY;
	pool_poke(dp);
	slots_unlock(dp);
}

/* Wait for an RCU grace period: a map-in-map update returns only after one. */
static int pool_grace(struct tf_pool *p)
{
	__u32 zero = 0;

	return bpf_map_update_elem(p->grace_outer, &zero, &p->grace_inner, BPF_ANY) ? -errno : 0;
}

/* Remove every entry of slot sid's table which. */
static int table_empty(struct tf_dp *dp, enum tf_slot_map which, __u32 sid)
{
	int fd = tf_dp_slot_open(dp, which, sid), more, err = 0;
	__u32 key_size = tf_slot_descs[which].key_size;
	__u8 key[512], next[512];

	if (fd < 0)
		return fd; /* a table missing: the slot is dropped, never handed out */
	if (key_size > sizeof(key))
		err = -E2BIG;
	for (more = !err && !bpf_map_get_next_key(fd, NULL, next); more;) {
		memcpy(key, next, key_size);
		more = !bpf_map_get_next_key(fd, key, next);
		if (bpf_map_delete_elem(fd, key) && errno != ENOENT) {
			err = -errno;
			break;
		}
	}
	close(fd);
	return err;
}

/* Empty the tables of the n released slots in sids, after a grace period. 0 or -errno each. */
static void pool_clear(struct tf_dp *dp, const __u32 *sids, unsigned int n, int *res)
{
	enum tf_slot_map m;
	unsigned int i;
	int err = pool_grace(dp->pool);

	for (i = 0; i < n; i++) {
		res[i] = err;
		for (m = 0; m < TF_SLOT_MAPS && !res[i]; m++)
			res[i] = table_empty(dp, m, sids[i]);
		if (!res[i])
			res[i] = counters_zero(dp, sids[i]);
	}
}

/* Create and insert the tables of the n cold slots in sids, one batch per kind. */
static void pool_fill(struct tf_dp *dp, const __u32 *sids, unsigned int n, int *res)
{
	int fds[POOL_BATCH], outer, err;
	enum tf_slot_map m;
	unsigned int i, cnt;

	for (i = 0; i < n; i++)
		res[i] = counters_zero(dp, sids[i]);
	for (m = 0; m < TF_SLOT_MAPS; m++) {
		err = 0;
		for (i = 0; i < n; i++) {
			fds[i] = -1;
			if (res[i])
				continue;
			fds[i] = tf_slot_create(dp->cfg, m, sids[i]);
			if (fds[i] < 0) {
				res[i] = fds[i];
				err = 1;
			}
		}
		/* One grace period for the whole batch; any slot that failed is retried alone. */
		outer = bpf_map__fd(tf_slot_outer(dp->skel, m));
		cnt = n;
		if (err || bpf_map_update_batch(outer, sids, fds, &cnt, NULL))
			for (i = 0; i < n; i++)
				if (!res[i] &&
				    bpf_map_update_elem(outer, &sids[i], &fds[i], BPF_ANY))
					res[i] = -errno;
		for (i = 0; i < n; i++) {
			if (fds[i] < 0)
				continue;
			if (res[i])
				close(fds[i]); /* in its outer map or not, slot_drop() deletes it */
			else
				res[i] = slot_keep(dp, m, sids[i], fds[i]);
		}
	}
}

/*
 * Pick up to max slots in state from (lowest first), now BUSY; slot_lock
 * held. The count.
 */
static unsigned int pool_pick(struct tf_dp *dp, unsigned char from, __u32 *sids, unsigned int max)
{
	unsigned int n = 0;
	__u32 sid;

	for (sid = 1; sid < TF_MAX_SESSIONS && n < max; sid++)
		if (dp->slot_state[sid] == from) {
			dp->slot_state[sid] = SLOT_BUSY;
			sids[n++] = sid;
		}
	return n;
}

/* The n BUSY slots in sids are done: READY where res is 0, dropped (COLD) where not. */
static void pool_done(struct tf_dp *dp, const __u32 *sids, unsigned int n, const int *res,
		      const char *what)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!res[i]) {
			dp->slot_state[sids[i]] = SLOT_READY;
			continue;
		}
		pr_warn("slot %u: cannot %s its tables: %s (they are deleted instead)\n", sids[i],
			what, strerror(-res[i]));
		slots_unlock(dp);
		slot_drop(dp, sids[i]);
		slots_lock(dp);
		dp->slot_state[sids[i]] = SLOT_COLD;
		dp->pool->dropped++;
	}
}

/* Slots in each state (slot_lock held). */
static void slot_counts(const struct tf_dp *dp, unsigned int *cnt)
{
	__u32 sid;

	memset(cnt, 0, sizeof(unsigned int) * (SLOT_BUSY + 1));
	for (sid = 1; sid < TF_MAX_SESSIONS; sid++)
		cnt[dp->slot_state[sid]]++;
}

/*
 * Work on the n slots in sids (BUSY), slot_lock released meanwhile: fill or
 * clear them, then READY or dropped. An add waiting in take() is woken. The
 * first failure's -errno, or 0.
 */
static int pool_batch(struct tf_dp *dp, const __u32 *sids, unsigned int n,
		      void (*work)(struct tf_dp *, const __u32 *, unsigned int, int *),
		      const char *what, unsigned int *count)
{
	struct tf_pool *p = dp->pool;
	int res[POOL_BATCH], err = 0;
	unsigned int i;

	p->coming = n;
	slots_unlock(dp);
	work(dp, sids, n, res);
	slots_lock(dp);
	*count += n;
	pool_done(dp, sids, n, res, what);
	p->coming = 0;
	pthread_cond_broadcast(&p->ready_cv);
	for (i = 0; i < n && !err; i++)
		err = res[i];
	return err;
}

static void *pool_run(void *arg)
{
	struct tf_dp *dp = arg;
	struct tf_pool *p = dp->pool;
	unsigned int cnt[SLOT_BUSY + 1], n, want, room, warm = dp->cfg->warm_slots;
	struct tf_flowlook *look;
	__u32 sids[POOL_BATCH];
	struct timespec retry = { 0 }, now;
	int failed = 0;

	slots_lock(dp);
	while (!p->stop) {
		if (p->asked) {
			look = p->asked;
			p->asked = NULL;
			slots_unlock(dp);
			look->err = tf_dp_flows(dp, look->sids, look->n, look->out);
			slots_lock(dp);
			tf_dp_flowlook_free(dp->flows_answered);
			dp->flows_answered = look;
			continue;
		}
		n = pool_pick(dp, SLOT_DIRTY, sids, POOL_BATCH);
		if (n) {
			pool_batch(dp, sids, n, pool_clear, "empty", &p->cleared);
			continue;
		}
		slot_counts(dp, cnt);
		/* Never more slots with tables than limits.max_sessions (their memory). */
		room = dp->cfg->max_sessions > TF_MAX_SESSIONS - 1 - cnt[SLOT_COLD] ?
			       dp->cfg->max_sessions - (TF_MAX_SESSIONS - 1 - cnt[SLOT_COLD]) :
			       0;
		/* Released slots count: they are ready again after one grace period, a fill takes five. */
		want = warm > cnt[SLOT_READY] + cnt[SLOT_DIRTY] ?
			       warm - cnt[SLOT_READY] - cnt[SLOT_DIRTY] :
			       0;
		want = want < room ? want : room;
		if (want && !failed) {
			n = pool_pick(dp, SLOT_COLD, sids, want < POOL_BATCH ? want : POOL_BATCH);
			failed = pool_batch(dp, sids, n, pool_fill, "create", &p->filled);
			if (failed) {
				clock_gettime(CLOCK_MONOTONIC, &retry);
				retry.tv_sec++;
			}
			continue;
		}
		if (cnt[SLOT_READY] > warm) {
			/*
			 * Released beyond the pool's size: memory goes back, one slot
			 * at a time, the highest first (take() hands out the lowest).
			 */
			for (sids[0] = TF_MAX_SESSIONS - 1; dp->slot_state[sids[0]] != SLOT_READY;
			     sids[0]--)
				;
			dp->slot_state[sids[0]] = SLOT_BUSY;
			slots_unlock(dp);
			slot_drop(dp, sids[0]);
			slots_lock(dp);
			dp->slot_state[sids[0]] = SLOT_COLD;
			p->dropped++;
			continue;
		}
		if (failed) {
			/*
			 * A fill failed (memory? fds?): tried again a second later,
			 * however often adds and deletes wake the thread meanwhile
			 * (each try that fails logs every slot of its batch).
			 */
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec < retry.tv_sec ||
			    (now.tv_sec == retry.tv_sec && now.tv_nsec < retry.tv_nsec))
				pthread_cond_timedwait(&p->wake, &dp->slot_lock, &retry);
			else
				failed = 0;
			continue;
		}
		pthread_cond_wait(&p->wake, &dp->slot_lock);
	}
	slots_unlock(dp);
	return NULL;
}

int tf_dp_pool_start(struct tf_dp *dp)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	pthread_condattr_t ca;
	sigset_t all, old;
	struct tf_pool *p;
	int err;

	if (dp->pool)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->grace_outer = p->grace_inner = -1;
	p->grace_inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "tf_grace_in", 4, 4, 1, NULL);
	if (p->grace_inner < 0)
		goto fail;
	opts.inner_map_fd = p->grace_inner;
	p->grace_outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "tf_grace", 4, 4, 1, &opts);
	if (p->grace_outer < 0)
		goto fail;
	/*
	 * Timed waits (the fill's retry, an add waiting for a slot) are on the
	 * monotonic clock: a step of the wall clock neither hurries nor holds them.
	 */
	err = pthread_condattr_init(&ca);
	if (err) {
		errno = err;
		goto fail;
	}
	err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ?: pthread_cond_init(&p->wake, &ca);
	if (!err) {
		err = pthread_cond_init(&p->ready_cv, &ca);
		if (err)
			pthread_cond_destroy(&p->wake);
	}
	pthread_condattr_destroy(&ca);
	if (err) {
		errno = err;
		goto fail;
	}
	slots_lock(dp);
	dp->pool = p;
	slots_unlock(dp);
	/* Signals are the main loop's (signalfd): the thread starts with all of them blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&p->thread, NULL, pool_run, dp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		slots_lock(dp);
		dp->pool = NULL;
		slots_unlock(dp);
		pthread_cond_destroy(&p->wake);
		pthread_cond_destroy(&p->ready_cv);
		errno = err;
		goto fail;
	}
	return 0;
fail:
	err = -errno;
	if (p->grace_outer >= 0)
		close(p->grace_outer);
	if (p->grace_inner >= 0)
		close(p->grace_inner);
	free(p);
	return err;
}

void tf_dp_pool_stop(struct tf_dp *dp)
{
	struct tf_pool *p = dp->pool;

	if (!p)
		return;
	slots_lock(dp);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	slots_unlock(dp);
	pthread_join(p->thread, NULL);
	slots_lock(dp);
	dp->pool = NULL;
	slots_unlock(dp);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->ready_cv);
	close(p->grace_outer);
	close(p->grace_inner);
	tf_dp_flowlook_free(p->asked);
	free(p);
}

/*
 * The look at the flow tables (session.c) walks every map on the host: 2.6
 * ms with 1,000 sessions, which the main loop would wait for. The pool's
 * thread makes it, ahead of its slots; its answer waits for the main
 * loop's next tick. Without the thread the look is made here.
 */
void tf_dp_flows_ask(struct tf_dp *dp, struct tf_flowlook *l)
{
	struct tf_flowlook *old = NULL;

	slots_lock(dp);
	if (dp->pool) {
		old = dp->pool->asked;
		dp->pool->asked = l;
		pthread_cond_signal(&dp->pool->wake);
		l = NULL;
	}
	slots_unlock(dp);
	tf_dp_flowlook_free(old);
	if (!l)
		return;
	l->err = tf_dp_flows(dp, l->sids, l->n, l->out);
	slots_lock(dp);
	old = dp->flows_answered;
	dp->flows_answered = l;
	slots_unlock(dp);
	tf_dp_flowlook_free(old);
}

struct tf_flowlook *tf_dp_flows_answer(struct tf_dp *dp)
{
	struct tf_flowlook *l;

	slots_lock(dp);
	l = dp->flows_answered;
	dp->flows_answered = NULL;
	slots_unlock(dp);
	return l;
}

void tf_dp_pool_count(struct tf_dp *dp, unsigned int *ready, unsigned int *dirty)
{
	unsigned int cnt[SLOT_BUSY + 1];

	slots_lock(dp);
	slot_counts(dp, cnt);
	slots_unlock(dp);
	*ready = cnt[SLOT_READY];
	*dirty = cnt[SLOT_DIRTY] + cnt[SLOT_BUSY];
}

void tf_dp_slots_close(struct tf_dp *dp)
{
	enum tf_slot_map m;
	__u32 sid;

	tf_dp_pool_stop(dp);
	tf_dp_flowlook_free(tf_dp_flows_answer(dp));
	/* The pins stay: the next start makes them again anyway (datapath_load.c). */
	for (m = 0; m < TF_SLOT_MAPS; m++)
		for (sid = 0; sid < TF_MAX_SESSIONS; sid++) {
			if (dp->slot_fd[m][sid] >= 0)
				close(dp->slot_fd[m][sid]);
			dp->slot_fd[m][sid] = -1;
			dp->slot_info[m][sid].id = 0;
		}
	memset(dp->slot_state, 0, sizeof(dp->slot_state));
}
