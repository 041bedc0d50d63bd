// SPDX-License-Identifier: GPL-2.0
/*
 * A link's index, driver and MAC, in the plugin's namespace or another one.
 * A socket belongs to the namespace it was created in, so the plugin enters
 * the sandbox's namespace only for socket(), and is back in its own before
 * any ioctl. The plugin is single-threaded: setns() moves the whole process.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "cni.h"

/* An AF_INET datagram socket in the namespace at netns (NULL: ours). */
static int socket_in(const char *netns)
{
	int self = -1, target = -1, fd = -1, err = 0;

	if (!netns) {
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	target = open(netns, O_RDONLY | O_CLOEXEC);
	if (target < 0) {
		err = -errno;
		goto cleanup;
	}
	if (setns(target, CLONE_NEWNET)) {
		err = -errno;
		goto cleanup;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		err = -errno;
	if (setns(self, CLONE_NEWNET)) {
		/* Stranded in the sandbox's namespace: nothing after this may run. */
		_exit(1);
	}
cleanup:
	if (target >= 0)
		close(target);
	close(self);
	return err ? err : fd;
}

int cni_link_get(const char *netns, const char *ifname, struct cni_link *l)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = {};
	int fd, err = 0;

	memset(l, 0, sizeof(*l));
	if (strlen(ifname) >= IF_NAMESIZE)
		return -ENODEV;
	fd = socket_in(netns);
	if (fd < 0)
		return fd;
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr)) {
		err = errno == ENODEV ? -ENODEV : -errno;
		goto cleanup;
	}
	l->ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		err = -errno;
		goto cleanup;
	}
	memcpy(l->mac, ifr.ifr_hwaddr.sa_data, 6);
	/* A device without ethtool support has no driver name: not a tap, not a veth. */
	ifr.ifr_data = (void *)&info;
	if (!ioctl(fd, SIOCETHTOOL, &ifr)) {
		memcpy(l->driver, info.driver, sizeof(l->driver) - 1);
		memcpy(l->bus, info.bus_info, sizeof(l->bus) - 1);
	}
cleanup:
	close(fd);
	return err;
}
