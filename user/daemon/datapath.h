/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The datapath as the daemon sees it: load the BPF object (reusing pinned
 * maps; datapath_load.c), write the hard floor (datapath_floor.c), make a
 * slot's own tables (datapath_slots.c), write sessions and policies
 * (datapath_maps.c), attach and detach per device (datapath_attach.c).
 * Every write that can fail is done so that a failure leaves the device
 * denying, never open.
 */
#ifndef TF_DATAPATH_H
#define TF_DATAPATH_H

#include <pthread.h>
#include <tapfence/abi.h>
#include "config.h"
#include "policy.h"
#include "spec.h"

struct tapfence_bpf;
struct xdp_program;
struct tf_pool;
/* The per-slot tables: an inner map per session in each (described in datapath_slots.c). */
enum tf_slot_map {
	TF_SLOT_FLOWS,
	TF_SLOT_DNSQ,
	TF_SLOT_LEARNED,
	TF_SLOT_TLSBUF,	 /* ClientHellos being reassembled */
	TF_SLOT_TLSBIND, /* (learnt address, asked name) pairs */
	TF_SLOT_MAPS
};

struct tf_dp {
	struct tapfence_bpf *skel;
	const struct tf_config *cfg;
	int pinned; /* maps live in cfg->pin_dir */
	/* XDP mode: a second instance of the object, sharing every map, for libxdp */
	struct tapfence_bpf *xdp_skel;
	struct xdp_program *xdp;
	/*
	 * The per-slot tables. Pinned, each is pinned at
	 * <pin_dir>/slots/<name>_<sid> and opened when used (the daemon holds
	 * no fd of its own: 0 fds a session): after set-up it lacks the
	 * CAP_SYS_ADMIN that BPF_MAP_GET_FD_BY_ID needs to find them by id.
	 * Unpinned (tests), slot_fd holds them open.
	 */
	int slot_fd[TF_SLOT_MAPS][TF_MAX_SESSIONS];
	/* Each table's id and size, as the kernel has them; id 0: the slot has no such table. */
	struct tf_slot_info {
		__u32 id, max_entries;
	} slot_info[TF_SLOT_MAPS][TF_MAX_SESSIONS];
	/*
	 * Each slot's state (enum tf_slot_state, datapath_slots.c) and the warm
	 * pool's thread, which makes slots ready ahead of session add and
	 * clears released ones; slot_lock guards slot_state, and slot_fd of
	 * every slot not in use.
	 */
	unsigned char slot_state[TF_MAX_SESSIONS];
	/* The slot's session has no links: the guard's programs jump to ours (TF_SF_VIA_GUARD). */
	unsigned char via_guard[TF_MAX_SESSIONS];
	pthread_mutex_t slot_lock;
	struct tf_flowlook *flows_answered; /* tf_dp_flows_answer()'s, slot_lock held */
	/* Held by a walk of tf_map_fill, whose filter (fill_flows_only) is one for all. */
	pthread_mutex_t fill_lock;
	struct tf_pool *pool;
	/* The host's own addresses (hostaddr.c), floored as floor_host beside cfg->floor_host. */
	struct tf_cidr *host;
	unsigned int nhost;
	int host_short;		   /* host is not all of the host's addresses */
	unsigned int floor_host;   /* host entries in tf_floor */
	unsigned int floor_failed; /* host entries the last write could not store: 0 = complete */
	unsigned long long floor_errors; /* host entries that could not be written, since start */
	struct bpf_link *fill;		 /* tf_map_fill's iterator (NULL: table fill unknown) */
};

/* One attachment of a session; fds are -1 when not attached. */
struct tf_attach {
	int link_in;	 /* guest -> host: tcx ingress link (tc_gso_guard in XDP mode) */
	int link_out;	 /* host -> guest: tcx egress link */
	int xdp;	 /* 1 if guest -> host is judged by XDP (libxdp), link_in guarding GSO */
	int guard;	 /* 1 if no links: judged through the guard's programs (TF_SF_VIA_GUARD) */
	int guard_fd[2]; /* then the guard's links (out, in), held: they outlive their pins */
};

/*
 * Open and load the object. With pin = 1, maps pinned in cfg->pin_dir are
 * reused (state survives daemon restarts) and missing ones are pinned;
 * with pin = 0 everything is private to this process (unit tests).
 */
