// SPDX-License-Identifier: GPL-2.0
/*
 * Test the event feed to the subscribers of every session
 * (user/daemon/control.c), whose batches a thread of its own sends while
 * the next is written: each subscriber gets every line once and in order,
 * whether it reads at once, reads only after the drains (what its socket
 * did not take is queued and sent on EPOLLOUT), or has gone (it is ended,
 * the others are not); after a drain nothing is left in flight; the thread
 * starts and stops with tf_ctl_start() and tf_ctl_stop(). A subscriber
 * that sends a request too large while its batch is in flight gets the
 * refusal after the lines before it, at a line's end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "daemon/control_int.h"
#include "check.h"

#define LINES	  20000
#define PER_DRAIN 1500

static struct tf_daemon d;

/* A subscriber's far end: a thread that reads to the end of stream, once go is set. */
struct reader {
	pthread_t thread;
	int fd;
	atomic_int go;
	atomic_size_t len;
	char *got;
	size_t cap;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	char buf[8192];
	ssize_t n;
	size_t len;

	while (!atomic_load(&r->go))
		usleep(1000);
	while ((n = read(r->fd, buf, sizeof(buf))) > 0) {
		len = atomic_load(&r->len);
		if (len + (size_t)n > r->cap) {
			r->cap = 2 * (len + (size_t)n);
			r->got = realloc(r->got, r->cap);
			if (!r->got)
				return NULL;
		}
		memcpy(r->got + len, buf, (size_t)n);
		atomic_store(&r->len, len + (size_t)n);
	}
	return NULL;
}

static int tasks(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* A subscriber of every session on a socket pair; sndbuf, if not 0, is the daemon side's. */
static struct tf_client *subscribe(struct reader *r, int sndbuf)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct tf_client *c = calloc(1, sizeof(*c));
	int sv[2];

	if (!c || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return NULL;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	if (sndbuf) {
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
	}
	c->fd = sv[0];
	c->subscriber = 1;
	ev.data.ptr = c;
	epoll_ctl(d.epoll_fd, EPOLL_CTL_ADD, c->fd, &ev);
	c->next = d.clients;
	d.clients = c;
	d.nclients++;
	d.nsubscribers++;
	r->fd = sv[1];
	return c;
}

static size_t line_of(unsigned int i, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "{\"kind\":\"test\",\"i\":%u,\"pad\":\"%0*u\"}", i,
				(int)(i % 97), i);
}

