#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# OpenSHMEM over dc_strand (rc_strand in the rc mode): Open MPI's oshmem with spml ucx, 2 and 4 PEs on
# one software fabric, running test/shmem/shmem_check.c (putmem/getmem 1 B ..
# 4 MiB blocking and nbi, long_p/g, atomics hammering one counter, barrier,
# broadcast, reductions, fcollect, collect, alltoall; every byte checked).
#
# Judged by the verdict lines each PE prints before shmem_finalize: exactly
# one "shmem_check: PE <p> of <N>: PASS" per PE and no line with FAIL.
# Debian's oshmem 4.1.4 may crash inside shmem_finalize with any transport
# (UCX's own ones too), so the exit status alone is not the verdict; only a
# timeout (a hang) fails a run whose PEs all passed.
#
# Evidence that the traffic went over dc_strand and nothing else:
#  - UCX_TLS=dc_strand,self leaves UCP no other transport between processes
#    (no posix/sysv/cma shared memory, no tcp), so a PASS needs dc_strand;
#  - UCX_LOG_LEVEL=info makes UCP print every endpoint configuration as
#    "ep_cfg[i]: rma(<tl>/<dev>) amo(<tl>/<dev>)" (UCX 1.13; "cfg#i" from
#    1.18 on, lib.sh ep_cfg_re): every PE (told apart by
#    the pid in the log prefix "[time] [host:pid:thread]") must show spml
#    ucx's RMA and atomic lanes on dc_strand/smlx5_0:1, and no endpoint
#    configuration may name any transport but dc_strand/smlx5_0:1 and
#    self/memory0;
#  - with UCX_TLS=dc_strand alone even a PE's accesses to itself loop back
#    through the software device, and the checks still pass;
#  - negative control: with UCX_TLS=self (no inter-process transport) the
#    same program must fail quickly with "Destination is unreachable" and
#    print no PASS, which shows the checks cannot pass without a transport
#    that joins the processes (and that the harness does not hang).
. "$(dirname "$0")/lib.sh"

oshcc=${OSHCC:-oshcc}
if ! command -v "$oshcc" >/dev/null || ! command -v oshrun >/dev/null; then
    skip "OpenSHMEM tests" "oshcc/oshrun not installed"
    exit 0
fi
if ! "$oshcc" -O2 -Wall -o "$tmpdir/shmem_check" \
        "$STRAND_SRCDIR/test/shmem/shmem_check.c" >"$tmpdir/cc" 2>&1; then
    not_ok "shmem_check builds"
    sed 's/^/# /' "$tmpdir/cc"
    exit 0
fi

if [ -n "${STRAND_ASAN_RUNTIME:-}" ]; then
    # oshmem maps its symmetric heap at fixed addresses inside
    # AddressSanitizer's shadow memory: shmem_init itself crashes (in
    # mca_atomic_basic_startup), with any transport
    skip "OpenSHMEM tests" "oshmem cannot run under AddressSanitizer"
    exit 0
fi
asan=()

# the device mode's settings go to every PE
rank_env_args
check_rank_env oshrun

nrun=0
# run NP TLS [oshrun args]: shmem_check on NP PEs, each run on a fabric of
# its own; output in $tmpdir/out, exit status in $rc, seconds in $secs.
run() {
    local np=$1 tls=$2 start=$SECONDS
    shift 2
    nrun=$((nrun + 1))
    fabric="$fabric_prefix$nrun"
    timeout -k 10 300 strand-run oshrun -np "$np" --oversubscribe \
        "${asan[@]}" "${rank_env[@]}" -x UCX_TLS="$tls" -x UCX_NET_DEVICES=smlx5_0:1 \
        -x STRAND_SIM_FABRIC="$fabric" "$@" \
        "$tmpdir/shmem_check" >"$tmpdir/out" 2>&1
    rc=$?
    secs=$((SECONDS - start))
    if [ -e "/dev/shm/$fabric" ]; then
        echo "# note: fabric segment $fabric left behind (a PE did not" \
             "detach: killed or crashed in shmem_finalize?)"
        rm -f "/dev/shm/$fabric"
    fi
}

show_out() {
    local n
    n=$(wc -l <"$tmpdir/out")
    sed 's/^/# /' "$tmpdir/out" | head -n 600
    [ "$n" -gt 600 ] && echo "# ... ($n lines in all)"
}

