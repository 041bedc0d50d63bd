#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Test that the flow table keeps idle connections and reports evictions in the opt-in XDP attach
# mode as in TC mode: test_flowtable.sh again with "attach_mode":"xdp".
TF_ATTACH_MODE=xdp exec bash "$(dirname "$0")/test_flowtable.sh"
