// SPDX-License-Identifier: GPL-2.0
/*
 * 64-byte packet rate through a tap device, written the way a VMM without
 * vhost-net writes its guest's frames (QEMU's tap backend, Firecracker's):
 * the tap opened non-blocking with a 12-byte virtio-net header
 * (IFF_VNET_HDR, TUNSETVNETHDRSZ 12), one writev() of header and frame per
 * frame. Within that write() the kernel runs the tap's XDP program, its TC
 * ingress, the routing and the forward to the next device, on the writer's
 * CPU, so the writer's rate is the host's per-packet cost.
 *
 * A frame is 64 bytes (Ethernet, IPv4, UDP, 22 bytes of payload, no
 * checksum offload). Frames cycle through FLOWS flows: flow i is source port
 * 20000 + i % 4096 to BASE + 1 + i / 4096 (so at most 254 * 4096), port
 * DPORT. One untimed pass writes each flow once (each a new flow), then
 * frames are written for SECONDS. Counted as delivered: the growth of the
 * rx_packets of SINKDEV in /proc/SINKPID/net/dev (a process in the sink's
 * namespace), read before and after the timed part. CPU per packet: the
 * writer's time on a CPU over the timed part (/proc/self/schedstat: the
 * softirq work done in its context included, as this kernel does not
 * account interrupt time apart) per frame delivered.
 *
 * Usage: tappps TAP SRC_MAC DST_MAC SRC_IP BASE DPORT FLOWS SECONDS SINKPID SINKDEV
 * Prints one JSON object; exits non-zero if a write failed or fewer than
 * half the frames reached the sink (a path that measures nothing).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#define FRAME_LEN   64
#define PORTS	    4096
#define FLOWS_MAX   (254 * PORTS)
#define CLOCK_EVERY 256 /* frames written between two clock reads */

struct frame {
	struct ether_header eth;
	struct iphdr ip;
	struct udphdr udp;
	uint8_t payload[FRAME_LEN - sizeof(struct ether_header) - sizeof(struct iphdr) -
			sizeof(struct udphdr)];
} __attribute__((packed));

_Static_assert(sizeof(struct frame) == FRAME_LEN, "a frame is 64 bytes");

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* This thread's time on a CPU, in ns, or 0. */
static unsigned long long cpu_ns(void)
{
	unsigned long long ns = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

/* rx_packets of device dev in /proc/PID/net/dev, or -1. */
static long long rx_packets(const char *path, const char *dev)
{
	char line[512], *p;
	long long bytes, packets = -1;
	size_t len = strlen(dev);
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		for (p = line; *p == ' '; p++)
			;
		if (!strncmp(p, dev, len) && p[len] == ':' &&
		    sscanf(p + len + 1, "%lld %lld", &bytes, &packets) == 2)
			break;
		packets = -1;
	}
	fclose(f);
	return packets;
}

static int tap_open(const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	int fd, hdr = sizeof(struct virtio_net_hdr_v1);

	if (strlen(name) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	strcpy(ifr.ifr_name, name);
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, TUNSETIFF, &ifr) || ioctl(fd, TUNSETVNETHDRSZ, &hdr)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static uint16_t ip_csum(const void *hdr)
{
	const uint16_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i < sizeof(struct iphdr) / 2; i++)
		sum += p[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Make f flow i's frame. */
static void frame_set(struct frame *f, uint32_t base, unsigned int i)
{
	f->ip.daddr = htonl(base + 1 + i / PORTS);
	f->ip.check = 0;
	f->ip.check = ip_csum(&f->ip);
	f->udp.source = htons(20000 + i % PORTS);
}

static int parse_mac(const char *s, uint8_t *mac)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		      &mac[4], &mac[5]) == 6 ?
		       0 :
		       -EINVAL;
}

