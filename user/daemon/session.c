// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: add, delete, live rule changes, persistence in state_dir.
 *
 * Order of an add, chosen so that every intermediate state denies:
 * attach first (no tf_sessions entry yet: every packet drops as
 * no_session), then the flow table, policy and addresses, and last the
 * tf_sessions entry that switches the device on. A rule change writes the
 * new generation beside the old one, switches the session's policy_ver in
 * one map update, then erases the old generation.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <bpf/bpf.h>

#include "common/log.h"
#include "daemon.h"
#include "netns.h"

/*
 * A session's state: <state_dir>/sessions/<id>.json, its spec as saved
 * whole, and beside it <id>.journal, the rule changes since (sess_journal()).
 */
static void sess_path(const struct tf_daemon *d, const char *id, const char *ext, char *buf,
		      size_t len)
{
	snprintf(buf, len, "%s/sessions/%s%s", d->cfg.state_dir, id, ext);
}

#define TF_PIN_NAME_MAX (TF_ID_MAX + 22)

/*
 * The name a session's links are pinned under: its id and its device's
 * namespace cookie, so that a pin an earlier session of the same id left
 * on a device of another namespace (at the same ifindex: every E2B tap is
 * 2) is never taken for this one's. bpffs refuses a '.' in a name
 * (kernel/bpf/inode.c, bpf_lookup(): dots are reserved), ids may hold
 * one: ',' stands for it, a character no id has, so names stay distinct.
 */
static void pin_name(const char *id, __u64 netns, char buf[TF_PIN_NAME_MAX + 1])
{
	char *p;

	snprintf(buf, TF_PIN_NAME_MAX + 1, "%s-%llu", id, (unsigned long long)netns);
	for (p = buf; (p = strchr(p, '.')); p++)
		*p = ',';
}

/*
 * A token no earlier save of any session used (the time in ns, kept above
 * the last one): the journal lines a save folds in name the save before it,
 * so a replay skips them (journal_replay()).
 */
static __u64 journal_base(void)
{
	static __u64 last;
	struct timespec ts;
	__u64 t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	last = t > last ? t : last + 1;
	return last;
}

/*
 * s saved whole as spec (quarantine q), written to a temporary file and
 * renamed: a crash leaves the old or the new. Its journal is folded in:
 * the save names a new journal base, and the old journal goes.
 */
static int sess_save(struct tf_daemon *d, struct tf_sess *s, const struct tf_spec *spec,
		     const struct tf_quarantine *q)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	__u64 base = journal_base();
	json_t *o;
	int err = 0;

	sess_path(d, spec->id, ".json", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* The cookie: a restart re-adopts the session only in the namespace it was made in. */
	o = json_pack("{s:I, s:I, s:I, s:o}", "slot", (json_int_t)s->sid, "netns_cookie",
		      (json_int_t)s->dev.netns, "journal_base", (json_int_t)base, "spec",
		      tf_spec_to_json(spec));
	if (o && q && q->on &&
	    json_object_set_new(o, "quarantine",
				json_pack("{s:s, s:I, s:b}", "reason", q->reason, "since",
					  (json_int_t)q->since, "reset", q->reset))) {
		json_decref(o);
		o = NULL;
	}
	if (!o)
		return -ENOMEM;
	if (json_dump_file(o, tmp, JSON_COMPACT) || chmod(tmp, 0600) || rename(tmp, path)) {
		err = -errno ? -errno : -EIO;
		pr_warn("cannot save session `%s' to `%s': %s\n", spec->id, path, strerror(-err));
		unlink(tmp);
	} else {
		/* Folded in (a crash before this leaves lines of the old base: skipped). */
		sess_path(d, spec->id, ".journal", path, sizeof(path));
		unlink(path);
		s->journal_base = base;
		s->journal_n = 0;
	}
	json_decref(o);
	return err;
}

/* Journal lines a session may have beyond its rules before a change saves it whole. */
#define JOURNAL_SLACK 64

/*
 * One rule change appended to the session's journal as a line
 * {"base":B,"op":"add"|"del","rule":RULE}, where saving the whole spec
 * would cost its every rule (30 ms at 10,000). B is the journal base of
 * the session's last whole save: a restore replays over the saved spec the
 * lines of its base only (journal_replay()), so lines a save folded in
 * already (a crash between its rename and the journal's removal), or a
 * deleted session's, are never applied twice or to another. A failed
 * write is cut off again, and a journal that does not end with a whole
 * line (a crash while writing it) gets no line after it: the change is
 * saved whole instead, as is one past the journal's slack.
 */
static int sess_journal(struct tf_daemon *d, struct tf_sess *s, const struct tf_rule *r, int add)
{
	char path[PATH_MAX], *txt = NULL, last = '\n';
	json_t *o, *rule = tf_rule_to_json(r);
	int fd, err = 0;
	off_t end = -1;
	ssize_t w;
	size_t n;

	if (s->journal_n >= s->spec.nrules + JOURNAL_SLACK || !s->journal_base) {
		json_decref(rule);
		return -E2BIG;
	}
	o = rule ? json_pack("{s:I, s:s, s:o}", "base", (json_int_t)s->journal_base, "op",
			     add ? "add" : "del", "rule", rule) :
		   NULL;
	if (o)
		txt = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!txt)
		return -ENOMEM;
	n = strlen(txt);
	txt[n++] = '\n'; /* over the terminating NUL: the line is written by its length */
	sess_path(d, s->spec.id, ".journal", path, sizeof(path));
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600); /* read: its last byte */
	if (fd < 0) {
		err = -errno;
	} else {
		end = lseek(fd, 0, SEEK_END);
		if (end < 0 || (end > 0 && pread(fd, &last, 1, end - 1) != 1))
			err = -EIO;
		else if (last != '\n')
			err = -EILSEQ; /* a torn line: no line after it */
		if (!err) {
			w = write(fd, txt, n);
			if (w != (ssize_t)n) {
				err = w < 0 ? -errno : -EIO;
				if (ftruncate(fd, end))
					err = -EIO;
			}
		}
		close(fd);
	}
	free(txt);
	if (!err)
		s->journal_n++;
	return err;
}

/*
 * One journal line applied to spec, if it is of journal base base: 0, or
 * an error with why. The rule count is checked on the result only (lines
 * of a spec near its limit add and delete past it).
 */
