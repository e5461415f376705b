#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# How many times each byte of an MPI message is copied on its way, over
# dc_strand, rc_strand and UCX's posix,cma,self:
#   contrib/bench/mpi_copies.sh [SIZE...]      (default 16384 65536 131072)
# mpirun -np 2 of mpi_pingpong.c at each SIZE with copy_count.so preloaded
# into both ranks (memcpy / memmove calls of >= 256 bytes, in user space);
# prints the bytes the two ranks copied per byte of payload sent, and the
# bandwidth of that run (under the counter, so a little below the sweep's).
# Exit 0 when every run completed, 1 otherwise, 2 on a setup error.
here=$(cd "$(dirname "$0")" && pwd)
sizes=("$@")
[ ${#sizes[@]} = 0 ] && sizes=(16384 65536 131072)
. "$here/strand_env.sh"
strand_mpi_build mpi_copies "$here/mpi_pingpong.c"
read -ra cc <<< "${CC:-cc}" # (it may be "ccache gcc")
"${cc[@]}" -O2 -Wall -shared -fPIC -o "$tmp/copy_count.so" \
    "$here/copy_count.c" -ldl || exit 2

declare -A TLS=([dc]=dc_strand,self [rc]=rc_strand,self [posix]=posix,cma,self)
status=0
echo "Open MPI 2-rank ping-pong: bytes copied (memcpy/memmove >= 256 B, both ranks) per payload byte"
printf '| %-8s | %-14s | %6s | %8s |\n' size transport copies Gbit/s
echo '|---|---|--:|--:|'
for size in "${sizes[@]}"; do
    # mpi_pingpong's round trips at one size: a warm-up of iters / 4 + 1,
    # then three runs of iters, two messages each
    iters=$(( (64 << 20) / size ))
    iters=$(( iters < 20 ? 20 : (iters > 2000 ? 2000 : iters) ))
    payload=$(( 2 * (iters / 4 + 1 + 3 * iters) * size ))
    for tl in dc rc posix; do
        out=$tmp/$tl.$size devs=smlx5_0:1
        [ "$tl" = posix ] && devs=all
        LD_PRELOAD=$tmp/copy_count.so STRAND_SIM_FABRIC=mpi_copies_$$_$tl \
            UCX_TLS=${TLS[$tl]} UCX_NET_DEVICES=$devs timeout 600 "$run" \
            mpirun -np 2 --oversubscribe -x UCX_TLS -x UCX_NET_DEVICES \
            -x STRAND_SIM_FABRIC "$tmp/mpi_pingpong" "$size" "$size" \
            >"$out" 2>&1
        gbits=$(awk '/^pingpong /{print $5}' "$out")
        # the two ranks' counts: the launcher prints one too (mpirun's
        # own, a few KiB), the ranks are the two largest
        copied=$(awk '/^copy_count /{print $3}' "$out" | sort -n | tail -2 |
                 awk '{s += $1} END {print s + 0}')
        if [ -z "$gbits" ] || grep -q 'pingpong: bad data' "$out"; then
            echo "mpi_copies.sh: $tl at $size failed:" >&2
            tail -5 "$out" >&2
            status=1
            continue
        fi
        printf '| %-8s | %-14s | %6s | %8s |\n' "$size" "${TLS[$tl]}" \
            "$(awk -v c="$copied" -v p="$payload" 'BEGIN{printf "%.2f", c / p}')" \
            "$gbits"
    done
done
exit $status
