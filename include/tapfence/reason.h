/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Verdict reasons: one append-only list. Each row carries its number, so
 * a row inserted anywhere cannot renumber the ABI (counter slots, event
 * reason, the feed); a retired reason is renamed UNUSEDn and keeps its
 * number; a number is never reused. The X-macro generates the enum (BPF
 * and userspace) and the userspace string table, so the two cannot drift
 * apart. Whether a reason allows is the verdict that comes with it, not a
 * property of the reason: the datapath returns its verdict beside it.
 *
 * Columns: number, enum suffix, feed name.
 */
#ifndef TAPFENCE_REASON_H
#define TAPFENCE_REASON_H

/* clang-format off: a table, aligned by hand */
#define TF_REASONS(X)                                                                             \
	X(0, UNKNOWN, "unknown")                                                                  \
	X(1, ALLOW_RULE, "allow_rule")		   /* new flow, CIDR rule */                      \
	X(2, ALLOW_FLOW, "allow_flow")		   /* tracked flow */                             \
	X(3, ALLOW_DNS, "allow_dns")		   /* to own resolver */                          \
	X(4, ALLOW_ARP, "allow_arp")		   /* guest<->gateway */                          \
	X(5, ALLOW_NDP, "allow_ndp")		   /* guest<->gateway */                          \
	X(6, ALLOW_ICMP_ERROR, "allow_icmp_error") /* about a flow */                             \
	X(7, NO_SESSION, "no_session")                                                            \
	X(8, MALFORMED, "malformed") /* truncated/invalid */                                      \
	X(9, L2_SRC_MAC, "l2_src_mac")                                                            \
	X(10, L2_DST_MAC, "l2_dst_mac")                                                           \
	X(11, L2_ETHERTYPE, "l2_ethertype")                                                       \
	X(12, L2_VLAN, "l2_vlan")                                                                 \
	X(13, ARP, "arp") /* not guest<->gw */                                                    \
	X(14, NDP, "ndp") /* not guest<->gw */                                                    \
	X(15, SPOOFED_SRC, "spoofed_src")                                                         \
	X(16, FLOOR_THIS_NET, "floor_this_net") /* 0/8, ::/128 */                                 \
	X(17, FLOOR_PRIVATE, "floor_private")	/* RFC 1918 */                                    \
	X(18, FLOOR_CGNAT, "floor_cgnat")	/* 100.64/10 */                                   \
	X(19, FLOOR_LOOPBACK, "floor_loopback")                                                   \
	X(20, FLOOR_METADATA, "floor_metadata") /* 169.254.169.254 */                             \
	X(21, FLOOR_LINK_LOCAL, "floor_link_local")                                               \
	X(22, FLOOR_MULTICAST, "floor_multicast")                                                 \
	X(23, FLOOR_RESERVED, "floor_reserved") /* 240/4, bcast */                                \
	X(24, FLOOR_V4MAPPED, "floor_v4mapped") /* ::ffff:0:0/96 */                               \
	X(25, FLOOR_NAT64, "floor_nat64")	/* 64:ff9b::/96 */                                \
	X(26, FLOOR_ULA, "floor_ula")		/* fc00::/7 */                                    \
	X(27, FLOOR_OPERATOR, "floor_operator") /* operator range */                              \
	X(28, OTHER_SESSION, "other_session")                                                     \
	X(29, NO_RULE, "no_rule")		    /* no rule covers dst */                      \
	X(30, PORT_NOT_ALLOWED, "port_not_allowed") /* dst ok, proto/port not */                  \
	X(31, FRAGMENT, "fragment")                                                               \
	X(32, IP_OPTIONS, "ip_options")                                                           \
	X(33, IPV6_EXTHDR, "ipv6_exthdr")                                                         \
	X(34, L4_PROTO, "l4_proto")                                                               \
	X(35, ICMP_TYPE, "icmp_type")                                                             \
	X(36, TCP_NO_FLOW, "tcp_no_flow") /* non-SYN, no flow */                                  \
	X(37, UNSOLICITED, "unsolicited") /* to guest, no flow */                                 \
	X(38, DST_NOT_GUEST, "dst_not_guest")                                                     \
	X(39, FLOW_TABLE_FULL, "flow_table_full")                                                 \
	X(40, DNS_NOT_RESOLVER, "dns_not_resolver")                                               \
	X(41, DNS_TCP, "dns_tcp") /* TCP/53: not snooped */                                       \
	X(42, DNS_MALFORMED, "dns_malformed")                                                     \
	X(43, DNS_QTYPE, "dns_qtype")		    /* not A/AAAA/CNAME */                        \
	X(44, DNS_NAME_DENIED, "dns_name_denied")   /* no host rule */                            \
	X(45, DNS_UNMATCHED, "dns_unmatched")	    /* answer w/o query */                        \
	X(46, DNS_TRUNCATED, "dns_truncated")	    /* TC answer */                               \
	X(47, DNS_REBIND, "dns_rebind")		    /* answer in floor */                         \
	X(48, DNS_LEARN_LIMIT, "dns_learn_limit")   /* records not learnt */                      \
	X(49, ALLOW_DNS_ANSWER, "allow_dns_answer") /* matched answer */                          \
	X(50, ALLOW_LEARNED, "allow_learned")	    /* new flow, DNS-learnt */                    \
	X(51, DNS_QUERY_TABLE, "dns_query_table")   /* cannot record query */                     \
	X(52, ALLOW_TLS, "allow_tls")		    /* ClientHello SNI allowed */                 \
	X(53, TLS_PENDING, "tls_pending")	    /* held until the hello is judged */          \
	X(54, TLS_NO_SNI, "tls_no_sni")                                                           \
	X(55, TLS_SNI_DENIED, "tls_sni_denied")	    /* no host rule allows the SNI */             \
	X(56, TLS_SNI_MISMATCH, "tls_sni_mismatch") /* dst not learnt for the SNI */              \
	X(57, TLS_SNI_IP, "tls_sni_ip")		    /* an IP literal as SNI */                    \
	X(58, TLS_ECH, "tls_ech")		    /* encrypted_client_hello */                  \
	X(59, TLS_NOT_TLS, "tls_not_tls")	    /* first payload not a TLS record */          \
	X(60, TLS_SSLV2, "tls_sslv2")		    /* SSLv2-framed hello */                      \
	X(61, TLS_MALFORMED, "tls_malformed")                                                     \
	X(62, TLS_FASTOPEN, "tls_fastopen")	/* data in a SYN */                               \
	X(63, TLS_REASSEMBLY, "tls_reassembly") /* out of order, or resent bytes differ */        \
	X(64, TLS_TOO_BIG, "tls_too_big")	/* hello over TF_TLS_BUF */                       \
	X(65, TLS_TABLE_FULL, "tls_table_full") /* no reassembly buffer */                        \
	X(66, TLS_UDP, "tls_udp")		/* UDP (QUIC) to a TLS port */                    \
	X(67, TLS_MPTCP, "tls_mptcp")	/* MPTCP (or bad options) in a SYN to a TLS port */       \
	X(68, FLOOR_HOST, "floor_host") /* an address of the host itself */                       \
	X(69, FLOOR_GATEWAY,                                                                      \
	  "floor_gateway")	  /* the session's gateway (not DNS to its resolver) */           \
	X(70, REVOKED, "revoked") /* a flow the policy in force no longer allows */               \
	X(71, ICMP_ERROR_SIZE, "icmp_error_size") /* an ICMP error quoting more than it needs */  \
	X(72, DNS_GSO, "dns_gso")   /* a segmentation-offload write to the resolver */            \
	X(73, UNUSED73, "unused73") /* reserved for OPT-record checks, never used: docs/dns.md */ \
	X(74, TLS_SECOND_HELLO,                                                                   \
	  "tls_second_hello") /* a later ClientHello (or unreadable record) on a TLS flow */      \
	X(75, TLS_FRAGMENTED, "tls_fragmented")	  /* a hello in more segments than are read */    \
	X(76, GUARD_UNCLAIMED, "guard_unclaimed") /* a guarded device no session claims */   \
	X(77, DENY_RULE, "deny_rule")		  /* a deny rule of the session covers it */
