/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tiny test helpers. Each check prints one "PASS: ..." or "FAIL: ..." line that
 * tests/run.sh counts. The macros take the expected value explicitly, so a
 * check cannot be silently inverted: CHECK_EQ(what, got, want).
 */
#ifndef TF_CHECK_H
#define TF_CHECK_H

#include <stdio.h>
#include <string.h>

static int tf_checks_failed;

#define CHECK_EQ(desc, got, want)                                              \
	do {                                                                   \
		long long _g = (long long)(got), _w = (long long)(want);       \
		if (_g == _w) {                                                \
			printf("PASS: %s\n", (desc));                          \
		} else {                                                       \
			printf("FAIL: %s: got %lld, want %lld (%s:%d)\n", (desc), \
			       _g, _w, __FILE__, __LINE__);                    \
			tf_checks_failed++;                                    \
		}                                                              \
	} while (0)

#define CHECK_STR(desc, got, want)                                             \
	do {                                                                   \
		const char *_g = (got), *_w = (want);                          \
		if (_g && _w && !strcmp(_g, _w)) {                             \
			printf("PASS: %s\n", (desc));                          \
		} else {                                                       \
			printf("FAIL: %s: got `%s', want `%s' (%s:%d)\n", (desc), \
			       _g ? _g : "(null)", _w ? _w : "(null)",         \
			       __FILE__, __LINE__);                            \
			tf_checks_failed++;                                    \
		}                                                              \
	} while (0)

/* Substring match, for error messages that must quote the bad input. */
#define CHECK_CONTAINS(desc, hay, needle)                                      \
	do {                                                                   \
		const char *_h = (hay), *_n = (needle);                        \
		if (_h && _n && strstr(_h, _n)) {                              \
			printf("PASS: %s\n", (desc));                          \
		} else {                                                       \
			printf("FAIL: %s: `%s' does not contain `%s' (%s:%d)\n", \
			       (desc), _h ? _h : "(null)", _n ? _n : "(null)", \
			       __FILE__, __LINE__);                            \
			tf_checks_failed++;                                    \
		}                                                              \
	} while (0)

#define CHECK_EXIT() (tf_checks_failed ? 1 : 0)

#endif
