// SPDX-License-Identifier: GPL-2.0
/*
 * tapfence attest: a DSSE envelope around an in-toto Statement v1 saying
 * which programs enforce which policy on this node, signed with the node's
 * log key (docs/attest.md). The inputs are measured again every
 * ATTEST_POLL_S seconds once an attestation was issued: when they change
 * (a rule, a session, the floor, a program on a device), the attestation is
 * stale, in `tapfence stats' and as a sealed line of the log. The last
 * issued digest is kept in <state_dir>/attest.json, so a daemon restarted
 * with other inputs knows the attestation before it is stale.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <openssl/evp.h>

#include "tapfence.skel.h"
#include "common/log.h"
#include "common/seal.h"
#include "daemon.h"
#include "netns.h"

#define ATTEST_POLL_S 1
/* uapi values newer than Debian 12's headers (as in datapath_attach.c). */
#define TCX_INGRESS   46
#define TCX_EGRESS    47

struct tf_attest {
	__u8 exe[TF_HASH_LEN], obj[TF_HASH_LEN], config[TF_HASH_LEN];
	char config_path[PATH_MAX];
	/* the inputs, in four parts, as the last attestation measured them */
	int issued;
	__u8 parts[4][TF_HASH_LEN];
	char issued_at[48];
	int stale;
	char why[160];
	struct timespec polled;
};

enum { P_CONFIG, P_FLOOR, P_SESSIONS, P_PROGRAMS };
static const char *const part_names[] = { "the operator config", "the hard floor",
					  "a session or its policy", "the programs on a device" };

static void hexstr(const __u8 h[TF_HASH_LEN], char out[2 * TF_HASH_LEN + 1])
{
	tf_hex(h, TF_HASH_LEN, out);
}

