#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI over dc_strand (rc_strand in the rc mode): pml ucx and osc ucx,
# 2 and 4 ranks on one
# software fabric, running test/mpi/mpi_check.c (point-to-point, wildcards,
# large messages, collectives, one-sided with fence and lock/unlock).
. "$(dirname "$0")/lib.sh"

mpicc=${MPICC:-mpicc}
if ! command -v "$mpicc" >/dev/null || ! command -v mpirun >/dev/null; then
    skip "Open MPI tests" "mpicc/mpirun not installed"
    exit 0
fi
if ! "$mpicc" -O2 -Wall -o "$tmpdir/mpi_check" \
        "$STRAND_SRCDIR/test/mpi/mpi_check.c" 2>"$tmpdir/cc"; then
    not_ok "mpi_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi

# An AddressSanitizer build: Open MPI's own runtime leaks at exit (its
# components are unloaded before LeakSanitizer looks); strand's leaks are
# the unit and UCP tests' business.
asan=()
[ -n "${STRAND_ASAN_RUNTIME:-}" ] && asan=(-x ASAN_OPTIONS=detect_leaks=0)

# the device mode's settings go to every rank
rank_env_args
check_rank_env mpirun

# run NP [extra mpirun args]: mpi_check on NP ranks over $tl (and self);
# its output in $tmpdir/out
run() {
    local np=$1; shift
    timeout 240 strand-run mpirun -np "$np" --oversubscribe "${asan[@]}" \
        "${rank_env[@]}" -x UCX_TLS="$tl,self" -x UCX_NET_DEVICES=smlx5_0:1 \
        -x STRAND_SIM_FABRIC="$fabric_prefix$np" "$@" \
        "$tmpdir/mpi_check" >"$tmpdir/out" 2>&1
}

# verdict NAME NP RC: mpi_check's verdict (lib.sh) on $tmpdir/out
verdict() { mpi_verdict "$1" mpi_check "$2" "$3" "$tmpdir/out"; }

for np in 2 4; do
    # UCX_LOG_LEVEL=info makes every rank print the transports of each UCP
    # endpoint configuration: the proof that tag matching (pml ucx) and RMA
    # and atomics (osc ucx) between ranks went over dc_strand.
    run "$np" -x UCX_LOG_LEVEL=info; rc=$?
    verdict "mpirun -np $np: pml ucx + osc ucx over $tl" "$np" "$rc"
    check "np $np: MPI messages between ranks use $tl" \
        grep -qE "$ep_cfg_re tag\($tl/smlx5_0:1\)" "$tmpdir/out"
    check "np $np: one-sided operations use $tl" \
        grep -qE "$ep_cfg_re rma\($tl/smlx5_0:1\) +amo\($tl/smlx5_0:1\)" \
        "$tmpdir/out"
done

if ! is_dc; then
    # Mixed: rank 0 has dc_strand only, the others rc_strand and dc_strand.
    # Ranks 1..3 talk over rc_strand (UCP prefers it: no DC connect cost),
    # rank 0 and the others over dc_strand, in one job.
    cat >"$tmpdir/rank0_tls" <<'EOS'
#!/bin/sh
[ "$OMPI_COMM_WORLD_RANK" = 0 ] && export UCX_TLS=dc_strand,self
exec "$@"
EOS
    chmod +x "$tmpdir/rank0_tls"
    timeout 240 strand-run mpirun -np 4 --oversubscribe "${asan[@]}" \
        "${rank_env[@]}" -x UCX_TLS=rc_strand,dc_strand,self \
        -x UCX_NET_DEVICES=smlx5_0:1 -x STRAND_SIM_FABRIC="${fabric_prefix}mixed" \
        -x UCX_LOG_LEVEL=info "$tmpdir/rank0_tls" "$tmpdir/mpi_check" \
        >"$tmpdir/out" 2>&1; rc=$?
    verdict "mpirun -np 4, rank 0 on dc_strand only, ranks 1..3 on rc_strand and dc_strand" 4 "$rc"
    check "mixed: ranks 1..3 send MPI messages over rc_strand" \
        grep -qE "$ep_cfg_re tag\(rc_strand/smlx5_0:1\)" "$tmpdir/out"
    check "mixed: rank 0 and the others send MPI messages over dc_strand" \
        grep -qE "$ep_cfg_re tag\(dc_strand/smlx5_0:1\)" "$tmpdir/out"
    exit 0
fi

# Scarce resources: 4 ranks sharing one DCI each, a 16-deep send queue and
# an 8-message credit window: pending queues and flow control everywhere
run 4 -x UCX_DC_STRAND_NUM_DCI=1 -x UCX_DC_STRAND_TX_QUEUE_LEN=16 \
    -x UCX_DC_STRAND_FC_WND_SIZE=8; rc=$?
verdict "mpirun -np 4 with one DCI, TX_QUEUE_LEN=16, FC_WND_SIZE=8" 4 "$rc"

# Eight ranks on one DCI each: every rank's traffic to its seven peers is
# multiplexed on that DCI (on its streams, with the streams policy)
run 8 -x UCX_DC_STRAND_NUM_DCI=1; rc=$?
verdict "mpirun -np 8 with one DCI per rank: all checks pass" 8 "$rc"

# Negative control: without an inter-process transport pml ucx cannot
# reach the other rank, so the run must fail (and not hang). No device is
# involved: once, in the default mode.
default_mode || exit 0
timeout 120 strand-run mpirun -np 2 --oversubscribe "${asan[@]}" -x UCX_TLS=self \
    -x STRAND_SIM_FABRIC="${fabric_prefix}neg" "$tmpdir/mpi_check" >"$tmpdir/neg" 2>&1
rc=$?
check "UCX_TLS=self alone: the run fails without hanging" \
    bash -c "[ $rc != 0 ] && [ $rc != 124 ] && ! grep -q 'PASS' '$tmpdir/neg'"
