/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every map of the datapath. Sizes here are defaults: tapfenced sets
 * max_entries from its config between open and load.
 */
#ifndef TF_MAPS_BPF_H
#define TF_MAPS_BPF_H

#include "const.bpf.h"
#include <tapfence/abi.h>
#include <tapfence/dns.h>
#include <tapfence/tls.h>

/*
 * (namespace, ifindex) -> session. BPF_F_NO_PREALLOC: elements are freed after an RCU
 * grace period, so a program still holding the old value while the daemon
 * replaces it reads the old value whole; preallocated elements are
 * recycled at once and could be overwritten under the reader.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, struct tf_sess_key);
	__type(value, struct tf_session);
} tf_sessions SEC(".maps");

/*
 * Guarded devices no session claims: (namespace, ifindex) -> packets the
 * guard dropped there, per CPU (docs/guard.md). The daemon removes a
 * device's entry when the device goes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4 * TF_MAX_SESSIONS);
	__type(key, struct tf_sess_key);
	__type(value, __u64);
} tf_guard_drops SEC(".maps");

/*
 * The guard's programs jump here for a session judged through them
 * (TF_SF_VIA_GUARD): TF_JUMP_FROM_GUEST is tc_from_guest, TF_JUMP_TO_GUEST
 * tc_to_guest, written by the daemon at load (datapath_load.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} tf_jump SEC(".maps");

/* (sid, policy generation, family, prefix) -> flattened permission. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
	__type(key, struct tf_rule_key);
	__type(value, struct tf_rule_val);
} tf_rules SEC(".maps");

/* (sid, generation, class, proto, port >> 8) -> bitmap of port & 0xff. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
	__type(key, struct tf_port_key);
	__type(value, struct tf_port_bits);
} tf_ports SEC(".maps");

/* The hard floor and the operator's exceptions to it (global). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct tf_floor_key);
	__type(value, struct tf_floor_val);
} tf_floor SEC(".maps");

/* Every session's guest addresses -> owning sid (cross-session denial). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2 * TF_MAX_SESSIONS);
	__type(key, struct tf_addr_key);
	__type(value, __u32);
} tf_addrs SEC(".maps");

/*
 * One flow table per session (slot -> inner LRU map), so one session's
 * flood only ever evicts its own flows. The daemon creates each inner map
 * with the configured flows_per_session; the template only fixes the
 * key and value sizes (the kernel does not compare a hash map's size).
 */
struct tf_flow_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	/* Sizes, not __type(): libbpf 1.1 cannot resolve BTF types of an inner map. */
	__uint(key_size, sizeof(struct tf_flow_key));
	__uint(value_size, sizeof(struct tf_flow));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct tf_flow_map);
} tf_flows SEC(".maps");

/* (sid, generation, reversed name) -> what host rules allow for it. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct tf_name_key);
	__type(value, struct tf_name_val);
} tf_names SEC(".maps");

/*
 * Per session, like the flow tables (slot -> inner LRU map), so one
 * session's query flood or answers full of addresses only ever evict its
 * own entries. The daemon sizes the inner maps from its config.
 */
struct tf_dnsq_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 128);
	__uint(key_size, sizeof(struct tf_dnsq_key));
	__uint(value_size, sizeof(struct tf_dnsq));
};

/* Queries the guest really made and the resolver has not answered yet. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct tf_dnsq_map);
} tf_dnsq SEC(".maps");

struct tf_learned_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(struct tf_learn_key));
	__uint(value_size, sizeof(struct tf_learned));
};

/* Addresses learnt from matched answers, until their TTL ends. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct tf_learned_map);
} tf_learned SEC(".maps");

/*
 * ClientHellos being reassembled, per session (slot -> inner hash keyed by
 * flow), at most tls_pending of them: a budget of the session's own. Not
 * preallocated: a buffer deleted while a run on another CPU still holds it
 * (an RST, a new SYN, the server's ack) is freed after an RCU grace period,
 * not handed to another flow under that run. A full table (or a failed
 * allocation) is swept of buffers older than cfg_tls_timeout_s before a
 * hello is held as tls_table_full (tls_hello.bpf.h).
 */
struct tf_tlsbuf_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16);
	__uint(key_size, sizeof(struct tf_flow_key));
	__uint(value_size, sizeof(struct tf_tls_buf));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct tf_tlsbuf_map);
} tf_tlsbuf SEC(".maps");

/* (learnt address, asked name) -> expiry, per session: what an SNI is checked against. */
struct tf_tlsbind_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(struct tf_bind_key));
	__uint(value_size, sizeof(__u64));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct tf_tlsbind_map);
} tf_tlsbind SEC(".maps");

