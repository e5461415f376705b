#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Receiver CPU per message for a receive-heavy pattern, tag matching on
# (UCX_DC_STRAND_TM_ENABLE=y) against off (UCP's own matching), in one run
# (make bench-tm):
#   contrib/bench/tm_recv.sh [--rounds N] [--size BYTES] [--runs N]
# Open MPI -np 2 (tm_recv.c): the receiver pre-posts the device's whole tag
# list (1023 receives, tags 0..1022), the sender sends them back to front so
# each message matches the far end of the list, in batches while the
# receiver sleeps. Per message, the receiving thread's CPU time in MPI
# (posting the receive, completing it) and the CPU time of the process's
# other threads (the software device's progress thread, where its matching
# runs while the application sleeps; UCX's async thread). Runs alternate
# on/off; the table gives medians. Every byte is checked. Exit 0 when every
# run completed with correct data, 1 otherwise.
here=$(cd "$(dirname "$0")" && pwd)
rounds=20 size=4096 runs=3
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tm_recv.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. "$here/strand_env.sh"
strand_mpi_build tm_recv "$here/tm_recv.c"
export UCX_TLS=dc_strand,self UCX_NET_DEVICES=smlx5_0:1 UCX_LOG_LEVEL=info

# one MODE(on|off) N: "post_ns complete_ns other_ns matched_by_device"
one() {
    local mode=$1 n=$2 out=$tmp/$1.$2
    STRAND_SIM_FABRIC=tm_recv_$$_${mode}_$n timeout 300 "$run" \
        mpirun -np 2 --oversubscribe -x UCX_TLS -x UCX_NET_DEVICES \
        -x UCX_LOG_LEVEL -x STRAND_SIM_FABRIC ${ASAN_OPTIONS:+-x ASAN_OPTIONS} \
        -x UCX_DC_STRAND_TM_ENABLE="$([ "$mode" = on ] && echo y || echo n)" \
        "$tmp/tm_recv" "$rounds" "$size" >"$out" 2>&1
    if ! grep -q '^tm_recv: .* bad_bytes 0$' "$out"; then
        echo "tm_recv.sh: $mode run $n failed:" >&2
        grep -v 'UCX  \(INFO\|DIAG\)' "$out" | tail -5 >&2
        return 1
    fi
    awk '/^tm_recv:/ { print $5, $7, $9 }' "$out" | tr '\n' ' '
    grep -o 'exp_eager [0-9]*' "$out" | awk '{ s += $2 } END { print s + 0 }'
}

status=0
for n in $(seq "$runs"); do
    for mode in on off; do
        one "$mode" "$n" >>"$tmp/$mode" || status=1
    done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }
col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median; }
[ -s "$tmp/on" ] && [ -s "$tmp/off" ] || { echo "tm_recv.sh: no run completed"; exit 1; }
echo "receive-heavy: 1023 pre-posted receives, far-end matches, $size B," \
     "$rounds rounds, median of $runs runs"
printf "%-22s | %10s %12s %12s | %10s %s\n" "tag matching" "post ns" \
       "complete ns" "host ns/msg" "device ns" "(other threads)"
for mode in on off; do
    p=$(col "$mode" 1) c=$(col "$mode" 2) o=$(col "$mode" 3)
    printf "%-22s | %10s %12s %12s | %10s\n" \
        "$([ $mode = on ] && echo "on (device matches)" || echo "off (UCP matches)")" \
        "$p" "$c" "$((p + c))" "$o"
done
awk -v a="$(($(col on 1) + $(col on 2)))" -v b="$(($(col off 1) + $(col off 2)))" \
    -v m="$(col on 4)" 'BEGIN {
    printf "host CPU per message, on/off: %.2f (goal < 1)   tagged messages the device matched (on, both ranks): %d\n",
           (b > 0) ? a / b : 0, m }'
exit $status
