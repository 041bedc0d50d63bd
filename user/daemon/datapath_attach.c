// SPDX-License-Identifier: GPL-2.0
/*
 * Attaching the datapath to a device: tcx links (pinned, updated in place
 * on a restart) and, in XDP mode, the XDP program through libxdp.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "common/log.h"
#include "datapath_int.h"
#include "netns.h"

/* uapi values newer than Debian 12's headers (include/uapi/linux/bpf.h, 6.6). */
#define TF_BPF_TCX_INGRESS 46
#define TF_BPF_TCX_EGRESS  47

/* The device a tcx link is on (0 once the device is gone); info.tcx shares xdp's offset. */
__u32 tf_dp_link_ifindex(int fd)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.xdp.ifindex;
}

static void link_path(const struct tf_dp *dp, const char *name, const char *dir, char *buf,
		      size_t len)
{
	snprintf(buf, len, "%s/links/%s-%s", dp->cfg->pin_dir, name, dir);
}

/*
 * The link fd or a negative errno. *adopted: the link was pinned already
 * and updated in place (not ours to detach on failure). The link goes at
 * the head of the device's chain (BPF_F_BEFORE, no anchor; netns.c), so
 * no earlier program can pass a packet past us. A pinned link is adopted
 * only on the same ifindex; sessions in another namespace are restored
 * only in the namespace they were made in (their saved cookie), so the
 * ifindex names the same device.
 */
static int link_attach(struct tf_dp *dp, const char *name, const char *dir, int prog_fd,
		       const char *netns, const struct tf_sess_key *dev, __u32 attach_type,
		       int *adopted)
{
	char path[PATH_MAX];
	int fd, err;

	*adopted = 0;
	link_path(dp, name, dir, path, sizeof(path));
	if (dp->pinned) {
		fd = bpf_obj_get(path);
		if (fd >= 0 && tf_dp_link_ifindex(fd) == dev->ifindex) {
			/* Same device, maybe a new program: swap in place, no window. */
			err = bpf_link_update(fd, prog_fd, NULL);
			*adopted = !err;
			if (!err)
				return fd;
			pr_warn("cannot update pinned link `%s': %s\n", path, strerror(-err));
			close(fd);
			return err;
		}
		if (fd >= 0) {
			close(fd);
			unlink(path); /* a link of a device that is gone */
		}
	}
	fd = tf_ns_tcx_link(netns, dev, prog_fd, attach_type, 1);
	if (fd < 0)
		return fd;
	if (dp->pinned) {
		err = bpf_obj_pin(fd, path);
		if (err) {
			err = -errno;
			pr_warn("cannot pin link at `%s': %s\n", path, strerror(-err));
			close(fd);
			return err;
		}
	}
	return fd;
}

static void link_detach(struct tf_dp *dp, const char *name, const char *dir, int *fd)
{
	char path[PATH_MAX];

	if (*fd >= 0) {
		bpf_link_detach(*fd);
		close(*fd);
		*fd = -1;
	}
	if (dp->pinned) {
		link_path(dp, name, dir, path, sizeof(path));
		unlink(path);
	}
}

/*
 * XDP mode: libxdp loads xdp_from_guest from a second instance of the
 * object whose maps all reuse the first instance's, so both modes judge
 * against the same state. libxdp puts it behind its dispatcher where the
 * kernel allows, and falls back to a single program otherwise.
 */
static int xdp_prepare(struct tf_dp *dp)
{
	struct bpf_program *prog;
	struct bpf_map *map, *ours;
	struct tapfence_bpf *skel;
	int err;

	if (dp->xdp)
		return 0;
	skel = tapfence_bpf__open();
	if (!skel)
		return -errno;
	tf_dp_set_knobs(skel, dp->cfg);
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, prog == skel->progs.xdp_from_guest);
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		ours = bpf_object__find_map_by_name(dp->skel->obj, bpf_map__name(map));
		err = ours ? bpf_map__reuse_fd(map, bpf_map__fd(ours)) : -ENOENT;
		if (err)
			goto cleanup;
	}
	tf_dp_set_wake(skel);
	dp->xdp = xdp_program__from_bpf_obj(skel->obj, "xdp");
	err = libxdp_get_error(dp->xdp);
	if (err) {
		dp->xdp = NULL;
		goto cleanup;
	}
	dp->xdp_skel = skel;
	return 0;