int tf_dp_open(struct tf_dp *dp, const struct tf_config *cfg, int pin)
	__attribute__((warn_unused_result));
void tf_dp_close(struct tf_dp *dp);

/*
 * Write the hard floor from the built-in ranges, the operator's config and
 * the host addresses last set. Fails if any entry could not be written
 * (dp->floor_failed counts the host entries missing).
 */
int tf_dp_write_floor(struct tf_dp *dp) __attribute__((warn_unused_result));
/*
 * Replace the host addresses (a copy of the n in host) and write the floor.
 * complete = 0: host is not all of them (more than fit), so no entry is
 * removed, lest one of an address still there go.
 */
int tf_dp_set_host_floor(struct tf_dp *dp, const struct tf_cidr *host, unsigned int n, int complete)
	__attribute__((warn_unused_result));

/* The tf_session value a spec stands for (addresses, MACs, flags). */
void tf_dp_session_value(const struct tf_dp *dp, const struct tf_spec *spec, __u32 sid, __u32 ver,
			 struct tf_session *out);

/*
 * A free slot for a new session, now in use: a ready one (its tables
 * inserted and empty, counters zeroed) if the pool has one, else the
 * lowest that has none yet (tf_dp_slot_init() makes them). 0 if none.
 */
__u32 tf_dp_slot_take(struct tf_dp *dp);
/* Slot sid, now in use (a session re-adopted into it, or kept stale); -EBUSY if it was. */
int tf_dp_slot_hold(struct tf_dp *dp, __u32 sid);
/*
 * Make slot sid ready: a fresh flow table (unless keep_flows and one is
 * there) and zeroed counters. A slot taken ready from the pool has both.
 */
int tf_dp_slot_init(struct tf_dp *dp, __u32 sid, int keep_flows)
	__attribute__((warn_unused_result));
/*
 * Slot sid is free again. Untouched since it was taken ready, it is ready
 * again; otherwise, with the pool running, its tables are cleared in the
 * background after an RCU grace period (no program can still be writing
 * them) and it is ready for the next session; without the pool they go.
 */
void tf_dp_slot_release(struct tf_dp *dp, __u32 sid);
/*
 * At start, slot sid, which no session was restored into: its tables, if
 * the outer maps hold any, are adopted and emptied by the pool (a warm
 * slot of the previous run is ready again without a grace period each).
 */
void tf_dp_slot_orphan(struct tf_dp *dp, __u32 sid);
/*
 * Start the warm pool: a thread that keeps cfg->warm_slots slots ready,
 * inserting their tables in one batch per table kind (one grace period
 * for many slots instead of one per table per session). Start it after
 * the capabilities are dropped: a thread keeps the ones it was made with.
 */
int tf_dp_pool_start(struct tf_dp *dp) __attribute__((warn_unused_result));
/* Stop it (idempotent); slots it was working on stay as they are, swept at the next start. */
void tf_dp_pool_stop(struct tf_dp *dp);
/* Slots ready, and slots waiting to be cleared. */
void tf_dp_pool_count(struct tf_dp *dp, unsigned int *ready, unsigned int *dirty);
/*
 * Slot sid's table of kind which, opened: an fd the caller closes, -ENOENT
 * if the slot has none, or the -errno of opening its pin.
 */
int tf_dp_slot_open(struct tf_dp *dp, enum tf_slot_map which, __u32 sid);
/* Entries in each kind of per-session table, all sessions together; -ENOTSUP without the iterator. */
int tf_dp_fill(struct tf_dp *dp, __u64 out[TF_SLOT_MAPS]);

/*
 * A session's flow table: its size (as created: a restored table keeps
 * the size of the run that made it), its entries now, the flows that took
 * an entry and those the datapath removed (closed, refused, revoked) since
 * the session was added, and the rest, which the full table evicted.
 */
struct tf_flowcount {
	__u64 capacity, entries, opened, removed, evicted;
};
/*
 * out[i] for slots sids[i] (in use; n of each). evicted is a lower bound:
 * the counters move while they are read, and are read so that a flow in
 * flight is never taken for an evicted one. Two batch lookups for all the
 * sessions. -ENOTSUP without the iterator.
 */
int tf_dp_flows(struct tf_dp *dp, const __u32 *sids, unsigned int n, struct tf_flowcount *out);
/*
 * A look at the flow tables of slots sids[0, n), made by the pool's thread
 * off the main loop: out[i] for sids[i], and tags[i], the asker's own
 * (which session it was), carried back; err is tf_dp_flows()'s.
 */
