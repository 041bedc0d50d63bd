/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The ABI between the BPF datapath and tapfenced: map keys and values,
 * events, constants. Included by the BPF objects (after vmlinux.h) and by
 * userspace (after <linux/types.h>). Fixed-width types only, padding
 * named, layouts pinned with _Static_assert. Never mirror these elsewhere.
 */
#ifndef TAPFENCE_ABI_H
#define TAPFENCE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "reason.h"

/*
 * 2: TLS flow states, buffers and bindings; 128 counter slots; 3: flow expiry and revocation;
 * 4: sessions keyed by (network namespace, ifindex), events carry the namespace;
 * 5: audit mode and rejections (session flags, the audit verdict, counter slots), deny rules;
 * 6: sessions judged through the guard (TF_SF_VIA_GUARD);
 * 7: tf_session.rules_ver apart from policy_ver (a rule change applied in place);
 * 8: a session's flow counts in tf_flowcnt, the evictions told in tf_flows_told
 */
#define TF_ABI_VERSION 8

/* Session slots: 0 is "no session"; 1..TF_MAX_SESSIONS-1 are live. */
#define TF_MAX_SESSIONS 4096
#define TF_NAME_MAX	256 /* DNS name / SNI carried in an event */
/*
 * An event wakes the daemon if none did for this long (or the ring is an
 * eighth full); the others wait for the drain the daemon owes after each
 * one that read events (TF_LINGER_MS, user/daemon/daemon.h).
 */
#define TF_EV_WAKE_MS	10

/* Address families as carried in keys and events (not AF_*). */
#define TF_FAM_IPV4 4
#define TF_FAM_IPV6 6
/* Or'ed into tf_rule_key.family: the entry is of the session's deny rules (docs/deny.md). */
#define TF_FAM_DENY 0x80

/* Protocol bits used by rules (struct tf_rule_val). */
#define TF_PB_TCP   0x01
#define TF_PB_UDP   0x02
#define TF_PB_ICMP  0x04 /* ICMP echo / ICMPv6 echo */
#define TF_PB_OTHER 0x08 /* any other IP protocol ("any" rules) */
/*
 * TCP ports on which a connection must show an allowed ClientHello SNI
 * before payload passes (tls.bpf.h): in all_ports, every TCP port of the
 * permission; in protos, the ports of the class's TF_PORTS_TLS bitmap.
 */
#define TF_PB_TLS   0x10

/* tf_port_key.proto of a class's TLS port bitmap (not an IP protocol number). */
#define TF_PORTS_TLS 0

/* Session flags (struct tf_session.flags). */
#define TF_SF_IPV4	0x0001 /* guest has an IPv4 address */
#define TF_SF_IPV6	0x0002 /* guest has an IPv6 address */
#define TF_SF_RESOLVER4 0x0004 /* resolver reachable over IPv4 */
#define TF_SF_RESOLVER6 0x0008 /* resolver reachable over IPv6 */
#define TF_SF_HOSTS	0x0010 /* the session has host rules (learnt addresses count) */
#define TF_SF_AUDIT	0x0020 /* audit mode: denials pass, reported (docs/audit-mode.md) */
#define TF_SF_REJECT	0x0040 /* on_deny reject: a denied packet is answered (docs/reject.md) */
#define TF_SF_DENY	0x0080 /* the session has CIDR deny rules (TF_FAM_DENY entries) */
#define TF_SF_VIA_GUARD 0x0100 /* no links of its own: judged through the guard's (docs/guard.md) */

/**
 * struct tf_sess_key - key of tf_sessions: the device a packet arrives on or
 * leaves by, as the kernel names it. ifindexes repeat across network
 * namespaces (every per-VM namespace may hold the same tap at the same
 * index), so the namespace is part of the key.
 * @netns:   the device's namespace's cookie (SO_NETNS_COOKIE; the BPF side
 *           reads dev->nd_net.net->net_cookie)
 * @ifindex: the device's index in that namespace
 * Packed to 12 bytes: struct judge holds one, and tc_from_guest's stack is
 * within bytes of the verifier's 512.
 */