cleanup:
	tapfence_bpf__destroy(skel);
	return err;
}

/*
 * Our XDP program already on the device (a restarted daemon): alone on the
 * device, it is replaced by this daemon's in one step, XDP_FLAGS_REPLACE
 * naming the old program, so no packet finds the device without a judge
 * and a new build or new load-time knobs apply (a program's tag does not
 * cover its read-only data, so "the same program" cannot be told from the
 * tag). Behind libxdp's dispatcher it stays (libxdp has no in-place
 * replacement). 1 if handled here, 0 if nothing of ours is there, -errno.
 */
static int xdp_keep_or_replace(struct tf_dp *dp, __u32 ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	struct xdp_program *p;
	int ret = 0, old_fd, new_fd, err;
	__u32 flags;

	if (libxdp_get_error(mp))
		return 0;
	if (!xdp_multiprog__is_legacy(mp)) {
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			ret |= !strcmp(xdp_program__name(p), "xdp_from_guest");
		goto out;
	}
	p = xdp_multiprog__main_prog(mp);
	if (!p || strcmp(xdp_program__name(p), "xdp_from_guest"))
		goto out;
	ret = 1;
	/* Loaded here, not by libxdp (which would put a new program behind its dispatcher). */
	err = xdp_prepare(dp);
	if (!err && bpf_program__fd(dp->xdp_skel->progs.xdp_from_guest) < 0)
		err = tapfence_bpf__load(dp->xdp_skel);
	if (err) {
		ret = err;
		goto out;
	}
	new_fd = bpf_program__fd(dp->xdp_skel->progs.xdp_from_guest);
	if (new_fd < 0) {
		ret = -EBADF; /* never "replace" with no program: that would detach */
		goto out;
	}
	old_fd = bpf_prog_get_fd_by_id(xdp_program__id(p));
	if (old_fd < 0) {
		ret = -errno;
		goto out;
	}
	flags = XDP_FLAGS_REPLACE;
	switch (xdp_multiprog__attach_mode(mp)) {
	case XDP_MODE_SKB:
		flags |= XDP_FLAGS_SKB_MODE;
		break;
	case XDP_MODE_HW:
		flags |= XDP_FLAGS_HW_MODE;
		break;
	default:
		flags |= XDP_FLAGS_DRV_MODE;
		break;
	}
	opts.old_prog_fd = old_fd;
	if (bpf_xdp_attach((int)ifindex, new_fd, flags, &opts))
		ret = -errno;
	else
		pr_info("ifindex %u: XDP program %u replaced by a new one\n", ifindex,
			xdp_program__id(p));
	close(old_fd);
out:
	xdp_multiprog__close(mp);
	return ret;
}

/* *adopted: our program was on the device already (kept or replaced in place). */
static int xdp_attach(struct tf_dp *dp, __u32 ifindex, int *adopted)
{
	int err = xdp_keep_or_replace(dp, ifindex);

	*adopted = err > 0;
	if (err)
		return err < 0 ? err : 0;
	err = xdp_prepare(dp);
	if (err)
		return err;
	return xdp_program__attach(dp->xdp, ifindex, XDP_MODE_NATIVE, 0);
}

/* Detach every program of ours on the device; other programs stay. */
/*
 * Our XDP program, attached alone on ifindex (libxdp fell back from its
 * dispatcher, as it does on a tap), detached by the kernel's own call and
 * only while it is still ours (XDP_FLAGS_REPLACE with its fd). 1 if it was
 * there. libxdp cannot do this once the daemon has dropped CAP_SYS_ADMIN:
 * it opens the attached program by id, so the program stayed and a
 * session could not be added on the device again (EBUSY).
 */
static int xdp_detach_alone(struct tf_dp *dp, __u32 ifindex)
{
	int fd = dp->xdp ? xdp_program__fd(dp->xdp) : -1;
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = fd);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), flags;
	struct tf_xdp_state st;

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || tf_xdp_state(ifindex, &st))
		return 0;
	if (st.attached == XDP_ATTACHED_DRV && st.ids[IFLA_XDP_DRV_PROG_ID] == info.id)
		flags = XDP_FLAGS_DRV_MODE;
	else if (st.attached == XDP_ATTACHED_SKB && st.ids[IFLA_XDP_SKB_PROG_ID] == info.id)
		flags = XDP_FLAGS_SKB_MODE;
	else
		return 0;
	if (bpf_xdp_attach((int)ifindex, -1, XDP_FLAGS_REPLACE | flags, &o)) {
		pr_warn("ifindex %u: cannot detach its XDP program: %s\n", ifindex,
			strerror(errno));
		return 0;
	}
	return 1;
}

