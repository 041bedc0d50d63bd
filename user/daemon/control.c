// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket's transport: newline-delimited JSON over a Unix
 * stream socket, one response per request (control_ops.c makes it), plus
 * event subscriptions; who may connect (peer credentials). Every client socket
 * is non-blocking with bounded buffers and a deadline for half-sent
 * requests, so no client can stall the daemon or another client.
 * Protocol: docs/control-protocol.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "control_int.h"

static int mkdir_parent(const char *path)
{
	char dir[PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int tf_ctl_open(struct tf_daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->listen_fd };
	struct group *gr;
	int fd, err;

	if (strlen(d->cfg.control_socket) >= sizeof(sa.sun_path)) {
		pr_warn("control socket path `%s' is too long\n", d->cfg.control_socket);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, d->cfg.control_socket);
	err = mkdir_parent(d->cfg.control_socket);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		err = -errno;
		pr_warn("cannot listen on `%s': %s\n", sa.sun_path, strerror(-err));
		close(fd);
		return err;
	}
	/* 0660, root and the operator's group only. */
	if (d->cfg.socket_group[0]) {
		gr = getgrnam(d->cfg.socket_group);
		if (gr)
			d->socket_gid = gr->gr_gid;
		if (!gr || chown(sa.sun_path, 0, gr->gr_gid)) {
			pr_warn("socket_group `%s': no such group\n", d->cfg.socket_group);
			close(fd);
			unlink(sa.sun_path);
			return -EINVAL;
		}
	}
	chmod(sa.sun_path, 0660);
	d->listen_fd = fd;
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev))
		return -errno;
	return 0;
}

/*
 * End a client: its socket is closed at once, its memory only in
 * tf_ctl_reap() after the event loop's batch, because a later event of
 * the same batch may still point at it (a broadcast from one client's
 * request can end another).
 */
static void feed_wait(struct tf_daemon *d);

static void client_free(struct tf_daemon *d, struct tf_client *c)
{
	if (c->dead)
		return;
	/* Its socket is not closed under the sender (whose fd could be reused). */
	if (c->in_flight) {
		feed_wait(d);
		if (c->dead)
			return; /* its send failed: ended as the batch was settled */
	}
	c->dead = 1;
	epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->subscriber)
		d->nsubscribers--;
	d->nclients--;
	free(c->in);
	free(c->out);
	c->in = c->out = NULL;
	c->in_len = c->in_cap = c->out_len = c->out_off = c->out_cap = 0;
}

void tf_ctl_reap(struct tf_daemon *d)
{
	struct tf_client **pp = &d->clients, *c;

	while ((c = *pp)) {
		if (c->dead) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
}

static void client_want_write(struct tf_daemon *d, struct tf_client *c, int on)
{
	/* A closing client's input is not read (at its end of stream it would wake us for ever). */
	struct epoll_event ev = { .events = (c->closing ? 0 : EPOLLIN) | (on ? EPOLLOUT : 0),
				  .data.ptr = c };

	/* Only a change is a system call (a flush per event per subscriber made two). */
	if (on == c->want_out && !c->closing)
		return;
	c->want_out = on;
	epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Returns -1 if the client is gone (freed). */
static int client_flush(struct tf_daemon *d, struct tf_client *c)
{
	ssize_t n;

	if (c->dead)
		return -1;
	c->pending = 0;
	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			client_want_write(d, c, 1);
			return 0;
		}
		if (n <= 0) {
			client_free(d, c);
			return -1;
		}
		c->out_off += n;
	}
	c->out_off = c->out_len = 0;
	client_want_write(d, c, 0);
	if (c->closing) {
		client_free(d, c);
		return -1;
	}
	return 0;
}

/* Queue len bytes for c, then a newline if nl. */
static int client_queue_raw(struct tf_client *c, const char *buf, size_t len, int nl)
{
	size_t cap;
	char *p;

	/* No client, subscriber or not, may make the daemon hold more than this for it. */
	if (c->out_len - c->out_off + len + 1 > TF_OUT_MAX)
		return -ENOBUFS;

	if (c->out_len + len + 1 > c->out_cap && c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + len + 1 > c->out_cap) {
		/* Doubling: a subscriber's lines cost a copy each, not an allocation each. */
		for (cap = c->out_cap ? c->out_cap : 4096; cap < c->out_len + len + 1; cap *= 2)
			;
		p = realloc(c->out, cap);
		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, buf, len);
	c->out_len += len;
	if (nl)
		c->out[c->out_len++] = '\n';
	return 0;
}