# verdict NAME NP: every PE printed PASS once, no line says FAIL, no timeout
verdict() {
    local name=$1 np=$2 pass pes fail
    pass=$(grep -c "^shmem_check: PE [0-9]* of $np: PASS\$" "$tmpdir/out")
    pes=$(sed -n "s/^shmem_check: PE \([0-9]*\) of $np: PASS\$/\1/p" \
              "$tmpdir/out" | sort -u | wc -l)
    fail=$(grep -c "FAIL" "$tmpdir/out")
    if [ "$rc" != 124 ] && [ "$rc" != 137 ] && [ "$pass" = "$np" ] &&
       [ "$pes" = "$np" ] && [ "$fail" = 0 ]; then
        ok "$name (${secs}s, oshrun exit $rc)"
    else
        not_ok "$name: $pass of $np PEs passed, $fail FAIL lines," \
               "oshrun exit $rc$([ "$rc" = 124 ] && echo ' (timeout)'), ${secs}s"
        show_out
    fi
}

# transports NAME NP TLS-RE: from the UCX_LOG_LEVEL=info output, all NP PEs
# have an endpoint whose RMA and atomics lanes are $tl, and every
# endpoint configuration uses only transports matching TLS-RE.
transports() {
    local name=$1 np=$2 allowed=$3 pes foreign
    pes=$(grep -E "$ep_cfg_re rma\($tl/smlx5_0:1\) +amo\($tl/smlx5_0:1\)" \
              "$tmpdir/out" |
          sed -n 's/^\[[^]]*\] *\[[^]:]*: *\([0-9][0-9]*\) *:.*/\1/p' |
          sort -u | wc -l) # UCX pads the pid: "[vm:2176 :0]"
    foreign=$(grep -E "$ep_cfg_re" "$tmpdir/out" |
              sed -E "s/.*$ep_cfg_re//" |
              grep -oE '[A-Za-z0-9_]+/[A-Za-z0-9_:.]+' | sort -u |
              grep -vxE "$allowed" | tr '\n' ' ')
    grep -E "$ep_cfg_re" "$tmpdir/out" | sed -E "s/.*($ep_cfg_re)/\1/" | sort |
        uniq -c | sed 's/^ */#   /'
    if [ "$pes" = "$np" ] && [ -z "$foreign" ]; then
        ok "$name"
    else
        not_ok "$name: $pes of $np PEs showed rma/amo on $tl;" \
               "other transports: ${foreign:-none}"
        [ "$pes" = 0 ] && show_out
    fi
}

for np in 2 4; do
    run "$np" "$tl,self" -x UCX_LOG_LEVEL=info
    verdict "oshrun -np $np, UCX_TLS=$tl,self: all checks pass" "$np"
    transports "np $np: spml ucx RMA and atomics between PEs use $tl" \
        "$np" "$tl/smlx5_0:1|self/memory0?"
done

if is_dc; then
    # Eight PEs on one DCI each: every PE's RMA and atomics to its seven
    # peers are multiplexed on that DCI (on its streams, with the streams
    # policy)
    run 8 dc_strand,self -x UCX_DC_STRAND_NUM_DCI=1
    verdict "oshrun -np 8 with one DCI per PE: all checks pass" 8
fi

# $tl alone: a PE's own puts, gets and atomics loop back through the
# software device too.
run 4 "$tl" -x UCX_LOG_LEVEL=info
verdict "oshrun -np 4, UCX_TLS=$tl alone: all checks pass" 4
transports "np 4, $tl alone: every endpoint uses only $tl" 4 \
    "$tl/smlx5_0:1"

# Negative control: no inter-process transport, no pass (and no hang). No
# device is involved: once, in the default mode.
default_mode || exit 0
run 2 self
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
   ! grep -q 'PASS' "$tmpdir/out" &&
   grep -q 'Destination is unreachable' "$tmpdir/out"; then
    ok "negative control: UCX_TLS=self alone fails, PEs unreachable" \
       "(${secs}s, oshrun exit $rc)"
else
    not_ok "negative control: UCX_TLS=self alone should fail with" \
           "'Destination is unreachable' (oshrun exit $rc, ${secs}s)"
    show_out
fi
