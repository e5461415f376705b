#!/bin/bash
# OpenSHMEM over dc_strand: spml ucx, 2 and 4 PEs on one software fabric,
# running test/shmem/shmem_check.c (put/get, atomics, barrier, broadcast,
# reduction, fcollect). Judged by the verdict lines each PE prints before
# shmem_finalize: Debian's oshmem 4.1.4 may crash inside shmem_finalize with
# any transport, which is not a failure of the checks.
. "$(dirname "$0")/lib.sh"

oshcc=${OSHCC:-oshcc}
if ! command -v "$oshcc" >/dev/null || ! command -v oshrun >/dev/null; then
    ok "OpenSHMEM tests # SKIP oshcc/oshrun not installed"
    exit 0
fi
if ! "$oshcc" -O2 -Wall -o "$tmpdir/shmem_check" \
        "$STRAND_SRCDIR/test/shmem/shmem_check.c" 2>"$tmpdir/cc"; then
    not_ok "shmem_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
if [ -n "${STRAND_ASAN_RUNTIME:-}" ]; then
    # oshmem maps its symmetric heap at fixed addresses inside
    # AddressSanitizer's shadow memory: shmem_init itself crashes (in
    # mca_atomic_basic_startup), with any transport
    ok "OpenSHMEM tests # SKIP oshmem cannot run under AddressSanitizer"
    exit 0
fi
asan=()

for np in 2 4; do
    # UCX_LOG_LEVEL=info: each PE prints its endpoint configurations, the
    # proof that RMA and atomics between PEs go over dc_strand.
    timeout 240 strand-run oshrun -np "$np" --oversubscribe "${asan[@]}" \
        -x UCX_TLS=dc_strand,self -x UCX_NET_DEVICES=smlx5_0:1 \
        -x STRAND_SIM_FABRIC="shmem_$$_$np" -x UCX_LOG_LEVEL=info \
        "$tmpdir/shmem_check" >"$tmpdir/out" 2>&1
    rc=$?
    pass=$(grep -c "^shmem_check: PE [0-9]* of $np: PASS$" "$tmpdir/out")
    fail=$(grep -c "FAIL" "$tmpdir/out")
    if [ "$rc" != 124 ] && [ "$pass" = "$np" ] && [ "$fail" = 0 ]; then
        ok "oshrun -np $np: spml ucx over dc_strand (exit $rc)"
    else
        not_ok "oshrun -np $np: $pass of $np PEs passed (exit $rc)"
        sed 's/^/#   /' "$tmpdir/out" | grep -v 'DIAG' | tail -40
    fi
    check "np $np: RMA and atomics between PEs use dc_strand" \
        grep -q 'ep_cfg\[[0-9]*\]: rma(dc_strand/smlx5_0:1) amo(dc_strand/smlx5_0:1)' \
        "$tmpdir/out"
done

# Negative control: no inter-process transport, no pass (and no hang)
timeout 120 strand-run oshrun -np 2 --oversubscribe "${asan[@]}" \
    -x UCX_TLS=self -x STRAND_SIM_FABRIC="shmem_$$_neg" \
    "$tmpdir/shmem_check" >"$tmpdir/neg" 2>&1
rc=$?
check "UCX_TLS=self alone: the run fails without hanging" \
    bash -c "[ $rc != 0 ] && [ $rc != 124 ] && ! grep -q 'PASS' '$tmpdir/neg'"
