#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that flow lifetime holds in the opt-in XDP attach mode as in TC mode: test_flows.sh again
# with "attach_mode":"xdp" (guest->host judged by xdp_from_guest).
TF_ATTACH_MODE=xdp exec bash "$(dirname "$0")/test_flows.sh"
