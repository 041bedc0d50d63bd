// SPDX-License-Identifier: GPL-2.0
/*
 * The per-session tables: each an outer map-in-map of the object with one
 * inner map per slot (flows, outstanding queries, learnt addresses, TLS
 * hellos being read, TLS bindings), described once in tf_slot_descs and
 * created, adopted, inserted and deleted by walking it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "datapath_int.h"

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

/* Close slot sid's fd of table which, if the datapath holds one. */
static void slot_fd_close(struct tf_dp *dp, enum tf_slot_map which, __u32 sid)
{
	if (dp->slot_fd[which][sid] >= 0)
		close(dp->slot_fd[which][sid]);
	dp->slot_fd[which][sid] = -1;
}

/*
 * Slot sid's table which: the one the outer map holds (keep), or a new one
 * inserted into it. 0 or -errno.
 */
static int slot_open(struct tf_dp *dp, enum tf_slot_map which, __u32 sid, int keep)
{
	int outer = bpf_map__fd(tf_slot_outer(dp->skel, which)), fd, err;
	__u32 id;

	slot_fd_close(dp, which, sid);
	if (keep && !bpf_map_lookup_elem(outer, &sid, &id)) {
		/* Re-adopting runs at start, while the daemon may still look maps up by id. */
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			return -errno;
		dp->slot_fd[which][sid] = fd;
		return 0;
	}
	fd = tf_slot_create(dp->cfg, which, sid);
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(outer, &sid, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	dp->slot_fd[which][sid] = fd;
	return 0;
}

/*
 * A slot's tables: fresh ones, or (keep, a restart re-adopting the
 * session) the ones it has, so established flows and learnt addresses
 * carry over.
 */
int tf_dp_slot_init(struct tf_dp *dp, __u32 sid, int keep)
{
	enum tf_slot_map m;
	int err;

	if (sid == 0 || sid >= TF_MAX_SESSIONS)
		return -EINVAL;
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
	enum tf_slot_map m;

	for (m = 0; m < TF_SLOT_MAPS; m++) {
		bpf_map_delete_elem(bpf_map__fd(tf_slot_outer(dp->skel, m)), &sid);
		if (sid < TF_MAX_SESSIONS)
			slot_fd_close(dp, m, sid);
	}
}

void tf_dp_slots_close(struct tf_dp *dp)
{
	enum tf_slot_map m;
	__u32 sid;

	for (m = 0; m < TF_SLOT_MAPS; m++)
		for (sid = 0; sid < TF_MAX_SESSIONS; sid++)
			slot_fd_close(dp, m, sid);
}