static int client_queue(struct tf_client *c, const char *buf, size_t len)
{
	return client_queue_raw(c, buf, len, 1);
}

static void client_reply(struct tf_daemon *d, struct tf_client *c, json_t *resp)
{
	char *s = json_dumps(resp, JSON_COMPACT);

	json_decref(resp);
	if (!s || client_queue(c, s, strlen(s))) {
		pr_warn("control client does not read its replies: disconnected\n");
		client_free(d, c);
	}
	free(s);
}

static json_t *error_resp(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static void subscriber_behind(struct tf_daemon *d, struct tf_client *c)
{
	pr_warn("subscriber fell %u bytes behind: disconnected\n", TF_OUT_MAX);
	client_free(d, c);
}

/* One subscriber of every session the sender sends a batch to, and how that went. */
struct tf_feed_dest {
	struct tf_client *c; /* read by the main thread only */
	int fd;
	int err;     /* the send's errno, other than EAGAIN; 0 */
	size_t sent; /* bytes its socket took */
};

/* Send the batch to each destination: one non-blocking send each, whatever it takes. */
static void feed_send(const char *buf, size_t len, struct tf_feed_dest *dest, unsigned int n)
{
	struct tf_feed_dest *t;
	ssize_t k;

	for (t = dest; t < dest + n; t++) {
		do
			k = send(t->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (k < 0 && errno == EINTR);
		t->err = k < 0 && errno != EAGAIN && errno != EWOULDBLOCK ? errno : 0;
		t->sent = k > 0 ? (size_t)k : 0;
	}
}

static void *feed_run(void *arg)
{
	struct tf_daemon *d = arg;

	pthread_mutex_lock(&d->feed.mu);
	for (;;) {
		while (!d->feed.busy && !d->feed.stop)
			pthread_cond_wait(&d->feed.cv, &d->feed.mu);
		if (!d->feed.busy)
			break;
		pthread_mutex_unlock(&d->feed.mu);
		feed_send(d->feed.out, d->feed.out_len, d->feed.dest, d->feed.ndest);
		pthread_mutex_lock(&d->feed.mu);
		d->feed.busy = 0;
		pthread_cond_broadcast(&d->feed.cv);
	}
	pthread_mutex_unlock(&d->feed.mu);
	return NULL;
}

/*
 * Wait for the batch in flight, then settle it: what a subscriber's socket
 * did not take is queued behind (sent on EPOLLOUT), a failed one is ended.
 * Every destination is out of flight before any is ended. Nothing called
 * here may broadcast: a batch handed over meanwhile would move dest and out
 * under this loop.
 */
static void feed_wait(struct tf_daemon *d)
{
	struct tf_feed_dest *t, *end = d->feed.dest + d->feed.ndest;
	size_t len = d->feed.out_len;

	if (d->feed.on) {
		pthread_mutex_lock(&d->feed.mu);
		while (d->feed.busy)
			pthread_cond_wait(&d->feed.cv, &d->feed.mu);
		pthread_mutex_unlock(&d->feed.mu);
	}
	d->feed.ndest = 0;
	for (t = d->feed.dest; t < end; t++)
		t->c->in_flight = 0;
	for (t = d->feed.dest; t < end; t++) {
		if (t->err) {
			client_free(d, t->c);
			continue;
		}
		if (t->sent == len)
			continue;
		if (client_queue_raw(t->c, d->feed.out + t->sent, len - t->sent, 0)) {
			subscriber_behind(d, t->c);
			continue;
		}
		client_flush(d, t->c);
	}
}

/* 1 if c can take the batch straight from the feed: it has nothing queued, and there is room. */
static int feed_dest_add(struct tf_daemon *d, struct tf_client *c)
{
	struct tf_feed_dest *p;
	unsigned int cap;

	if (c->out_len != c->out_off)
		return 0;
	if (d->feed.ndest == d->feed.dest_cap) {
		cap = d->feed.dest_cap ? 2 * d->feed.dest_cap : 8;
		p = realloc(d->feed.dest, cap * sizeof(*p));
		if (!p)
			return 0;
		d->feed.dest = p;
		d->feed.dest_cap = cap;
	}
	d->feed.dest[d->feed.ndest++] = (struct tf_feed_dest){ .c = c, .fd = c->fd };
	c->in_flight = 1;
	return 1;
}

/*
 * The lines for the subscribers of every session, to each of them: once
 * the last batch is settled, this one becomes the batch sent, straight
 * from the one buffer to each subscriber with nothing queued, by the
 * sender thread while the next is written (or here, without it); to a
 * subscriber with lines queued it is queued behind them now.
 */
static void feed_flush(struct tf_daemon *d)
{
	struct tf_client *c, *next;
	size_t cap;
	char *p;

	feed_wait(d);
	p = d->feed.out;
	cap = d->feed.out_cap;
	d->feed.out = d->feed.buf;
	d->feed.out_cap = d->feed.cap;
	d->feed.out_len = d->feed.len;
	d->feed.buf = p;
	d->feed.cap = cap;
	d->feed.len = 0;
	for (c = d->clients; c; c = next) {
		next = c->next;
		if (!c->subscriber || c->sub_sid || c->dead || feed_dest_add(d, c))
			continue;
		if (client_queue_raw(c, d->feed.out, d->feed.out_len, 0)) {
			subscriber_behind(d, c);
			continue;
		}
		client_flush(d, c);
	}
	if (!d->feed.ndest)
		return;
	if (!d->feed.on) {
		feed_send(d->feed.out, d->feed.out_len, d->feed.dest, d->feed.ndest);
		feed_wait(d);
		return;
	}
	pthread_mutex_lock(&d->feed.mu);
	d->feed.busy = 1;
	pthread_cond_signal(&d->feed.cv);
	pthread_mutex_unlock(&d->feed.mu);
}

/* Every line of the feed sent or queued: the batch being written handed over, and settled. */
static void feed_sync(struct tf_daemon *d)
{
	if (d->feed.len)
		feed_flush(d);
	feed_wait(d);
}

int tf_ctl_start(struct tf_daemon *d)
{
	sigset_t all, old;
	int err;

	if (d->feed.on)
		return 0;
	d->feed.stop = 0;
	d->feed.busy = 0;
	err = pthread_mutex_init(&d->feed.mu, NULL);
	if (err)
		return -err;
	err = pthread_cond_init(&d->feed.cv, NULL);
	if (err) {
		pthread_mutex_destroy(&d->feed.mu);
		return -err;
	}
	/* Signals are the main loop's (signalfd): the thread starts with all of them blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&d->feed.thread, NULL, feed_run, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&d->feed.cv);
		pthread_mutex_destroy(&d->feed.mu);
		return -err;
	}
	d->feed.on = 1;
	return 0;
}

/* The feed's buffers, held only while a subscriber of every session is. */
static void feed_free(struct tf_daemon *d)
{
	free(d->feed.buf);
	free(d->feed.out);
	free(d->feed.dest);
	d->feed.buf = d->feed.out = NULL;
	d->feed.dest = NULL;
	d->feed.len = d->feed.cap = d->feed.out_len = d->feed.out_cap = 0;
	d->feed.ndest = d->feed.dest_cap = 0;
}

void tf_ctl_stop(struct tf_daemon *d)
{
	feed_wait(d);
	if (d->feed.on) {
		pthread_mutex_lock(&d->feed.mu);
		d->feed.stop = 1;
		pthread_cond_broadcast(&d->feed.cv);
		pthread_mutex_unlock(&d->feed.mu);
		pthread_join(d->feed.thread, NULL);
		pthread_cond_destroy(&d->feed.cv);
		pthread_mutex_destroy(&d->feed.mu);
		d->feed.on = 0;
	}
	feed_free(d);
}

void tf_ctl_broadcast(struct tf_daemon *d, __u32 sid, const char *line, size_t len)
{
	struct tf_client *c, *next;
	int all = 0;
	size_t cap;
	char *p;

	for (c = d->clients; c; c = next) {
		next = c->next;
		if (!c->subscriber || c->dead || (c->sub_sid && c->sub_sid != sid))
			continue;
		if (!c->sub_sid) {
			all = 1;
			continue;
		}
		if (client_queue(c, line, len)) {
			subscriber_behind(d, c);
			continue;
		}
		/* Sent in 64 KiB writes, and what is left once the drain ends (tf_ctl_flush_events()). */
		if (c->out_len - c->out_off >= TF_OUT_BATCH)
			client_flush(d, c);
		else
			c->pending = 1;
	}
	if (!all)
		return;
	/* The subscribers of every session: the line written once, sent to each in 64 KiB writes. */
	if (d->feed.len + len + 1 > d->feed.cap) {
		for (cap = d->feed.cap ? d->feed.cap : TF_OUT_BATCH; cap < d->feed.len + len + 1; cap *= 2)
			;
		p = realloc(d->feed.buf, cap);
		if (!p) {
			/* Each subscriber is told as when it falls behind: a gap it cannot see is worse. */
			for (c = d->clients; c; c = next) {
				next = c->next;
				if (c->subscriber && !c->sub_sid && !c->dead)
					subscriber_behind(d, c);
			}
			return;
		}
		d->feed.buf = p;
		d->feed.cap = cap;
	}
	memcpy(d->feed.buf + d->feed.len, line, len);
	d->feed.buf[d->feed.len + len] = '\n';
	d->feed.len += len + 1;
	if (d->feed.len >= TF_OUT_BATCH)
		feed_flush(d);
}

void tf_ctl_flush_events(struct tf_daemon *d)
{
	struct tf_client *c;
	int all = 0;

	feed_sync(d);
	for (c = d->clients; c; c = c->next) {
		if (c->pending && !c->dead)
			client_flush(d, c);
		all |= c->subscriber && !c->sub_sid && !c->dead;
	}
	/* The feed's buffers go with the last subscriber of every session: not held idle. */
	if (!all)
		feed_free(d);
}

static void handle_line(struct tf_daemon *d, struct tf_client *c, const char *line, size_t len)
{
	struct tf_spec_limits lim = { .max_rules = d->cfg.max_rules };
	char err[TF_ERR_MAX] = "";
	struct tf_request r;
	json_t *resp = NULL;

	/*
	 * The feed's lines go out before the request is handled: a reply comes
	 * after the event lines queued before it, and a new subscriber gets no
	 * line from before its subscription.
	 */
	feed_sync(d);
	if (!tf_request_parse(line, len, &lim, &r, err, sizeof(err))) {
		resp = tf_ctl_dispatch(d, c, &r, err, sizeof(err));
		if (!resp && !err[0])
			snprintf(err, sizeof(err), "out of memory");
		tf_request_free(&r);
	}
	client_reply(d, c, resp ? resp : error_resp(err));
}

/* Returns -1 if the client is gone. */
static int client_read(struct tf_daemon *d, struct tf_client *c)
{
	size_t max = d->cfg.max_request_bytes, cap;
	int was_partial = c->in_len > 0, completed = 0;
	char *nl, *p;
	ssize_t n;

	for (;;) {
		if (c->in_len == c->in_cap) {
			/* Grow on demand up to the request limit (+1 to see it exceeded). */
			cap = c->in_cap ? 2 * c->in_cap : 4096;
			if (cap > max + 1)
				cap = max + 1;
			p = cap > c->in_cap ? realloc(c->in, cap) : NULL;
			if (!p) {
				client_free(d, c);
				return -1;
			}
			c->in = p;
			c->in_cap = cap;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n == 0) {
			/*
			 * The client has sent all it will (it may have shut down its
			 * sending side only, as socat does after the request): answer
			 * what it sent, then close.
			 */
			c->closing = 1;
			break;
		}
		if (n < 0) {
			client_free(d, c);
			return -1;
		}
		c->in_len += n;
		while (!c->closing && (nl = memchr(c->in, '\n', c->in_len))) {
			handle_line(d, c, c->in, nl - c->in);
			if (c->dead)
				return -1;
			completed = 1;
			p = nl + 1;
			c->in_len -= p - c->in;
			memmove(c->in, p, c->in_len);
		}
		if (c->in_len > max) {
			/* The answer comes after the lines before it, as handle_line()'s. */
			feed_sync(d);
			client_reply(d, c, error_resp("request too large"));
			if (c->dead)
				return -1;
			c->closing = 1;
		}
		if (c->closing)
			break;
	}
	/*
	 * The clock for a request starts with its first byte and is not reset
	 * by later bytes: a client trickling a byte at a time still runs out.
	 */
	if (!c->in_len || completed || !was_partial)
		c->deadline_ms = tf_now_ms() + d->cfg.client_timeout_ms;
	return client_flush(d, c);
}

/* A gid the operator allows: one of allowed_gids, or socket_group's. */
static int gid_allowed(const struct tf_daemon *d, gid_t gid)
{
	unsigned int i;

	for (i = 0; i < d->cfg.nallowed_gids; i++)
		if (gid == d->cfg.allowed_gids[i])
			return 1;
	return d->socket_gid && gid == d->socket_gid;
}

/*
 * uid 0, one of the operator's uids, or a peer whose primary or
 * supplementary groups (SO_PEERGROUPS, the groups it had at connect) hold
 * a gid the operator allows.
 */
static int peer_allowed(const struct tf_daemon *d, int fd, const struct ucred *cr)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	unsigned int i;

	if (cr->uid == 0)
		return 1;
	for (i = 0; i < d->cfg.nallowed_uids; i++)
		if (cr->uid == d->cfg.allowed_uids[i])
			return 1;
	if (gid_allowed(d, cr->gid))
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return 0; /* more groups than we read, or no answer: refuse */
	for (i = 0; i < len / sizeof(groups[0]); i++)
		if (gid_allowed(d, groups[i]))
			return 1;
	return 0;
}

static void peer_refuse(struct tf_daemon *d, int fd, const struct ucred *cr)
{
	char msg[160];
	int n;

	n = snprintf(
		msg, sizeof(msg),
		"{\"ok\":false,\"error\":\"permission denied: uid %u gid %u may not use this socket\"}\n",
		cr->uid, cr->gid);
	if (send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		pr_debug("refused peer: %s\n", strerror(errno));
	pr_warn("control socket: refused pid %d uid %u gid %u\n", cr->pid, cr->uid, cr->gid);
	tf_events_control(d, "peer_refused", cr->pid, cr->uid, cr->gid);
}

/*
 * Out of fds, a pending connection would keep the level-triggered listener
 * readable and the loop spinning while the client waits: the spare fd
 * makes room to take it off the backlog and tell it why. 1 if one was
 * taken (accept4 fails with EMFILE even when none waits).
 */
static int refuse_no_fd(struct tf_daemon *d)
{
	static const char msg[] =
		"{\"ok\":false,\"error\":\"the daemon is out of file descriptors\"}\n";
	int fd;

	close(d->spare_fd);
	fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0) {
		if (send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			pr_debug("refused client: %s\n", strerror(errno));
		close(fd);
		pr_warn("control socket: out of file descriptors, a client was refused\n");
	}
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

static void client_accept(struct tf_daemon *d)
{
	struct tf_client *c;
	struct epoll_event ev = { .events = EPOLLIN };
	struct ucred cr = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t crlen = sizeof(cr);
	int fd;

	for (;;) {
		fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && d->spare_fd >= 0 &&
		    refuse_no_fd(d))
			continue;
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) ||
		    !peer_allowed(d, fd, &cr)) {
			peer_refuse(d, fd, &cr);
			close(fd);
			continue;
		}
		if (d->nclients >= d->cfg.max_clients) {
			static const char busy[] =
				"{\"ok\":false,\"error\":\"too many clients\"}\n";

			if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				pr_debug("refused client: %s\n", strerror(errno));
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->uid = cr.uid;
		c->deadline_ms = tf_now_ms() + d->cfg.client_timeout_ms;
		ev.data.ptr = c;
		if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(c);
			continue;
		}
		c->next = d->clients;
		d->clients = c;
		d->nclients++;
	}
}

void tf_ctl_event(struct tf_daemon *d, void *ptr, __u32 events)
{
	struct tf_client *c = ptr;

	if (ptr == &d->listen_fd) {
		client_accept(d);
		return;
	}
	if (c->dead)
		return;
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
		client_free(d, c);
		return;
	}
	if (events & EPOLLOUT && client_flush(d, c))
		return;
	if (events & EPOLLIN)
		client_read(d, c);
}