/* clang-format on */

#define TF_REASON_ENUM_(num, name, str) TF_REASON_##name = num,
enum tf_reason { TF_REASONS(TF_REASON_ENUM_) };
#undef TF_REASON_ENUM_

/* The number of rows: with the checks below, reasons are exactly 0 .. TF_REASON_MAX - 1. */
#define TF_REASON_COUNT_(num, name, str) +1
enum { TF_REASON_MAX = 0 TF_REASONS(TF_REASON_COUNT_) };
#undef TF_REASON_COUNT_

/* Dense: every number below the row count ... */
#define TF_REASON_BELOW_(num, name, str) \
	_Static_assert(num < TF_REASON_MAX, "reason " #name ": number past the end of the table");
TF_REASONS(TF_REASON_BELOW_)
#undef TF_REASON_BELOW_

/* ... and none twice: a number used twice redefines its TF_REASON_NUMBER_n. */
#define TF_REASON_ONCE_(num, name, str) TF_REASON_NUMBER_##num,
enum tf_reason_numbers_ { TF_REASONS(TF_REASON_ONCE_) };
#undef TF_REASON_ONCE_

/*
 * Per-session counter slots: reasons first, then a few non-reason
 * counters at the top, which the reasons must stay below.
 */
#define TF_CNT_SLOTS		 128
#define TF_CNT_EVENTS_LOST	 127
#define TF_CNT_EVENTS_SUPPRESSED 126
#define TF_CNT_AUDITED		 125 /* packets passed in audit mode (also under their reason) */
#define TF_CNT_REJECTED		 124 /* denied packets answered (on_deny reject) */
#define TF_CNT_REJECT_LIMITED	 123 /* ... and left unanswered: over the rejection rate */
/* The session's struct tf_flowcnt, which tf_dp_counters() reports in these two slots. */
#define TF_CNT_FLOWS_OPENED	 122 /* flows that took an entry of their own in the flow table */
#define TF_CNT_FLOWS_REMOVED	 121 /* ... and that the datapath removed: closed, refused, revoked */
_Static_assert(TF_REASON_MAX <= TF_CNT_FLOWS_REMOVED,
	       "reasons overlap the counter slots above them");

#endif /* TAPFENCE_REASON_H */
