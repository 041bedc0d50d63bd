/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The JSON-checking toolkit of the pure parsers (spec.c): errors that name
 * the field path and quote the bad value, truncated and with control bytes
 * replaced, since messages end up in logs and on the control socket; typed
 * field access; unknown fields refused. Every function that fails writes
 * err (if errlen) and returns -EINVAL (tf_jnomem(): -ENOMEM).
 */
#ifndef TF_JCHECK_H
#define TF_JCHECK_H

#include <stddef.h>
#include <jansson.h>

#define TF_JQUOTE_MAX 72  /* a quoted value: 68 bytes, "..." if cut, NUL */
#define TF_JPATH_MAX  128 /* a field path: "allow[12].ports[3]" */

/* The message fmt in err; -EINVAL. */
int tf_jfail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "out of memory" in err; -ENOMEM. */
int tf_jnomem(char *err, size_t errlen);
/* s as messages quote it, in q (TF_JQUOTE_MAX bytes); returns q. */
const char *tf_jquote_str(const char *s, char *q);
/* A JSON value as messages quote it: strings raw, anything else as compact JSON. */
const char *tf_jquote(const json_t *v, char *q);
/* The path of where's member key ("allow[2]" + "ports"), in path (TF_JPATH_MAX bytes). */
const char *tf_jpath(char *path, const char *where, const char *key);
/* Unknown fields are errors: a misspelt "proto" must not silently mean "any". */
int tf_jcheck_keys(const json_t *obj, const char *where, const char *const *keys, char *err,
		   size_t errlen) __attribute__((warn_unused_result));
/*
 * obj[key] checked to be of type t; *out is NULL if the field is absent or
 * null, which is an error only if required. Strings must not hold a NUL.
 */
int tf_jget(const json_t *obj, const char *where, const char *key, json_type t, int required,
	    json_t **out, char *err, size_t errlen) __attribute__((warn_unused_result));
/* The same for a string. */
int tf_jget_str(const json_t *obj, const char *where, const char *key, int required,
		const char **out, char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