/* Bytes the client sent that the event loop has not read yet. */
static int input_waiting(const struct tf_client *c)
{
	char b;

	return recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/*
 * Drop clients that stalled: a half-sent request gets an error, an idle
 * connection is closed; subscribers may idle.
 */
void tf_ctl_tick(struct tf_daemon *d)
{
	struct tf_client *c, *next;
	__u64 now = tf_now_ms();

	for (c = d->clients; c; c = next) {
		next = c->next;
		if (c->dead || c->subscriber || now < c->deadline_ms)
			continue;
		/*
		 * After a pass of the loop longer than the timeout (a slow request,
		 * a loaded host) what the client sent may be waiting unread: read it
		 * before judging the client idle or its request late.
		 */
		if (!c->closing && input_waiting(c) && (client_read(d, c) || now < c->deadline_ms))
			continue;
		if (c->in_len) {
			client_reply(d, c, error_resp("request incomplete: timed out"));
			if (c->dead)
				continue;
			c->closing = 1;
			client_flush(d, c);
		} else if (!c->out_len) {
			client_free(d, c);
		}
	}
}

void tf_ctl_close(struct tf_daemon *d)
{
	struct tf_client *c;

	for (c = d->clients; c; c = c->next)
		client_free(d, c);
	tf_ctl_reap(d);
	tf_ctl_stop(d);
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	d->spare_fd = -1;
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->cfg.control_socket);
		d->listen_fd = -1;
	}
}