static int file_digest(const char *path, __u8 out[TF_HASH_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char buf[65536];
	ssize_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok;

	ok = ctx && fd >= 0 && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	while (ok && (n = read(fd, buf, sizeof(buf))) > 0)
		ok = EVP_DigestUpdate(ctx, buf, n);
	ok = ok && !n && EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -EIO;
}

static int buf_digest(const void *p, size_t n, __u8 out[TF_HASH_LEN])
{
	return EVP_Digest(p, n, out, NULL, EVP_sha256(), NULL) ? 0 : -EIO;
}

int tf_attest_init(struct tf_daemon *d, const char *config_path)
{
	struct tf_attest *a = calloc(1, sizeof(*a));
	const void *elf;
	size_t n;

	if (!a)
		return -ENOMEM;
	d->attest = a;
	elf = tapfence_bpf__elf_bytes(&n);
	if (file_digest("/proc/self/exe", a->exe) || buf_digest(elf, n, a->obj) ||
	    (config_path ? file_digest(config_path, a->config) : buf_digest("", 0, a->config))) {
		pr_warn("attest: cannot measure the daemon, its BPF object or its config\n");
		return -EIO;
	}
	if (config_path && !realpath(config_path, a->config_path))
		snprintf(a->config_path, sizeof(a->config_path), "%s", config_path);
	return 0;
}

void tf_attest_close(struct tf_daemon *d)
{
	free(d->attest);
	d->attest = NULL;
}

static int cmp_entry(const void *x, const void *y)
{
	return memcmp(x, y, sizeof(struct tf_floor_key) + sizeof(struct tf_floor_val));
}

/* SHA-256 over the hard floor as the map holds it, sorted. */
static int floor_digest(struct tf_daemon *d, __u8 out[TF_HASH_LEN], unsigned int *count)
{
	enum { E = sizeof(struct tf_floor_key) + sizeof(struct tf_floor_val) };
	int fd = bpf_map__fd(d->dp.skel->maps.tf_floor), err;
	struct tf_floor_key k, next, *prev = NULL;
	unsigned int n = 0, cap = bpf_map__max_entries(d->dp.skel->maps.tf_floor);
	__u8 *all = calloc(cap, E);

	if (!all)
		return -ENOMEM;
	while (n < cap && !bpf_map_get_next_key(fd, prev, &next)) {
		memcpy(all + n * E, &next, sizeof(next));
		if (!bpf_map_lookup_elem(fd, &next, all + n * E + sizeof(next)))
			n++;
		k = next;
		prev = &k;
	}
	qsort(all, n, E, cmp_entry);
	err = buf_digest(all, (size_t)n * E, out);
	free(all);
	*count = n;
	return err;
}

static __u32 prog_id(struct bpf_program *p)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (!p || bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return 0;
	return info.id;
}

/*
 * The programs on one hook of a device, in the kernel's order; *first is
 * whether ours runs first. Only our own programs can be named (another
 * program's id is all BPF_PROG_QUERY gives without CAP_SYS_ADMIN).
 */
static json_t *chain(const struct tf_sess *s, __u32 type, struct bpf_program *ours, int *first)
{
	__u32 ids[64], our = prog_id(ours), i, n;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char tag[17];
	json_t *arr = json_array();

	*first = 0;
	if (tf_ns_query(s->spec.netns[0] ? s->spec.netns : NULL, &s->dev, type, ids, 64, &n))
		return arr;
	*first = n > 0 && ids[0] == our;
	if (our)
		bpf_obj_get_info_by_fd(bpf_program__fd(ours), &info, &len);
	tf_hex(info.tag, 8, tag);
	for (i = 0; i < n; i++) {
		if (ids[i] == our)
			json_array_append_new(arr, json_pack("{s:I, s:b, s:s, s:s}", "id",
							     (json_int_t)ids[i], "tapfence", 1,
							     "name", info.name, "tag", tag));
		else
			json_array_append_new(arr, json_pack("{s:I, s:b}", "id", (json_int_t)ids[i],
							     "tapfence", 0));
	}
	return arr;
}

/*
 * A device's ingress: its XDP program, then its tcx ingress chain. XDP runs
 * first: in XDP mode it must be ours and tc_gso_guard must head the tcx
 * chain (a program ahead of the guard could pass what XDP cannot see); in
 * TC mode any XDP program at all is ahead of tapfence.
 */
static json_t *ingress(struct tf_daemon *d, const struct tf_sess *s, int xdp, int *first)
{
	__u32 id = 0, n = 0,
	      our = xdp && d->dp.xdp_skel ? prog_id(d->dp.xdp_skel->progs.xdp_from_guest) : 0;
	/* A session with no links of its own is judged through the guard's programs. */
	json_t *in = chain(s, TCX_INGRESS,
			   xdp	       ? d->dp.skel->progs.tc_gso_guard :
			   s->at.guard ? d->dp.skel->progs.tc_guard_from_guest :
					 d->dp.skel->progs.tc_from_guest,
			   first);

	/* Unknown counts as a program ahead of us. */
	if (tf_ns_query(s->spec.netns[0] ? s->spec.netns : NULL, &s->dev, BPF_XDP, &id, 1, &n))
		id = ~0U;
	if (xdp || id) {
		*first = *first && xdp && id && id == our;
		json_array_insert_new(in, 0,
				      json_pack("{s:s, s:I, s:b}", "hook", "xdp", "id",
						(json_int_t)id, "tapfence",
						xdp && id && id == our));
	}
	return in;
}

static struct bpf_program *egress_prog(struct tf_daemon *d, const struct tf_sess *s)
{
	return s->at.guard ? d->dp.skel->progs.tc_guard_to_guest : d->dp.skel->progs.tc_to_guest;
}

int tf_attest_first(struct tf_daemon *d, const struct tf_sess *s)
{
	int fin, fout, xdp = d->cfg.attach_mode == TF_ATTACH_XDP;

	json_decref(ingress(d, s, xdp, &fin));
	json_decref(chain(s, TCX_EGRESS, egress_prog(d, s), &fout));
	return fin && fout;
}

/*
 * The measured state of the node: its four parts' digests, and, if
 * predicate is not NULL, the predicate's sessions (all, or only one).
 */
static int measure(struct tf_daemon *d, const char *only, __u8 parts[4][TF_HASH_LEN],
		   json_t *predicate)
{
	struct tf_attest *a = d->attest;
	json_t *sessions = json_array(), *in, *out, *sj;
	EVP_MD_CTX *ss = EVP_MD_CTX_new(), *ps = EVP_MD_CTX_new();
	char hex[2 * TF_HASH_LEN + 1], netns[64] = "";
	const char *spec_hex;
	unsigned int nfloor = 0;
	struct tf_sess *s;
	struct stat st;
	int fin, fout, xdp = d->cfg.attach_mode == TF_ATTACH_XDP, err = -EIO;

	if (!ss || !ps || !EVP_DigestInit_ex(ss, EVP_sha256(), NULL) ||
	    !EVP_DigestInit_ex(ps, EVP_sha256(), NULL))
		goto out;
	memcpy(parts[P_CONFIG], a->config, TF_HASH_LEN);
	if (floor_digest(d, parts[P_FLOOR], &nfloor))
		goto out;
	if (!stat("/proc/self/ns/net", &st))
		snprintf(netns, sizeof(netns), "net:[%lu]", (unsigned long)st.st_ino);
	/* Every session add, delete and rule change counts (a deleted and re-added session too). */
	EVP_DigestUpdate(ss, &d->policy_changes, sizeof(d->policy_changes));
	for (s = d->sessions; s; s = s->next) {
		EVP_DigestUpdate(ss, s->spec.id, strlen(s->spec.id) + 1);
		EVP_DigestUpdate(ss, &s->sid, sizeof(s->sid));
		EVP_DigestUpdate(ss, &s->ver, sizeof(s->ver));
		EVP_DigestUpdate(ss, &s->dev, sizeof(s->dev));
		EVP_DigestUpdate(ss, s->spec.netns, strlen(s->spec.netns) + 1);
		in = ingress(d, s, xdp, &fin);
		out = chain(s, TCX_EGRESS, egress_prog(d, s), &fout);
		sj = json_pack("{s:o, s:o}", "in", in, "out", out);
		if (sj) {
			char *txt = json_dumps(sj, JSON_COMPACT | JSON_SORT_KEYS);

			if (txt)
				EVP_DigestUpdate(ps, txt, strlen(txt));
			free(txt);
		}
		if (predicate && (!only || !strcmp(only, s->spec.id))) {
			spec_hex = tf_sess_spec_sha256(s);
			if (!spec_hex) {
				json_decref(sj);
				goto out;
			}
			json_array_append_new(
				sessions,
				json_pack("{s:s, s:s, s:I, s:s, s:I, s:s, s:O, s:b}", "id",
					  s->spec.id, "ifname", s->spec.ifname, "ifindex",
					  (json_int_t)s->dev.ifindex, "netns",
					  s->spec.netns[0] ? s->spec.netns : netns,
					  "policy_generation", (json_int_t)s->ver, "spec_sha256",
					  spec_hex, "programs", sj, "tapfence_first", fin && fout));
		}
		json_decref(sj);
	}
	if (!EVP_DigestFinal_ex(ss, parts[P_SESSIONS], NULL) ||
	    !EVP_DigestFinal_ex(ps, parts[P_PROGRAMS], NULL))
		goto out;
	if (predicate) {
		hexstr(parts[P_FLOOR], hex);
		json_object_set_new(predicate, "floor",
				    json_pack("{s:s, s:I}", "sha256", hex, "entries",
					      (json_int_t)nfloor));
		json_object_set(predicate, "sessions", sessions);
	}
	err = 0;
out:
	json_decref(sessions);
	EVP_MD_CTX_free(ss);
	EVP_MD_CTX_free(ps);
	return err;
}

static void inputs_digest(__u8 parts[4][TF_HASH_LEN], char hex[2 * TF_HASH_LEN + 1])
{
	__u8 h[TF_HASH_LEN];

	buf_digest(parts, 4 * TF_HASH_LEN, h);
	hexstr(h, hex);
}

/* What the daemon remembers of its last attestation, for the next start. */
static void save_issued(struct tf_daemon *d)
{
	struct tf_attest *a = d->attest;
	char path[PATH_MAX], tmp[PATH_MAX + 8], hex[4][2 * TF_HASH_LEN + 1];
	json_t *o;
	int i;

	for (i = 0; i < 4; i++)
		hexstr(a->parts[i], hex[i]);
	o = json_pack("{s:s, s:[s, s, s, s]}", "issued_at", a->issued_at, "parts", hex[0], hex[1],
		      hex[2], hex[3]);
	snprintf(path, sizeof(path), "%s/attest.json", d->cfg.state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!o || json_dump_file(o, tmp, JSON_COMPACT) || rename(tmp, path))
		pr_warn("attest: cannot save `%s'\n", path);
	json_decref(o);
}

static void mark_stale(struct tf_daemon *d, const char *why)
{
	struct tf_attest *a = d->attest;

	if (a->stale)
		return;
	a->stale = 1;
	snprintf(a->why, sizeof(a->why), "%s", why);
	pr_info("attest: the attestation issued at %s is stale: %s changed\n", a->issued_at, why);
	tf_audit_note(d, "attestation",
		      "\"verdict\":\"stale\",\"issued_at\":\"%s\",\"reason\":\"%s changed\"",
		      a->issued_at, why);
}

/* After start: an attestation issued by an earlier run, measured against this one. */
void tf_attest_restore(struct tf_daemon *d)
{
	struct tf_attest *a = d->attest;
	char path[PATH_MAX], hex[2 * TF_HASH_LEN + 1];
	__u8 now[4][TF_HASH_LEN];
	json_t *o, *parts;
	int i;

	snprintf(path, sizeof(path), "%s/attest.json", d->cfg.state_dir);
	o = json_load_file(path, 0, NULL);
	parts = json_object_get(o, "parts");
	if (!o || json_array_size(parts) != 4 || measure(d, NULL, now, NULL)) {
		json_decref(o);
		return;
	}
	snprintf(a->issued_at, sizeof(a->issued_at), "%s",
		 json_string_value(json_object_get(o, "issued_at")) ?: "?");
	a->issued = 1;
	for (i = 0; i < 4; i++) {
		const char *want = json_string_value(json_array_get(parts, i)) ?: "";

		hexstr(now[i], hex);
		if (strcmp(hex, want)) {
			mark_stale(d, part_names[i]);
			break;
		}
	}
	memcpy(a->parts, now, sizeof(now));
	json_decref(o);
}

void tf_attest_tick(struct tf_daemon *d)
{
	struct tf_attest *a = d->attest;
	__u8 now[4][TF_HASH_LEN];
	struct timespec t;
	int i;

	if (!a || !a->issued || a->stale)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (t.tv_sec - a->polled.tv_sec < ATTEST_POLL_S)
		return;
	a->polled = t;
	/* What cannot be measured cannot be vouched for: fail closed. */
	if (measure(d, NULL, now, NULL)) {
		mark_stale(d, "the measurement itself (it failed)");
		return;
	}
	for (i = 0; i < 4; i++)
		if (memcmp(now[i], a->parts[i], TF_HASH_LEN)) {
			mark_stale(d, part_names[i]);
			return;
		}
}

json_t *tf_attest_stats(struct tf_daemon *d)
{
	struct tf_attest *a = d->attest;

	if (!a || !a->issued)
		return json_pack("{s:b}", "issued", 0);
	return json_pack("{s:b, s:s, s:b, s:s?}", "issued", 1, "issued_at", a->issued_at, "stale",
			 a->stale, "why", a->stale ? a->why : NULL);
}

/*
 * The last isolation battery (tools/battery.sh --out <state_dir>/battery.json):
 * its digest and result. The claim is "verified" only with a report of this
 * very build with no critical escape and no broken probe; else "held".
 */
static json_t *battery(struct tf_daemon *d, const char **claim, char *why, size_t whylen)
{
	struct tf_attest *a = d->attest;
	char path[PATH_MAX], hex[2 * TF_HASH_LEN + 1], exe[2 * TF_HASH_LEN + 1];
	__u8 h[TF_HASH_LEN];
	json_t *r, *out, *p;
	json_int_t crit, broken;
	const char *build;
	size_t i, nprobes = 0;

	*claim = "held";
	snprintf(path, sizeof(path), "%s/battery.json", d->cfg.state_dir);
	r = json_load_file(path, 0, NULL);
	if (!r || file_digest(path, h)) {
		snprintf(why, whylen, "no battery report in the state dir (battery.json)");
		json_decref(r);
		return json_null();
	}
	hexstr(h, hex);
	hexstr(a->exe, exe);
	/* Counted again from the probes, not taken from the report's totals. */
	crit = broken = 0;
	json_array_foreach(json_object_get(r, "probes"), i, p) {
		const char *verdict = json_string_value(json_object_get(p, "verdict")) ?: "";

		crit += !strcmp(verdict, "escaped") &&
			!strcmp(json_string_value(json_object_get(p, "severity")) ?: "",
				"critical");
		broken += strcmp(verdict, "escaped") && strcmp(verdict, "blocked");
		nprobes++;
	}
	build = json_string_value(json_object_get(r, "tapfenced_sha256")) ?: "";
	if (strcmp(build, exe))
		snprintf(why, whylen, "the battery ran against another build");
	else if (crit || broken || !nprobes)
		snprintf(why, whylen,
			 "the battery found %lld critical escape(s) and %lld broken probe(s)",
			 (long long)crit, (long long)broken);
	else if (!json_is_true(json_object_get(r, "allowed_reached")))
		snprintf(why, whylen, "the battery's allowed probe did not get through");
	else
		*claim = "verified";
	out = json_pack("{s:s, s:O?, s:O?, s:I, s:I, s:b}", "sha256", hex, "time",
			json_object_get(r, "time"), "result", json_object_get(r, "result"),
			"critical_escapes", crit, "broken_probes", broken, "same_build",
			!strcmp(build, exe));
	json_decref(r);
	return out;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok = f && fgets(buf, (int)len, f);

	if (f)
		fclose(f);
	buf[ok ? strcspn(buf, "\n") : 0] = 0;
	return ok ? 0 : -errno;
}

json_t *tf_attest_sign(struct tf_daemon *d, const json_t *stmt)
{
	char vkey[TF_VKEY_MAX], *payload, *pae = NULL, *b64p = NULL, sig64[128];
	json_t *env = NULL, *sigs = json_array();
	const struct tf_signer *s;
	size_t plen, palen;
	__u8 sig[TF_SIG_MAX];
	int i, slen;

	payload = json_dumps(stmt, JSON_COMPACT | JSON_SORT_KEYS);
	if (!payload || !sigs || !tf_audit_signer(d, 0))
		goto out;
	plen = strlen(payload);
	palen = strlen(TF_DSSE_PAYLOAD_TYPE) + plen + 64;
	pae = malloc(palen);
	b64p = malloc(4 * ((plen + 2) / 3) + 1);
	if (!pae || !b64p)
		goto out;
	palen = tf_dsse_pae(TF_DSSE_PAYLOAD_TYPE, payload, plen, pae, palen);
	if (!palen ||
	    tf_b64_encode((const __u8 *)payload, plen, b64p, 4 * ((plen + 2) / 3) + 1) < 0)
		goto out;
	/* One DSSE signature per node key: Ed25519, and ECDSA P-256 when configured. */
	for (i = 0; i < 2; i++) {
		if (!(s = tf_audit_signer(d, i)))
			continue;
		if ((slen = tf_sign_raw(s, pae, palen, sig)) < 0 ||
		    tf_b64_encode(sig, slen, sig64, sizeof(sig64)) < 0 ||
		    tf_signer_vkey(s, vkey, sizeof(vkey)) < 0 ||
		    json_array_append_new(sigs,
					  json_pack("{s:s, s:s}", "keyid", vkey, "sig", sig64)))
			goto out;
	}
	env = json_pack("{s:s, s:s, s:O}", "payloadType", TF_DSSE_PAYLOAD_TYPE, "payload", b64p,
			"signatures", sigs);
out:
	json_decref(sigs);
	free(payload);
	free(pae);
	free(b64p);
	return env;
}

json_t *tf_attest_make(struct tf_daemon *d, const char *only, char *err, size_t errlen)
{
	struct tf_attest *a = d->attest;
	char hex[3][2 * TF_HASH_LEN + 1], in_hex[2 * TF_HASH_LEN + 1], boot[64] = "";
	__u8 parts[4][TF_HASH_LEN];
	json_t *pred = NULL, *stmt = NULL, *env = NULL;
	const struct tf_signer *signer = tf_audit_signer(d, 0);
	const char *note = tf_audit_last_note(d), *claim;
	char claim_why[160] = "";
	json_t *bat;
	struct utsname u;
	struct timespec ts;
	struct tm tm;

	if (!a || !signer) {
		snprintf(err, errlen, "attest: no signing key (the sealed log is not open)");
		return NULL;
	}
	if (only && !tf_sess_find(d, only)) {
		snprintf(err, errlen, "session: no session `%s'", only);
		return NULL;
	}
	uname(&u);
	read_line("/proc/sys/kernel/random/boot_id", boot, sizeof(boot));
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(a->issued_at, sizeof(a->issued_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	hexstr(a->exe, hex[0]);
	hexstr(a->obj, hex[1]);
	hexstr(a->config, hex[2]);
	bat = battery(d, &claim, claim_why, sizeof(claim_why));
	pred = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:i, s:{s:s?, s:s}, s:s?, s:o, s:s, s:s?}",
			 "issued_at", a->issued_at, "node", "name", d->cfg.log_name, "kernel",
			 u.release, "boot_id", boot, "version", TF_VERSION, "abi", TF_ABI_VERSION,
			 "config", "path", a->config_path[0] ? a->config_path : NULL, "sha256",
			 hex[2], "log_checkpoint", note, "battery", bat, "claim", claim,
			 "claim_why", strcmp(claim, "verified") ? claim_why : NULL);
	if (!pred || measure(d, only, parts, pred)) {
		snprintf(err, errlen, "attest: cannot measure the node");
		goto out;
	}
	inputs_digest(parts, in_hex);
	json_object_set_new(pred, "inputs_sha256", json_string(in_hex));
	json_object_set_new(pred, "scope", json_string(only ? "session" : "node"));
	stmt = json_pack("{s:s, s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}], s:s, s:O}", "_type",
			 "https://in-toto.io/Statement/v1", "subject", "name", "tapfenced",
			 "digest", "sha256", hex[0], "name", "tapfence.bpf.o", "digest", "sha256",
			 hex[1], "predicateType", TF_ATTEST_PREDICATE, "predicate", pred);
	env = stmt ? tf_attest_sign(d, stmt) : NULL;
	if (!env) {
		snprintf(err, errlen, "attest: cannot sign");
		goto out;
	}
	memcpy(a->parts, parts, sizeof(parts));
	a->issued = 1;
	a->stale = 0;
	a->why[0] = 0;
	clock_gettime(CLOCK_MONOTONIC, &a->polled);
	save_issued(d);
	tf_audit_note(d, "attestation",
		      "\"verdict\":\"issued\",\"issued_at\":\"%s\",\"inputs_sha256\":\"%s\"",
		      a->issued_at, in_hex);
out:
	json_decref(pred);
	json_decref(stmt);
	return env;
}
