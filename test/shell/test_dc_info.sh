#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ucx_info sees the dc_strand transport, its configuration and its errors.
. "$(dirname "$0")/lib.sh"
export STRAND_SIM_FABRIC="dc_info_$$"

timeout 120 strand-run ucx_info -d >"$tmpdir/d" 2>&1
check "ucx_info -d lists Transport: dc_strand" \
    grep -q '^# *Transport: dc_strand$' "$tmpdir/d"
check "dc_strand is on Device: smlx5_0:1" \
    bash -c "grep -A1 '^# *Transport: dc_strand$' '$tmpdir/d' | grep -q '^# *Device: smlx5_0:1$'"
check "dc_strand connects to iface and handles peer failure" \
    bash -c "grep -A60 'Transport: dc_strand' '$tmpdir/d' | grep -q 'connection: to iface' &&
             grep -A60 'Transport: dc_strand' '$tmpdir/d' | grep -q 'error handling: .*peer failure'"
check "dc_strand advertises device atomics" \
    bash -c "grep -A60 'Transport: dc_strand' '$tmpdir/d' | grep -q 'atomic_cswap: 32, 64 bit'"
check "am_short limit is MAX_INLINE minus the 1-byte AM id" \
    bash -c "grep -A60 'Transport: dc_strand' '$tmpdir/d' | grep -q 'am_short: <= 185'"

UCX_DC_STRAND_MAX_INLINE=64 timeout 120 strand-run ucx_info -d >"$tmpdir/d64" 2>&1
check "UCX_DC_STRAND_MAX_INLINE changes am_short" \
    bash -c "grep -A60 'Transport: dc_strand' '$tmpdir/d64' | grep -q 'am_short: <= 63'"

timeout 120 strand-run ucx_info -c -f >"$tmpdir/c" 2>&1
# the doc string: a "# Text" line in the block right above NAME=value
has_doc() {
    awk -v want="UCX_DC_STRAND_$1=" '
        /^$/ { doc = 0; next }
        /^# [A-Z]/ { doc = 1 }
        index($0, want) == 1 { found = doc; exit }
        END { exit !found }' "$tmpdir/c"
}
for opt in TX_QUEUE_LEN RX_QUEUE_LEN SEG_SIZE NUM_DCI TIMEOUT RETRY_COUNT \
           RNR_TIMEOUT RNR_RETRY_COUNT MAX_INLINE TX_CQ_LEN RX_CQ_LEN \
           FC_ENABLE FC_WND_SIZE FC_SOFT_THRESH; do
    check "ucx_info -c lists UCX_DC_STRAND_$opt with a doc string" has_doc "$opt"
done
check "defaults: SEG_SIZE 8256, NUM_DCI 8" \
    bash -c "grep -q '^UCX_DC_STRAND_SEG_SIZE=8256$' '$tmpdir/c' &&
             grep -q '^UCX_DC_STRAND_NUM_DCI=8$' '$tmpdir/c'"

UCX_DC_STRAND_NUM_DCI=1000 timeout 120 strand-run ucx_info -d >"$tmpdir/bad" 2>&1
check "a bad NUM_DCI is a clear error, not a crash" \
    bash -c "grep -q 'UCX_DC_STRAND_NUM_DCI=1000 (valid: 1 .. 128)' '$tmpdir/bad' &&
             ! grep -qi 'segmentation\|backtrace' '$tmpdir/bad'"
UCX_DC_STRAND_TIMEOUT=bogus timeout 120 strand-run ucx_info -d >"$tmpdir/bad2" 2>&1
check "an unparsable TIMEOUT is reported by name" \
    bash -c "grep -qi 'TIMEOUT' '$tmpdir/bad2' && ! grep -qi 'segmentation\|backtrace' '$tmpdir/bad2'"
