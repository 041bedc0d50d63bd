/* SPDX-License-Identifier: GPL-2.0 */
/* One logging module for tapfenced and tapfence; also libbpf's print callback. */
#ifndef TF_LOG_H
#define TF_LOG_H

#include <stdarg.h>

enum tf_log_level { TF_LOG_WARN, TF_LOG_INFO, TF_LOG_DEBUG };

void tf_log_set_level(enum tf_log_level level);
void tf_log(enum tf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Suitable for libbpf_set_print(). */
int tf_log_libbpf(int level, const char *fmt, va_list ap);

#define pr_warn(...)  tf_log(TF_LOG_WARN, __VA_ARGS__)
#define pr_info(...)  tf_log(TF_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) tf_log(TF_LOG_DEBUG, __VA_ARGS__)

#endif