struct tf_flowlook {
	unsigned int n;
	__u32 *sids;
	__u64 *tags;
	struct tf_flowcount *out;
	int err;
};
/* A look for n slots, its arrays allocated (sids and tags to fill); NULL without memory. */
struct tf_flowlook *tf_dp_flowlook_new(unsigned int n);
void tf_dp_flowlook_free(struct tf_flowlook *l);
/*
 * Hand look l to the pool's thread (it owns l now). An earlier look not
 * yet begun is dropped for it; without the pool's thread, l is made here.
 */
void tf_dp_flows_ask(struct tf_dp *dp, struct tf_flowlook *l);
/* The latest look made since the last call (free it), or NULL. */
struct tf_flowlook *tf_dp_flows_answer(struct tf_dp *dp);
/* Why tf_dp_flows() failed with err. */
const char *tf_dp_flows_strerror(int err);
/*
 * Slot sid's evictions the daemon has told, kept beside its counts
 * (pinned, zeroed with them) for its next start; and read back.
 */
int tf_dp_flows_told(struct tf_dp *dp, __u32 sid, __u64 told);
int tf_dp_flows_told_get(struct tf_dp *dp, __u32 sid, __u64 *told);

/* Write policy p as generation ver of slot sid. */
int tf_dp_policy_write(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *p)
	__attribute__((warn_unused_result));
/* Remove generation ver of slot sid (the entries p produced). */
void tf_dp_policy_erase(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *p);
/* Remove every generation of sid except keep_ver (0: all); for restarts. */
void tf_dp_policy_sweep(struct tf_dp *dp, __u32 sid, __u32 keep_ver);

/*
 * Move sid's learnt addresses and outstanding queries (the tables with
 * generation fields) to generation ver (policy new), each with what new
 * gives the name it was asked for, dropping those new no longer allows;
 * new = NULL drops them all. Part of tf_dp_policy_switch() and of
 * re-adopting a slot.
 */
void tf_dp_names_rebase(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *new);
/*
 * One policy of a session: the spec it was compiled from, what it wrote,
 * the generation it wrote it as (tf_session.rules_ver) and its version
 * (tf_session.policy_ver; 0: ver, a policy written whole).
 */
struct tf_dp_gen {
	const struct tf_spec *spec;
	const struct tf_policy *policy;
	__u32 ver;
	__u32 pver;
};

/*
 * Switch device dev (slot sid) from generation from to generation to,
 * both written: learnt addresses and outstanding queries move to to, then
 * the device's tf_sessions entry changes in one update. On failure they
 * move back and from stays in force. Neither generation is erased.
 */
int tf_dp_policy_switch(struct tf_dp *dp, __u32 sid, const struct tf_sess_key *dev,
			const struct tf_dp_gen *from, const struct tf_dp_gen *to)
	__attribute__((warn_unused_result));
/*
 * A policy change (rule add/del): write generation to beside from, switch
 * to it; on failure to is erased and from stays in force. The caller
 * erases from (tf_dp_policy_erase()) once the change is kept.
 */
int tf_dp_policy_change(struct tf_dp *dp, __u32 sid, const struct tf_sess_key *dev,
			const struct tf_dp_gen *from, const struct tf_dp_gen *to)
	__attribute__((warn_unused_result));
/*
 * A policy change applied in place (docs/architecture.md#policy-changes-generations-and-versions):
 * from and to of the same generation, to's classes numbered as from's
 * (tf_policy_rebase()) and its names the same, to->pver = from->pver + 2.
 * The device first moves to the transition, from->pver + 1 (from's rules),
 * then the entries change (deletes, new classes' chunks, writes), then it
 * moves to to's version. A packet judged meanwhile finds, for its address,
 * what from or what to says (one rule's change moves each address from one
 * answer to the other in one update), and every flow opened under the
 * transition is judged again. On failure from's entries are written back
 * and the device moves to from's rules under to->pver (*mixed: they could
 * not all be, the generation holds neither policy whole). *now: the
 * version the device is at. from's classes to has not stay until
 * tf_dp_policy_prune().
 */
