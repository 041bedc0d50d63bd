#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Rejections in XDP mode: test_reject.sh again with "attach_mode":"xdp" (answers sent back by
# XDP_TX).
TF_ATTACH_MODE=xdp exec bash "$(dirname "$0")/test_reject.sh"