struct tf_sess_key {
	__u64 netns;
	__u32 ifindex;
} __attribute__((packed, aligned(4)));
_Static_assert(sizeof(struct tf_sess_key) == 12, "tf_sess_key layout");

/**
 * struct tf_session - per-session configuration, map tf_sessions
 * (HASH keyed by struct tf_sess_key).
 * Replaced whole by the daemon (hash updates swap the element under RCU,
 * so a program never sees half of an old and half of a new value).
 * @sid:          session slot, 1..TF_MAX_SESSIONS-1
 * @policy_ver:   the policy version in force: what a flow was judged by
 *                (a flow of another one is judged again) and what events
 *                report; it moves at every change
 * @rules_ver:    generation of this session's entries in tf_rules, tf_ports
 *                and tf_names, and of its learnt addresses, queries and TLS
 *                state (their generation fields); a change written whole
 *                moves it to policy_ver, one applied in place keeps it
 * @flags:        TF_SF_*
 * @resolver_port: resolver's DNS port, network order
 * @guest_mac, @gw_mac: the guest's and the gateway's (host side) MACs
 * @guest_ip4, @gw_ip4, @resolver_ip4: network order, 0 if absent
 * @guest_ip6, @guest_ip6_ll: global and link-local (EUI-64 of guest_mac)
 * @gw_ip6, @gw_ip6_ll, @resolver_ip6: likewise for the gateway
 */
struct tf_session {
	__u32 sid;
	__u32 policy_ver;
	__u32 rules_ver;
	__u16 flags;
	__be16 resolver_port;
	__u8 guest_mac[6];
	__u8 gw_mac[6];
	__be32 guest_ip4;
	__be32 gw_ip4;
	__be32 resolver_ip4;
	__u8 guest_ip6[16];
	__u8 guest_ip6_ll[16];
	__u8 gw_ip6[16];
	__u8 gw_ip6_ll[16];
	__u8 resolver_ip6[16];
};
_Static_assert(sizeof(struct tf_session) == 120, "tf_session layout");

/**
 * struct tf_rule_key - LPM key of tf_rules: one session, one policy
 * generation, one address family, then the prefix. prefixlen counts the
 * fixed 72 bits (sid, ver, family) plus the prefix bits.
 * IPv4 addresses sit in addr[0..3].
 */
struct tf_rule_key {
	__u32 prefixlen;
	__u32 sid;
	__u32 ver;
	__u8 family;
	__u8 addr[16];
	__u8 pad[3];
};
_Static_assert(sizeof(struct tf_rule_key) == 32, "tf_rule_key layout");
#define TF_RULE_KEY_FIXED_BITS 72

/**
 * struct tf_rule_val - what the longest matching prefix allows. The daemon
 * flattens rules at set-up: each prefix carries the union of every rule
 * whose CIDR contains it, so one LPM lookup answers for all rules.
 * @cls:       port class in tf_ports (0: no port-limited protocol)
 * @all_ports: TF_PB_* bits allowed on every port
 * @protos:    TF_PB_* bits allowed on some port (or at all, for ICMP/OTHER)
 */
struct tf_rule_val {
	__u16 cls;
	__u8 all_ports;
	__u8 protos;
};
_Static_assert(sizeof(struct tf_rule_val) == 4, "tf_rule_val layout");

/**
 * struct tf_port_key - one 256-port chunk of a port class, map tf_ports.
 * @proto: IPPROTO_TCP or IPPROTO_UDP; @hi: port >> 8.
 * The value is a 256-bit bitmap (struct tf_port_bits) of port & 0xff.
 */
struct tf_port_key {
	__u32 sid;
	__u32 ver;
	__u16 cls;
	__u8 proto;
	__u8 hi;
};
_Static_assert(sizeof(struct tf_port_key) == 12, "tf_port_key layout");

struct tf_port_bits {
	__u64 w[4];
};

/* Hard floor actions (struct tf_floor_val.action). */
#define TF_FLOOR_DENY	1
#define TF_FLOOR_EXEMPT 2 /* operator exception: the floor does not apply */

