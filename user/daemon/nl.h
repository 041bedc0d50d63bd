/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading the kernel's netlink replies, the same way wherever the daemon
 * asks (netns.c, hostaddr.c, guard_nft.c): a reply cut short, or one not
 * from the kernel, is an error, never read as what it claims.
 */
#ifndef TF_DAEMON_NL_H
#define TF_DAEMON_NL_H

#include <errno.h>
#include <sys/socket.h>
#include <linux/netlink.h>

/* The error an NLMSG_ERROR message carries (0: an ack), or -EPROTO if it is cut short. */
static inline int tf_nl_error(const struct nlmsghdr *h)
{
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return -EPROTO;
	return ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
}

/*
 * One datagram on sock: its length; -EMSGSIZE if it did not fit in size
 * bytes (never read part of it as all of it); -EPROTO if it is not the
 * kernel's (port id 0); else -errno.
 */
static inline ssize_t tf_nl_recv(int sock, void *buf, size_t size)
{
	struct sockaddr_nl from;
	socklen_t fromlen = sizeof(from);
	ssize_t n = recvfrom(sock, buf, size, MSG_TRUNC, (struct sockaddr *)&from, &fromlen);

	if (n < 0)
		return -errno;
	if (n > (ssize_t)size)
		return -EMSGSIZE;
	if (fromlen != sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0)
		return -EPROTO;
	return n;
}

#endif /* TF_DAEMON_NL_H */