static int journal_line(const char *line, size_t len, json_int_t base, struct tf_spec *spec,
			char *why, size_t whylen)
{
	json_t *o, *rule;
	json_error_t jerr;
	struct tf_rule r;
	const char *op;
	int ret;

	o = json_loadb(line, len, 0, &jerr);
	if (!o) {
		snprintf(why, whylen, "%s", jerr.text);
		return -EINVAL;
	}
	if (!json_is_integer(json_object_get(o, "base"))) {
		snprintf(why, whylen, "base: not a number");
		json_decref(o);
		return -EINVAL;
	}
	if (json_integer_value(json_object_get(o, "base")) != base) {
		json_decref(o); /* folded in already, or another session's of the same id */
		return 0;
	}
	op = json_string_value(json_object_get(o, "op"));
	rule = json_object_get(o, "rule");
	if (!op || (strcmp(op, "add") && strcmp(op, "del"))) {
		snprintf(why, whylen, "op: neither `add' nor `del'");
		ret = -EINVAL;
	} else {
		ret = tf_rule_from_json(rule, "rule", &r, why, whylen);
	}
	if (!ret && !strcmp(op, "add")) {
		ret = tf_spec_add_rule(spec, &r, UINT_MAX);
		if (ret == -EEXIST)
			snprintf(why, whylen, "adds a rule the spec has");
		else if (ret)
			snprintf(why, whylen, "%s", strerror(-ret));
	} else if (!ret) {
		ret = tf_spec_del_rule(spec, &r);
		if (ret == -ENOENT)
			snprintf(why, whylen, "deletes a rule the spec has not");
	}
	json_decref(o);
	return ret;
}

/*
 * Replay the journal at path over spec (what restore read): 0, or an error
 * in err naming the line. A last line without its newline was
 * being written when the daemon stopped, so its change was never
 * acknowledged: it is left out.
 */
static int journal_replay(const char *path, json_int_t base, struct tf_spec *spec,
			  unsigned int max_rules, char *err, size_t errlen)
{
	char *line = NULL, why[TF_ERR_MAX - 32];
	unsigned int no = 0;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((len = getline(&line, &cap, f)) > 0) {
		no++;
		if (line[len - 1] != '\n') {
			pr_warn("journal `%s': line %u is incomplete (a change never acknowledged): "
				"left out\n",
				path, no);
			break;
		}
		ret = journal_line(line, (size_t)len, base, spec, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "its journal, line %u: %s", no, why);
			break;
		}
	}
	free(line);
	fclose(f);
	if (!ret && spec->nrules > max_rules) {
		snprintf(err, errlen, "its journal: %u rules, more than limits.max_rules %u",
			 spec->nrules, max_rules);
		ret = -E2BIG;
	}
	return ret;
}

struct tf_sess *tf_sess_find(struct tf_daemon *d, const char *id)
{
	struct tf_sess *s;

	for (s = d->sessions; s; s = s->next)
		if (!strcmp(s->spec.id, id))
			return s;
	return NULL;
}

static void sess_free(struct tf_sess *s)
{
	if (!s)
		return;
	/* Never detaches: the guard's links stay, pinned. */
	if (s->at.guard_fd[0] >= 0)
		close(s->at.guard_fd[0]);
	if (s->at.guard_fd[1] >= 0)
		close(s->at.guard_fd[1]);
	tf_spec_free(&s->spec);
	tf_spec_free(&s->qspec);
	tf_policy_free(&s->policy);
	tf_evidence_free(s);
	free(s->evh.buf);
	free(s);
}

/*
 * A quarantined session's policy (docs/quarantine.md): its own spec with
 * the operator's keep_open rules in place of its allowlist; with q->reset,
 * its denials answered (an RST for a cut connection).
 */
static int qspec_make(const struct tf_daemon *d, const struct tf_spec *spec,
		      const struct tf_quarantine *q, struct tf_spec *out)
{
	unsigned int i;
	int ret = tf_spec_copy(out, spec);

	if (ret)
		return ret;
	out->audit = 0; /* a quarantine is enforced, whatever the session's mode */
	if (q->reset)
		out->on_deny = TF_ON_DENY_REJECT;
	tf_spec_free_rules(out);
	for (i = 0; !ret && i < d->cfg.nq_open; i++)
		ret = tf_spec_add_rule(out, &d->cfg.q_open[i], TF_Q_OPEN_MAX);
	if (ret)
		tf_spec_free(out);
	return ret;
}

/* The spec whose policy is in force: the session's own, or its quarantine's. */
static const struct tf_spec *in_force(const struct tf_sess *s)
{
	return s->q.on ? &s->qspec : &s->spec;
}

/*
 * Two sessions in one namespace may not share a guest address. In two
 * namespaces they may (E2B gives every VM the same address, each in its
 * own namespace): each is judged by its own device, and tf_addrs, which
 * denies a session the addresses of others, names one of them
 * (docs/netns.md).
 */
/* What says a session's namespace is gone for good (not just unreachable now). */
static int netns_gone(int err)
{
	return err == -ENOENT || err == -ENOTNAM || err == -ESTALE;
}

static void sess_resolve_error(const struct tf_spec *spec, int ret, char *err, size_t errlen)
{
	if (ret == -ENODEV)
		snprintf(err, errlen, "ifname: no such interface `%s'%s%s", spec->ifname,
			 spec->netns[0] ? " in " : "", spec->netns);
	else if (spec->netns[0] && ret == -ENOENT)
		snprintf(err, errlen, "netns: no such file `%s'", spec->netns);
	else if (spec->netns[0] && ret == -ENOTNAM)
		snprintf(err, errlen, "netns: `%s' is not a network namespace", spec->netns);
	else if (spec->netns[0] && ret == -ENOTCONN)
		snprintf(err, errlen, "netns: the daemon's netns broker is not running");
	else if (spec->netns[0])
		snprintf(err, errlen, "netns: cannot enter `%s': %s", spec->netns, strerror(-ret));
	else
		snprintf(err, errlen, "ifname: cannot look up `%s': %s", spec->ifname,
			 strerror(-ret));
}

static int addr_conflict(struct tf_daemon *d, const struct tf_spec *spec, __u64 netns, char *err,
			 size_t errlen)
{
	char buf[TF_ADDRSTRLEN];
	struct tf_sess *o;

	for (o = d->sessions; o; o = o->next) {
		if (o->dev.netns != netns)
			continue;
		if (spec->has_ip4 && o->spec.has_ip4 &&
		    !memcmp(spec->guest_ip4.addr, o->spec.guest_ip4.addr, 4)) {
			snprintf(err, errlen, "guest.ipv4: `%s' is already session `%s''s address",
				 tf_fmt_ip(TF_FAM_IPV4, spec->guest_ip4.addr, buf), o->spec.id);
			return -EEXIST;
		}
		if (spec->has_ip6 && o->spec.has_ip6 &&
		    !memcmp(spec->guest_ip6.addr, o->spec.guest_ip6.addr, 16)) {
			snprintf(err, errlen, "guest.ipv6: `%s' is already session `%s''s address",
				 tf_fmt_ip(TF_FAM_IPV6, spec->guest_ip6.addr, buf), o->spec.id);
			return -EEXIST;
		}
	}
	return 0;
}

