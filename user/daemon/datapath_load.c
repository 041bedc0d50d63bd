// SPDX-License-Identifier: GPL-2.0
/*
 * Loading the datapath: open the object, size its maps and set its knobs
 * from the config, adopt the maps an earlier run pinned (same ABI only),
 * load, pin the rest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "common/log.h"
#include "datapath_int.h"

static const char *map_pin_path(const struct tf_dp *dp, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/maps/%s", dp->cfg->pin_dir, name);
	return buf;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	char *p;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The slot tables' pins (datapath_slots.c) an earlier run left: removed,
 * to be made again from the outer maps, which are the truth, as each
 * slot is re-adopted (while the daemon can still open a map by id). A
 * symlink in the directory's place (its owner may be the config's "user")
 * is replaced by a directory, never followed.
 */
static int slot_pins_reset(const char *dir)
{
	int err = mkdir_p(dir, 0700), dfd;
	struct dirent *e;
	DIR *d;

	if (err)
		return err;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && (errno == ELOOP || errno == ENOTDIR) && !unlink(dir) && !mkdir(dir, 0700))
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && unlinkat(dfd, e->d_name, 0) && !err)
			err = -errno;
	closedir(d);
	return err;
}

/*
 * Maps holding state worth pinning: not rodata, not the per-CPU scratch
 * (never pinned, so its size may change across upgrades), not the zeroed
 * template.
 */
static int map_is_state(const struct bpf_map *map)
{
	static const char *const scratch[] = { "tf_dnsbuf", "tf_tlsscratch", "tf_tlszero" };
	size_t i;

	if (bpf_map__is_internal(map))
		return 0;
	for (i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
		if (!strcmp(bpf_map__name(map), scratch[i]))
			return 0;
	return 1;
}

/* A pinned map keeps the size it was created with; say so when the config asks for another. */
static void warn_resized(const struct bpf_map *map, int fd, const char *path)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.max_entries == bpf_map__max_entries(map))
		return;
	pr_warn("pinned map `%s' keeps %u entries, not the configured %u "
		"(tapfenced --cleanup, then start again, to resize)\n",
		path, info.max_entries, bpf_map__max_entries(map));
}

/*
 * Pinned maps are adopted only from a build with this ABI: their keys and
 * values are what the programs read. Pins from another (or from before the
 * marker) refuse the start, and the old programs keep enforcing.
 */
static int maps_check_abi(const struct tf_dp *dp)
{
	char path[PATH_MAX], probe[PATH_MAX];
	__u32 zero = 0, abi = 0;
	int fd, err = 0;

	fd = bpf_obj_get(map_pin_path(dp, "tf_abi", path, sizeof(path)));
	if (fd < 0) {
		if (access(map_pin_path(dp, "tf_sessions", probe, sizeof(probe)), F_OK))
			return 0; /* nothing pinned yet */
	} else if (bpf_map_lookup_elem(fd, &zero, &abi)) {
		err = -errno;
	}
	if (fd >= 0)
		close(fd);
	if (!err && abi == TF_ABI_VERSION)
		return 0;
	pr_warn("the maps pinned in `%s/maps' have ABI %u, this build has ABI %u: "
		"run tapfenced --cleanup to start over (the pinned programs keep enforcing meanwhile)\n",
		dp->cfg->pin_dir, abi, TF_ABI_VERSION);
	return -EPROTO;
}

/* Reuse every map already pinned (maps_pin() pins the rest after load). */
static int maps_reuse(struct tf_dp *dp)
{
	struct bpf_map *map;
	char path[PATH_MAX];
	int fd, err;

	err = maps_check_abi(dp);
	if (err)
		return err;
	bpf_object__for_each_map(map, dp->skel->obj) {
		if (map_is_state(map)) {
			map_pin_path(dp, bpf_map__name(map), path, sizeof(path));
			fd = bpf_obj_get(path);
			if (fd < 0)
				continue;
			warn_resized(map, fd, path);
			err = bpf_map__reuse_fd(map, fd);
			close(fd);
			if (err) {
				pr_warn("pinned map `%s' cannot be reused (%s); "
					"run tapfenced --cleanup to start over\n",
					path, strerror(-err));
				return err;
			}
		}
	}
	return 0;
}

