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

# The reader of --callgrind's row on a callgrind file of known counts: the
# calls into a set from outside it, each counted once (b inside a is not
# counted again), and the calls from one function into another.
. "$STRAND_SRCDIR/contrib/bench/callgrind_read.sh"
cat >"$tmpdir/cg.out" <<'OUT'
version: 1
positions: line
events: Ir
fn=(1) main
1 10
cfn=(2) a
calls=3 10
2 700
cfn=(3) b
calls=2 20
3 40
fn=(2)
10 100
cfn=(3)
calls=3 20
11 600
fn=(3)
20 200
cfn=(4) process_vm_readv
calls=5 30
21 50
OUT
arcs=$(cg_arcs '!^(a|b)$' '^(a|b)$' "$tmpdir/cg.out")
check "the reader counts the set's outermost calls once (700+40 in 5 calls: $arcs)" \
    test "$arcs" = "740 5"
arcs=$(cg_arcs '^b$' '^process_vm_readv$' "$tmpdir/cg.out")
check "the reader counts b's calls into process_vm_readv (50 in 5: $arcs)" \
    test "$arcs" = "50 5"
if command -v valgrind >/dev/null 2>&1; then
    STRAND_BUILDDIR=$STRAND_BUILDDIR SIM_BENCH_CG_WRITES=4 timeout 300 \
        "$STRAND_SRCDIR/contrib/bench/sim_bench.sh" --callgrind-only \
        >"$out" 2>&1
    rc=$?
    sed 's/^/# /' "$out"
    check_exit "sim_bench.sh --callgrind-only exits 0" "$rc"
    check "sim_bench.sh --callgrind counts the device's instructions per WRITE" \
        grep -Eq "^1 MiB RDMA_WRITE device work +$num ins " "$out"
    check "a one-copy WRITE is one process_vm_readv" \
        grep -Eq "kernel copies per WRITE: 1\.00 process_vm_readv" "$out"
else
    skip "sim_bench.sh --callgrind" "no valgrind"
fi
