#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The UCS statistics counters of dc_strand (uct_mlx5/common/stats.h) are
# compiled out with this machine's UCX (built without statistics); the
# transport must still compile against a UCX that has them.
. "$(dirname "$0")/lib.sh"

check "the transport compiles with ENABLE_STATS" \
    make -s -C "$STRAND_BUILDDIR" check-stats-build