int main(int argc, char **argv)
{
	struct virtio_net_hdr_v1 vh = { 0 };
	struct frame f = { 0 };
	struct iovec iov[2] = { { &vh, sizeof(vh) }, { &f, sizeof(f) } };
	struct in_addr src, base;
	unsigned long long c0, c1;
	unsigned long long sent = 0, errors = 0;
	unsigned int flows, secs, dport, i;
	long long rx0, rx1, delivered;
	int fd, first_errno = 0;
	char sink[64];
	double t0, t1;

	if (argc != 11) {
		fprintf(stderr, "usage: tappps TAP SRC_MAC DST_MAC SRC_IP BASE DPORT FLOWS SECONDS "
				"SINKPID SINKDEV\n");
		return 2;
	}
	dport = (unsigned int)strtoul(argv[6], NULL, 10);
	flows = (unsigned int)strtoul(argv[7], NULL, 10);
	secs = (unsigned int)strtoul(argv[8], NULL, 10);
	if (parse_mac(argv[2], f.eth.ether_shost) || parse_mac(argv[3], f.eth.ether_dhost) ||
	    !inet_aton(argv[4], &src) || !inet_aton(argv[5], &base) || !dport || dport > 65535 ||
	    !flows || flows > FLOWS_MAX || !secs) {
		fprintf(stderr, "tappps: bad argument (flows at most %u)\n", FLOWS_MAX);
		return 2;
	}
	snprintf(sink, sizeof(sink), "/proc/%s/net/dev", argv[9]);
	if (rx_packets(sink, argv[10]) < 0) {
		fprintf(stderr, "tappps: no device %s in %s\n", argv[10], sink);
		return 1;
	}
	fd = tap_open(argv[1]);
	if (fd < 0) {
		fprintf(stderr, "tappps: tap %s: %s\n", argv[1], strerror(-fd));
		return 1;
	}

	f.eth.ether_type = htons(ETHERTYPE_IP);
	f.ip = (struct iphdr){ .version = 4,
			       .ihl = 5,
			       .ttl = 64,
			       .protocol = IPPROTO_UDP,
			       .tot_len = htons(FRAME_LEN - sizeof(struct ether_header)),
			       .saddr = src.s_addr };
	f.udp.dest = htons((uint16_t)dport);
	f.udp.len = htons(FRAME_LEN - sizeof(struct ether_header) - sizeof(struct iphdr));
	base.s_addr = ntohl(base.s_addr);

	for (i = 0; i < flows; i++) { /* each flow once: the new flows, untimed */
		frame_set(&f, base.s_addr, i);
		if (writev(fd, iov, 2) < 0 && !first_errno)
			first_errno = errno;
	}
	usleep(200000); /* the new flows' events drained */

	c0 = cpu_ns();
	rx0 = rx_packets(sink, argv[10]);
	t0 = now();
	t1 = t0;
	for (i = 0; t1 - t0 < secs;) {
		for (unsigned int k = 0; k < CLOCK_EVERY; k++) {
			frame_set(&f, base.s_addr, i);
			if (++i == flows)
				i = 0;
			if (writev(fd, iov, 2) < 0) {
				errors++;
				if (!first_errno)
					first_errno = errno;
			}
		}
		sent += CLOCK_EVERY;
		t1 = now();
	}
	rx1 = rx_packets(sink, argv[10]);
	c1 = cpu_ns();
	close(fd);

	delivered = rx1 - rx0;
	printf("{\"flows\": %u, \"seconds\": %.3f, \"sent\": %llu, \"delivered\": %lld, "
	       "\"pps\": %.0f, \"cpu_ns_per_pkt\": %.1f, \"write_errors\": %llu, "
	       "\"first_error\": \"%s\"}\n",
	       flows, t1 - t0, sent, delivered, delivered / (t1 - t0),
	       delivered > 0 && c0 && c1 ? (double)(c1 - c0) / delivered : 0, errors,
	       first_errno ? strerror(first_errno) : "");
	return errors || delivered < (long long)sent / 2 ? 1 : 0;
}