/*
 * want_sid != 0 re-adopts a session saved by an earlier run in that slot,
 * keeping its flow table (established flows survive a restart).
 */
/*
 * May a restored session on dev have its saved slot sid back? A slot some
 * device enforced when the restore began is held already (reserve(), below)
 * and goes only to the session of that device; any other is held now.
 */
static int slot_readopt(struct tf_daemon *d, __u32 sid, const struct tf_sess_key *dev)
{
	const struct tf_sess_key *held = &d->reserved_dev[sid];
	char name[IF_NAMESIZE];
	struct tf_session v;

	if (!d->reserved_sid[sid])
		return !tf_dp_slot_hold(&d->dp, sid);
	if (tf_dp_session_get(&d->dp, dev, &v) || v.sid != sid) {
		/*
		 * Another device's entry names the slot. If that device is gone
		 * (a tap made again while the daemon was down, at a new index),
		 * nothing enforces the slot: its entry goes and the session has
		 * the slot back. Only in the daemon's own namespace can it tell.
		 */
		if (d->reserved_sid[sid] != 1 || held->netns != tf_ns_self ||
		    if_indextoname(held->ifindex, name))
			return 0;
		tf_dp_session_unset(&d->dp, held);
	}
	d->reserved_sid[sid] = 0;
	return 1;
}