/** struct tf_floor_key - LPM key of tf_floor (global). prefixlen = 8 + bits. */
struct tf_floor_key {
	__u32 prefixlen;
	__u8 family;
	__u8 addr[16];
	__u8 pad[3];
};
_Static_assert(sizeof(struct tf_floor_key) == 24, "tf_floor_key layout");
#define TF_FLOOR_KEY_FIXED_BITS 8

struct tf_floor_val {
	__u16 reason; /* enum tf_reason, for TF_FLOOR_DENY */
	__u8 action;
	__u8 pad;
};

/** struct tf_addr_key - a guest address, map tf_addrs (value: __u32 sid). */
struct tf_addr_key {
	__u8 family;
	__u8 pad[3];
	__u8 addr[16];
};
_Static_assert(sizeof(struct tf_addr_key) == 20, "tf_addr_key layout");

/**
 * struct tf_flow_key - a flow in a session's flow table (the inner LRU map
 * at tf_flows[sid]). Seen from the guest: the guest address is fixed per
 * session, so only the remote end and the guest's port are stored.
 * @gport: guest's port (ICMP echo: the identifier); @rport: remote port.
 */
struct tf_flow_key {
	__u8 raddr[16];
	__be16 gport;
	__be16 rport;
	__u8 family;
	__u8 proto;
	__u8 pad[2];
};
_Static_assert(sizeof(struct tf_flow_key) == 24, "tf_flow_key layout");

/* Flow states (struct tf_flow.state); docs/tls.md draws the TLS ones. */
#define TF_FLOW_OPEN	   1 /* every packet passes */
#define TF_FLOW_TLS_WAIT   2 /* TLS port: no payload passes until the ClientHello is judged */
#define TF_FLOW_TLS_VERIFY 3 /* allowed: the hello's bytes must be resent unchanged until acked */
#define TF_FLOW_TLS_DENIED 4 /* refused (@reason): no payload passes */
#define TF_FLOW_TLS_FOLLOW 5 /* the judged hello acknowledged: the guest's records are followed */

/* Flow flags (struct tf_flow.flags). */
#define TF_FF_REPLIED 0x01 /* a packet came back from the remote end (TCP: its SYN-ACK first) */
#define TF_FF_FIN     0x02 /* TCP: a FIN, either way */
#define TF_FF_RST     0x04 /* TCP: an RST, either way */
#define TF_FF_LEARNED 0x08 /* allowed (last judged) as a learnt address, not by a CIDR rule */
/* A TCP connection's close, to its last ACK (bpf/lib/flow.bpf.h, flow_close_step()). */
#define TF_FF_FIN1	 0x10 /* a first FIN: @fin_end is just past it */
#define TF_FF_FIN1_GUEST 0x20 /* ... the guest's */
#define TF_FF_FIN2	 0x40 /* the other end's FIN, acknowledging it: @fin_end is just past it */

/*
 * A flow's last-seen time moves only when it is 1/TF_FLOW_SEEN_GRAIN s
 * behind the packet's, so a busy flow's value is written a few times a
 * second, not on every packet; timeouts are given that much slack, so a
 * flow never expires before its timeout.
 */
#define TF_FLOW_SEEN_GRAIN 8

/**
 * struct tf_flow - a tracked flow.
 * @seen:   the datapath's flow clock at its last packet, either way, to
 *          1/TF_FLOW_SEEN_GRAIN s: jiffies (ns of CLOCK_MONOTONIC_COARSE
 *          on a kernel whose HZ libbpf cannot read, bpf/lib/flow.bpf.h).
 *          Idle longer than the timeout of its protocol and @flags, the
 *          flow is expired and judged as new
 * @policy_ver: the session's policy version that last allowed it: a
 *           packet under another version re-judges it (policy.bpf.h)
 * @bind:   TLS: the SNI must be a name @raddr was learnt for (the flow was
 *          allowed by a learnt address, not by a CIDR rule)
 * @reason: TF_FLOW_TLS_DENIED: why (enum tf_reason)
 * @isn:    TLS: sequence number of the guest's first payload byte
 * @ch_end: TF_FLOW_TLS_VERIFY and after: wire bytes of the ClientHello's records
 * @armed:  TLS: the server's SYN-ACK to this connection's SYN was seen
 * @flags:  TF_FF_*
 * @srv_isn: TLS, once @armed: the server's initial sequence number
 * @tls_open_at: TLS, once the guest's records after its hello are followed
 *          up to its first application_data record: the stream offset
 *          just past that record's header (0 before); the server's
 *          acknowledgement of it opens the flow
 * @fin_end: TCP, with TF_FF_FIN1 or TF_FF_FIN2: the sequence number just
 *          past the FIN those flags name, which its acknowledgement carries
 */
