/* SPDX-License-Identifier: GPL-2.0 */
/* tapfenced's state: configuration, datapath, sessions, clients. */
#ifndef TF_DAEMON_H
#define TF_DAEMON_H

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <sys/stat.h>
#include <jansson.h>
#include "config.h"
#include "datapath.h"
#include "hostaddr.h"
#include "policy.h"
#include "spec.h"

struct tf_evidence;
struct tf_spec_md;

#define TF_QREASON_MAX 200

/* A session's quarantine (docs/quarantine.md): on, since when, and why. */
struct tf_quarantine {
	int on;
	int reset; /* its cut TCP connections are reset toward the guest (on_deny reject) */
	time_t since;
	char reason[TF_QREASON_MAX + 1];
};

struct tf_sess {
	struct tf_spec spec;
	struct tf_spec qspec;	/* quarantined: the spec whose policy is in force */
	struct tf_quarantine q; /* survives a restart (the state file) */
	struct tf_sess_key dev; /* its device: namespace cookie and ifindex */
	__u32 sid;
	__u32 ver;		 /* policy version in force (tf_session.policy_ver) */
	__u32 rver;		 /* the generation it is written as (tf_session.rules_ver) */
	__u32 transition;	 /* the version before ver that named its change's writing (0: none) */
	int rules_dirty;	 /* a failed change left entries neither policy has: write whole next */
	struct tf_policy policy; /* what generation ver wrote */
	struct tf_attach at;
	struct tf_evidence *ev; /* its policy history (evidence.c) */
	unsigned int journal_n; /* rule changes in its state journal (session.c) */
	__u64 journal_base;	/* the journal base of its last whole save (0: none yet) */
	struct tf_spec_md *md;	/* its spec's hash, kept up to date (evidence.c) */
	/*
	 * Its events' lines name it and its device the same way every time:
	 * that part, formatted once for dev and q.on (events.c).
	 */
	struct {
		struct tf_sess_key dev;
		int q;
		size_t sess_len, len; /* buf[0, sess_len): "session"...; [sess_len, len): "ifname"... */
		char *buf;
	} evh;
	/* Its flow table's evictions told (tf_sess_tick()), kept pinned beside its counts. */
	__u64 flows_evicted;
	__u64 serial; /* this session among all this run added, 1 up (tf_daemon.sess_serial) */
	struct tf_sess *next;
};

struct tf_client;
struct tf_feed_dest;
struct ring_buffer;

struct tf_daemon {
	struct tf_config cfg;
	struct tf_dp dp;
	struct tf_hostaddr host; /* the host's own addresses, floored (hostaddr.c) */
	struct tf_sess *sessions;
	unsigned int nsessions;
	struct tf_sess *by_sid[TF_MAX_SESSIONS];
	__u8 stale_sid[TF_MAX_SESSIONS]; /* pinned, enforcing, not restored: never reused */
	__u8 reserved_sid[TF_MAX_SESSIONS]; /* during restore: 1 (2) device(s) enforce it (session.c) */
	struct tf_sess_key reserved_dev[TF_MAX_SESSIONS]; /* ... that device */
	time_t started;
	time_t sess_ticked;	      /* the second tf_sess_tick() last looked */
	time_t flows_ticked;	      /* ... and when it last looked for flow evictions */
	__u64 sess_serial;	      /* the last tf_sess.serial given */
	__u64 gone_evicted;	      /* flows_evicted of the sessions deleted since the start */
	int flows_unknown;	      /* the last look could not count them (said once) */
	__u32 gone_sid;		      /* restore_gone()'s slot, for its tf_sessions walk */
	struct tf_guard_ns *guard_ns; /* guarded namespaces besides the daemon's (guard.c) */
	int guard_nl;		      /* its RTM_NEWLINK listener, -1 if none */
	time_t guard_ticked;
	int foreground;
	/* control socket */
	int listen_fd;
	int spare_fd;		 /* held for refusing a client when out of fds */
	unsigned int socket_gid; /* socket_group's gid, 0 if none */
	int epoll_fd;
	struct tf_client *clients;
	unsigned int nclients;
	unsigned int nsubscribers;
	/*
	 * Event lines for the subscribers of every session, written once into
	 * buf, sent to each from out by a thread of their own while the next
	 * batch is written (control.c).
	 */
	struct {
		char *buf; /* the batch being written */
		size_t len, cap;
		char *out; /* the batch being sent: the sender's while busy */
		size_t out_len, out_cap;
		struct tf_feed_dest *dest; /* whom out goes to, and what each took */
		unsigned int ndest, dest_cap;
		pthread_t thread;
		pthread_mutex_t mu;
		pthread_cond_t cv;
		int on, busy, stop;
	} feed;
	/* event feed */
	struct ring_buffer *rb;
	struct tf_audit *audit;	      /* the sealed event log (auditlog.c) */
	struct tf_attest *attest;     /* measurements and the last attestation (attest.c) */
	__u64 policy_changes;	      /* session adds, deletes and rule changes (attest.c) */
	__u64 gone_cnt[TF_CNT_SLOTS]; /* counters of the sessions deleted since the start */
	time_t metrics_at;	      /* the textfile was last written then */
	__u64 lost_reported;	      /* tf_stats lost count already accounted */
	__u64 lost_pending;	      /* lost since the last line, for the next line */
	__u64 events_written;
	__s64 mono_off;	 /* CLOCK_REALTIME - CLOCK_MONOTONIC, per drain */
	time_t time_sec; /* the second time_prefix formats */
	char time_prefix[32];
};