void tf_dp_xdp_detach(__u32 ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;

	if (libxdp_get_error(mp))
		return;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && !strcmp(xdp_program__name(p), "xdp_from_guest"))
			xdp_multiprog__detach(mp);
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			if (!strcmp(xdp_program__name(p), "xdp_from_guest"))
				xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	}
	xdp_multiprog__close(mp);
}

/*
 * A failed attach undoes what it created, never what it adopted: a
 * re-adopted device whose other half cannot be attached keeps both of its
 * pinned halves (docs/security.md: never less).
 */
static void attach_undo(struct tf_dp *dp, const char *name, const char *dir, int *fd, int adopted)
{
	if (!adopted) {
		link_detach(dp, name, dir, fd);
		return;
	}
	close(*fd);
	*fd = -1;
}

/*
 * The egress (to guest) link goes first: once ingress is attached the guest
 * can open flows, and their replies must already be judged.
 *
 * In XDP mode the tcx ingress link holds tc_gso_guard (bpf/tapfence.bpf.c):
 * XDP cannot see that a guest's GSO write is cut into datagrams after it,
 * TC can. The guard goes on after XDP, so that a device switched from TC
 * mode has its pinned tc_from_guest link replaced only once XDP judges.
 */
int tf_dp_attach(struct tf_dp *dp, const char *name, const char *netns,
		 const struct tf_sess_key *dev, struct tf_attach *at)
{
	__u32 ifindex = dev->ifindex;
	int err, adopted, in_adopted, xdp_adopted = 0, xdp = dp->cfg->attach_mode == TF_ATTACH_XDP;

	at->link_in = at->link_out = -1;
	at->xdp = 0;
	err = link_attach(dp, name, "out", bpf_program__fd(dp->skel->progs.tc_to_guest), netns, dev,
			  TF_BPF_TCX_EGRESS, &adopted);
	if (err < 0)
		return err;
	at->link_out = err;
	if (xdp) {
		err = xdp_attach(dp, ifindex, &xdp_adopted);
		if (err) {
			pr_warn("cannot attach XDP to ifindex %u: %s\n", ifindex, strerror(-err));
			attach_undo(dp, name, "out", &at->link_out, adopted);
			return err;
		}
		at->xdp = 1;
	}
	err = link_attach(dp, name, "in",
			  bpf_program__fd(xdp ? dp->skel->progs.tc_gso_guard :
						dp->skel->progs.tc_from_guest),
			  netns, dev, TF_BPF_TCX_INGRESS, &in_adopted);
	if (err < 0) {
		pr_warn("cannot attach tcx ingress to ifindex %u: %s\n", ifindex, strerror(-err));
		if (at->xdp && !xdp_adopted)
			tf_dp_xdp_detach(ifindex);
		at->xdp = 0;
		attach_undo(dp, name, "out", &at->link_out, adopted);
		return err;
	}
	at->link_in = err;
	return 0;
}

void tf_dp_detach(struct tf_dp *dp, const char *name, const struct tf_sess_key *dev,
		  struct tf_attach *at)
{
	if (at->xdp && !xdp_detach_alone(dp, dev->ifindex))
		tf_dp_xdp_detach(dev->ifindex);
	at->xdp = 0;
	link_detach(dp, name, "in", &at->link_in);
	link_detach(dp, name, "out", &at->link_out);
}

void tf_dp_attach_close(struct tf_attach *at)
{
	if (at->link_in >= 0)
		close(at->link_in);
	if (at->link_out >= 0)
		close(at->link_out);
	at->link_in = at->link_out = -1;
}

int tf_dp_links_pinned(const struct tf_dp *dp, const char *name)
{
	char path[PATH_MAX];

	if (!dp->pinned)
		return 0;
	link_path(dp, name, "in", path, sizeof(path));
	if (!access(path, F_OK))
		return 1;
	link_path(dp, name, "out", path, sizeof(path));
	return !access(path, F_OK);
}