int tf_dp_policy_apply(struct tf_dp *dp, __u32 sid, const struct tf_sess_key *dev,
		       const struct tf_dp_gen *from, const struct tf_dp_gen *to, __u32 *now,
		       int *mixed) __attribute__((warn_unused_result));
/* After tf_dp_policy_apply(from, to) is kept: the chunks of from's classes that to has not. */
void tf_dp_policy_prune(struct tf_dp *dp, __u32 sid, __u32 ver, const struct tf_policy *from,
			const struct tf_policy *to);
/* Call fn for every learnt address of sid; stops at and returns fn's first non-zero. */
int tf_dp_learned(struct tf_dp *dp, __u32 sid,
		  int (*fn)(const struct tf_learn_key *k, const struct tf_learned *v, void *ctx),
		  void *ctx);

/*
 * A session's maps, in the order that keeps every intermediate state
 * denying: slot tables (keep: re-adopt the slot's existing ones), policy
 * generation ver, guest addresses, and last the tf_sessions entry of
 * ifindex that switches the device on. On failure nothing is undone:
 * the caller decides (tf_dp_session_remove(), or keeping pinned state).
 */
int tf_dp_session_install(struct tf_dp *dp, const struct tf_spec *spec, const struct tf_policy *p,
			  __u32 sid, __u32 ver, const struct tf_sess_key *dev, int keep)
	__attribute__((warn_unused_result));
/* The reverse: the device entry first (the device then denies), then the rest. */
void tf_dp_session_remove(struct tf_dp *dp, const struct tf_spec *spec, const struct tf_policy *p,
			  __u32 sid, __u32 ver, const struct tf_sess_key *dev);

/* Switch the device to value v (the atomic step of add and of a policy change). */
int tf_dp_session_set(struct tf_dp *dp, const struct tf_sess_key *dev, const struct tf_session *v)
	__attribute__((warn_unused_result));
int tf_dp_session_get(struct tf_dp *dp, const struct tf_sess_key *dev, struct tf_session *v);
void tf_dp_session_unset(struct tf_dp *dp, const struct tf_sess_key *dev);

int tf_dp_addrs_set(struct tf_dp *dp, const struct tf_spec *spec, __u32 sid)
	__attribute__((warn_unused_result));
void tf_dp_addrs_unset(struct tf_dp *dp, const struct tf_spec *spec);

/*
 * Attach to dev, in the namespace at path netns (NULL: the daemon's own;
 * netns.h). Links are pinned as <pin_dir>/links/<name>-{in,out}
 * when the dp is pinned; an existing pinned link is updated in place
 * (bpf_link_update), never detached and re-attached.
 */
int tf_dp_attach(struct tf_dp *dp, const char *name, const char *netns,
		 const struct tf_sess_key *dev, struct tf_attach *at)
	__attribute__((warn_unused_result));
void tf_dp_detach(struct tf_dp *dp, const char *name, const struct tf_sess_key *dev,
		  struct tf_attach *at);
/* The device a tcx link is on (0 once the device is gone). */
__u32 tf_dp_link_ifindex(int fd);
/* 1 if a session pinned as name has pinned links (a re-adopted one keeps them). */
int tf_dp_links_pinned(const struct tf_dp *dp, const char *name);
/* Close an attachment's fds without detaching (its pins keep it). */
void tf_dp_attach_close(struct tf_attach *at);
/* Call fn(device, value) for every device with a tf_sessions entry. */
int tf_dp_sessions_each(struct tf_dp *dp,
			int (*fn)(const struct tf_sess_key *dev, const struct tf_session *v,
				  void *ctx),
			void *ctx);
/* Delete every entry, in every per-slot map, of a slot keep() says no to. */
void tf_dp_sweep_orphans(struct tf_dp *dp, int (*keep)(__u32 sid, void *ctx), void *ctx);
/* Remove our XDP program from a device (XDP attachments are not pinned links). */
void tf_dp_xdp_detach(__u32 ifindex);

/*
 * Sum of the per-CPU counters of slot sid, TF_CNT_SLOTS values; the
 * TF_CNT_FLOWS_* slots are its flow counts (tf_flowcnt).
 */
int tf_dp_counters(struct tf_dp *dp, __u32 sid, __u64 out[TF_CNT_SLOTS]);
int tf_dp_stats(struct tf_dp *dp, __u64 out[TF_STAT_MAX]);

int tf_dp_ringbuf_fd(struct tf_dp *dp);

#endif
