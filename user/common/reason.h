/* SPDX-License-Identifier: GPL-2.0 */
/* Names of enum tf_reason, generated from the TF_REASONS X-macro. */
#ifndef TF_COMMON_REASON_H
#define TF_COMMON_REASON_H

#include <tapfence/reason.h>

/* The feed name of reason r ("no_rule"), or "unknown" if r is out of range. */
const char *tf_reason_name(unsigned int r);
/* The reason named s, or -1 if there is none. */
int tf_reason_from_name(const char *s);

#endif
