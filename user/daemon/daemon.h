/* SPDX-License-Identifier: GPL-2.0 */
/* tapfenced's state: configuration, datapath, sessions, clients. */
#ifndef TF_DAEMON_H
#define TF_DAEMON_H

#include <stdio.h>
#include <time.h>
#include "config.h"
#include "datapath.h"
#include "hostaddr.h"
#include "policy.h"
#include "spec.h"

struct tf_sess {
	struct tf_spec spec;
	__u32 ifindex;
	__u32 sid;
	__u32 ver;			/* policy generation in force */
	struct tf_policy policy;	/* what generation ver wrote */
	struct tf_attach at;
	struct tf_sess *next;
};

struct tf_client;
struct ring_buffer;

struct tf_daemon {
	struct tf_config cfg;
	struct tf_dp dp;
	struct tf_hostaddr host;	/* the host's own addresses, floored (hostaddr.c) */
	struct tf_sess *sessions;
	unsigned int nsessions;
	struct tf_sess *by_sid[TF_MAX_SESSIONS];
	__u8 stale_sid[TF_MAX_SESSIONS];	/* pinned, enforcing, not restored: never reused */
	time_t started;
	int foreground;
	/* control socket */
	int listen_fd;
	unsigned int socket_gid;	/* socket_group's gid, 0 if none */
	int epoll_fd;
	struct tf_client *clients;
	unsigned int nclients;
	unsigned int nsubscribers;
	/* event feed */
	struct ring_buffer *rb;
	FILE *event_log;
	__u64 lost_reported;		/* tf_stats lost count already accounted */
	__u64 lost_pending;		/* lost since the last line, for the next line */
	__u64 events_written;
	__s64 mono_off;			/* CLOCK_REALTIME - CLOCK_MONOTONIC, per drain */
	time_t time_sec;		/* the second time_prefix formats */
	char time_prefix[32];
};

/* Sessions (session.c). Errors are written to err naming the field. */
int tf_sess_add(struct tf_daemon *d, const struct tf_spec *spec, __u32 want_sid, char *err,
		size_t errlen) __attribute__((warn_unused_result));
int tf_sess_del(struct tf_daemon *d, const char *id, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int tf_sess_rule(struct tf_daemon *d, const char *id, const struct tf_rule *r, int add,
		 char *err, size_t errlen) __attribute__((warn_unused_result));
struct tf_sess *tf_sess_find(struct tf_daemon *d, const char *id);
/* Re-adopt the sessions saved in state_dir (daemon start). */
int tf_sess_restore(struct tf_daemon *d);
/* After restore: reserve stale slots, sweep every other slot's leftovers. */
void tf_sess_reconcile(struct tf_daemon *d);
/* Forget every session in memory; enforcement stays pinned. */
void tf_sess_forget_all(struct tf_daemon *d);

/* Control socket (control.c). */
int tf_ctl_open(struct tf_daemon *d) __attribute__((warn_unused_result));
void tf_ctl_event(struct tf_daemon *d, int epfd_ev, void *ptr, __u32 events);
void tf_ctl_tick(struct tf_daemon *d);
/* Free the clients ended during this loop iteration. */
void tf_ctl_reap(struct tf_daemon *d);
void tf_ctl_close(struct tf_daemon *d);
/* Send one event line to the subscribers of sid (or of all sessions). */
void tf_ctl_broadcast(struct tf_daemon *d, __u32 sid, const char *line, size_t len);

/* Capabilities (caps.c): keep only what running needs, as cfg->user if set. 0 or -errno. */
int tf_caps_drop(const struct tf_config *cfg) __attribute__((warn_unused_result));

/* Event feed (events.c). */
int tf_events_open(struct tf_daemon *d) __attribute__((warn_unused_result));
int tf_events_drain(struct tf_daemon *d);
int tf_events_reopen(struct tf_daemon *d) __attribute__((warn_unused_result));
/* A control-plane decision (e.g. a refused peer) as a feed line. */
void tf_events_control(struct tf_daemon *d, const char *reason, int pid, unsigned int uid,
		       unsigned int gid);
void tf_events_close(struct tf_daemon *d);

#endif
