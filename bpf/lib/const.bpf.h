/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bottom layer: the kernel's types (vmlinux.h), libbpf's helpers, and
 * the uapi #defines and header sizes vmlinux.h (types only) cannot carry.
 * Every other header of bpf/lib builds on this one.
 */
#ifndef TF_CONST_BPF_H
#define TF_CONST_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_P_IP      0x0800
#define ETH_P_ARP     0x0806
#define ETH_P_IPV6    0x86DD
#define ETH_P_8021Q   0x8100
#define ETH_P_8021AD  0x88A8
#define ETH_ALEN      6
#define ARPHRD_ETHER  1
#define ARPOP_REQUEST 1
#define ARPOP_REPLY   2
#define IP_MF	      0x2000
#define IP_OFFSET     0x1FFF
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT   2
#define ENOENT	      2 /* map updates' errors (uapi errno-base.h) */
#define EEXIST	      17
/* The flags byte of the TCP header (RFC 9293 3.1), past the data offset's 4 bits and 4 reserved. */
#define TCP_FLAGS_OFF 13
#define TCP_FLAG_FIN  0x01
#define TCP_FLAG_SYN  0x02
#define TCP_FLAG_RST  0x04
#define TCP_FLAG_ACK  0x10
#define TCP_FLAG_URG  0x20

/* Header sizes: IPv4 options and IPv6 extension headers are refused, so these are exact. */
#define ETH_HLEN      14
#define IP4_HLEN      20
#define IP6_HLEN      40
#define TCP_HLEN_MIN  20
#define UDP_HLEN      8
#define ICMP_HLEN     8 /* type, code, checksum, then 4 bytes (echo id/seq, NDP flags) */
#define ICMP_QUOTE_L4 8 /* RFC 792: an error quotes the IP header and 8 bytes after it */

/* IPv6 next-header values (uapi #defines, not in vmlinux.h). */
#define IPPROTO_HOPOPTS	 0
#define IPPROTO_ROUTING	 43
#define IPPROTO_FRAGMENT 44
#define IPPROTO_ICMPV6	 58
#define IPPROTO_DSTOPTS	 60
#define IPPROTO_MH	 135

#define ICMP_ECHOREPLY		      0
#define ICMP_DEST_UNREACH	      3
#define ICMP_ECHO		      8
#define ICMP_TIME_EXCEEDED	      11
#define ICMP_PARAMETERPROB	      12
#define ICMPV6_DEST_UNREACH	      1
#define ICMPV6_PKT_TOOBIG	      2
#define ICMPV6_TIME_EXCEED	      3
#define ICMPV6_PARAMPROB	      4
#define ICMPV6_ECHO_REQUEST	      128
#define ICMPV6_ECHO_REPLY	      129
#define NDISC_ROUTER_SOLICITATION     133
#define NDISC_ROUTER_ADVERTISEMENT    134
#define NDISC_NEIGHBOUR_SOLICITATION  135
#define NDISC_NEIGHBOUR_ADVERTISEMENT 136

/* RFC 4861 7.1.1, 7.1.2: NDP that did not come from the link itself is invalid. */
#define NDP_HOP_LIMIT 255

#define TCPOPT_EOL   0
#define TCPOPT_NOP   1
#define TCPOPT_MPTCP 30 /* RFC 8684 */

#define DNS_PORT   53
#define DOT_PORT   853	/* RFC 7858 (TCP), RFC 9250 (QUIC) */
#define MDNS_PORT  5353 /* RFC 6762 */
#define LLMNR_PORT 5355 /* RFC 4795 */

#define NSEC_PER_SEC 1000000000ULL

#endif /* TF_CONST_BPF_H */
