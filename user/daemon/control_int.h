/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the control socket's two halves share: the client a request came
 * from (control.c, the transport) and the dispatch of a parsed request to
 * its handler (control_ops.c).
 */
#ifndef TF_CONTROL_INT_H
#define TF_CONTROL_INT_H

#include <stddef.h>
#include <jansson.h>
#include "daemon.h"
#include "request.h"

/* A client that falls this far behind in reading is disconnected (and the log says so). */
#define TF_OUT_MAX   (4u << 20)
/* A subscriber's queued lines are sent once they reach this, or when the drain ends. */
#define TF_OUT_BATCH (64u << 10)

struct tf_client {
	int fd;
	char *in;
	size_t in_len;
	size_t in_cap;
	char *out;
	size_t out_len;
	size_t out_off;
	size_t out_cap;
	int want_out; /* EPOLLOUT is asked for */
	int pending;  /* events queued since the last flush (tf_ctl_flush_events()) */
	int subscriber;
	__u32 sub_sid;	   /* 0: all sessions */
	uid_t uid;	   /* the peer's, at connect (SO_PEERCRED) */
	int closing;	   /* close once out is flushed */
	int dead;	   /* closed; freed by tf_ctl_reap() */
	int in_flight;	   /* the feed's sender may be sending to fd (control.c) */
	__u64 deadline_ms; /* a partial request must complete by then */
	struct tf_client *next;
};

/*
 * The response to request r from client c, or NULL with err set (empty
 * err: out of memory).
 */
json_t *tf_ctl_dispatch(struct tf_daemon *d, struct tf_client *c, struct tf_request *r, char *err,
			size_t errlen);

#endif
