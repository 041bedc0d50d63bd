/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the datapath_*.c files share and nothing else sees: the per-session
 * table descriptors (datapath_slots.c) and the load-time knobs
 * (datapath_load.c), which every instance of the object gets.
 */
#ifndef TF_DATAPATH_INT_H
#define TF_DATAPATH_INT_H

#include <stddef.h>
#include <bpf/libbpf.h>
#include "tapfence.skel.h"
#include "datapath.h"

/**
 * struct tf_slot_gen - where a table's values name the policy generation
 * that allowed them: offsets of __u32 ver, struct tf_rule_val perm, __u16
 * name_idx and __u8 sub in the value, which tf_dp_names_rebase() rewrites
 * from the name the guest asked: __u16 name_len and its reversed form, name.
 */
struct tf_slot_gen {
	size_t ver, perm, name_idx, sub, name, name_len;
};

/**
 * struct tf_slot_desc - one per-session table: an outer map-in-map of the
 * object holding one inner map per slot, each created from this.
 * @name:      the outer map's name; inner maps are "<name>_<sid>"
 * @outer:     offset of the outer map's pointer in struct tapfence_bpf
 * @type:      the inner maps' type; @flags their map_flags
 * @key_size:  @value_size: the inner maps' key and value
 * @max:       offset of the unsigned int in struct tf_config sizing them
 * @gen:       its values' generation fields; NULL if they have none
 */
struct tf_slot_desc {
	const char *name;
	size_t outer;
	enum bpf_map_type type;
	__u32 flags;
	__u32 key_size, value_size;
	size_t max;
	const struct tf_slot_gen *gen;
};

extern const struct tf_slot_desc tf_slot_descs[TF_SLOT_MAPS];

/*
 * A slot's state (tf_dp.slot_state). COLD: no tables (or none this process
 * holds). READY: tables inserted and empty, counters zero. TAKEN: handed to
 * a session add, still untouched. USED: a session's (or kept stale).
 * DIRTY: released, its tables to be emptied. BUSY: the pool's thread works
 * on it.
 */
enum tf_slot_state { SLOT_COLD, SLOT_READY, SLOT_TAKEN, SLOT_USED, SLOT_DIRTY, SLOT_BUSY };

/* The outer map of table which. */
struct bpf_map *tf_slot_outer(struct tapfence_bpf *skel, enum tf_slot_map which);
/* A new inner map of table which for slot sid (sid 0: the template); an fd or -errno. */
int tf_slot_create(const struct tf_config *cfg, enum tf_slot_map which, __u32 sid);
/* Close every slot's tables the datapath holds (their outer maps keep them). */
void tf_dp_slots_close(struct tf_dp *dp);

/* Set the load-time knobs (rodata) of skel, between its open and its load. */
void tf_dp_set_knobs(struct tapfence_bpf *skel, const struct tf_config *cfg);
/* After the maps are reused: the event ring's wake-up mark, from its size. */
void tf_dp_set_wake(struct tapfence_bpf *skel);

#endif
