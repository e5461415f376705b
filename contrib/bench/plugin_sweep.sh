#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two builds of the plugin side by side: UCP tag_bw (or any ucx_perftest
# test) over dc_strand at a range of sizes, the two plugins alternated run
# by run in one script, best of R runs of each. For changes that move
# UCP's protocol thresholds (the estimates a transport reports), where the
# machine's noise would otherwise swamp the difference.
#
#   plugin_sweep.sh BEFORE.so AFTER.so [--test tag_bw] [--rounds R]
#                   [--sizes "4096 8192 ..."]
#
# Each run is an ucx_perftest server / client pair started through
# strand-run on a fabric of its own (UCP: UCX_TLS=dc_strand,self,
# UCX_NET_DEVICES=smlx5_0:1; UCT tests: -x dc_strand -d smlx5_0:1);
# bandwidth in MB/s as ucx_perftest prints it (its overall figure),
# latency in us (typical).
set -u
here=$(cd "$(dirname "$0")" && pwd)
me=plugin_sweep.sh
. "$here/strand_env.sh"

usage() { sed -n "2,15p" "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[ $# -ge 2 ] || usage 2
before=$1 after=$2; shift 2
test=tag_bw rounds=3
sizes="4096 8192 16384 32768 65536 131072 262144 524288 1048576"
while [ $# -gt 0 ]; do
    case $1 in
    --test)   test=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --sizes)  sizes=$2; shift ;;
    -h|--help) usage ;;
    *) echo "$me: unknown argument '$1'" >&2; usage 2 ;;
    esac
    shift
done
# UCT tests name the transport and device; UCP ones (tag_*, ucp_*,
# stream_*) take them from UCX_TLS / UCX_NET_DEVICES
case $test in
tag_*|ucp_*|stream_*) uct_args= ;;
*) uct_args="-x dc_strand -d smlx5_0:1" ;;
esac
for p in "$before" "$after"; do
    [ -r "$p" ] || { echo "$me: no plugin file '$p'" >&2; exit 2; }
done
[ -x "${run:-}" ] || { echo "$me: strand-run not found (set STRAND_BUILDDIR)" >&2; exit 2; }

# one PLUGIN SIZE ITERS: one pair, the figure of its "Final:" line
one() {
    local plugin=$1 size=$2 n=$3 port srv out
    port=$((20000 + RANDOM % 20000))
    export STRAND_PLUGIN=$plugin STRAND_SIM_FABRIC=sweep-$$-$RANDOM
    export UCX_TLS=dc_strand,self UCX_NET_DEVICES=smlx5_0:1
    "$run" ucx_perftest -p "$port" >/dev/null 2>&1 &
    srv=$!
    sleep 0.5
    out=$(timeout 120 "$run" ucx_perftest 127.0.0.1 -p "$port" -t "$test" \
              $uct_args -s "$size" -n "$n" -w $((n / 10)) 2>/dev/null |
          grep 'Final:')
    wait "$srv" 2>/dev/null
    case $test in
    *bw) echo "$out" | awk '{ print $6 }' ;;
    *)   echo "$out" | awk '{ print $3 }' ;;
    esac
}

best() { # best of the figures given (highest rate, lowest latency)
    case $test in
    *bw) printf '%s\n' "$@" | awk 'NF && ($1 > b) { b = $1 } END { print b + 0 }' ;;
    *)   printf '%s\n' "$@" | awk 'NF && (b == "" || $1 < b) { b = $1 } END { print b + 0 }' ;;
    esac
}

echo "$me: $test over dc_strand, best of $rounds alternated runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$me: before = $before, after = $after"
printf '%10s %12s %12s %8s   %s\n' size before after after/b "all runs (before | after)"
for s in $sizes; do
    n=1000; [ "$s" -gt 65536 ] && n=300
    b=() a=()
    for r in $(seq "$rounds"); do
        b+=("$(one "$before" "$s" "$n")")
        a+=("$(one "$after" "$s" "$n")")
    done
    bb=$(best "${b[@]}") ab=$(best "${a[@]}")
    printf '%10s %12s %12s %8s   %s | %s\n' "$s" "$bb" "$ab" \
        "$(awk -v a="$ab" -v b="$bb" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')" \
        "${b[*]}" "${a[*]}"
done
