/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * How a permission (struct tf_rule_val: a CIDR rule's, a host rule's or a
 * learnt address's) is evaluated for a protocol and port, written once for
 * the datapath (bpf/lib/policy.bpf.h, tls_hello.bpf.h) and userspace
 * (user/daemon/policy.c), as dns.h and tls.h are.
 *
 * A port-limited TCP or UDP permission names a port class (v->cls) whose
 * ports are 256-bit chunks (struct tf_port_bits, keyed by port >> 8): in
 * tf_ports for the datapath, in the compiled policy's chunks for userspace.
 * The evaluation says when the chunk decides (TF_PERM_PORT); each side
 * finds the chunk its own way and reads the port with tf_port_bits_has().
 *
 * The includer provides IPPROTO_* (netinet/in.h; bpf/lib/const.bpf.h).
 */
#ifndef TAPFENCE_PERM_H
#define TAPFENCE_PERM_H

#include "abi.h"

#define TF_PERM_INLINE static inline __attribute__((always_inline))

enum tf_perm {
	TF_PERM_DENY,
	TF_PERM_ALLOW,
	TF_PERM_PORT, /* the port's bit in class v->cls decides */
};

/*
 * The TF_PB_* bit protocol proto of family is allowed by: only the
 * family's own ICMP is "icmp"; ICMPv6 inside IPv4 is just another protocol.
 */
TF_PERM_INLINE __u8 tf_perm_bit(__u8 proto, __u8 family)
{
	switch (proto) {
	case IPPROTO_TCP:
		return TF_PB_TCP;
	case IPPROTO_UDP:
		return TF_PB_UDP;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if ((proto == IPPROTO_ICMP) == (family == TF_FAM_IPV4))
			return TF_PB_ICMP;
		return TF_PB_OTHER;
	}
	return TF_PB_OTHER;
}

/*
 * What permission v says of bit (tf_perm_bit(), or TF_PB_TLS): ICMP and
 * other protocols have no ports; TCP, UDP and TLS are allowed on every
 * port, on the ports of a class, or not at all.
 */
TF_PERM_INLINE enum tf_perm tf_perm_eval(const struct tf_rule_val *v, __u8 bit)
{
	if (bit & (TF_PB_ICMP | TF_PB_OTHER))
		return (v->protos & bit) ? TF_PERM_ALLOW : TF_PERM_DENY;
	if (v->all_ports & bit)
		return TF_PERM_ALLOW;
	if (!(v->protos & bit) || !v->cls)
		return TF_PERM_DENY;
	return TF_PERM_PORT;
}

/*
 * Whether v makes proto's port a TLS port (ALLOW: every port; PORT: the
 * class's TF_PORTS_TLS chunk decides). A TCP connection there must show an
 * allowed SNI; UDP there (QUIC) gets no SNI check, so it is refused unless
 * a CIDR rule allows it.
 */
TF_PERM_INLINE enum tf_perm tf_perm_tls(const struct tf_rule_val *v, __u8 proto)
{
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return TF_PERM_DENY;
	return tf_perm_eval(v, TF_PB_TLS);
}

/* 1 if port (host order) is set in b, the chunk of its class that holds port >> 8. */
TF_PERM_INLINE int tf_port_bits_has(const struct tf_port_bits *b, __u16 port)
{
	port &= 0xff;
	return (b->w[(port >> 6) & 3] >> (port & 63)) & 1;
}

#endif /* TAPFENCE_PERM_H */