/* Tell the service manager (sd_notify(3), notify.c): READY=1, STATUS=..., STOPPING=1. */
void tf_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sessions (session.c). Errors are written to err naming the field. */
/*
 * want_sid, want_netns, q (restore): the slot, namespace cookie and
 * quarantine a saved session had; 0 and NULL for a new session.
 */
int tf_sess_add(struct tf_daemon *d, const struct tf_spec *spec, __u32 want_sid, __u64 want_netns,
		const struct tf_quarantine *q, char *err, size_t errlen);
/* Quarantine (on) or resume a session; reason is free text, reset answers the cut (on only). */
int tf_sess_quarantine(struct tf_daemon *d, const char *id, int on, const char *reason, int reset,
		       char *err, size_t errlen);
/* 1 if the session's denied packets are answered (its on_deny, or the operator's). */
int tf_sess_rejects(const struct tf_daemon *d, const struct tf_sess *s);
/* Switch a session to audit (audit = 1) or enforce mode, live (docs/audit-mode.md). */
int tf_sess_mode(struct tf_daemon *d, const char *id, int audit, char *err, size_t errlen);
/*
 * Delete: the device goes back to the guard (deny-everything) unless
 * release, which tf_sess_del_check() refuses on a device a guard pattern
 * matches; 0 or -errno with err naming the field.
 */
int tf_sess_del_check(struct tf_daemon *d, const struct tf_sess *s, int release, char *err,
		      size_t errlen);
