/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the datapath unit tests share: a private network namespace, fixture
 * text written with ' for ", and sessions set up and removed through the
 * daemon's own parser, compiler and tf_dp_session_install()/remove(), so
 * a test exercises exactly what tapfenced writes (minus attaching).
 */
#ifndef TF_DPENV_H
#define TF_DPENV_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>

#include "daemon/config.h"
#include "daemon/datapath.h"
#include "daemon/policy.h"
#include "daemon/spec.h"

struct sess {
	struct tf_spec spec;
	struct tf_policy pol;
	__u32 sid, ifindex, ver;
};

/* Fixtures are written with ' for ", to stay readable: undo that. Returns the length. */
static inline size_t unquote(const char *text, char *buf, size_t len)
{
	size_t i;

	for (i = 0; text[i] && i < len - 1; i++)
		buf[i] = text[i] == '\'' ? '"' : text[i];
	buf[i] = '\0';
	return i;
}

static inline int spec_parse(const char *text, const struct tf_config *cfg, struct tf_spec *out)
{
	struct tf_spec_limits lim = { .max_rules = cfg->max_rules };
	char buf[4096], err[TF_ERR_MAX] = "";
	int ret;

	ret = tf_spec_parse(buf, unquote(text, buf, sizeof(buf)), &lim, out, err, sizeof(err));
	if (ret)
		fprintf(stderr, "spec: %s\n", err);
	return ret;
}

static inline int config_parse(struct tf_config *c, const char *text)
{
	char buf[1024], err[TF_ERR_MAX] = "";
	int ret;

	ret = tf_config_parse(buf, unquote(text, buf, sizeof(buf)), c, err, sizeof(err));
	if (ret)
		fprintf(stderr, "config: %s\n", err);
	return ret;
}

/* What the daemon's session add does, minus attaching to a device. */
static inline int dp_session_add(struct tf_dp *dp, const struct tf_config *cfg, struct sess *s,
			  const char *text, __u32 sid, __u32 ifindex)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->sid = sid;
	s->ifindex = ifindex;
	s->ver = 1;
	ret = spec_parse(text, cfg, &s->spec);
	if (!ret)
		ret = tf_policy_compile(s->spec.rules, s->spec.nrules, &s->pol);
	if (!ret)
		ret = tf_dp_session_install(dp, &s->spec, &s->pol, sid, s->ver, ifindex, 0);
	return ret;
}

/* What the daemon's session del does, minus detaching. */
static inline void dp_session_del(struct tf_dp *dp, struct sess *s)
{
	tf_dp_session_remove(dp, &s->spec, &s->pol, s->sid, s->ver, s->ifindex);
	tf_policy_free(&s->pol);
	tf_spec_free(&s->spec);
}

/* A network namespace of our own, with lo up, so the host's loopback is never involved. */
static inline int private_netns(void)
{
	struct ifreq ifr = {};
	int fd, ret = 0;

	if (unshare(CLONE_NEWNET))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ret = -errno;
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			ret = -errno;
	}
	close(fd);
	return ret;
}

static inline int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

#endif
