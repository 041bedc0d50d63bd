/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's types for the target architecture: the BPF sources include
 * this, so an editor opened on any of them resolves their types. gen.sh
 * writes one header per architecture, named as uname -m names it.
 */
#if defined(__TARGET_ARCH_x86) || (!defined(__TARGET_ARCH_arm64) && defined(__x86_64__))
#include "x86_64.h"
#elif defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
#include "aarch64.h"
#else
#error "vmlinux.h: no vmlinux/<arch>.h for this target (vmlinux/gen.sh makes one)"
#endif
