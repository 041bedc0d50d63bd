/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tapfence-cni, a chained CNI plugin (spec 1.1: ADD, DEL, CHECK, GC, STATUS,
 * VERSION) that gives each attachment a tapfenced session before the runtime
 * goes on, so no sandbox starts unfiltered. Config reference and the choice
 * of device: docs/integration.md.
 *
 * Every function returns 0 or a negative errno and, on error, has filled the
 * struct cni_err it was given: what main() prints as CNI's error object.
 */
#ifndef TF_CNI_H
#define TF_CNI_H

#include <limits.h>
#include <stddef.h>
#include <net/if.h>
#include <jansson.h>
#include <tapfence/abi.h>
#include "../common/addr.h"

#define CNI_PROG	   "tapfence-cni"
#define CNI_DEFAULT_SOCKET "/run/tapfence/control.sock" /* the CLI's */
#define CNI_TIMEOUT_MS	   10000			/* each exchange with tapfenced */
#define CNI_RESPONSE_MAX   (16u << 20)
#define CNI_FROM_MAX	   (PATH_MAX + 64)
#define CNI_CAP_ALLOW	   "tapfenceAllow" /* runtimeConfig key, the capability's name */

/* CNI's well-known error codes (SPEC.md, "Error"), and ours (100 and up). */
enum cni_code {
	CNI_ERR_VERSION = 1,	   /* incompatible CNI version */
	CNI_ERR_FIELD = 2,	   /* unsupported field in the network config */
	CNI_ERR_ENV = 4,	   /* invalid necessary environment variables */
	CNI_ERR_IO = 5,		   /* I/O failure */
	CNI_ERR_DECODE = 6,	   /* failed to decode content */
	CNI_ERR_CONFIG = 7,	   /* invalid network config */
	CNI_ERR_AGAIN = 11,	   /* try again later: tapfenced unreachable */
	CNI_ERR_UNAVAILABLE = 50,  /* STATUS: plugin not available */
	CNI_ERR_REFUSED = 100,	   /* tapfenced refused the request */
	CNI_ERR_NOT_ENFORCED = 101 /* CHECK: no session, or tapfence not first */
};

struct cni_err {
	int code;
	char msg[1024];
	char details[1024];
};

/* Fill e (code, msg from fmt); returns -err so callers can `return cni_fail(...)'. */
int cni_fail(struct cni_err *e, int code, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* e->details from fmt. */
void cni_detail(struct cni_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- the network config (conf.c): pure ------------------------------------------------------ */

/**
 * struct cni_conf - the plugin's network config, as the runtime sent it.
 * @root:        the whole object (owned); the pointers below point into it or into @file
 * @allow:       the rules in force: runtimeConfig's, else the config's, else the spec file's
 * @allow_from:  where @allow came from, for messages ("allow", "runtimeConfig.tapfenceAllow",
 *               "spec file `/etc/x.json': allow")
 * @resolver:    the config's, else the spec file's; NULL for none
 * @prev:        prevResult, NULL if absent
 * @valid:       cni.dev/valid-attachments (GC), NULL if absent
 */
struct cni_conf {
	json_t *root;
	json_t *file;
	const char *version;
	const char *name;
	const char *socket;
	const char *device;
	const char *spec_path;
	json_t *allow;
	char allow_from[CNI_FROM_MAX];
	json_t *resolver;
	char resolver_from[CNI_FROM_MAX];
	json_t *prev;
	json_t *valid;
};

/* 1 if v is a CNI version this plugin speaks. */
int cni_version_known(const char *v);
/* The list VERSION reports (a new reference). */
json_t *cni_versions(void);

/*
 * Parse the config text (stdin). Checks the fields' types and refuses
 * unknown ones; the rules and resolver are the daemon's to validate. The
 * spec file, if named, is read by cni_conf_load_spec(). 0 or -errno with e set.
 */
int cni_conf_parse(const char *buf, size_t len, struct cni_conf *c, struct cni_err *e)
	__attribute__((warn_unused_result));
/* Merge the spec file's object (stolen) under the config: config keys win. */
int cni_conf_merge_spec(struct cni_conf *c, json_t *file, struct cni_err *e)
	__attribute__((warn_unused_result));
void cni_conf_free(struct cni_conf *c);

/*
 * The session id of an attachment, deterministic: "cni-" + 10 hex digits of
 * the network name's hash + "-" + 24 of the attachment's (network name,
 * container id, interface name). id holds CNI_ID_LEN + 1 bytes; prefix (if
 * not NULL) gets the "cni-XXXXXXXXXX-" that every session of this network
 * starts with (CNI_ID_PREFIX_LEN + 1 bytes).
 */
#define CNI_ID_PREFIX_LEN 15
#define CNI_ID_LEN	  39
int cni_session_id(const char *net, const char *cid, const char *ifname, char *id, char *prefix)
	__attribute__((warn_unused_result));

/* --- prevResult: which device, which guest (attach.c) ------------------------------------ */

/**
 * struct cni_attach - what ADD derives from prevResult.
 * @ifname:  the device tapfence attaches to
 * @in_sandbox: 1 if it is in the sandbox namespace (the spec then names @netns)
 * @guest_mac, @guest4, @guest6: the sandbox interface's MAC and addresses (family 0: none)
 * @gw_mac, @gw4, @gw6: the host-side interface's MAC, the addresses' gateways
 */
struct cni_attach {
	char ifname[IF_NAMESIZE];
	int in_sandbox;
	const char *netns;
	__u8 guest_mac[6];
	struct tf_ip guest4, guest6;
	__u8 gw_mac[6];
	struct tf_ip gw4, gw6;
};

struct cni_env {
	const char *command, *containerid, *netns, *ifname;
};

int cni_attach_from_result(const struct cni_conf *c, const struct cni_env *env,
			   struct cni_attach *a, struct cni_err *e)
	__attribute__((warn_unused_result));
/* The session spec for a (a new reference, NULL on ENOMEM). */
json_t *cni_attach_spec(const struct cni_conf *c, const struct cni_attach *a, const char *id);

/* --- links (link.c) ----------------------------------------------------------------------- */

struct cni_link {
	int ifindex;
	char driver[32]; /* ethtool's: "tun", "veth", "bridge" ... */
	char bus[32];	 /* "tap" for a tap device, "tun" for a tun */
	__u8 mac[6];
};

/*
 * Look ifname up in the namespace at netns (NULL: the plugin's own). 0, -ENODEV
 * if there is no such link, or another -errno (namespace cannot be entered).
 */
int cni_link_get(const char *netns, const char *ifname, struct cni_link *l)
	__attribute__((warn_unused_result));

/* --- tapfenced (daemon.c) -------------------------------------------------------------------- */

/*
 * One request (stolen) on its own connection, its response in *resp. 0 on
 * {"ok":true}; -EREMOTEIO on {"ok":false} (*resp is the response, e->msg the
 * daemon's error); -ENOTCONN if the daemon could not be reached or did not
 * answer (e->code CNI_ERR_AGAIN).
 */
int tfd_call(const char *socket, json_t *req, json_t **resp, struct cni_err *e)
	__attribute__((warn_unused_result));

/* --- the commands (cmd.c) --------------------------------------------------------------------- */

int cni_add(const struct cni_conf *c, const struct cni_env *env, struct cni_err *e);
int cni_del(const struct cni_conf *c, const struct cni_env *env, struct cni_err *e);
int cni_check(const struct cni_conf *c, const struct cni_env *env, struct cni_err *e);
int cni_gc(const struct cni_conf *c, struct cni_err *e);
int cni_status(const struct cni_conf *c, struct cni_err *e);

#endif
