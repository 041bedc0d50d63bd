/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unit-test runner: each check prints one "PASS: ..." or "FAIL: ..." line
 * that tests/run.sh counts, and main() ends with `return CHECK_EXIT();'. The
 * macros take the expected value explicitly, so a check cannot be silently
 * inverted: CHECK_EQ(what, got, want). A FAIL line says what was got and
 * what was wanted, and where.
 *
 * Where a result is a struct, check it field by field: CHECK_FIELD(what,
 * got, field, want) names the field in the line ("what: field"), so a FAIL
 * says which field differs, where one check folding the fields into a
 * boolean would only say "got 0, want 1".
 */
#ifndef TF_CHECK_H
#define TF_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tf_checks_failed;

/* Print the PASS or FAIL line of one check; on FAIL, fmt says what differs. */
static inline void tf_check(int ok, const char *desc, const char *file, int line, const char *fmt,
			    ...) __attribute__((format(printf, 5, 6)));
static inline void tf_check(int ok, const char *desc, const char *file, int line, const char *fmt,
			    ...)
{
	va_list ap;

	if (ok) {
		printf("PASS: %s\n", desc);
		return;
	}
	printf("FAIL: %s: ", desc);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (%s:%d)\n", file, line);
	tf_checks_failed++;
}

static inline const char *tf_str_or_null(const char *s)
{
	return s ? s : "(null)";
}

#define CHECK_EQ(desc, got, want)                                                              \
	do {                                                                                   \
		long long _g = (long long)(got), _w = (long long)(want);                       \
		tf_check(_g == _w, (desc), __FILE__, __LINE__, "got %lld, want %lld", _g, _w); \
	} while (0)

/* A condition that has no value worth printing (a pointer is non-NULL, a call succeeded). */
#define CHECK_TRUE(desc, cond) \
	tf_check(!!(cond), (desc), __FILE__, __LINE__, "`%s' is false", #cond)

#define CHECK_STR(desc, got, want)                                                       \
	do {                                                                             \
		const char *_g = (got), *_w = (want);                                    \
		tf_check(_g &&_w && !strcmp(_g, _w), (desc), __FILE__, __LINE__,         \
			 "got `%s', want `%s'", tf_str_or_null(_g), tf_str_or_null(_w)); \
	} while (0)

/* Substring match, for error messages that must quote the bad input. */
#define CHECK_CONTAINS(desc, hay, needle)                                                       \
	do {                                                                                    \
		const char *_h = (hay), *_n = (needle);                                         \
		tf_check(_h &&_n &&strstr(_h, _n), (desc), __FILE__, __LINE__,                  \
			 "`%s' does not contain `%s'", tf_str_or_null(_h), tf_str_or_null(_n)); \
	} while (0)

/* len bytes at got equal those at want; a FAIL names the first byte that differs. */
#define CHECK_MEM(desc, got, want, len)                                                            \
	do {                                                                                       \
		const unsigned char *_g = (const void *)(got), *_w = (const void *)(want);         \
		size_t _i = 0, _n = (len);                                                         \
		while (_i < _n && _g[_i] == _w[_i])                                                \
			_i++;                                                                      \
		tf_check(_i == _n, (desc), __FILE__, __LINE__,                                     \
			 "byte %zu of %zu: got 0x%02x, want 0x%02x", _i, _n, _i < _n ? _g[_i] : 0, \
			 _i < _n ? _w[_i] : 0);                                                    \
	} while (0)

/* One field of a struct: the check is named "desc: field". */
#define CHECK_FIELD(desc, s, field, want)                                 \
	do {                                                              \
		char _what[256];                                          \
		snprintf(_what, sizeof(_what), "%s: %s", (desc), #field); \
		CHECK_EQ(_what, (s).field, want);                         \
	} while (0)

#define CHECK_EXIT() (tf_checks_failed ? 1 : 0)

#endif
