#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# DCI streams, measured in one run (make bench-streams):
#   contrib/bench/dc_streams.sh [--secs S] [--runs N] [--quick]
# with dc_bench (multi-process: a hub and forked peers on the software
# device; every healthy endpoint's messages are checked by its peer):
#  1. healthy endpoints' am_short rate before, during and after one peer's
#     failure (64 endpoints to 8 peers), under streams and dcs; N failure
#     runs (3 by default) alternate with N control runs that kill nobody,
#     and the median ratios of the failure runs are divided by the control
#     runs' (rates drift on a loaded machine); targets: >= 0.90 during,
#     >= 0.98 after;
#  2. scale: 4096 endpoints to 64 peers against 64 endpoints to 8: heap per
#     endpoint (target <= 256 bytes), the interface's QPs (constant in the
#     number of peers), rate over all endpoints and over 64 of them;
#  3. rate with 1, 8 and 64 active endpoints: streams against dcs.
# Exit 0 when every run completed and verified (targets missed are
# reported, not failed), 1 otherwise, 2 on a usage or setup error.
here=$(cd "$(dirname "$0")" && pwd)
secs=2
runs=3
while [ $# -gt 0 ]; do
    case $1 in
    --secs) secs=$2; shift 2 ;;
    --quick) secs=0.5; runs=1; shift ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dc_streams.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bin=${STRAND_BUILDDIR:+$STRAND_BUILDDIR/contrib/bench/dc_bench}
[ -x "${bin:-}" ] || bin=$here/dc_bench
. "$here/strand_env.sh"
if [ ! -x "$bin" ] || [ -z "$run" ]; then
    echo "dc_streams.sh: build first (make contrib/bench/dc_bench contrib/strand-run)" >&2
    exit 2
fi
rc=0
fabric=dcbench$$
trap 'rm -f /dev/shm/${fabric}*' EXIT

# bench POLICY ARGS...: one dc_bench run; its "key value" line on stdout
bench() {
    local policy=$1; shift
    local out
    out=$(STRAND_SIM_FABRIC=$fabric$RANDOM UCX_DC_STRAND_TX_POLICY=$policy \
          timeout 600 "$run" "$bin" "$@" 2>/tmp/dc_bench.$$.err)
    if [ $? != 0 ] || ! grep -q "verified yes" <<<"$out"; then
        echo "dc_streams.sh: dc_bench $policy $* failed:" >&2
        echo "$out" >&2; tail -5 /tmp/dc_bench.$$.err >&2
        rc=1
    fi
    rm -f /tmp/dc_bench.$$.err
    echo "$out"
}
# get KEY LINE: the value after KEY
get() { awk -v k="$1" '{for (i = 1; i < NF; ++i) if ($i == k) print $(i+1)}' <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r != "" && r != "-" && r + 0 >= t) ? "met" : "MISSED" }'; }

echo "== 1. healthy endpoints' rate around one peer's failure (msgs/s, medians of 50 ms windows; ${runs} failure runs alternated with ${runs} control runs that kill nobody)"
printf "%-8s %-8s %10s %10s %10s %8s %8s %9s\n" policy run before during \
    after during/b after/b detect_s
median() { sort -g | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for policy in streams dcs; do
    declare -A rds=() ras=() md=() ma=()
    for i in $(seq 1 "$runs"); do
        for kind in failure control; do
            l=$(bench $policy $kind "$secs")
            b=$(get before "$l"); d=$(get during "$l"); a=$(get after "$l")
            rd=$(ratio "$d" "$b"); ra=$(ratio "$a" "$b")
            rds[$kind]+="$rd "; ras[$kind]+="$ra "
            printf "%-8s %-8s %10s %10s %10s %8s %8s %9s\n" $policy \
                "$kind$i" "$b" "$d" "$a" "$rd" "$ra" "$(get detect_s "$l")"
        done
    done
    for kind in failure control; do
        md[$kind]=$(tr ' ' '\n' <<<"${rds[$kind]}" | grep . | median)
        ma[$kind]=$(tr ' ' '\n' <<<"${ras[$kind]}" | grep . | median)
        printf "%-8s %-8s %10s %10s %10s %8s %8s\n" $policy "median" "" "" "" \
            "${md[$kind]}" "${ma[$kind]}"
    done
    nd=$(ratio "${md[failure]}" "${md[control]}")
    na=$(ratio "${ma[failure]}" "${ma[control]}")
    printf "%-8s %-8s %10s %10s %10s %8s %8s   %s\n" $policy "failure/control" "" "" "" \
        "$nd" "$na" "during $(verdict "$nd" 0.90), after $(verdict "$na" 0.98)"
done

echo
echo "== 2. scale: one process, 64 endpoints to 8 peers vs 4096 to 64 peers"
printf "%-8s %6s %6s %12s %5s %10s %10s %s\n" policy peers eps bytes/ep qps \
    rate_all rate_64 verdict
for policy in streams; do
    for shape in "8 8" "64 64"; do
        l=$(bench $policy scale $shape "$secs")
        bpe=$(get bytes_per_ep "$l")
        printf "%-8s %6s %6s %12s %5s %10s %10s %s\n" $policy ${shape% *} \
            "$(get eps "$l")" "$bpe" "$(get qps "$l")" "$(get rate_all "$l")" \
            "$(get rate_64 "$l")" "bytes/ep <= 256: $(awk -v b="$bpe" 'BEGIN { print (b != "" && b + 0 <= 256) ? "met" : "MISSED" }')"
    done
done

echo
echo "== 3. rate with 1, 8, 64 active endpoints (msgs/s): streams vs dcs"
printf "%-8s %10s %10s %10s\n" policy 1 8 64
declare -A act
for policy in streams dcs; do
    l=$(bench $policy active "$secs")
    for n in 1 8 64; do act[$policy.$n]=$(get active_$n "$l"); done
    printf "%-8s %10s %10s %10s\n" $policy "${act[$policy.1]}" \
        "${act[$policy.8]}" "${act[$policy.64]}"
done
printf "%-8s %10s %10s %10s\n" ratio "$(ratio "${act[streams.1]}" "${act[dcs.1]}")" \
    "$(ratio "${act[streams.8]}" "${act[dcs.8]}")" \
    "$(ratio "${act[streams.64]}" "${act[dcs.64]}")"
exit $rc
