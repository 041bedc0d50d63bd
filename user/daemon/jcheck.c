// SPDX-License-Identifier: GPL-2.0
/* The JSON-checking toolkit the parsers share; see jcheck.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jcheck.h"

int tf_jfail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int tf_jnomem(char *err, size_t errlen)
{
	tf_jfail(err, errlen, "out of memory");
	return -ENOMEM;
}

const char *tf_jquote_str(const char *s, char *q)
{
	size_t i, n = strlen(s), max = TF_JQUOTE_MAX - 4;
	int cut = n > max;

	if (cut) /* back up to a UTF-8 character boundary */
		for (n = max; n && ((unsigned char)s[n] & 0xc0) == 0x80; n--)
			;
	for (i = 0; i < n; i++)
		q[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	strcpy(q + i, cut ? "..." : "");
	return q;
}

const char *tf_jquote(const json_t *v, char *q)
{
	char *text;

	if (json_is_string(v))
		return tf_jquote_str(json_string_value(v), q);
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	tf_jquote_str(text ? text : "?", q);
	free(text);
	return q;
}

const char *tf_jpath(char *path, const char *where, const char *key)
{
	snprintf(path, TF_JPATH_MAX, "%s%s%s", where, *where ? "." : "", key);
	return path;
}

static const char *type_name(json_type t)
{
	switch (t) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	default:
		return "an integer";
	}
}

int tf_jcheck_keys(const json_t *obj, const char *where, const char *const *keys, char *err,
		   size_t errlen)
{
	const char *const *k;
	const char *key;
	char q[TF_JQUOTE_MAX];
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		for (k = keys; *k && strcmp(*k, key); k++)
			;
		if (!*k)
			return tf_jfail(err, errlen, "%s%sunknown field `%s'", where,
					*where ? ": " : "", tf_jquote_str(key, q));
	}
	return 0;
}

int tf_jget(const json_t *obj, const char *where, const char *key, json_type t, int required,
	    json_t **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	char path[TF_JPATH_MAX], q[TF_JQUOTE_MAX];

	*out = NULL;
	if (json_is_null(v))
		v = NULL;
	if (!v && !required)
		return 0;
	tf_jpath(path, where, key);
	if (!v)
		return tf_jfail(err, errlen, "%s: missing", path);
	if (json_typeof(v) != t)
		return tf_jfail(err, errlen, "%s: expected %s, not `%s'", path, type_name(t),
				tf_jquote(v, q));
	if (t == JSON_STRING && strlen(json_string_value(v)) != json_string_length(v))
		return tf_jfail(err, errlen, "%s: `%s' contains a NUL byte", path, tf_jquote(v, q));
	*out = v;
	return 0;
}

int tf_jget_str(const json_t *obj, const char *where, const char *key, int required,
		const char **out, char *err, size_t errlen)
{
	json_t *v;
	int ret = tf_jget(obj, where, key, JSON_STRING, required, &v, err, errlen);

	*out = v ? json_string_value(v) : NULL;
	return ret;
}
