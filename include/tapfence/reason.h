/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Verdict reasons: one append-only list. A retired reason is renamed
 * UNUSEDn and keeps its number; a number is never reused. The X-macro
 * generates the enum (BPF and userspace) and the userspace string table,
 * so the two cannot drift apart.
 *
 * Columns: enum suffix, feed name, verdict (ALLOW or DENY).
 */
#ifndef TAPFENCE_REASON_H
#define TAPFENCE_REASON_H

#define TF_REASONS(X)                                                          \
	X(UNKNOWN,          "unknown",          DENY)  /*  0 */                \
	X(ALLOW_RULE,       "allow_rule",       ALLOW) /*  1 new flow, CIDR rule */ \
	X(ALLOW_FLOW,       "allow_flow",       ALLOW) /*  2 tracked flow */     \
	X(ALLOW_DNS,        "allow_dns",        ALLOW) /*  3 to own resolver */  \
	X(ALLOW_ARP,        "allow_arp",        ALLOW) /*  4 guest<->gateway */  \
	X(ALLOW_NDP,        "allow_ndp",        ALLOW) /*  5 guest<->gateway */  \
	X(ALLOW_ICMP_ERROR, "allow_icmp_error", ALLOW) /*  6 about a flow */     \
	X(NO_SESSION,       "no_session",       DENY)  /*  7 */                  \
	X(MALFORMED,        "malformed",        DENY)  /*  8 truncated/invalid */ \
	X(L2_SRC_MAC,       "l2_src_mac",       DENY)  /*  9 */                  \
	X(L2_DST_MAC,       "l2_dst_mac",       DENY)  /* 10 */                  \
	X(L2_ETHERTYPE,     "l2_ethertype",     DENY)  /* 11 */                  \
	X(L2_VLAN,          "l2_vlan",          DENY)  /* 12 */                  \
	X(ARP,              "arp",              DENY)  /* 13 not guest<->gw */  \
	X(NDP,              "ndp",              DENY)  /* 14 not guest<->gw */  \
	X(SPOOFED_SRC,      "spoofed_src",      DENY)  /* 15 */                  \
	X(FLOOR_THIS_NET,   "floor_this_net",   DENY)  /* 16 0/8, ::/128 */      \
	X(FLOOR_PRIVATE,    "floor_private",    DENY)  /* 17 RFC 1918 */         \
	X(FLOOR_CGNAT,      "floor_cgnat",      DENY)  /* 18 100.64/10 */        \
	X(FLOOR_LOOPBACK,   "floor_loopback",   DENY)  /* 19 */                  \
	X(FLOOR_METADATA,   "floor_metadata",   DENY)  /* 20 169.254.169.254 */  \
	X(FLOOR_LINK_LOCAL, "floor_link_local", DENY)  /* 21 */                  \
	X(FLOOR_MULTICAST,  "floor_multicast",  DENY)  /* 22 */                  \
	X(FLOOR_RESERVED,   "floor_reserved",   DENY)  /* 23 240/4, bcast */     \
	X(FLOOR_V4MAPPED,   "floor_v4mapped",   DENY)  /* 24 ::ffff:0:0/96 */    \
	X(FLOOR_NAT64,      "floor_nat64",      DENY)  /* 25 64:ff9b::/96 */     \
	X(FLOOR_ULA,        "floor_ula",        DENY)  /* 26 fc00::/7 */         \
	X(FLOOR_OPERATOR,   "floor_operator",   DENY)  /* 27 operator range */  \
	X(OTHER_SESSION,    "other_session",    DENY)  /* 28 */                  \
	X(NO_RULE,          "no_rule",          DENY)  /* 29 no rule covers dst */ \
	X(PORT_NOT_ALLOWED, "port_not_allowed", DENY)  /* 30 dst ok, proto/port not */ \
	X(FRAGMENT,         "fragment",         DENY)  /* 31 */                  \
	X(IP_OPTIONS,       "ip_options",       DENY)  /* 32 */                  \
	X(IPV6_EXTHDR,      "ipv6_exthdr",      DENY)  /* 33 */                  \
	X(L4_PROTO,         "l4_proto",         DENY)  /* 34 */                  \
	X(ICMP_TYPE,        "icmp_type",        DENY)  /* 35 */                  \
	X(TCP_NO_FLOW,      "tcp_no_flow",      DENY)  /* 36 non-SYN, no flow */ \
	X(UNSOLICITED,      "unsolicited",      DENY)  /* 37 to guest, no flow */ \
	X(DST_NOT_GUEST,    "dst_not_guest",    DENY)  /* 38 */                  \
	X(FLOW_TABLE_FULL,  "flow_table_full",  DENY)  /* 39 */                  \
	X(DNS_NOT_RESOLVER, "dns_not_resolver", DENY)  /* 40 */                  \
	X(DNS_TCP,          "dns_tcp",          DENY)  /* 41 TCP/53: not snooped */ \
	X(DNS_MALFORMED,    "dns_malformed",    DENY)  /* 42 */                  \
	X(DNS_QTYPE,        "dns_qtype",        DENY)  /* 43 not A/AAAA/CNAME */ \
	X(DNS_NAME_DENIED,  "dns_name_denied",  DENY)  /* 44 no host rule */     \
	X(DNS_UNMATCHED,    "dns_unmatched",    DENY)  /* 45 answer w/o query */ \
	X(DNS_TRUNCATED,    "dns_truncated",    DENY)  /* 46 TC answer */        \
	X(DNS_REBIND,       "dns_rebind",       DENY)  /* 47 answer in floor */  \
	X(DNS_LEARN_LIMIT,  "dns_learn_limit",  DENY)  /* 48 records not learnt */ \
	X(ALLOW_DNS_ANSWER, "allow_dns_answer", ALLOW) /* 49 matched answer */   \
	X(ALLOW_LEARNED,    "allow_learned",    ALLOW) /* 50 new flow, DNS-learnt */ \
	X(DNS_QUERY_TABLE,  "dns_query_table",  DENY)  /* 51 cannot record query */ \
	X(ALLOW_TLS,        "allow_tls",        ALLOW) /* 52 ClientHello SNI allowed */ \
	X(TLS_PENDING,      "tls_pending",      DENY)  /* 53 held until the hello is judged */ \
	X(TLS_NO_SNI,       "tls_no_sni",       DENY)  /* 54 */                  \
	X(TLS_SNI_DENIED,   "tls_sni_denied",   DENY)  /* 55 no host rule allows the SNI */ \
	X(TLS_SNI_MISMATCH, "tls_sni_mismatch", DENY)  /* 56 dst not learnt for the SNI */ \
	X(TLS_SNI_IP,       "tls_sni_ip",       DENY)  /* 57 an IP literal as SNI */ \
	X(TLS_ECH,          "tls_ech",          DENY)  /* 58 encrypted_client_hello */ \
	X(TLS_NOT_TLS,      "tls_not_tls",      DENY)  /* 59 first payload not a TLS record */ \
	X(TLS_SSLV2,        "tls_sslv2",        DENY)  /* 60 SSLv2-framed hello */ \
	X(TLS_MALFORMED,    "tls_malformed",    DENY)  /* 61 */                  \
	X(TLS_FASTOPEN,     "tls_fastopen",     DENY)  /* 62 data in a SYN */    \
	X(TLS_REASSEMBLY,   "tls_reassembly",   DENY)  /* 63 out of order, or resent bytes differ */ \
	X(TLS_TOO_BIG,      "tls_too_big",      DENY)  /* 64 hello over TF_TLS_BUF */ \
	X(TLS_TABLE_FULL,   "tls_table_full",   DENY)  /* 65 no reassembly buffer */ \
	X(TLS_UDP,          "tls_udp",          DENY)  /* 66 UDP (QUIC) to a TLS port */ \
	X(TLS_MPTCP,        "tls_mptcp",        DENY)  /* 67 MPTCP (or bad options) in a SYN to a TLS port */ \
	X(FLOOR_HOST,       "floor_host",       DENY)  /* 68 an address of the host itself */ \
	X(FLOOR_GATEWAY,    "floor_gateway",    DENY)  /* 69 the session's gateway (not DNS to its resolver) */ \
	X(REVOKED,          "revoked",          DENY)  /* 70 a flow the policy in force no longer allows */ \
	X(ICMP_ERROR_SIZE,  "icmp_error_size",  DENY)  /* 71 an ICMP error quoting more than it needs */ \
	X(DNS_GSO,          "dns_gso",          DENY)  /* 72 a segmentation-offload write to the resolver */ \
	X(UNUSED73,         "unused73",         DENY)  /* 73 reserved for OPT-record checks, never used: docs/dns.md */ \
	X(TLS_SECOND_HELLO, "tls_second_hello", DENY)  /* 74 a later ClientHello (or unreadable record) on a TLS flow */ \
	X(TLS_FRAGMENTED,   "tls_fragmented",   DENY)  /* 75 a hello in more segments than are read */

#define TF_REASON_ENUM_(name, str, verdict) TF_REASON_##name,
enum tf_reason {
	TF_REASONS(TF_REASON_ENUM_)
	TF_REASON_MAX
};
#undef TF_REASON_ENUM_

/*
 * Per-session counter slots: reasons first, then a few non-reason
 * counters at the top. TF_REASON_MAX must stay below TF_CNT_EVENTS_LOST.
 */
#define TF_CNT_SLOTS             128
#define TF_CNT_EVENTS_LOST       127
#define TF_CNT_EVENTS_SUPPRESSED 126

#endif /* TAPFENCE_REASON_H */
