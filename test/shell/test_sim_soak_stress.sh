#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Soak (make check-stress): the multi-process data-integrity tests of the
# software device under heavy injected faults, over many seeds.
. "$(dirname "$0")/lib.sh"
gtest=$STRAND_BUILDDIR/test/gtest/strand_gtest
seeds=${STRAND_SOAK_SEEDS:-60}
for s in $(seq 1 "$seeds"); do
    faults="drop=0.08,dup=0.05,corrupt=0.03,delay=0.05:100000,seed=$s"
    if STRAND_TEST_ROUNDS=5 STRAND_TEST_FAULTS=$faults timeout 300 "$gtest" \
        --gtest_filter='sim_multiproc.*fault*:sim_multiproc.pipelined*:sim_multiproc.random_mix*' \
        >"$tmpdir/soak-$s.log" 2>&1; then
        ok "soak seed $s ($faults)"
    else
        not_ok "soak seed $s ($faults)"
        sed -n '/Failure/,+6p' "$tmpdir/soak-$s.log" | head -20
    fi
done