int tf_sess_del(struct tf_daemon *d, const char *id, int release, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int tf_sess_rule(struct tf_daemon *d, const char *id, const struct tf_rule *r, int add, char *err,
		 size_t errlen) __attribute__((warn_unused_result));
struct tf_sess *tf_sess_find(struct tf_daemon *d, const char *id);
/* The kernel has what tapfence needs (kernel.c): 0, or -ENOSYS with the reason logged. */
int tf_kernel_check(void);
/* 1 if a kernel release (uname -r) is new enough, else 0 and why. */
int tf_kernel_release_ok(const char *release, char *why, size_t len);

/* The guard (guard.c, docs/guard.md). */
struct tf_guard_ns;
int tf_guard_matches(const struct tf_config *cfg, const char *ifname);
int tf_guard_start(struct tf_daemon *d); /* after sessions are restored */
void tf_guard_tick(struct tf_daemon *d);
void *tf_guard_tag(void);		  /* the epoll tag of its netlink socket ... */
void tf_guard_event(struct tf_daemon *d); /* ... which this reads */
void tf_guard_close(struct tf_daemon *d);
/* Leave dev (in the namespace at netns, NULL: the daemon's) denying everything. */
int tf_guard_keep(struct tf_daemon *d, const char *netns, const struct tf_sess_key *dev);
void tf_guard_release(struct tf_daemon *d, const struct tf_sess_key *dev);
/*
 * 1 if dev has both guard programs, pinned, running this run's programs
 * (a pinned link of an earlier run is updated to them): a session added on
 * it needs no links of its own (TF_SF_VIA_GUARD, TC mode); it is judged
 * through them. Pinned state of another ABI refuses the start, so every
 * guard program found knows TF_SF_VIA_GUARD. fds (out, in), if not NULL:
 * the two links, kept open for the session (a pin alone can be removed).
 */
int tf_guard_holds(struct tf_daemon *d, const struct tf_sess_key *dev, int fds[2]);
/* Pin a via-guard session's held guard links (fds: out, in) again where their pins went. */
void tf_guard_repin(struct tf_daemon *d, const struct tf_sess_key *dev, const int fds[2]);
json_t *tf_guard_list(struct tf_daemon *d);
/* tapfenced --cleanup: the nftables guard out of every namespace the config names. */
void tf_guard_cleanup(const struct tf_config *cfg);
/* End sessions whose namespace is gone (main loop, at most once a second). */
void tf_sess_tick(struct tf_daemon *d);
/* Re-adopt the sessions saved in state_dir (daemon start). */
int tf_sess_restore(struct tf_daemon *d);
/* After restore: reserve stale slots, sweep every other slot's leftovers. */
void tf_sess_reconcile(struct tf_daemon *d);
/* At a stop: every session's rule journal folded into its state file. */
void tf_sess_fold_all(struct tf_daemon *d);
/* Forget every session in memory; enforcement stays pinned. */
void tf_sess_forget_all(struct tf_daemon *d);

/* Control socket (control.c, the transport; control_ops.c, the operations). */
int tf_ctl_open(struct tf_daemon *d) __attribute__((warn_unused_result));
/* An epoll event whose data.ptr is the listener's or a client's. */
void tf_ctl_event(struct tf_daemon *d, void *ptr, __u32 events);
void tf_ctl_tick(struct tf_daemon *d);
/* Free the clients ended during this loop iteration. */
void tf_ctl_reap(struct tf_daemon *d);
/*
 * Start the feed's sender thread (signals blocked), after the capabilities
 * are dropped: 0 or -errno. Until then (or without it) the feed is sent
 * by the caller of the flush.
 */
int tf_ctl_start(struct tf_daemon *d) __attribute__((warn_unused_result));
/* Stop the sender thread and free the feed's buffers (the clients stay). */
void tf_ctl_stop(struct tf_daemon *d);
void tf_ctl_close(struct tf_daemon *d);
/*
 * Queue a line for every subscriber of session sid (0: all): once for all
 * the subscribers of every session (d->feed), in its own queue for one of
 * sid's. What is queued is sent once it holds TF_OUT_BATCH, else by
 * tf_ctl_flush_events(), which the drain and the event loop call; once
 * that returns, every line is sent or in its subscriber's queue.
 */
void tf_ctl_broadcast(struct tf_daemon *d, __u32 sid, const char *line, size_t len);
void tf_ctl_flush_events(struct tf_daemon *d);

/* Capabilities (caps.c): keep only what running needs, as cfg->user if set. 0 or -errno. */
int tf_caps_drop(const struct tf_config *cfg) __attribute__((warn_unused_result));
/*
 * With "user", the last run's user owns the state and pin dirs, closed
 * (0700) to root without CAP_DAC_OVERRIDE (tapfenced.service), so a start
 * as root takes them back with CAP_CHOWN, in two steps (caps.c: take()).
 * First, before anything else, the three a running daemon's lock is found
 * through: state_dir, its lock file, pin_dir; *r says whose they were.
 * Then, the lock held (tf_caps_reclaim_undo() if it is another daemon's),
 * what is in the two dirs, two levels down, and with "user" the event log
 * (a file of its own only, never removed). A start
 * without "user" finds root's and changes nothing. tf_caps_drop() hands
 * them to the user again.
 */
struct tf_reclaim {
	struct stat was[3];
	int taken[3];
};
int tf_caps_reclaim_top(const struct tf_config *cfg, struct tf_reclaim *r)
	__attribute__((warn_unused_result));
void tf_caps_reclaim_undo(const struct tf_config *cfg, const struct tf_reclaim *r);
int tf_caps_reclaim(const struct tf_config *cfg) __attribute__((warn_unused_result));

/*
 * The main loop sleeps at most TF_TICK_MS. After a drain that read events,
 * another is owed TF_LINGER_MS later: an event that did not wake the
 * daemon (one did less than TF_EV_WAKE_MS before it, bpf/lib/record.bpf.h)
 * is read by then. The 5 ms over TF_EV_WAKE_MS cover a program's run
 * between its clock read and its submit, and the loop's ms rounding.
 */
#define TF_TICK_MS   250
#define TF_LINGER_MS (TF_EV_WAKE_MS + 5)

/* CLOCK_MONOTONIC, in ms. */
static inline __u64 tf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Seconds between two looks for flow-table evictions (tf_sess_tick(), docs/operations.md). */
#define TF_FLOWS_CHECK_S 5

/*
 * One daemon per state dir, pin dir and control socket (instance.c):
 * flocks held for the daemon's life. cleanup = 1 (tapfenced --cleanup)
 * locks only what exists and leaves the socket alone. 0, -EBUSY with a
 * message naming the holder's pid, or -errno.
 */
#define TF_LOCK_FILE "tapfenced.lock"

struct tf_lock {
	int state_fd, pin_fd, sock_fd;
};
void tf_lock_init(struct tf_lock *l);
int tf_lock_take(const struct tf_config *cfg, struct tf_lock *l, int cleanup)
	__attribute__((warn_unused_result));
void tf_lock_release(struct tf_lock *l);

/*
 * File descriptors: each session holds its two tcx links (or the guard's
 * two), so that no pin removed from bpffs can end its enforcement; its
 * tables are pinned and opened when used (datapath.h). Each client holds
 * one socket; TF_FDS_BASE covers the rest (two skeletons' maps and
 * programs in XDP mode, ringbuf, epoll, signalfd, locks, log, listener,
 * the netns broker's socket, the guard's netlink socket, and the tables
 * one request or the pool's thread opens for a moment).
 */
#define TF_FDS_PER_SESSION 2
#define TF_FDS_BASE	   128
unsigned long tf_fd_need(const struct tf_config *cfg);
/* Raise RLIMIT_NOFILE to tf_fd_need(), or say what to set; 0 or -EMFILE. */
int tf_fd_budget(const struct tf_config *cfg) __attribute__((warn_unused_result));

/* Event feed (events.c). */
int tf_events_open(struct tf_daemon *d) __attribute__((warn_unused_result));
/* Events read, or a negative error. */
int tf_events_drain(struct tf_daemon *d);
/* Whether the ring holds what a drain could not read yet (a record not committed). */
int tf_events_pending(struct tf_daemon *d);
int tf_events_reopen(struct tf_daemon *d) __attribute__((warn_unused_result));
/* A control-plane decision (e.g. a refused peer) as a feed line. */
void tf_events_control(struct tf_daemon *d, const char *reason, int pid, unsigned int uid,
		       unsigned int gid);
void tf_events_close(struct tf_daemon *d);

/*
 * The sealed event log (auditlog.c, docs/audit.md). tf_audit_line() seals
 * one JSON object line in place (adds "seq" and "prev": cap leaves 64 bytes) and queues
 * it; 0 if it could not. Lines are written by tf_audit_flush() (once per
 * drain) and sealed by a signed checkpoint from tf_audit_tick() when due.
 */
int tf_audit_open(struct tf_daemon *d) __attribute__((warn_unused_result));
/* The event log's directory ("/" for a log at the root), into dir. */
void tf_audit_dir(const struct tf_config *cfg, char *dir, size_t len);
/*
 * The tree's nodes from here on on a thread of its own (started after the
 * capabilities are dropped: a thread keeps the ones it was created with).
 */
int tf_audit_start(struct tf_daemon *d) __attribute__((warn_unused_result));
size_t tf_audit_line(struct tf_daemon *d, char *line, size_t n, size_t cap, __u32 suppressed);
int tf_audit_flush(struct tf_daemon *d);
/* An event that could not even be formatted: counted with the unwritten lines. */
void tf_audit_unwritten(struct tf_daemon *d);
int tf_audit_seal(struct tf_daemon *d, const char *why);
void tf_audit_tick(struct tf_daemon *d);
int tf_audit_reopen(struct tf_daemon *d) __attribute__((warn_unused_result));
void tf_audit_stats(const struct tf_daemon *d, __u64 *size, __u64 *checkpoints, __u64 *unwritten);
/* When the last checkpoint was written (unix seconds), 0 before the first. */
time_t tf_audit_last_checkpoint(const struct tf_daemon *d);

/* Metrics (metrics.c, docs/metrics.md): the Prometheus text, malloc'ed; the textfile's upkeep. */
char *tf_metrics_text(struct tf_daemon *d, size_t *len);
void tf_metrics_tick(struct tf_daemon *d);
/* A sealed line of the log's own: fmt gives the members after "time" and "kind". */
void tf_audit_note(struct tf_daemon *d, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct tf_signer;
const struct tf_signer *tf_audit_signer(const struct tf_daemon *d, int i);
/* Key i's verifier key (0: Ed25519, 1: ECDSA P-256), NULL if none. */
const char *tf_audit_vkey(const struct tf_daemon *d, int i);
/* Replace every signing key, as a sealed, signed line (docs/audit.md). */
int tf_audit_rotate_key(struct tf_daemon *d, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* The current epoch's origin, NULL without a sealed log. */
const char *tf_audit_origin(const struct tf_daemon *d);
/* The newest checkpoint's signed note, NULL before the first. */
const char *tf_audit_last_note(const struct tf_daemon *d);
/* Seal what is left ("stop"), then close; tf_audit_close_fd() closes without sealing. */
void tf_audit_close(struct tf_daemon *d);
void tf_audit_close_fd(struct tf_daemon *d);

/*
 * Attestation (attest.c, docs/attest.md). tf_attest_init() measures the
 * daemon, its BPF object and its config at start; tf_attest_restore()
 * compares the inputs with the last attestation an earlier run issued;
 * tf_attest_tick() marks it stale when they change; tf_attest_make() signs
 * a new one (a DSSE envelope), for one session or the node (only NULL).
 */
int tf_attest_init(struct tf_daemon *d, const char *config_path)
	__attribute__((warn_unused_result));
void tf_attest_restore(struct tf_daemon *d);
void tf_attest_tick(struct tf_daemon *d);
/* 1 if tapfence's programs head s's device's ingress and egress chains now. */
int tf_attest_first(struct tf_daemon *d, const struct tf_sess *s);
json_t *tf_attest_make(struct tf_daemon *d, const char *only, char *err, size_t errlen);
/* stmt in a DSSE envelope, signed by every node key; NULL if it cannot be. */
json_t *tf_attest_sign(struct tf_daemon *d, const json_t *stmt);

/*
 * A session's policy history (evidence.c, docs/attest.md):
 * tf_evidence_policy() seals a "policy" line for op (add, restore,
 * rule.add, rule.del) and remembers it; tf_evidence_end() seals the "del"
 * line and, with log.session_evidence, writes the signed statement (its
 * path in path, "" if none).
 */
int tf_spec_sha256(const struct tf_spec *spec, char hex[65]) __attribute__((warn_unused_result));
void tf_evidence_policy(struct tf_daemon *d, struct tf_sess *s, const char *op,
			const struct tf_rule *rule);
/*
 * tf_spec_sha256() of s->spec, from what s keeps: with appended, the one
 * change since the last call must be a rule appended to its rules (then it
 * costs that rule, not all). tf_sess_spec_sha256(): the last one computed
 * (every change computes it, tf_evidence_policy()), NULL if none can be.
 */
int tf_sess_spec_hash(struct tf_sess *s, int appended, char hex[65])
	__attribute__((warn_unused_result));
const char *tf_sess_spec_sha256(struct tf_sess *s);
int tf_evidence_end(struct tf_daemon *d, struct tf_sess *s, char *path, size_t len);
void tf_evidence_free(struct tf_sess *s);
json_t *tf_attest_stats(struct tf_daemon *d);
void tf_attest_close(struct tf_daemon *d);

#endif
