#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI ping-pong bandwidth over message sizes, dc_strand and rc_strand
# against UCX's posix,cma,self, in one run (part of make bench-compare):
#   contrib/bench/mpi_sweep.sh [--min BYTES] [--max BYTES] [--runs N]
# mpirun -np 2 of mpi_pingpong.c (pml ucx) with UCX_TLS=dc_strand,self,
# rc_strand,self and posix,cma,self; the transports alternate, each size's
# best of N runs (each run is itself the best of three timings) is kept.
# Prints "size | dc | rc | posix (Gbit/s) | dc/posix | rc/posix | target"
# with the target >= 0.8x posix between 16 and 256 KiB. Exit 0 when every
# run completed with correct data, 1 otherwise, 2 on a setup error.
here=$(cd "$(dirname "$0")" && pwd)
min=8 max=$((4 << 20)) runs=2
while [ $# -gt 0 ]; do
    case $1 in
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi_sweep.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. "$here/strand_env.sh"
strand_mpi_build mpi_sweep "$here/mpi_pingpong.c"

declare -A TLS=([dc]=dc_strand,self [rc]=rc_strand,self [posix]=posix,cma,self)
declare -A BEST
status=0
# one TL N: the ping-pong over TL, its "pingpong SIZE ..." lines kept
one() {
    local tl=$1 out=$tmp/$1.$2 devs=smlx5_0:1
    [ "$tl" = posix ] && devs=all
    STRAND_SIM_FABRIC=mpi_sweep_$$_$1_$2 UCX_TLS=${TLS[$tl]} \
        UCX_NET_DEVICES=$devs timeout 600 "$run" mpirun -np 2 \
        --oversubscribe -x UCX_TLS -x UCX_NET_DEVICES -x STRAND_SIM_FABRIC \
        ${ASAN_OPTIONS:+-x ASAN_OPTIONS} \
        "$tmp/mpi_pingpong" "$min" "$max" >"$out" 2>&1
    if [ $? != 0 ] || grep -q 'pingpong: bad data' "$out"; then
        echo "mpi_sweep.sh: $tl run $2 failed:" >&2
        tail -5 "$out" >&2
        return 1
    fi
    while read -r _ size _ _ gbits; do
        if [ -z "${BEST[$tl.$size]}" ] ||
           awk -v a="$gbits" -v b="${BEST[$tl.$size]}" 'BEGIN { exit !(a > b) }'; then
            BEST[$tl.$size]=$gbits
        fi
    done < <(grep '^pingpong ' "$out")
}
for n in $(seq "$runs"); do
    for tl in dc rc posix; do
        one "$tl" "$n" || status=1
    done
done

echo "Open MPI 2-rank ping-pong bandwidth (Gbit/s, best of $runs runs), $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)"
printf '| %-9s | %8s | %8s | %8s | %8s | %8s | %-10s |\n' size dc_strand rc_strand \
       posix,cma dc/posix rc/posix target
echo '|---|--:|--:|--:|--:|--:|---|'
for ((size = min; size <= max; size *= 2)); do
    d=${BEST[dc.$size]:-} r=${BEST[rc.$size]:-} p=${BEST[posix.$size]:-}
    awk -v s="$size" -v d="$d" -v r="$r" -v p="$p" 'BEGIN {
        name = (s >= 1048576) ? (s / 1048576) " MiB" : (s >= 1024) ? (s / 1024) " KiB" : s " B"
        rd = (d != "" && p > 0) ? d / p : -1; rr = (r != "" && p > 0) ? r / p : -1
        t = "-"
        if (s >= 16384 && s <= 262144) {
            t = (rd >= 0.8 && rr >= 0.8) ? ">= 0.8x: met" : ">= 0.8x: MISSED"
        }
        printf "| %-9s | %8s | %8s | %8s | %8s | %8s | %-10s |\n", name,
               (d == "" ? "FAILED" : d), (r == "" ? "FAILED" : r), (p == "" ? "FAILED" : p),
               (rd < 0 ? "-" : sprintf("%.2fx", rd)), (rr < 0 ? "-" : sprintf("%.2fx", rr)), t }'
done
exit $status
