#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that the opt-in XDP attach mode enforces exactly what the default TC mode does:
# the whole datapath test again, with "attach_mode":"xdp" (guest->host judged by xdp_from_guest).
TF_ATTACH_MODE=xdp exec bash "$(dirname "$0")/test_datapath.sh"