static int maps_pin(struct tf_dp *dp)
{
	struct bpf_map *map;
	char path[PATH_MAX];
	int err;

	bpf_object__for_each_map(map, dp->skel->obj) {
		if (!map_is_state(map) || bpf_map__is_pinned(map))
			continue;
		map_pin_path(dp, bpf_map__name(map), path, sizeof(path));
		if (access(path, F_OK) == 0)
			continue; /* reused */
		err = bpf_map__pin(map, path);
		if (err) {
			pr_warn("cannot pin map at `%s': %s\n", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * From an eighth of the ring an event wakes the daemon (bpf/lib/record.bpf.h):
 * of the ring in use, once a pinned one (whose size a config change does
 * not move) is reused.
 */
void tf_dp_set_wake(struct tapfence_bpf *skel)
{
	skel->rodata->cfg_ev_wake_bytes = bpf_map__max_entries(skel->maps.tf_events) / 8;
}

void tf_dp_set_knobs(struct tapfence_bpf *skel, const struct tf_config *cfg)
{
	skel->rodata->cfg_ttl_min_s = cfg->dns_ttl_min_s;
	skel->rodata->cfg_ttl_max_s = cfg->dns_ttl_max_s;
	skel->rodata->cfg_dnsq_timeout_s = cfg->dns_query_timeout_s;
	skel->rodata->cfg_tls_timeout_s = cfg->tls_timeout_s;
	skel->rodata->cfg_tls_ech_outer = cfg->tls_ech_outer;
	skel->rodata->cfg_events_per_s = cfg->events_per_s;
	skel->rodata->cfg_events_burst = cfg->events_burst;
	skel->rodata->cfg_to_tcp_syn_s = cfg->to_tcp_syn_sent_s;
	skel->rodata->cfg_to_tcp_est_s = cfg->to_tcp_established_s;
	skel->rodata->cfg_to_tcp_fin_s = cfg->to_tcp_fin_s;
	skel->rodata->cfg_to_tcp_rst_s = cfg->to_tcp_rst_s;
	skel->rodata->cfg_to_udp_s = cfg->to_udp_s;
	skel->rodata->cfg_to_udp_replied_s = cfg->to_udp_replied_s;
	skel->rodata->cfg_to_icmp_s = cfg->to_icmp_s;
	skel->rodata->cfg_guard_mark = cfg->nguard_if ? cfg->guard_mark : 0;
	skel->rodata->cfg_to_other_s = cfg->to_other_s;
	skel->rodata->cfg_reject_floor = cfg->reject_floor;
	skel->rodata->cfg_reject_interval_ns = 1000000000ULL / cfg->reject_per_s;
	skel->rodata->cfg_reject_tau_ns =
		(__u64)(cfg->reject_burst - 1) * skel->rodata->cfg_reject_interval_ns;
	if (cfg->events_per_s) {
		skel->rodata->cfg_event_interval_ns = 1000000000ULL / cfg->events_per_s;
		skel->rodata->cfg_event_tau_ns =
			(__u64)(cfg->events_burst ? cfg->events_burst - 1 : 0) *
			skel->rodata->cfg_event_interval_ns;
	}
}

/* The guard's jumps to this load's programs (a pinned tf_jump held the last run's until now). */
static int jumps_write(struct tapfence_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.tf_jump), prog;
	__u32 k;

	for (k = TF_JUMP_FROM_GUEST; k <= TF_JUMP_TO_GUEST; k++) {
		prog = bpf_program__fd(k == TF_JUMP_FROM_GUEST ? skel->progs.tc_from_guest :
								 skel->progs.tc_to_guest);
		if (bpf_map_update_elem(fd, &k, &prog, BPF_ANY)) {
			pr_warn("cannot write tf_jump[%u]: %s\n", k, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

int tf_dp_open(struct tf_dp *dp, const struct tf_config *cfg, int pin)
{
	int inner[TF_SLOT_MAPS];
	struct tapfence_bpf *skel;
	__u32 zero = 0, abi;
	char path[PATH_MAX];
	int err, i;

	for (i = 0; i < TF_SLOT_MAPS; i++)
		inner[i] = -1;
	memset(dp, 0, sizeof(*dp));
	memset(dp->slot_fd, 0xff, sizeof(dp->slot_fd)); /* all -1 */
	pthread_mutex_init(&dp->slot_lock, NULL);
	pthread_mutex_init(&dp->fill_lock, NULL);
	dp->cfg = cfg;
	dp->pinned = pin;
	skel = tapfence_bpf__open();
	if (!skel)
		return -errno;
	dp->skel = skel;

	tf_dp_set_knobs(skel, cfg);
	bpf_map__set_max_entries(skel->maps.tf_rules, cfg->rule_entries);
	bpf_map__set_max_entries(skel->maps.tf_ports, cfg->port_entries);
	bpf_map__set_max_entries(skel->maps.tf_names, cfg->name_entries);
	bpf_map__set_max_entries(skel->maps.tf_floor, cfg->floor_entries);
	bpf_map__set_max_entries(skel->maps.tf_events, cfg->ringbuf_bytes);
	/* Inner-map templates for the per-slot tables (sizes from the config). */
	for (i = 0; i < TF_SLOT_MAPS; i++) {
		inner[i] = tf_slot_create(cfg, i, 0);
		if (inner[i] < 0) {
			err = inner[i];
			goto cleanup;
		}
		err = bpf_map__set_inner_map_fd(tf_slot_outer(skel, i), inner[i]);
		if (err)
			goto cleanup;
	}
	if (pin) {
		snprintf(path, sizeof(path), "%s/maps", cfg->pin_dir);
		err = mkdir_p(path, 0700);
		if (err) {
			pr_warn("cannot create `%s': %s\n", path, strerror(-err));
			goto cleanup;
		}
		snprintf(path, sizeof(path), "%s/links", cfg->pin_dir);
		err = mkdir_p(path, 0700);
		if (err) {
			pr_warn("cannot create `%s': %s\n", path, strerror(-err));
			goto cleanup;
		}
		snprintf(path, sizeof(path), "%s/slots", cfg->pin_dir);
		err = slot_pins_reset(path);
		if (err) {
			pr_warn("cannot empty `%s': %s\n", path, strerror(-err));
			goto cleanup;
		}
		err = maps_reuse(dp);
		if (err)
			goto cleanup;
	}
	tf_dp_set_wake(skel);
	err = tapfence_bpf__load(skel);
	if (err) {
		pr_warn("cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	if (pin) {
		err = maps_pin(dp);
		if (err)
			goto cleanup;
	}
	/* Metrics only: without it the tables' fill is not reported, nothing else changes. */
	dp->fill = bpf_program__attach_iter(skel->progs.tf_map_fill, NULL);
	if (!dp->fill) {
		pr_warn("cannot attach the table-fill iterator: %s (no fill in the metrics)\n",
			strerror(errno));
		dp->fill = NULL;
	}
	err = jumps_write(skel);
	if (err)
		goto cleanup;
	abi = TF_ABI_VERSION;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.tf_abi), &zero, &abi, BPF_ANY)) {
		err = -errno;
		goto cleanup;
	}
	for (i = 0; i < TF_SLOT_MAPS; i++)
		close(inner[i]);
	return 0;

cleanup:
	for (i = 0; i < TF_SLOT_MAPS; i++)
		if (inner[i] >= 0)
			close(inner[i]);
	tf_dp_close(dp);
	return err;
}

void tf_dp_close(struct tf_dp *dp)
{
	if (!dp)
		return;
	tf_dp_slots_close(dp); /* first: the pool's thread walks dp->fill (tf_dp_flows_ask()) */
	bpf_link__destroy(dp->fill);
	dp->fill = NULL;
	free(dp->host);
	dp->host = NULL;
	dp->nhost = 0;
	xdp_program__close(dp->xdp);
	dp->xdp = NULL;
	tapfence_bpf__destroy(dp->xdp_skel);
	dp->xdp_skel = NULL;
	tapfence_bpf__destroy(dp->skel);
	dp->skel = NULL;
}

int tf_dp_ringbuf_fd(struct tf_dp *dp)
{
	return bpf_map__fd(dp->skel->maps.tf_events);
}