struct tf_flow {
	__u64 seen;
	__u32 policy_ver;
	__u8 state;
	__u8 bind;
	__u16 reason;
	__u32 isn;
	__u32 ch_end;
	__u8 armed;
	__u8 flags;
	__u8 pad[2];
	__u32 srv_isn;
	/* TLS record following (bpf/lib/tls_hello.bpf.h, docs/tls.md). */
	__u32 tls_open_at;
	__u32 fin_end;
};
_Static_assert(sizeof(struct tf_flow) == 40, "tf_flow layout");

/* One map of the tf_map_fill iterator's walk: its id and entries (a sum of per-CPU counts). */
struct tf_fill_rec {
	__u32 id;
	__u32 pad;
	__s64 n;
};
_Static_assert(sizeof(struct tf_fill_rec) == 16, "tf_fill_rec layout");

/*
 * A session's flow counts, per CPU (tf_flowcnt): flows that took an entry
 * of their own in its flow table, and those the datapath removed (closed,
 * refused, revoked). The rest of opened - removed not in the table was
 * evicted (docs/operations.md, "Flow table").
 */
struct tf_flowcnt {
	__u64 opened;
	__u64 removed;
};
_Static_assert(sizeof(struct tf_flowcnt) == 16,
	       "tf_flowcnt layout: the daemon reads two words, opened first");

/*
 * Host names (host rules, DNS). A name is kept in "reversed form": lower
 * case, dotted, the bytes reversed, with a trailing dot, so that every
 * parent domain is a byte prefix ending at a label boundary:
 *   "www.GitHub.com" -> "moc.buhtig.www."
 * A name whose reversed form exceeds TF_DNS_NAME_MAX bytes is refused
 * (LPM keys hold at most 256 data bytes).
 */
#define TF_DNS_NAME_MAX	 248
#define TF_DNS_LEARN_MAX 16 /* address records learnt from one answer */

/**
 * struct tf_name_key - LPM key of tf_names: (sid, generation, reversed name).
 * prefixlen = TF_NAME_KEY_FIXED_BITS + 8 * length of the reversed form.
 */
struct tf_name_key {
	__u32 prefixlen;
	__u32 sid;
	__u32 ver;
	__u8 name[TF_DNS_NAME_MAX];
};
_Static_assert(sizeof(struct tf_name_key) == 260, "tf_name_key layout");
#define TF_NAME_KEY_FIXED_BITS 64

/**
 * struct tf_name_val - what host rules allow for a name. The daemon
 * flattens as for CIDRs: @exact applies when the query is exactly this
 * name, @sub to names strictly below it (wildcards, inherited downwards).
 * @len: length of this entry's reversed form, to tell the two apart.
 * @idx: this entry's index in the daemon's compiled policy (for learnt
 *       addresses, so a policy change can re-derive their permission).
 */
struct tf_name_val {
	struct tf_rule_val exact;
	struct tf_rule_val sub;
	__u16 len;
	__u16 idx;
};
_Static_assert(sizeof(struct tf_name_val) == 12, "tf_name_val layout");

/** struct tf_dnsq_key - an outstanding query, map tf_dnsq (LRU). */
struct tf_dnsq_key {
	__u32 sid;
	__be16 gport; /* guest's source port */
	__be16 id;    /* DNS transaction id */
};

/**
 * struct tf_dnsq - what the query asked and what its name is allowed.
 * @perm: exact or sub permission of the matching tf_names entry
 * @name_idx, @sub: which entry and which half of it (for re-derivation)
 */
struct tf_dnsq {
	__u64 created_ns;
	__u32 ver;
	struct tf_rule_val perm;
	__u16 name_idx;
	__u8 sub;
	__u8 pad;
	__u16 qtype;
	__u16 name_len;
	__u8 name[TF_DNS_NAME_MAX]; /* reversed form */
};