int tf_sess_add(struct tf_daemon *d, const struct tf_spec *spec, __u32 want_sid, __u64 want_netns,
		const struct tf_quarantine *q, char *err, size_t errlen)
{
	const char *ns = spec->netns[0] ? spec->netns : NULL;
	char pin[TF_PIN_NAME_MAX + 1];
	struct tf_session old;
	struct tf_sess *s, *o;
	int ret, had_old, readopt;
	__u32 held = 0; /* the slot taken, until the session keeps it */

	if (tf_sess_find(d, spec->id)) {
		snprintf(err, errlen, "id: session `%s' already exists", spec->id);
		return -EEXIST;
	}
	if (d->nsessions >= d->cfg.max_sessions) {
		snprintf(err, errlen, "too many sessions (limit %u)", d->cfg.max_sessions);
		return -ENOSPC;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->at.link_in = s->at.link_out = s->at.guard_fd[0] = s->at.guard_fd[1] = -1;
	s->serial = ++d->sess_serial;
	if (ns && d->cfg.attach_mode == TF_ATTACH_XDP) {
		snprintf(err, errlen,
			 "netns: attach_mode xdp attaches only to devices in the daemon's own "
			 "namespace (`%s' needs attach_mode tc)",
			 ns);
		ret = -EOPNOTSUPP;
		goto cleanup;
	}
	/* A restored session only in the namespace it was made in (its saved cookie). */
	ret = 0;
	if (ns && want_netns) {
		__u64 cookie;

		ret = tf_ns_cookie(ns, &cookie);
		if (!ret && cookie != want_netns)
			ret = -ESTALE;
		if (ret == -ESTALE) {
			snprintf(err, errlen, "netns: `%s' is another namespace than the session's",
				 ns);
			goto cleanup;
		}
	}
	ret = ret ?: tf_ns_resolve(ns, want_netns, spec->ifname, &s->dev);
	if (ret) {
		sess_resolve_error(spec, ret, err, errlen);
		goto cleanup;
	}
	for (o = d->sessions; o; o = o->next) {
		if (o->dev.netns == s->dev.netns && o->dev.ifindex == s->dev.ifindex) {
			snprintf(err, errlen, "ifname: interface `%s' already has session `%s'",
				 spec->ifname, o->spec.id);
			ret = -EEXIST;
			goto cleanup;
		}
	}
	ret = addr_conflict(d, spec, s->dev.netns, err, errlen);
	if (ret)
		goto cleanup;
	/* The saved slot to re-adopt, else a free one (a ready one of the pool first). */
	if (want_sid && want_sid < TF_MAX_SESSIONS && !d->by_sid[want_sid] &&
	    slot_readopt(d, want_sid, &s->dev))
		s->sid = want_sid;
	else
		s->sid = tf_dp_slot_take(&d->dp);
	held = s->sid;
	if (!s->sid) {
		snprintf(err, errlen, "no free session slot");
		ret = -ENOSPC;
		goto cleanup;
	}
	readopt = want_sid && want_sid == s->sid;
	ret = tf_spec_copy(&s->spec, spec);
	if (ret)
		goto cleanup;
	if (q && q->on) {
		/* Restored quarantined: its first generation is the quarantine's. */
		s->q = *q;
		ret = qspec_make(d, spec, q, &s->qspec);
		if (ret) {
			snprintf(err, errlen, "quarantine: cannot build its policy: %s",
				 strerror(-ret));
			goto cleanup;
		}
	}
	ret = tf_policy_compile(in_force(s)->rules, in_force(s)->nrules, &s->policy);
	if (ret) {
		snprintf(err, errlen, "allow: cannot compile the rules: %s", strerror(-ret));
		goto cleanup;
	}
	/* A restart keeps the generation counter moving forward. */
	had_old = !tf_dp_session_get(&d->dp, &s->dev, &old) && old.sid == s->sid;
	s->ver = had_old ? old.policy_ver + 1 : 1;
	s->rver = s->ver; /* above every generation pinned: the old one is written beside it */

	pin_name(spec->id, s->dev.netns, pin);
	/*
	 * A device the guard's programs hold needs no links of its own in TC
	 * mode: they hand the session's packets to its programs
	 * (TF_SF_VIA_GUARD), and the add makes no tcx link (each an RCU grace
	 * period). A re-adopted session with pinned links keeps them.
	 */
	s->at.guard = d->cfg.attach_mode == TF_ATTACH_TC && !tf_dp_links_pinned(&d->dp, pin) &&
		      tf_guard_holds(d, &s->dev, s->at.guard_fd);
	/*
	 * And only if the guard's programs head both chains: a program attached
	 * ahead of them since would see the guest's packets before any
	 * judgement. Otherwise the session's own links go at the head.
	 */
	if (s->at.guard && !tf_attest_first(d, s)) {
		pr_warn("session %s: a program runs ahead of the guard's on `%s': attaching its own "
			"links\n",
			spec->id, spec->ifname);
		s->at.guard = 0;
		close(s->at.guard_fd[0]);
		close(s->at.guard_fd[1]);
		s->at.guard_fd[0] = s->at.guard_fd[1] = -1;
	}
	d->dp.via_guard[s->sid] = (unsigned char)s->at.guard;
	ret = s->at.guard ? 0 : tf_dp_attach(&d->dp, pin, ns, &s->dev, &s->at);
	if (ret) {
		snprintf(err, errlen, "ifname: cannot attach to `%s': %s", spec->ifname,
			 strerror(-ret));
		goto cleanup;
	}
	ret = tf_dp_session_install(&d->dp, in_force(s), &s->policy, s->sid, s->ver, &s->dev,
				    readopt);
	if (ret) {
		snprintf(err, errlen, "cannot write session maps: %s", strerror(-ret));
		goto undo;
	}
	/*
	 * A re-adopted slot's evictions were told up to here (after the
	 * install, which zeroes them with a flow table it had to make again);
	 * unread, they are told again.
	 */
	if (readopt && tf_dp_flows_told_get(&d->dp, s->sid, &s->flows_evicted))
		s->flows_evicted = 0;
	/*
	 * What the previous run left of this slot goes (its learnt addresses
	 * moved to the new generation in the install). A fresh slot is clean
	 * already (tf_sess_reconcile() at start, tf_sess_del() since), so an
	 * add walks no map.
	 */
	if (readopt)
		tf_dp_policy_sweep(&d->dp, s->sid, s->rver);
	/*
	 * A re-adopted session was read from its state file, which stays as it
	 * is if this write fails. A new one that cannot be saved would enforce
	 * now and vanish at the next restart: it is undone instead.
	 */
	ret = sess_save(d, s, &s->spec, &s->q);
	if (ret && !readopt) {
		snprintf(err, errlen, "cannot save the session to state_dir `%s': %s",
			 d->cfg.state_dir, strerror(-ret));
		goto undo;
	}
	s->next = d->sessions;
	d->sessions = s;
	d->by_sid[s->sid] = s;
	d->nsessions++;
	held = 0;
	pr_info("session %s: %s (ifindex %u%s%s) slot %u policy %u, %u rules\n", spec->id,
		spec->ifname, s->dev.ifindex, ns ? " in " : "", ns ? ns : "", s->sid, s->ver,
		spec->nrules);
	tf_evidence_policy(d, s, want_sid ? "restore" : "add", NULL);
	return 0;

undo:
	if (readopt) {
		/*
		 * Re-adopting after a restart: the pinned links and maps still
		 * enforce the previous run's policy. Keep them (never less than
		 * before) but for the half-written new generation, and keep the
		 * slot from being handed out.
		 */
		tf_dp_policy_erase(&d->dp, s->sid, s->rver, &s->policy);
		d->stale_sid[s->sid] = 1;
		held = 0;
		tf_dp_attach_close(&s->at);
		goto cleanup;
	}
	/* Detach last: until then the device keeps denying. */
	tf_dp_session_remove(&d->dp, spec, &s->policy, s->sid, s->rver, &s->dev);
	held = 0; /* released by the removal */
	tf_dp_detach(&d->dp, pin, &s->dev, &s->at);
cleanup:
	/*
	 * A saved session's slot that could not be re-adopted keeps its tables:
	 * its device may still enforce them (reserved as stale, as the undo
	 * above does). Any other slot taken goes back.
	 */
	if (held && want_sid && held == want_sid)
		d->stale_sid[held] = 1;
	else if (held)
		tf_dp_slot_release(&d->dp, held);
	sess_free(s);
	return ret;
}

/* A deleted session's addresses, still some other session's in another namespace: theirs again. */
static void readdress(struct tf_daemon *d, const struct tf_spec *gone)
{
	struct tf_sess *o;

	for (o = d->sessions; o; o = o->next)
		if ((gone->has_ip4 && o->spec.has_ip4 &&
		     !memcmp(gone->guest_ip4.addr, o->spec.guest_ip4.addr, 4)) ||
		    (gone->has_ip6 && o->spec.has_ip6 &&
		     !memcmp(gone->guest_ip6.addr, o->spec.guest_ip6.addr, 16)))
			if (tf_dp_addrs_set(&d->dp, &o->spec, o->sid))
				pr_warn("session %s: cannot own its addresses again\n", o->spec.id);
}

int tf_sess_del_check(struct tf_daemon *d, const struct tf_sess *s, int release, char *err,
		      size_t errlen)
{
	if (release && tf_guard_matches(&d->cfg, s->spec.ifname)) {
		snprintf(err, errlen,
			 "release: `%s' matches guard.interfaces: a guarded device is never left "
			 "unfiltered (delete without --release)",
			 s->spec.ifname);
		return -EPERM;
	}
	return 0;
}

/* Said once: an eviction that cannot be counted is not told as none. */
static void flows_unknown(struct tf_daemon *d, int err)
{
	if (!d->flows_unknown)
		pr_warn("flow-table evictions cannot be counted: %s (they are not reported until "
			"this is fixed)\n",
			tf_dp_flows_strerror(err));
	d->flows_unknown = 1;
}

/* Ask the pool's thread for a look at every session's flow table (tf_dp_flows_ask()). */
static void flows_ask(struct tf_daemon *d)
{
	struct tf_flowlook *l = tf_dp_flowlook_new(d->nsessions);
	struct tf_sess *s;
	unsigned int i = 0;

	if (!l) {
		flows_unknown(d, -ENOMEM);
		return;
	}
	for (s = d->sessions; s; s = s->next, i++) {
		l->sids[i] = s->sid;
		l->tags[i] = s->serial;
	}
	tf_dp_flows_ask(&d->dp, l);
}

/*
 * A session whose full flow table evicted flows since the last look says
 * so, in the daemon's log and the sealed log: an evicted flow's next
 * packets are judged as new, so an idle TCP connection pushed out breaks
 * (docs/operations.md, "Flow table"). From the look's answer, for the
 * sessions still there (a slot deleted and taken again since is another
 * session: its serial tells).
 */
static void flows_tell(struct tf_daemon *d)
{
	struct tf_flowlook *l = tf_dp_flows_answer(&d->dp);
	const struct tf_flowcount *fc;
	struct tf_sess *s;
	unsigned int i;
	int ret;

	if (!l)
		return;
	if (l->err) {
		flows_unknown(d, l->err);
		goto out;
	}
	d->flows_unknown = 0;
	for (i = 0; i < l->n; i++) {
		s = d->by_sid[l->sids[i]];
		fc = &l->out[i];
		if (!s || s->serial != l->tags[i] || fc->evicted <= s->flows_evicted)
			continue;
		pr_warn("session %s: its flow table is full (%llu entries, limits.flows_per_session): "
			"%llu flows evicted, %llu since the last look; an evicted TCP connection's "
			"next segment is tcp_no_flow\n",
			s->spec.id, (unsigned long long)fc->capacity,
			(unsigned long long)fc->evicted,
			(unsigned long long)(fc->evicted - s->flows_evicted));
		tf_audit_note(d, "flows",
			      "\"session\":\"%s\",\"evicted\":%llu,\"capacity\":%llu,"
			      "\"entries\":%llu,\"opened\":%llu",
			      s->spec.id, (unsigned long long)fc->evicted,
			      (unsigned long long)fc->capacity, (unsigned long long)fc->entries,
			      (unsigned long long)fc->opened);
		/* Told, then kept: a stop between the two tells it again, never not at all. */
		s->flows_evicted = fc->evicted;
		ret = tf_dp_flows_told(&d->dp, s->sid, s->flows_evicted);
		if (ret)
			pr_warn("session %s: cannot keep its evictions told for the next start: %s\n",
				s->spec.id, strerror(-ret));
	}
out:
	tf_dp_flowlook_free(l);
}

/*
 * The device goes back to the guard before anything of the session goes:
 * guard links (ahead of the session's, they pass what the session claims),
 * then the tf_sessions entry (from here the guard denies everything), then
 * the session's links and tables. A device that is gone needs no guard.
 */
int tf_sess_del(struct tf_daemon *d, const char *id, int release, char *err, size_t errlen)
{
	char path[PATH_MAX], pin[TF_PIN_NAME_MAX + 1];
	__u64 cnt[TF_CNT_SLOTS];
	struct tf_sess **pp, *s;
	int ret, i;

	for (pp = &d->sessions; *pp && strcmp((*pp)->spec.id, id); pp = &(*pp)->next)
		;
	s = *pp;
	if (!s) {
		snprintf(err, errlen, "id: no session `%s'", id);
		return -ENOENT;
	}
	ret = tf_sess_del_check(d, s, release, err, errlen);
	if (ret)
		return ret;
	flows_tell(d); /* a look's answer not told yet may have this session's evictions */
	/*
	 * The device goes back to the guard: a session judged through the
	 * guard's programs makes sure they are still there (re-attached if
	 * their pins went), one with links of its own attaches them.
	 */
	if (!release &&
	    (s->at.guard || (s->at.link_out >= 0 && tf_dp_link_ifindex(s->at.link_out)))) {
		ret = tf_guard_keep(d, s->spec.netns[0] ? s->spec.netns : NULL, &s->dev);
		/* A device that is gone (or its namespace) needs no guard. */
		if (s->at.guard && (ret == -ENODEV || ret == -ENOENT))
			ret = 0;
		if (ret) {
			snprintf(err, errlen,
				 "cannot leave `%s' denying (its guard programs: %s): the session "
				 "stays",
				 s->spec.ifname, strerror(-ret));
			return ret;
		}
	}
	if (release)
		tf_guard_release(d, &s->dev);
	pin_name(id, s->dev.netns, pin);
	tf_dp_session_unset(&d->dp, &s->dev);
	tf_dp_detach(&d->dp, pin, &s->dev, &s->at);
	/* Node totals stay monotonic (metrics.c): what the slot counted outlives it. */
	if (!tf_dp_counters(&d->dp, s->sid, cnt))
		for (i = 0; i < TF_CNT_SLOTS; i++)
			d->gone_cnt[i] += cnt[i];
	d->gone_evicted += s->flows_evicted;
	tf_dp_session_remove(&d->dp, &s->spec, &s->policy, s->sid, s->rver, &s->dev);
	if (s->rules_dirty)
		tf_dp_policy_sweep(&d->dp, s->sid,
				   0); /* what a failed undo left: never the next one's */
	/* The journal first: a state file without it is the older spec, never a journal without one. */
	sess_path(d, id, ".journal", path, sizeof(path));
	unlink(path);
	sess_path(d, id, ".json", path, sizeof(path));
	unlink(path);
	*pp = s->next;
	d->by_sid[s->sid] = NULL;
	d->nsessions--;
	readdress(d, &s->spec);
	pr_info("session %s: deleted\n", id);
	sess_free(s);
	return 0;
}

/*
 * Every second: a session in another namespace whose device is gone
 * (its egress link says ifindex 0) and whose namespace is gone too (its
 * path names no namespace, or another one) ends, as a session del would,
 * with a note in the log. A device gone from a namespace that lives on
 * keeps its session (a VMM may re-create it; docs/netns.md). Every
 * TF_FLOWS_CHECK_S, a look for flow-table evictions asked for, told at the
 * first tick after its answer.
 */
void tf_sess_tick(struct tf_daemon *d)
{
	struct tf_sess *s, *next;
	char err[TF_ERR_MAX], id[TF_ID_MAX + 1], evidence[PATH_MAX];
	__u64 cookie;
	time_t now = time(NULL);
	int ret;

	if (now == d->sess_ticked)
		return;
	d->sess_ticked = now;
	flows_tell(d);
	if (now - d->flows_ticked >= TF_FLOWS_CHECK_S && d->nsessions) {
		d->flows_ticked = now;
		flows_ask(d);
	}
	for (s = d->sessions; s; s = next) {
		next = s->next;
		if (s->at.guard)
			tf_guard_repin(d, &s->dev, s->at.guard_fd);
		if (!s->spec.netns[0] ||
		    (s->at.guard ? tf_dp_link_ifindex(s->at.guard_fd[0]) != 0 :
				   s->at.link_out < 0 || tf_dp_link_ifindex(s->at.link_out)))
			continue;
		ret = tf_ns_cookie(s->spec.netns, &cookie);
		if (!ret && cookie == s->dev.netns)
			continue;
		if (ret && !netns_gone(ret))
			continue;
		snprintf(id, sizeof(id), "%s", s->spec.id);
		pr_warn("session %s: its namespace `%s' is gone: ended\n", id, s->spec.netns);
		tf_evidence_end(d, s, evidence, sizeof(evidence));
		if (!tf_sess_del(d, id, 0, err, sizeof(err))) {
			d->policy_changes++;
			tf_audit_note(d, "session", "\"session\":\"%s\",\"ended\":\"netns_gone\"",
				      id);
		}
	}
}

/*
 * Switch s to a new generation: policy pol, compiled from next. The session
 * is saved (saved, q) before the old generation goes, by its rule change
 * journaled if it is one (change), else whole: a change that cannot be
 * saved would be lost at the next restart, so the device is switched back
 * and nothing changed. On success pol is s's (and emptied).
 */
struct tf_rule_change {
	const struct tf_rule *rule;
	int add;
};

static int sess_switch(struct tf_daemon *d, struct tf_sess *s, const struct tf_spec *next,
		       struct tf_policy *pol, const struct tf_spec *saved,
		       const struct tf_quarantine *q, const struct tf_rule_change *change,
		       char *err, size_t errlen)
{
	/*
	 * A CIDR rule's change that leaves the names as they are is applied
	 * in place, in the generation in force, through a transition version:
	 * what differs is written, not every rule
	 * (docs/architecture.md#policy-changes-generations-and-versions).
	 * Anything else, or any change after one that could not be undone in
	 * full (rules_dirty), is a generation written whole beside it.
	 */
	int inplace = change && change->rule->kind == TF_RULE_CIDR && !s->rules_dirty &&
		      !tf_policy_rebase(pol, &s->policy) && tf_policy_names_equal(pol, &s->policy);
	struct tf_dp_gen cur = { .spec = in_force(s), .policy = &s->policy, .ver = s->rver,
				 .pver = s->ver };
	struct tf_dp_gen nxt = { .spec = next, .policy = pol, .ver = inplace ? s->rver : s->ver + 1,
				 .pver = s->ver + (inplace ? 2 : 1) };
	struct tf_dp_gen back = cur;
	int ret, mixed = 0;
	__u32 now = s->ver;

	ret = inplace ? tf_dp_policy_apply(&d->dp, s->sid, &s->dev, &cur, &nxt, &now, &mixed) :
			tf_dp_policy_change(&d->dp, s->sid, &s->dev, &cur, &nxt);
	if (ret) {
		snprintf(err, errlen, "cannot write the new policy: %s", strerror(-ret));
		goto failed;
	}
	now = nxt.pver;
	ret = change ? sess_journal(d, s, change->rule, change->add) : -EAGAIN;
	if (ret) {
		ret = sess_save(d, s, saved, q);
	}
	if (ret) {
		/* Unsaved, so undone: the old policy again, under a version never used. */
		snprintf(err, errlen, "cannot save the session to state_dir `%s': %s",
			 d->cfg.state_dir, strerror(-ret));
		if (inplace) {
			back.pver = nxt.pver + 2;
			if (tf_dp_policy_apply(&d->dp, s->sid, &s->dev, &nxt, &back, &now, &mixed))
				mixed = 1;
			else
				tf_dp_policy_prune(&d->dp, s->sid, s->rver, pol, &s->policy);
		} else {
			back.pver = nxt.pver + 1;
			if (tf_dp_policy_switch(&d->dp, s->sid, &s->dev, &nxt, &back)) {
				mixed = 1;
			} else {
				now = back.pver;
				tf_dp_policy_erase(&d->dp, s->sid, nxt.ver, pol);
			}
		}
		goto failed;
	}
	if (inplace)
		tf_dp_policy_prune(&d->dp, s->sid, s->rver, &s->policy, pol);
	else
		tf_dp_policy_erase(&d->dp, s->sid, s->rver, &s->policy);
	if (!inplace && s->rules_dirty)
		tf_dp_policy_sweep(&d->dp, s->sid, nxt.ver); /* what a failed undo left */
	s->rules_dirty = 0;
	tf_policy_free(&s->policy);
	s->policy = *pol;
	memset(pol, 0, sizeof(*pol));
	s->transition = inplace ? s->ver + 1 : 0;
	s->ver = nxt.pver;
	s->rver = nxt.ver;
	return 0;

failed:
	/*
	 * A class number a failed change wrote is never used again in this
	 * generation: a packet that read it may still be on its way.
	 */
	if (pol->max_cls > s->policy.max_cls && inplace)
		s->policy.max_cls = pol->max_cls;
	if (mixed) {
		pr_warn("session `%s': its rules could not all be written back after a failed "
			"change: the next change writes them whole\n",
			s->spec.id);
		s->rules_dirty = 1;
	}
	/* The version moved (flows judged meanwhile go again): it is sealed, as the old policy. */
	if (now != s->ver) {
		s->transition = s->ver + 1;
		s->ver = now;
		tf_evidence_policy(d, s, "undone", change ? change->rule : NULL);
	}
	return ret;
}

/*
 * A rule added is appended to the session's own array of rules, which the
 * spec in force goes on describing by its count until the switch: no copy
 * of 10,000 rules for one. A deleted one needs a copy (the rules after it
 * move).
 */
int tf_sess_rule(struct tf_daemon *d, const char *id, const struct tf_rule *r, int add, char *err,
		 size_t errlen)
{
	struct tf_sess *s = tf_sess_find(d, id);
	struct tf_rule_change change = { .rule = r, .add = add };
	struct tf_spec next = {};
	struct tf_policy pol = {};
	int ret;

	if (!s) {
		snprintf(err, errlen, "id: no session `%s'", id);
		return -ENOENT;
	}
	if (s->q.on) {
		snprintf(err, errlen,
			 "id: session `%s' is quarantined: its rules change once it is resumed",
			 id);
		return -EBUSY;
	}
	if (add) {
		ret = tf_spec_add_rule(&s->spec, r, d->cfg.max_rules);
		if (!ret) {
			next = s->spec;
			s->spec.nrules--;
		}
	} else {
		ret = tf_spec_copy(&next, &s->spec);
		if (!ret)
			ret = tf_spec_del_rule(&next, r);
	}
	if (ret) {
		if (ret == -EEXIST)
			snprintf(err, errlen, "rule: session `%s' already has this rule", id);
		else if (ret == -ENOENT)
			snprintf(err, errlen, "rule: session `%s' has no such rule", id);
		else if (ret == -E2BIG)
			snprintf(err, errlen, "rule: too many rules (limit %u)", d->cfg.max_rules);
		else
			snprintf(err, errlen, "rule: %s", strerror(-ret));
		goto cleanup;
	}
	/* A CIDR rule added: the policy in force and that rule, not every rule compiled again. */
	ret = add && r->kind == TF_RULE_CIDR ? tf_policy_add_cidr(&s->policy, r, &pol) : -E2BIG;
	if (ret == -E2BIG)
		ret = tf_policy_compile(next.rules, next.nrules, &pol);
	if (ret) {
		snprintf(err, errlen, "rule: cannot compile the rules: %s", strerror(-ret));
		goto cleanup;
	}
	ret = sess_switch(d, s, &next, &pol, &next, &s->q, &change, err, errlen);
	if (ret)
		goto cleanup;
	if (add) {
		s->spec.nrules++;
		memset(&next, 0, sizeof(next)); /* s->spec's own rules */
	} else {
		tf_spec_free(&s->spec);
		s->spec = next;
		memset(&next, 0, sizeof(next));
	}
	tf_evidence_policy(d, s, add ? "rule.add" : "rule.del", r);
cleanup:
	tf_policy_free(&pol);
	if (!add)
		tf_spec_free(&next);
	return ret;
}

static int unset_slot(const struct tf_sess_key *dev, const struct tf_session *v, void *ctx)
{
	struct tf_daemon *d = ctx;

	if (v->sid == d->gone_sid)
		tf_dp_session_unset(&d->dp, dev);
	return 0;
}

/* 1 if the link pinned at <pin_dir>/links/<pin>-<dir> is still on a device. */
static int pin_live(const struct tf_daemon *d, const char *pin, const char *dir)
{
	char path[PATH_MAX];
	int fd, live;

	snprintf(path, sizeof(path), "%s/links/%s-%s", d->cfg.pin_dir, pin, dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	live = tf_dp_link_ifindex(fd) != 0;
	close(fd);
	return live;
}

/*
 * A saved session whose namespace path is gone or names another
 * namespace. Only if its links are attached to nothing is its namespace
 * really gone (a namespace dies with its devices): then its pins, its
 * tf_sessions entry and its state file go, and tf_sess_reconcile() frees
 * the slot's tables. A link still on a device means the namespace lives
 * on, unnamed (`ip netns del' only unmounts it while a VMM holds it; a
 * daemon started where the bind mount is not visible): the session keeps
 * enforcing what is pinned, as any unrestored session does (1 returned).
 */
static int restore_gone(struct tf_daemon *d, const struct tf_spec *spec, __u32 sid, __u64 netns,
			const char *state)
{
	char pin[TF_PIN_NAME_MAX + 1], path[PATH_MAX];

	pin_name(spec->id, netns, pin);
	if (pin_live(d, pin, "in") || pin_live(d, pin, "out")) {
		pr_warn("session %s: its namespace `%s' is not at that path, but its device lives: "
			"it keeps enforcing its pinned policy (tapfenced --cleanup removes it)\n",
			spec->id, spec->netns);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/links/%s-in", d->cfg.pin_dir, pin);
	unlink(path);
	snprintf(path, sizeof(path), "%s/links/%s-out", d->cfg.pin_dir, pin);
	unlink(path);
	d->gone_sid = sid;
	tf_dp_sessions_each(&d->dp, unset_slot, d);
	d->gone_sid = 0;
	unlink(state);
	sess_path(d, spec->id, ".journal", path, sizeof(path));
	unlink(path);
	pr_warn("session %s: its namespace `%s' is gone: ended\n", spec->id, spec->netns);
	tf_audit_note(d, "session", "\"session\":\"%s\",\"ended\":\"netns_gone\"", spec->id);
	return 0;
}

int tf_sess_quarantine(struct tf_daemon *d, const char *id, int on, const char *reason, int reset,
		       char *err, size_t errlen)
{
	struct tf_sess *s = tf_sess_find(d, id);
	struct tf_quarantine q = {};
	struct tf_spec next = {};
	struct tf_policy pol = {};
	int ret;

	if (!s) {
		snprintf(err, errlen, "id: no session `%s'", id);
		return -ENOENT;
	}
	if (!!s->q.on == !!on) {
		snprintf(err, errlen, "id: session `%s' is %s", id,
			 on ? "quarantined already" : "not quarantined");
		return -EALREADY;
	}
	if (on) {
		q.on = 1;
		q.reset = reset;
		q.since = time(NULL);
		snprintf(q.reason, sizeof(q.reason), "%s", reason ? reason : "");
	}
	ret = on ? qspec_make(d, &s->spec, &q, &next) : tf_spec_copy(&next, &s->spec);
	if (!ret)
		ret = tf_policy_compile(next.rules, next.nrules, &pol);
	if (ret) {
		snprintf(err, errlen, "cannot compile the %s policy: %s",
			 on ? "quarantine" : "session's", strerror(-ret));
		goto cleanup;
	}
	/*
	 * A policy change like a rule change: every established flow is
	 * re-judged by the new generation at its next packet, in either
	 * direction, and revoked unless keep_open allows it.
	 */
	ret = sess_switch(d, s, &next, &pol, &s->spec, &q, NULL, err, errlen);
	if (ret)
		goto cleanup;
	tf_spec_free(&s->qspec);
	if (on) {
		s->qspec = next;
		memset(&next, 0, sizeof(next));
	}
	s->q = q;
	tf_evidence_policy(d, s, on ? "quarantine" : "resume", NULL);
	pr_info("session %s: %s (policy %u)\n", id, on ? "quarantined" : "resumed", s->ver);
cleanup:
	tf_policy_free(&pol);
	tf_spec_free(&next);
	return ret;
}

int tf_sess_rejects(const struct tf_daemon *d, const struct tf_sess *s)
{
	return s->spec.on_deny == TF_ON_DENY_REJECT ||
	       (s->spec.on_deny == TF_ON_DENY_DEFAULT && d->cfg.on_deny_reject);
}

int tf_sess_mode(struct tf_daemon *d, const char *id, int audit, char *err, size_t errlen)
{
	struct tf_sess *s = tf_sess_find(d, id);
	struct tf_spec spec = {}, next = {};
	struct tf_policy pol = {};
	int ret;

	if (!s) {
		snprintf(err, errlen, "id: no session `%s'", id);
		return -ENOENT;
	}
	if (!!s->spec.audit == !!audit) {
		snprintf(err, errlen, "mode: session `%s' is in %s mode already", id,
			 audit ? "audit" : "enforce");
		return -EALREADY;
	}
	ret = tf_spec_copy(&spec, &s->spec);
	if (!ret)
		ret = tf_spec_copy(&next, in_force(s));
	if (ret)
		goto cleanup;
	spec.audit = audit;
	if (!s->q.on)
		next.audit = audit; /* a quarantine stays enforced */
	ret = tf_policy_compile(next.rules, next.nrules, &pol);
	if (ret) {
		snprintf(err, errlen, "cannot compile the policy: %s", strerror(-ret));
		goto cleanup;
	}
	/* A new generation: flows opened in audit mode are re-judged by enforce's at their next packet. */
	ret = sess_switch(d, s, &next, &pol, &spec, &s->q, NULL, err, errlen);
	if (ret)
		goto cleanup;
	tf_spec_free(&s->spec);
	s->spec = spec;
	memset(&spec, 0, sizeof(spec));
	if (s->q.on) {
		tf_spec_free(&s->qspec);
		s->qspec = next;
		memset(&next, 0, sizeof(next));
	}
	tf_evidence_policy(d, s, audit ? "mode.audit" : "mode.enforce", NULL);
	pr_info("session %s: %s mode (policy %u)\n", id, audit ? "audit" : "enforce", s->ver);
cleanup:
	tf_policy_free(&pol);
	tf_spec_free(&next);
	tf_spec_free(&spec);
	return ret;
}

static int restore_one(struct tf_daemon *d, const char *path)
{
	/* The journal may take the spec to the limit and back: the limit is the result's. */
	struct tf_spec_limits lim = { .max_rules = d->cfg.max_rules };
	char err[TF_ERR_MAX] = "", journal[PATH_MAX];
	struct tf_spec spec = {};
	json_error_t jerr;
	struct tf_quarantine q = {};
	json_t *o, *qo;
	json_int_t slot, cookie;
	int ret, ended = 0;

	o = json_load_file(path, 0, &jerr);
	if (!o) {
		pr_warn("state file `%s': %s\n", path, jerr.text);
		return -EINVAL;
	}
	slot = json_integer_value(json_object_get(o, "slot"));
	cookie = json_integer_value(json_object_get(o, "netns_cookie"));
	qo = json_object_get(o, "quarantine");
	if (qo) {
		q.on = 1;
		q.since = (time_t)json_integer_value(json_object_get(qo, "since"));
		q.reset = json_is_true(json_object_get(qo, "reset"));
		snprintf(q.reason, sizeof(q.reason), "%s",
			 json_string_value(json_object_get(qo, "reason")) ?: "");
	}
	ret = tf_spec_from_json(json_object_get(o, "spec"), &lim, &spec, err, sizeof(err));
	if (!ret) {
		sess_path(d, spec.id, ".journal", journal, sizeof(journal));
		ret = journal_replay(journal, json_integer_value(json_object_get(o, "journal_base")),
				     &spec, lim.max_rules, err, sizeof(err));
		if (ret && !err[0])
			snprintf(err, sizeof(err), "its journal: %s", strerror(-ret));
	}
	if (!ret)
		ret = tf_sess_add(d, &spec, (__u32)slot, spec.netns[0] ? (__u64)cookie : 0, &q, err,
				  sizeof(err));
	if (ret && spec.netns[0] && netns_gone(ret) && slot > 0 && slot < TF_MAX_SESSIONS)
		ended = !restore_gone(d, &spec, (__u32)slot, (__u64)cookie, path);
	if (ret && !ended)
		pr_warn("cannot restore session from `%s': %s\n", path, err);
	tf_spec_free(&spec);
	json_decref(o);
	return ret;
}

/* A slot some device enforces, held before any session is restored. */
static int reserve(const struct tf_sess_key *dev, const struct tf_session *v, void *ctx)
{
	struct tf_daemon *d = ctx;

	if (!v->sid || v->sid >= TF_MAX_SESSIONS)
		return 0;
	if (d->reserved_sid[v->sid])
		d->reserved_sid[v->sid] = 2; /* two devices on one slot: never handed over */
	else if (!tf_dp_slot_hold(&d->dp, v->sid))
		d->reserved_sid[v->sid] = 1;
	d->reserved_dev[v->sid] = *dev;
	return 0;
}

/*
 * Every slot a device enforces is held first: a session restored into a
 * fresh slot (its state file names none, or one it cannot have) must not
 * be handed one whose pinned policy a device still enforces because its
 * own session was not restored; that device would enforce the newcomer's
 * policy. tf_sess_reconcile() settles what no session took back.
 */
int tf_sess_restore(struct tf_daemon *d)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	struct dirent *de;
	size_t n;
	DIR *dp;

	tf_dp_sessions_each(&d->dp, reserve, d);
	snprintf(dir, sizeof(dir), "%s/sessions", d->cfg.state_dir);
	dp = opendir(dir);
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dp))) {
		n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/*
		 * A session that cannot be restored keeps enforcing what its pinned
		 * links and maps hold (never less); --cleanup removes it.
		 */
		(void)restore_one(d, path);
	}
	closedir(dp);
	return 0;
}

