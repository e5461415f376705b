#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The device benchmark still runs end to end (tiny sizes: a smoke test; the
# figures themselves come from `make bench-sim`). Fails when the benchmark
# fails (exit status, crash, timeout) or a figure is missing or not a
# number; a missed target is only reported.
. "$(dirname "$0")/lib.sh"
out=$tmpdir/bench.out
STRAND_BUILDDIR=$STRAND_BUILDDIR timeout 120 \
    "$STRAND_SRCDIR/contrib/bench/sim_bench.sh" --iters 200 --rounds 1 --mb 8 --msgs 2000 >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out"
check_exit "sim_bench exits 0" "$rc"

num='[0-9]+(\.[0-9]+)?'
check "sim_bench measures the 8 B ping-pong round trip and its baseline" \
    grep -Eq "^8 B RDMA_WRITE ping-pong RTT +$num ns +$num ns +${num}x$" "$out"
check "sim_bench measures the 8 B message rate" \
    grep -Eq "^8 B SEND message rate +$num Mmsg/s" "$out"
check "sim_bench measures the 1 MiB bandwidth and memcpy's" \
    grep -Eq "^1 MiB RDMA_WRITE bandwidth +$num GB/s +$num GB/s +$num%$" "$out"
check "sim_bench measures process_vm_readv, the one-copy WRITE's ceiling" \
    grep -Eq "^process_vm_readv 1 MiB vs memcpy +$num GB/s +$num GB/s +$num%$" "$out"

# sim_target NAME TARGET-LINE: "TARGET-LINE: PASS|MISS (ratio R)"
sim_target() {
    local verdict ratio
    read -r verdict ratio < <(sed -nE \
        "s/^$2: (PASS|MISS) \(ratio ($num)\)$/\1 \2/p" "$out")
    target "$1" "${verdict:-}" "ratio ${ratio:-}"
}
sim_target "sim_bench: round trip <= 2.5x bare ping-pong" \
    "small-message round trip <= 2.5x bare ping-pong"
sim_target "sim_bench: 1 MiB bandwidth >= 60% of memcpy" \
    "1 MiB bandwidth >= 60% of memcpy"
