/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Operator configuration: built-in defaults, overridden by --config FILE
 * (JSON). Parsing is pure (buffer in, struct or error out). Schema and
 * defaults: docs/operations.md.
 */
#ifndef TF_CONFIG_H
#define TF_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include "../common/addr.h"
#include "spec.h"

enum tf_attach_mode { TF_ATTACH_TC, TF_ATTACH_XDP };

#define TF_CONFIG_MAX_CIDRS 256
#define TF_PATH_MAX	    512 /* configured paths; buffers built from them use PATH_MAX */

#define TF_GUARD_MAX  16 /* guard patterns, and guarded namespace paths */
#define TF_Q_OPEN_MAX 16 /* quarantine.keep_open rules */

struct tf_config {
	char control_socket[TF_PATH_MAX];
	char pin_dir[TF_PATH_MAX];
	char state_dir[TF_PATH_MAX];
	char event_log[TF_PATH_MAX];
	/* The sealed log (docs/audit.md): "" = <state_dir>/log.key and the host name. */
	char log_key[TF_PATH_MAX];
	char log_ecdsa_key[TF_PATH_MAX]; /* an ECDSA P-256 second signer; "" = none */
	int log_session_evidence;	 /* a signed evidence statement at each session del */
	char log_name[64];
	unsigned int log_checkpoint_lines;    /* a checkpoint after this many lines ... */
	unsigned int log_checkpoint_s;	      /* ... or this many seconds (a heartbeat) */
	unsigned long long log_segment_bytes; /* the daemon rotates at this size (0: never) ... */
	unsigned int log_segment_age_s;	      /* ... or age (0: never) */
	int log_compress;		      /* gzip closed segments */
	unsigned long long log_retain_bytes;  /* closed segments, at most (0: no bound) */
	unsigned int log_retain_days; /* closed segments older than this are removed (0: kept) */
	char socket_group[64];	      /* "" = root's group */
	char user[64];		      /* run as this user after start-up; "" = stay uid 0 */
	/* Control-socket peers allowed besides uid 0 (SO_PEERCRED). */
	unsigned int nallowed_uids, nallowed_gids;
	unsigned int allowed_uids[64];
	unsigned int allowed_gids[64];
	enum tf_attach_mode attach_mode;
	/*
	 * A hello with encrypted_client_hello: refused (0, "deny"), or judged by
	 * its outer SNI (1, "outer"): browsers send a GREASE one that cannot be
	 * told from a real one (docs/tls.md).
	 */
	int tls_ech_outer;
	/*
	 * The guard (docs/guard.md): devices whose name matches one of these
	 * ("tap*": a prefix; "tap0": that name) deny everything unless a
	 * session claims them, in the daemon's namespace and the namespaces
	 * named by guard_netns (a path, or DIR followed by "/" and "*": every
	 * namespace file in DIR).
	 */
	unsigned int nguard_if, nguard_netns;
	char guard_if[TF_GUARD_MAX][16];
	char guard_netns[TF_GUARD_MAX][TF_PATH_MAX];
	__u32 guard_mark; /* the skb mark bit tapfence sets on what it passes (guard only) */
	/* Metrics (docs/metrics.md): a node_exporter textfile kept up to date ("" = none) ... */
	char metrics_textfile[TF_PATH_MAX];
	unsigned int metrics_interval_s; /* ... rewritten this often ... */
	int metrics_per_session;	 /* ... with per-session deny counters (opt-in) */
	/* Rejections (docs/reject.md): sessions without on_deny reject (1) or drop (0) ... */
	int on_deny_reject;
	int reject_floor; /* ... and the floor is answered too (1) or dropped silently (0) */
	unsigned int reject_per_s; /* answers a session gets per second and CPU ... */
	unsigned int reject_burst; /* ... and in a burst */
	/* What a quarantined session may still reach (docs/quarantine.md): rules as in a spec. */
	unsigned int nq_open;
	struct tf_rule q_open[TF_Q_OPEN_MAX];
	int nat64_floor;	   /* deny 64:ff9b::/96 (default 1) */
	unsigned int nfloor_extra; /* operator's extra hard-deny ranges */
	struct tf_cidr floor_extra[TF_CONFIG_MAX_CIDRS];
	unsigned int nfloor_exceptions; /* operator's exceptions to the floor */
	struct tf_cidr floor_exceptions[TF_CONFIG_MAX_CIDRS];
	unsigned int nfloor_host; /* host addresses netlink cannot see (floor_host) */
	struct tf_cidr floor_host[TF_CONFIG_MAX_CIDRS];
	/* limits */
	unsigned int max_sessions; /* < TF_MAX_SESSIONS */
	unsigned int warm_slots;   /* slots kept ready for session add (datapath_slots.c) */
	unsigned int max_rules;	   /* per session */
	unsigned int flows_per_session;
	unsigned int rule_entries;    /* tf_rules capacity, all sessions, two generations */
	unsigned int port_entries;    /* tf_ports capacity */
	unsigned int name_entries;    /* tf_names capacity */
	unsigned int floor_entries;   /* tf_floor capacity: built-in, operator and host entries */
	unsigned int dns_queries;     /* outstanding queries, per session (LRU) */
	unsigned int learned_entries; /* learnt addresses, per session (LRU) */
	unsigned int dns_ttl_min_s;   /* learnt TTLs are clamped to [min, max] */
	unsigned int dns_ttl_max_s;
	unsigned int dns_query_timeout_s; /* an answer after this matches no query */
	unsigned int tls_pending;	  /* ClientHellos reassembled at once, per session */
	unsigned int tls_timeout_s;	  /* a hello buffer older than this may be swept */
	unsigned int events_per_s;	  /* per session and CPU; 0: no limit */
	unsigned int events_burst;
	unsigned int ringbuf_bytes; /* power of two */
	unsigned int max_clients;
	unsigned int max_subscribers;
	unsigned int client_timeout_ms; /* a half-sent request is dropped after this */
	unsigned int max_request_bytes;
	/* timeouts: a flow idle this long (s) is expired, judged as new (docs/operations.md) */
	unsigned int to_tcp_syn_sent_s; /* TCP, the remote's SYN-ACK not seen yet */
	unsigned int to_tcp_established_s;
	unsigned int to_tcp_fin_s; /* after a FIN, either way */
	unsigned int to_tcp_rst_s; /* after an RST, either way */
	unsigned int to_udp_s;	   /* UDP, nothing came back yet */
	unsigned int to_udp_replied_s;
	unsigned int to_icmp_s;	 /* ICMP echo */
	unsigned int to_other_s; /* other protocols ("any" rules) */
};

void tf_config_defaults(struct tf_config *c);
/* Overrides defaults already in c; -EINVAL with a message naming the field. */
int tf_config_parse(const char *buf, size_t len, struct tf_config *c, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