/* Slots some device still enforces although no session was restored into them. */
static int note_stale(const struct tf_sess_key *dev, const struct tf_session *v, void *ctx)
{
	struct tf_daemon *d = ctx;

	if (v->sid && v->sid < TF_MAX_SESSIONS && !d->by_sid[v->sid]) {
		d->stale_sid[v->sid] = 1;
		(void)tf_dp_slot_hold(&d->dp, v->sid); /* -EBUSY: two devices on one slot */
		pr_warn("ifindex %u (netns cookie %llu) keeps enforcing the pinned policy of slot %u, "
			"whose session was not restored; a session add on that device or tapfenced "
			"--cleanup replaces it\n",
			dev->ifindex, (unsigned long long)dev->netns, v->sid);
	}
	return 0;
}

static int keep_sid(__u32 sid, void *ctx)
{
	const struct tf_daemon *d = ctx;

	return sid < TF_MAX_SESSIONS && (d->by_sid[sid] || d->stale_sid[sid]);
}

/*
 * After restore: reserve the slots of devices still enforcing an
 * unrestored session's pinned policy, then remove every map entry of any
 * other slot, once, so that a new session never inherits a leftover.
 */
void tf_sess_reconcile(struct tf_daemon *d)
{
	__u32 sid;

	tf_dp_sessions_each(&d->dp, note_stale, d);
	/* A held slot no device enforces any more (restore_gone()) is free again. */
	for (sid = 1; sid < TF_MAX_SESSIONS; sid++) {
		if (d->reserved_sid[sid] && !d->by_sid[sid] && !d->stale_sid[sid])
			tf_dp_slot_release(&d->dp, sid);
		d->reserved_sid[sid] = 0;
	}
	tf_dp_sweep_orphans(&d->dp, keep_sid, d);
}

/*
 * At a stop: every journal folded into its state file, so the next start
 * replays nothing and an older tapfenced (which reads no journal) finds
 * every session as it is.
 */
void tf_sess_fold_all(struct tf_daemon *d)
{
	struct tf_sess *s;

	for (s = d->sessions; s; s = s->next)
		if (s->journal_n && sess_save(d, s, &s->spec, &s->q))
			pr_warn("session %s: its journal stays (replayed at the next start)\n",
				s->spec.id);
}

void tf_sess_forget_all(struct tf_daemon *d)
{
	struct tf_sess *s;

	while ((s = d->sessions)) {
		d->sessions = s->next;
		d->by_sid[s->sid] = NULL;
		if (s->at.link_in >= 0)
			close(s->at.link_in);
		if (s->at.link_out >= 0)
			close(s->at.link_out);
		sess_free(s);
	}
	d->nsessions = 0;
}