/** struct tf_learn_key - an address learnt for a session, map tf_learned. */
struct tf_learn_key {
	__u32 sid;
	__u8 family;
	__u8 pad[3];
	__u8 addr[16];
};
_Static_assert(sizeof(struct tf_learn_key) == 24, "tf_learn_key layout");

/**
 * struct tf_learned - permission for a learnt address until @expires_ns
 * (bpf_ktime_get_ns). @ver is the policy generation @perm's port class
 * belongs to; the daemon rewrites entries when it switches generations.
 * @name is the name the guest asked (not a CNAME target), reversed form.
 */
struct tf_learned {
	__u64 expires_ns;
	__u32 ver;
	struct tf_rule_val perm;
	__u16 name_idx;
	__u8 sub;
	__u8 pad;
	__u16 name_len;		    /* the asked name, for `session show' */
	__u8 name[TF_DNS_NAME_MAX]; /* reversed form */
	__u8 pad2[2];
};
_Static_assert(sizeof(struct tf_learned) == 272, "tf_learned layout");

/*
 * TLS (include/tapfence/tls.h, bpf/lib/tls.bpf.h). A ClientHello is
 * reassembled from the guest's first payload bytes into a per-session
 * buffer (map tf_tlsbuf, keyed by struct tf_flow_key): at most TF_TLS_BUF
 * wire bytes. Once whole, its handshake message is parsed where it lies
 * if it is exactly one record, else de-framed into a per-CPU scratch and
 * parsed there.
 */
#define TF_TLS_BUF   16384
#define TF_TLS_SLACK 256 /* room for a chunk copied at a masked offset */

/**
 * struct tf_tls_buf - one ClientHello being reassembled.
 * @created_ns: when the first segment arrived (old ones are swept when full)
 * @have:     wire bytes held, from the first payload byte
 * @rec_off:  wire offset of the next record header or record body byte to walk
 * @rec_left: body bytes of the current record not walked yet
 * @hs_len:   handshake bytes walked
 * @hs_need:  4 + the ClientHello's length, once known (0 before)
 * @hdr:      the handshake header's 4 bytes (they may span records)
 * @busy:     claimed by the run appending to it (compare-and-swap 0 -> 1):
 *            a segment of the flow judged on another CPU at the same time
 *            is held instead (a multi-queue tap)
 * @resends:  while the first hello is read: segments from its first byte
 *            that brought no new byte (the client's retransmission timer)
 * @h_start:  wire offset of the first record of the hello being read (or
 *            last judged); the walk fields above read it
 * @f_off, @f_left, @f_type, @f_rec: once following, the next record header
 *            or body byte to read, the current record's body bytes left,
 *            its content type and where its header is
 * @f_msg:    handshake bytes left of the current handshake message
 * @open_at:  @f_done: the offset just past the first application_data
 *            record's header, where following stopped
 * @following: the first hello was judged: the records after it are read
 * @h2:       following, and a later ClientHello is being read at @h_start
 * @f_ccs:    a ChangeCipherSpec record was read (TLS 1.2 encrypts the
 *            handshake records after it)
 * @f_done:   the first application_data record's header was read
 */
struct tf_tls_buf {
	__u64 created_ns;
	__u32 have;
	__u32 rec_off;
	__u32 rec_left;
	__u32 hs_len;
	__u32 hs_need;
	__u8 hdr[4];
	__u64 busy;
	__u32 resends;
	__u32 h_start;
	__u32 f_off;
	__u32 f_left;
	__u32 f_rec;
	__u32 f_msg;
	__u32 open_at;
	__u8 f_type;
	__u8 following;
	__u8 h2;
	__u8 f_ccs;
	__u8 f_done;
	__u8 pad[7];
	__u8 wire[TF_TLS_BUF + TF_TLS_SLACK];
};

/**
 * struct tf_bind_key - a (learnt address, asked name) pair, map tf_tlsbind
 * (per session, value: __u64 expiry in bpf_ktime_get_ns()). An address
 * shared by several names (a CDN) has one entry per name, so an SNI is
 * checked against every name the guest resolved to that address.
 */
