// SPDX-License-Identifier: GPL-2.0
/* MAC, IP and CIDR parsers and formatters: strict, so a typo is an error, not a wider rule. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tapfence/abi.h>
#include "addr.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int tf_parse_mac(const char *s, __u8 mac[6])
{
	int i;

	if (!s || strlen(s) != 17)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		int hi = hexval(s[3 * i]), lo = hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = (__u8)(hi << 4 | lo);
	}
	return 0;
}

/* inet_pton rejects spaces, trailing characters and short IPv4 forms. */
int tf_parse_ip(const char *s, struct tf_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, ip->addr) == 1) {
		ip->family = TF_FAM_IPV4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, ip->addr) == 1) {
		ip->family = TF_FAM_IPV6;
		return 0;
	}
	return -EINVAL;
}

static unsigned int fam_bits(__u8 family)
{
	return family == TF_FAM_IPV4 ? 32 : 128;
}

/* 1 if every bit of a from bit bits up to bit max is zero. */
static int host_bits_clear(const __u8 *a, unsigned int bits, unsigned int max)
{
	unsigned int i;

	for (i = bits; i < max; i++)
		if (a[i / 8] & (0x80 >> (i % 8)))
			return 0;
	return 1;
}

int tf_parse_cidr(const char *s, struct tf_cidr *c)
{
	char buf[INET6_ADDRSTRLEN];
	const char *slash, *len;
	unsigned int bits, max;
	size_t n;

	memset(c, 0, sizeof(*c));
	if (!s)
		return -EINVAL;
	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (tf_parse_ip(buf, &c->ip))
		return -EINVAL;
	max = fam_bits(c->ip.family);
	bits = max;
	if (slash) {
		/* 1-3 decimal digits: no sign, no space, no leading zero, nothing after. */
		len = slash + 1;
		n = strlen(len);
		if (n < 1 || n > 3 || strspn(len, "0123456789") != n || (len[0] == '0' && n > 1))
			goto invalid;
		bits = (unsigned int)atoi(len);
	}
	if (bits > max || !host_bits_clear(c->ip.addr, bits, max))
		goto invalid;
	c->prefixlen = (__u8)bits;
	return 0;
invalid:
	memset(c, 0, sizeof(*c));
	return -EINVAL;
}

const char *tf_fmt_mac(const __u8 mac[6], char *buf)
{
	snprintf(buf, TF_ADDRSTRLEN, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
		 mac[3], mac[4], mac[5]);
	return buf;
}

const char *tf_fmt_ip(__u8 family, const __u8 addr[16], char *buf)
{
	int af = family == TF_FAM_IPV4 ? AF_INET : family == TF_FAM_IPV6 ? AF_INET6 : AF_UNSPEC;

	if (af == AF_UNSPEC || !inet_ntop(af, addr, buf, TF_ADDRSTRLEN))
		snprintf(buf, TF_ADDRSTRLEN, "?");
	return buf;
}

const char *tf_fmt_cidr(const struct tf_cidr *c, char *buf)
{
	size_t n;

	tf_fmt_ip(c->ip.family, c->ip.addr, buf);
	n = strlen(buf);
	snprintf(buf + n, TF_ADDRSTRLEN - n, "/%u", c->prefixlen);
	return buf;
}

void tf_ip6_ll_from_mac(const __u8 mac[6], __u8 out[16])
{
	memset(out, 0, 16);
	out[0] = 0xfe;
	out[1] = 0x80;
	out[8] = mac[0] ^ 0x02; /* universal/local bit, RFC 4291 appendix A */
	out[9] = mac[1];
	out[10] = mac[2];
	out[11] = 0xff;
	out[12] = 0xfe;
	out[13] = mac[3];
	out[14] = mac[4];
	out[15] = mac[5];
}

int tf_cidr_contains(const struct tf_cidr *c, const struct tf_ip *a)
{
	unsigned int bytes = c->prefixlen / 8, rest = c->prefixlen % 8;

	if (c->ip.family != a->family || c->prefixlen > fam_bits(a->family))
		return 0;
	if (memcmp(c->ip.addr, a->addr, bytes))
		return 0;
	return !rest || !((c->ip.addr[bytes] ^ a->addr[bytes]) & (__u8)(0xff << (8 - rest)));
}
