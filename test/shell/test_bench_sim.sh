#!/bin/bash
# The device benchmark still runs end to end (tiny sizes: a smoke test; the
# figures themselves come from `make bench-sim`).
. "$(dirname "$0")/lib.sh"
out=$tmpdir/bench.out
STRAND_BUILDDIR=$STRAND_BUILDDIR timeout 120 \
    "$STRAND_SRCDIR/contrib/bench/sim_bench.sh" --iters 200 --rounds 1 --mb 8 --msgs 2000 >"$out" 2>&1
rc=$?
check "sim_bench exits 0" test "$rc" = 0
check "sim_bench prints the latency target" grep -q "round trip <= 3x bare ping-pong: \(PASS\|MISS\)" "$out"
check "sim_bench prints the bandwidth target" grep -q "bandwidth >= 40% of memcpy: \(PASS\|MISS\)" "$out"
check "sim_bench reports a message rate" grep -q "SEND message rate *[0-9.]* Mmsg/s" "$out"
