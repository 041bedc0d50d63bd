/* SPDX-License-Identifier: GPL-2.0 */
/* The guard's nftables tables, in the current network namespace (guard_nft.c). */
#ifndef TF_GUARD_NFT_H
#define TF_GUARD_NFT_H

#include <linux/types.h>

/* Replace (or create) the tables: pats are "tap0" or "tap*"; mark the accepted bit. */
int tf_guard_nft_here(const char (*pats)[16], unsigned int n, __u32 mark);
/*
 * Write them only if one is missing (`nft flush ruleset' removes them):
 * *rewritten says whether they were.
 */
int tf_guard_nft_ensure_here(const char (*pats)[16], unsigned int n, __u32 mark, int *rewritten);
/* Remove them (0 if there were none). */
int tf_guard_nft_remove_here(void);

#endif /* TF_GUARD_NFT_H */
