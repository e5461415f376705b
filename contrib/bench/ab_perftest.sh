#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two builds of strand against each other with one ucx_perftest test, in
# alternating pairs, for a before/after comparison on a noisy machine:
#   contrib/bench/ab_perftest.sh [--pairs N] [--env VAR=VALUE]... \
#       BUILD_A BUILD_B -- CLIENT-ARGS...
# e.g. (A = the tree before a change, built beside; B = this one)
#   contrib/bench/ab_perftest.sh --pairs 10 /tmp/before . -- \
#       -t am_lat -x dc_strand -d smlx5_0:1 -s 8 -n 200000
#   contrib/bench/ab_perftest.sh --env UCX_TLS=dc_strand \
#       --env UCX_NET_DEVICES=smlx5_0:1 /tmp/before . -- \
#       -t tag_bw -s 1048576 -n 2000
# Each run is a server and a client through the build's strand-run and its
# plugin (STRAND_PLUGIN), on a fabric of its own. A pair runs A and B one
# after the other (A first in odd pairs, B first in even ones, so that a
# drift of the machine's load favours neither). Prints every run's typical
# and average latency (us), bandwidth (MB/s) and message rate, then each
# column's median for A and for B and the median of the pairs' own B/A
# ratios: the ratio is what a loaded machine moves least. Exit 1 when a
# run failed (it is shown), 2 on a usage error.
me=ab_perftest.sh
pairs=8
envs=()
usage() {
    sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    --pairs) [ -n "${2:-}" ] || usage; pairs=$2; shift 2 ;;
    --env) [ -n "${2:-}" ] || usage; envs+=("$2"); shift 2 ;;
    -h | --help) usage ;;
    --) shift; break ;;
    -*) echo "$me: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
if [ $# -lt 3 ] || [ "$3" != -- ]; then usage; fi
build_a=$(cd "$1" 2>/dev/null && pwd) || { echo "$me: no build $1" >&2; exit 2; }
build_b=$(cd "$2" 2>/dev/null && pwd) || { echo "$me: no build $2" >&2; exit 2; }
shift 3
case "$pairs" in '' | *[!0-9]* | 0) echo "$me: --pairs takes a positive integer" >&2; exit 2 ;; esac
for b in "$build_a" "$build_b"; do
    if [ ! -x "$b/contrib/strand-run" ] || [ ! -e "$b/.libs/libuct_strand.so" ]; then
        echo "$me: $b is not a built tree (contrib/strand-run, .libs/libuct_strand.so)" >&2
        exit 2
    fi
done
perftest=${UCX_PERFTEST:-$(command -v ucx_perftest)}
[ -x "$perftest" ] || { echo "$me: ucx_perftest not found" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ab_perftest.XXXXXX") || exit 2
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    rm -f /dev/shm/strand_ab_$$_*
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' HUP INT TERM

# listening PORT: a socket listens on TCP PORT
listening() {
    awk -v h="$(printf ':%04X' "$1")" \
        'FNR > 1 && substr($2, length($2) - 4) == h && $4 == "0A" { f = 1 }
         END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# run BUILD TAG: one server/client run; prints "typical average MB/s msg/s"
run() {
    local b=$1 tag=$2 port spid rc line
    local e=(env "${envs[@]}" STRAND_PLUGIN="$b/.libs/libuct_strand.so"
             STRAND_SIM_FABRIC="strand_ab_$$_$tag")
    port=$((20000 + RANDOM % 40000))
    timeout 150 "${e[@]}" "$b/contrib/strand-run" "$perftest" -p "$port" \
        >"$tmp/$tag.srv" 2>&1 &
    spid=$!
    for _ in $(seq 200); do
        listening "$port" && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.025
    done
    timeout 120 "${e[@]}" "$b/contrib/strand-run" "$perftest" 127.0.0.1 \
        -p "$port" -f "$@" >"$tmp/$tag.cli" 2>&1
    rc=$?
    [ "$rc" = 0 ] || kill "$spid" 2>/dev/null # no client: it would wait
    wait "$spid" 2>/dev/null
    rm -f "/dev/shm/strand_ab_$$_$tag"
    # the final line: iterations, typical, average, overall latency,
    # average and overall MB/s, average and overall msg/s
    line=$(awk 'NF >= 8 && $(NF-7) ~ /^[0-9]+$/ { l = $(NF-6) " " $(NF-5) " " $(NF-2) " " $NF }
                END { print l }' "$tmp/$tag.cli")
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        echo "$me: run $tag failed (exit $rc):" >&2
        tail -n 5 "$tmp/$tag.cli" "$tmp/$tag.srv" >&2
        return 1
    fi
    echo "$line"
}

failed=0
printf '%-6s %-4s %10s %10s %12s %14s\n' pair tree "typical us" "average us" "MB/s" "msg/s"
for i in $(seq "$pairs"); do
    order="a b"
    [ $((i % 2)) = 0 ] && order="b a"
    for t in $order; do
        b=$build_a
        [ "$t" = b ] && b=$build_b
        if r=$(run "$b" "$i$t" "$@"); then
            echo "$i $t $r" >>"$tmp/results"
            # shellcheck disable=SC2086 # the four numbers
            printf '%-6s %-4s %10s %10s %12s %14s\n' "$i" "$t" $r
        else
            failed=1
        fi
    done
done
[ -s "$tmp/results" ] || exit 1
echo "A = $build_a, B = $build_b; client: ucx_perftest $*${envs[*]:+ (${envs[*]})}"
awk '
    function median(v, n,   i, j, t) {
        for (i = 2; i <= n; ++i)
            for (j = i; j > 1 && v[j - 1] > v[j]; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { for (c = 1; c <= 4; ++c) val[$1, $2, c] = $(c + 2); seen[$1] = 1 }
    END {
        split("typical us,average us,MB/s,msg/s", name, ",")
        printf "%-12s %14s %14s %10s %6s\n", "", "median A", "median B", "B/A", "pairs"
        for (c = 1; c <= 4; ++c) {
            na = nb = nr = 0
            for (p in seen) {
                if ((p, "a", c) in val) a[++na] = val[p, "a", c]
                if ((p, "b", c) in val) b[++nb] = val[p, "b", c]
                if (((p, "a", c) in val) && ((p, "b", c) in val) && val[p, "a", c] > 0)
                    r[++nr] = val[p, "b", c] / val[p, "a", c]
            }
            if (nr == 0) continue
            printf "%-12s %14.3f %14.3f %10.3f %6d\n", name[c], median(a, na),
                   median(b, nb), median(r, nr), nr
        }
    }' "$tmp/results"
exit "$failed"
