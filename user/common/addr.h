/* SPDX-License-Identifier: GPL-2.0 */
/* Pure parsers and formatters for MACs, IP addresses and CIDRs: no I/O. */
#ifndef TF_ADDR_H
#define TF_ADDR_H

#include <stddef.h>
#include <linux/types.h>

/* An address as carried in the ABI: family TF_FAM_IPV4 (addr[0..3]) or TF_FAM_IPV6. */
struct tf_ip {
	__u8 family;
	__u8 addr[16];
};

struct tf_cidr {
	struct tf_ip ip;
	__u8 prefixlen;
};

/* "02:00:00:00:00:02" -> 6 bytes. 0 or -EINVAL. */
int tf_parse_mac(const char *s, __u8 mac[6]) __attribute__((warn_unused_result));
/* "10.0.0.1" or "2001:db8::1". 0 or -EINVAL. */
int tf_parse_ip(const char *s, struct tf_ip *ip) __attribute__((warn_unused_result));
/*
 * "198.51.100.0/24", "2001:db8::/32"; a bare address is a host prefix.
 * Host bits set below the prefix are an error (-EINVAL): `10.0.0.1/8' is
 * almost always a typo, and silently masking it would widen a rule.
 */
int tf_parse_cidr(const char *s, struct tf_cidr *c) __attribute__((warn_unused_result));

/* Formatters: buf must hold TF_ADDRSTRLEN; return buf. */
#define TF_ADDRSTRLEN 64
const char *tf_fmt_mac(const __u8 mac[6], char *buf);
const char *tf_fmt_ip(__u8 family, const __u8 addr[16], char *buf);
const char *tf_fmt_cidr(const struct tf_cidr *c, char *buf);

/* Link-local fe80::/64 address with the EUI-64 interface id of mac. */
void tf_ip6_ll_from_mac(const __u8 mac[6], __u8 out[16]);
/* 1 if a is inside c (same family). */
int tf_cidr_contains(const struct tf_cidr *c, const struct tf_ip *a);

#endif