int main(void)
{
	static const char refusal[] = "{\"ok\":false,\"error\":\"request too large\"}\n";
	struct reader r[5] = {};
	struct tf_client *c[5];
	static char junk[5000];
	char *at;
	struct epoll_event evs[8];
	char line[256], *want = NULL;
	size_t wlen = 0, wcap = 0, n;
	unsigned int i, k, spins;
	int t0, ok, ended = 0, hup = 0, asked = 0;

	d.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	d.listen_fd = d.spare_fd = -1;
	d.cfg.max_request_bytes = 4096;
	t0 = tasks();
	CHECK_EQ("tf_ctl_start() starts the sender", tf_ctl_start(&d), 0);
	CHECK_EQ("... one thread more", tasks(), t0 + 1);
	CHECK_EQ("tf_ctl_start() again starts none", tf_ctl_start(&d) || tasks() != t0 + 1, 0);

	/*
	 * r[0], r[1] read at once; r[2] only after the drains, on small buffers;
	 * r[3] goes after the first batch; r[4], as r[2], sends a request too large.
	 */
	for (i = 0; i < 5; i++) {
		c[i] = subscribe(&r[i], i == 2 || i == 4 ? 4096 : 0);
		if (!c[i])
			return 1;
	}
	for (i = 0; i < 5; i++) {
		if (i == 3)
			continue;
		atomic_store(&r[i].go, i < 2);
		pthread_create(&r[i].thread, NULL, reader_run, &r[i]);
	}

	for (i = 0; i < LINES; i++) {
		/* r[4]'s request, while the first batch is in flight. */
		if (!asked && c[4]->in_flight) {
			memset(junk, 'x', sizeof(junk));
			asked = write(r[4].fd, junk, sizeof(junk)) == sizeof(junk);
			tf_ctl_event(&d, c[4], EPOLLIN);
		}
		/*
		 * r[3] goes as the second drain starts: the next batch's send to it
		 * fails, and its hang-up, handled while that batch is in flight,
		 * ends it once, after the batch is settled (its socket is not
		 * closed under the sender).
		 */
		if (i == PER_DRAIN)
			close(r[3].fd);
		if (i > PER_DRAIN && c[3]->in_flight && !c[3]->dead) {
			tf_ctl_event(&d, c[3], EPOLLHUP);
			hup++;
		}
		n = line_of(i, line, sizeof(line));
		if (wlen + n + 1 > wcap) {
			wcap = 2 * (wlen + n + 1);
			want = realloc(want, wcap);
			if (!want)
				return 1;
		}
		memcpy(want + wlen, line, n);
		want[wlen + n] = '\n';
		wlen += n + 1;
		tf_ctl_broadcast(&d, 1 + i % 3, line, n);
		if (i % PER_DRAIN == PER_DRAIN - 1 || i == LINES - 1) {
			tf_ctl_flush_events(&d);
			ended += d.feed.ndest != 0 || d.feed.busy;
		}
	}
	CHECK_EQ("no batch is in flight once a drain ends", ended, 0);
	CHECK_TRUE("the feed was sent in batches", wlen > 8 * TF_OUT_BATCH);
	CHECK_EQ("the subscriber that went is ended", c[3]->dead, 1);
	CHECK_EQ("... by its hang-up while its batch was in flight", hup, 1);
	CHECK_EQ("... and only it", d.nsubscribers, 4);
	CHECK_EQ("the request too large was sent while its batch was in flight", asked, 1);
	CHECK_TRUE("the slow subscriber has lines queued", c[2]->out_len - c[2]->out_off > 0);

	/*
	 * The slow ones read now. What a socket did not take (theirs, or a
	 * reader's that fell behind for a moment) goes out as it takes it
	 * (EPOLLOUT), as the event loop sends it.
	 */
	atomic_store(&r[2].go, 1);
	atomic_store(&r[4].go, 1);
	for (spins = 0;
	     spins < 20000 && (atomic_load(&r[0].len) < wlen || atomic_load(&r[1].len) < wlen ||
			       atomic_load(&r[2].len) < wlen || !c[4]->dead);
	     spins++) {
		int m = epoll_wait(d.epoll_fd, evs, 8, 1);

		for (k = 0; k < (unsigned int)(m > 0 ? m : 0); k++)
			if (evs[k].events & EPOLLOUT)
				tf_ctl_event(&d, evs[k].data.ptr, evs[k].events);
	}

	CHECK_EQ("the subscriber that asked too much is ended once its queue is sent", c[4]->dead,
		 1);
	/* Ends the clients (the readers see the end of stream) and stops the sender. */
	tf_ctl_close(&d);
	for (i = 0; i < 5; i++) {
		if (i == 3)
			continue;
		pthread_join(r[i].thread, NULL);
		close(r[i].fd);
	}
	CHECK_EQ("tf_ctl_close() stops the sender", tasks(), t0);
	CHECK_EQ("tf_ctl_close() frees the feed's buffers",
		 d.feed.buf || d.feed.out || d.feed.dest || d.feed.on, 0);
	for (i = 0; i < 3; i++) {
		n = atomic_load(&r[i].len);
		ok = n == wlen && !memcmp(r[i].got, want, wlen);
		snprintf(line, sizeof(line), "subscriber %u (%s) got every line once, in order", i,
			 i == 2 ? "read after the drains" : "read at once");
		CHECK_EQ(line, ok ? (long long)wlen : (long long)n, wlen);
		free(r[i].got);
	}
	/* r[4]'s stream: lines in order, the refusal after a whole line, then lines in order. */
	n = atomic_load(&r[4].len);
	at = r[4].got ? memmem(r[4].got, n, refusal, sizeof(refusal) - 1) : NULL;
	CHECK_TRUE("the asker got the refusal", at);
	if (at) {
		size_t before = (size_t)(at - r[4].got), after = n - before - (sizeof(refusal) - 1);

		CHECK_TRUE("... after a whole line", !before || r[4].got[before - 1] == '\n');
		CHECK_TRUE("... after the lines before it, in order",
			   before <= wlen && !memcmp(r[4].got, want, before));
		CHECK_TRUE("... and before the lines after it, in order",
			   before + after <= wlen &&
				   !memcmp(at + sizeof(refusal) - 1, want + before, after));
	}
	free(r[4].got);
	free(want);
	close(d.epoll_fd);
	return CHECK_EXIT();
}