/* A zeroed buffer to create tf_tlsbuf entries from (never written). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tf_tls_buf);
} tf_tlszero SEC(".maps");

/*
 * Room to de-frame and parse one ClientHello, per CPU, one run at a time
 * (as tf_dnsbuf below). @chunk holds resent bytes being compared.
 */
#define TF_TCP_OPTS_MAX 40 /* RFC 9293 3.1: data offset 15 words, 5 of them the fixed header */

struct tls_scratch {
	__u8 hs[TF_TLS_BUF + TF_TLS_SLACK];
	__u8 syn_opts[TF_TCP_OPTS_MAX]; /* the judged SYN's TCP options, syn_optlen bytes */
	__u8 syn_optlen;
	__u8 syn_optwant; /* how many its header says it has */
	__u8 pad[6];
	struct tls_parse p;
	struct tf_name_key key;
	struct tf_bind_key bkey;
	struct tf_flow_key fkey; /* the segment's flow (keys may live in map values) */
	struct tf_flow flow;	 /* JUDGE_NEED_TLS: a copy of the segment's flow (tls_flow_out()) */
	__u8 chunk[TF_TLS_SLACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tls_scratch);
} tf_tlsscratch SEC(".maps");

/*
 * Room to copy and parse one DNS message: far more than the 512-byte BPF
 * stack. Per CPU, and one run at a time uses it: TC and XDP programs run
 * with bottom halves disabled (__dev_queue_xmit() holds rcu_read_lock_bh()
 * around tcx egress; receive runs in softirq or, for tun, under
 * local_bh_disable() in tun_rx_batched() and around its XDP run), so two
 * runs never interleave on one CPU. Nothing in it outlives a run.
 */
struct dns_scratch {
	__u8 msg[TF_DNS_MSG_MAX];
	struct dns_parse p;
	struct tf_name_key key;
	struct tf_dnsq q;	 /* the query being recorded, or a copy of the one answered */
	struct tf_learned l;	 /* what an answer's addresses are learnt with */
	struct tf_bind_key bkey; /* (address, asked name) pairs an SNI is checked against */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dns_scratch);
} tf_dnsbuf SEC(".maps");

/*
 * TF_ABI_VERSION of the build that created the pinned maps, written by
 * tapfenced: a build with another layout refuses to adopt them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tf_abi SEC(".maps");

/* Per-session per-reason packet counters: index sid * TF_CNT_SLOTS + slot. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TF_MAX_SESSIONS *TF_CNT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} tf_counters SEC(".maps");

/*
 * Per session, per CPU: its flows that took an entry and that left one
 * (count_flow()). Apart from tf_counters so that the daemon reads every
 * session's in one batch lookup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, struct tf_flowcnt);
} tf_flowcnt SEC(".maps");

/*
 * Per session, the evictions the daemon has told; written by tapfenced
 * alone, pinned, so that a restart neither tells them again nor skips
 * those since its last look.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, __u64);
} tf_flows_told SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TF_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} tf_stats SEC(".maps");

/* Event rate limit per session and CPU (struct tf_evbucket). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, struct tf_evbucket);
} tf_evrate SEC(".maps");

/*
 * Over-budget events by (session, reason, remote end): when each last got
 * out (record.bpf.h). Shared: a session flooding distinct remote ends
 * evicts others' entries, which only lets their next event out sooner,
 * within their own second budget.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tf_evseen_key);
	__type(value, __u64);
} tf_evseen SEC(".maps");

/* Rejections' rate per session and CPU: a GCRA arrival time (reject.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TF_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, __u64);
} tf_rjrate SEC(".maps");

/*
 * A rejection's scratch (reject.bpf.h), per CPU as tf_dnsbuf: what an ICMP
 * error quotes, a DNS answer's copy to sum, and the mark that lets the
 * answer through tc_to_guest, which lives from the redirect to that run.
 */
struct tf_rjscratch {
	__u64 pass_ns;	    /* the answer was redirected at this time (0: none waits) ... */
	__u64 pass_netns;   /* ... to the egress of the device in this namespace ... */
	__u32 pass_ifindex; /* ... at this index ... */
	__u32 pass_len;	    /* ... this long */
	__u8 gw[6];	    /* the denied frame's destination MAC */
	__u8 quote[40 + 8];
	__u8 msg[512 + 4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tf_rjscratch);
} tf_rjscratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} tf_events SEC(".maps");

#endif /* TF_MAPS_BPF_H */