struct tf_bind_key {
	__u8 family;
	__u8 pad[3];
	__u8 addr[16];
	__u8 name[TF_DNS_NAME_MAX]; /* reversed form, zero padded */
};
_Static_assert(sizeof(struct tf_bind_key) == 268, "tf_bind_key layout");

/* Directions, seen from the guest. */
#define TF_DIR_FROM_GUEST 0
#define TF_DIR_TO_GUEST	  1

/* tf_jump's entries: the programs a guard program hands a TF_SF_VIA_GUARD session to. */
#define TF_JUMP_FROM_GUEST 0
#define TF_JUMP_TO_GUEST   1

#define TF_VERDICT_DENY	 0
#define TF_VERDICT_ALLOW 1
#define TF_VERDICT_AUDIT 2 /* passed in audit mode; enforce mode would deny it for its reason */

/* Global counters (tf_stats, per-CPU array). */
enum tf_stat {
	TF_STAT_EVENTS,	     /* events written to the ringbuf */
	TF_STAT_EVENTS_LOST, /* events the full ringbuf refused */
	TF_STAT_MAX,
};

/**
 * struct tf_evbucket - per-session, per-CPU event rate limit (GCRA): the
 * theoretical arrival time of the next event, and what was suppressed.
 * @novel_tat_ns: the same for the second budget, spent only by events over
 *                the first whose (reason, remote end) has had no event for
 *                a second (struct tf_evseen_key), so a flood of one denial
 *                cannot hide another.
 */
struct tf_evbucket {
	__u64 tat_ns;
	__u32 suppressed;
	__u32 pad;
	__u64 novel_tat_ns;
};
_Static_assert(sizeof(struct tf_evbucket) == 24, "tf_evbucket layout");

/**
 * struct tf_evseen_key - what makes an event over the budget worth one
 * anyway (tf_evseen, an LRU hash -> the time of its last event): the
 * session, the reason and the remote end (destination from the guest,
 * source towards it).
 */
struct tf_evseen_key {
	__u32 sid;
	__u16 reason;
	__u8 dir;
	__u8 family;
	__u8 proto;
	__u8 pad;
	__be16 port;
	__u8 addr[16];
};
_Static_assert(sizeof(struct tf_evseen_key) == 28, "tf_evseen_key layout");

/**
 * struct tf_event - one boundary decision, through the tf_events ringbuf.
 * @ts_ns:     bpf_ktime_get_ns() (CLOCK_MONOTONIC); userspace makes it wall time
 * @sid:       session slot (0: no session)
 * @ifindex:   interface the packet was judged on, in namespace @netns
 * @policy_ver: policy version that decided it
 * @reason:    enum tf_reason; @verdict: TF_VERDICT_*; @dir: TF_DIR_*
 * @family:    TF_FAM_* or 0 for non-IP (then @ethertype says what it was)
 * @proto:     IP protocol; @sport/@dport: network order (ICMP echo: id and 0)
 * @name_len:  bytes of @name in use (DNS name or SNI; 0 if none)
 * @smac:      frame's source MAC
 * @suppressed: events of this session the rate limit dropped on this CPU
 *             since the previous event that got through there
 * @rejected:  the denied packet was answered (on_deny reject, bpf/lib/reject.bpf.h)
 * @netns:     cookie of @ifindex's network namespace (struct tf_sess_key)
 */
struct tf_event {
	__u64 ts_ns;
	__u32 sid;
	__u32 ifindex;
	__u32 policy_ver;
	__u16 reason;
	__u8 verdict;
	__u8 dir;
	__u8 family;
	__u8 proto;
	__be16 ethertype;
	__be16 sport;
	__be16 dport;
	__u8 saddr[16];
	__u8 daddr[16];
	__u8 smac[6];
	__u16 name_len;
	__u8 name[TF_NAME_MAX];
	__u32 suppressed;
	__u8 rejected;
	__u8 pad[3];
	__u64 netns;
};
_Static_assert(sizeof(struct tf_event) == 344, "tf_event layout");

#endif /* TAPFENCE_ABI_H */
