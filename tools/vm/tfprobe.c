// SPDX-License-Identifier: GPL-2.0
/*
 * tfprobe: the few probes a microVM guest needs that busybox cannot make (its nc has no UDP and
 * no source address, and nothing in it sends a TLS ClientHello). Built static into the guest's
 * initramfs by tools/vm/build-image.sh; tools/demo.sh also runs it in namespace guests.
 *
 *   tfprobe udp [-s SRC] [-w SECS] HOST PORT   one datagram; exit 0 iff its echo came back
 *   tfprobe tcp [-s SRC] [-w SECS] HOST PORT   an HTTP/1.0 GET; exit 0 iff the reply names a
 *                                              tapfence listener
 *   tfprobe tls [-s SRC] [-w SECS] SNI HOST PORT
 *                                              a TLS ClientHello naming SNI; exit 0 iff the
 *                                              server answered at least one byte
 *   tfprobe serve PORT                         a TCP listener on every address: one line
 *                                              "HIT tcp PORT from ADDR:PORT" on stdout per
 *                                              connection, and the listener's HTTP reply
 *
 * HOST and SRC are IPv4 or IPv6 literals. -s binds the socket to SRC first: the guest kernel must
 * own SRC (the test adds it with `ip addr add'), and what tapfence sees is a real spoofed source.
 * Every wait is bounded by -w (default 2 s). Exit codes: 0 reply, 1 no reply, 2 usage or setup.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LISTENER_MARK "tapfence-listener"

struct opts {
	const char *src;
	int wait_ms;
	const char *host;
	int port;
};

static int parse_sockaddr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	fprintf(stderr, "tfprobe: invalid address `%s'\n", host);
	return -EINVAL;
}

static void fmt_sockaddr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &in4->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(in4->sin_port));
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(in6->sin6_port));
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* wait_fd: poll FD for EVENTS until DEADLINE (ms, monotonic); 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long left;
	int r;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return 0;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
	}
}

/* open_socket: a socket of TYPE for O's destination, bound to O's source if any; -1 on error. */
static int open_socket(const struct opts *o, int type, struct sockaddr_storage *dst,
		       socklen_t *dlen)
{
	struct sockaddr_storage src;
	socklen_t slen;
	int fd;

	if (parse_sockaddr(o->host, o->port, dst, dlen))
		return -1;
	fd = socket(dst->ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("tfprobe: socket");
		return -1;
	}
	if (o->src) {
		if (parse_sockaddr(o->src, 0, &src, &slen) || src.ss_family != dst->ss_family) {
			fprintf(stderr, "tfprobe: source `%s' is not of the destination's family\n",
				o->src);
			close(fd);
			return -1;
		}
		if (bind(fd, (struct sockaddr *)&src, slen)) {
			fprintf(stderr, "tfprobe: bind %s: %s\n", o->src, strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

static int probe_udp(const struct opts *o)
{
	struct sockaddr_storage dst, local;
	socklen_t dlen, llen = sizeof(local);
	char payload[64], buf[512], l[64], d[64];
	long deadline = now_ms() + o->wait_ms;
	ssize_t n;
	int fd, plen;

	fd = open_socket(o, SOCK_DGRAM, &dst, &dlen);
	if (fd < 0)
		return 2;
	/* connect() so that only the destination's datagrams (and its ICMP errors) come back. */
	if (connect(fd, (struct sockaddr *)&dst, dlen)) {
		fprintf(stderr, "tfprobe: connect: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	getsockname(fd, (struct sockaddr *)&local, &llen);
	fmt_sockaddr(&local, l, sizeof(l));
	fmt_sockaddr(&dst, d, sizeof(d));
	plen = snprintf(payload, sizeof(payload), "tapfence-vm-probe %d", (int)getpid());
	if (send(fd, payload, plen, 0) != plen) {
		printf("send udp %s -> %s: %s\n", l, d, strerror(errno));
		close(fd);
		return 1;
	}
	while (wait_fd(fd, POLLIN, deadline)) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			printf("udp %s -> %s: %s\n", l, d, strerror(errno));
			break;
		}
		if (n == plen && !memcmp(buf, payload, plen)) {
			printf("echo udp %s -> %s len %d\n", l, d, plen);
			close(fd);
			return 0;
		}
	}
	printf("no echo udp %s -> %s\n", l, d);
	close(fd);
	return 1;
}

/*
 * tcp_open: a TCP connection to O's destination, connected by DEADLINE (ms, monotonic); its
 * local and remote addresses are written to L and D (64 bytes each). Returns the socket, -1 if
 * the connection failed (said on stdout, as a probe result), -2 on a usage or setup error.
 */
static int tcp_open(const struct opts *o, const char *what, long deadline, char *l, char *d)
{
	struct sockaddr_storage dst, local;
	socklen_t dlen, llen = sizeof(local);
	int fd, err = 0;
	socklen_t elen = sizeof(err);

	fd = open_socket(o, SOCK_STREAM | SOCK_NONBLOCK, &dst, &dlen);
	if (fd < 0)
		return -2;
	fmt_sockaddr(&dst, d, 64);
	if (connect(fd, (struct sockaddr *)&dst, dlen) && errno != EINPROGRESS) {
		printf("%s -> %s: %s\n", what, d, strerror(errno));
		close(fd);
		return -1;
	}
	if (!wait_fd(fd, POLLOUT, deadline)) {
		printf("%s -> %s: connect timed out\n", what, d);
		close(fd);
		return -1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
	if (err) {
		printf("%s -> %s: %s\n", what, d, strerror(err));
		close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *)&local, &llen);
	fmt_sockaddr(&local, l, 64);
	return fd;
}

static int probe_tcp(const struct opts *o)
{
	char req[160], buf[1024], l[64], d[64];
	long deadline = now_ms() + o->wait_ms;
	int fd, rlen;
	size_t got = 0;
	ssize_t n;

	fd = tcp_open(o, "tcp", deadline, l, d);
	if (fd < 0)
		return fd == -2 ? 2 : 1;
	rlen = snprintf(req, sizeof(req),
			"GET / HTTP/1.0\r\nHost: %s\r\nUser-Agent: tfprobe\r\n\r\n", o->host);
	if (send(fd, req, rlen, MSG_NOSIGNAL) != rlen) {
		printf("tcp %s -> %s: send: %s\n", l, d, strerror(errno));
		close(fd);
		return 1;
	}
	while (got < sizeof(buf) - 1 && wait_fd(fd, POLLIN, deadline)) {
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += n;
	}
	buf[got] = '\0';
	close(fd);
	if (strstr(buf, LISTENER_MARK)) {
		printf("reply tcp %s -> %s\n", l, d);
		return 0;
	}
	printf("no reply tcp %s -> %s (%zu bytes)\n", l, d, got);
	return 1;
}

static void put8(unsigned char *b, size_t *p, unsigned int v)
{
	b[(*p)++] = v & 0xff;
}

static void put16(unsigned char *b, size_t *p, unsigned int v)
{
	put8(b, p, v >> 8);
	put8(b, p, v);
}

/*
 * tls_hello: a minimal ClientHello naming SNI, in one TLS record, into BUF (at least
 * 72 + strlen(SNI) bytes): version fields 0x0303 (TLS 1.2, as TLS 1.3 clients send too), 32
 * random bytes, no session id, two cipher suites, null compression, and the extensions
 * server_name (RFC 6066 section 3) and supported_versions (RFC 8446 section 4.2.1: 1.3, 1.2).
 * The random bytes need not be secret: the probe never completes a handshake. Returns the
 * hello's length in bytes.
 */
static size_t tls_hello(const char *sni, unsigned char *buf)
{
	static const unsigned int suites[] = {
		0x1301, /* TLS_AES_128_GCM_SHA256 (TLS 1.3) */
		0xc02f, /* TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (TLS 1.2) */
	};
	size_t n = strlen(sni), p = 0, hs, ext, i;
	unsigned long x = (unsigned long)now_ms() * 2654435761UL ^ (unsigned long)getpid();

	put8(buf, &p, 22); /* record: handshake */
	put16(buf, &p, 0x0303);
	put16(buf, &p, 0); /* record length, below */
	hs = p;
	put8(buf, &p, 1); /* handshake: ClientHello */
	put8(buf, &p, 0); /* handshake length (24 bits), below */
	put16(buf, &p, 0);
	put16(buf, &p, 0x0303);	   /* legacy_version */
	for (i = 0; i < 32; i++) { /* random: xorshift, seeded from the clock and PID */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		put8(buf, &p, x >> 24);
	}
	put8(buf, &p, 0); /* legacy_session_id: empty */
	put16(buf, &p, 2 * sizeof(suites) / sizeof(suites[0]));
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		put16(buf, &p, suites[i]);
	put8(buf, &p, 1); /* compression methods: null */
	put8(buf, &p, 0);
	put16(buf, &p, 0); /* extensions length, below */
	ext = p;
	put16(buf, &p, 0x0000); /* server_name */
	put16(buf, &p, n + 5);
	put16(buf, &p, n + 3); /* server_name_list */
	put8(buf, &p, 0);      /* host_name */
	put16(buf, &p, n);
	memcpy(buf + p, sni, n);
	p += n;
	put16(buf, &p, 0x002b); /* supported_versions */
	put16(buf, &p, 5);
	put8(buf, &p, 4);
	put16(buf, &p, 0x0304);
	put16(buf, &p, 0x0303);
	/* The lengths: each counts the bytes after its own field. */
	buf[ext - 2] = (p - ext) >> 8;
	buf[ext - 1] = p - ext;
	buf[hs + 1] = (p - hs - 4) >> 16;
	buf[hs + 2] = (p - hs - 4) >> 8;
	buf[hs + 3] = p - hs - 4;
	buf[3] = (p - hs) >> 8;
	buf[4] = p - hs;
	return p;
}

static int probe_tls(const struct opts *o, const char *sni)
{
	unsigned char hello[72 + 253], b;
	char l[64], d[64];
	long deadline = now_ms() + o->wait_ms;
	size_t hlen;
	int fd;

	if (strlen(sni) > 253) {
		fprintf(stderr, "tfprobe: server name `%.40s...' is longer than 253 bytes\n", sni);
		return 2;
	}
	hlen = tls_hello(sni, hello);
	fd = tcp_open(o, "tls", deadline, l, d);
	if (fd < 0)
		return fd == -2 ? 2 : 1;
	if (send(fd, hello, hlen, MSG_NOSIGNAL) != (ssize_t)hlen) {
		printf("tls %s -> %s: send: %s\n", l, d, strerror(errno));
		close(fd);
		return 1;
	}
	/* Any byte will do: the server's answer, or a TLS alert; only a reply at all counts. */
	if (wait_fd(fd, POLLIN, deadline) && recv(fd, &b, 1, 0) == 1) {
		printf("reply tls %s -> %s sni %s (hello %zu bytes)\n", l, d, sni, hlen);
		close(fd);
		return 0;
	}
	printf("no reply tls %s -> %s sni %s (hello %zu bytes)\n", l, d, sni, hlen);
	/*
	 * A reset, not a FIN: the kernel would go on resending an unacknowledged hello for minutes
	 * after we exit (a refused hello stays refused), and the server would wait for it.
	 */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){ .l_onoff = 1, .l_linger = 0 },
		   sizeof(struct linger));
	close(fd);
	return 1;
}

/* unmap_v4: an IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address it maps. */
static void unmap_v4(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 in6 = *(struct sockaddr_in6 *)ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
		return;
	memset(ss, 0, sizeof(*ss));
	in4->sin_family = AF_INET;
	in4->sin_port = in6.sin6_port;
	memcpy(&in4->sin_addr, &in6.sin6_addr.s6_addr[12], 4);
}

static int serve(int port)
{
	struct sockaddr_in6 any = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_storage peer;
	char p[64], body[64], reply[256];
	int fd, c, one = 1, zero = 0, blen, rlen;
	socklen_t plen;

	signal(SIGPIPE, SIG_IGN);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	    bind(fd, (struct sockaddr *)&any, sizeof(any)) || listen(fd, 16)) {
		fprintf(stderr, "tfprobe: serve %d: %s\n", port, strerror(errno));
		return 2;
	}
	blen = snprintf(body, sizeof(body), LISTENER_MARK " tcp guest:%d\n", port);
	rlen = snprintf(reply, sizeof(reply),
			"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			"Connection: close\r\n\r\n%s",
			blen, body);
	for (;;) {
		plen = sizeof(peer);
		c = accept(fd, (struct sockaddr *)&peer, &plen);
		if (c < 0)
			continue;
		/* An IPv4 peer on the dual-stack socket: print it as IPv4, as the host's listeners do. */
		unmap_v4(&peer);
		fmt_sockaddr(&peer, p, sizeof(p));
		/* One write per line, so that the console never interleaves it with another line. */
		dprintf(STDOUT_FILENO, "HIT tcp %d from %s\n", port, p);
		send(c, reply, rlen, MSG_NOSIGNAL);
		shutdown(c, SHUT_WR);
		close(c);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: tfprobe udp|tcp [-s SRC] [-w SECS] HOST PORT\n"
			"       tfprobe tls [-s SRC] [-w SECS] SNI HOST PORT\n"
			"       tfprobe serve PORT\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = { .wait_ms = 2000 };
	int i, nargs;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "serve"))
		return argc == 3 ? serve(atoi(argv[2])) : usage();
	/* The positional arguments: HOST PORT, and SNI before them for tls. */
	nargs = strcmp(argv[1], "tls") ? 2 : 3;
	if (argc < 2 + nargs)
		return usage();
	for (i = 2; i < argc - nargs; i++) {
		if (!strcmp(argv[i], "-s") && i + 1 < argc - nargs)
			o.src = argv[++i];
		else if (!strcmp(argv[i], "-w") && i + 1 < argc - nargs)
			o.wait_ms = atoi(argv[++i]) * 1000;
		else
			return usage();
	}
	o.host = argv[argc - 2];
	o.port = atoi(argv[argc - 1]);
	if (o.port <= 0 || o.port > 65535 || o.wait_ms <= 0)
		return usage();
	if (!strcmp(argv[1], "udp"))
		return probe_udp(&o);
	if (!strcmp(argv[1], "tcp"))
		return probe_tcp(&o);
	if (!strcmp(argv[1], "tls"))
		return probe_tls(&o, argv[argc - 3]);
	return usage();
}
