#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The guard in XDP mode: test_guard.sh again with "attach_mode":"xdp" (the mark set by
# tc_gso_guard; a session deleted and added again on a tap, where libxdp attaches alone).
TF_ATTACH_MODE=xdp exec bash "$(dirname "$0")/test_guard.sh"
