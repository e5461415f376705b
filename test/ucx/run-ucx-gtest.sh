#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-ucx-gtest.sh GTEST LOGDIR [TL...]: UCX's own uct test suite (a binary
# build-ucx-gtest.sh made) on strand's transports, each test in a process
# of its own under a time limit, so that a hang or a crash is reported by
# its test's name and the others still run. One line per test:
#   PASS|FAIL|HANG|CRASH|SKIP  NAME  [why]
# then per transport "TL: N passed, N failed, N hung, N crashed, N skipped"
# and exits 1 when anything failed, hung or crashed. A skip is UCX's own
# ("[     SKIP ] (why)": the test needs a capability the transport does not
# advertise) and counts as a skip, never as a pass.
#
# TLs (default: dc_strand rc_strand) name the instantiations to run; the
# strand memory domain's tests run as "strand". test_tag runs with the
# transport's tag matching on (UCX's test asks for RC_TM_ENABLE, which is
# not strand's option). Environment: STRAND_UCX_GTEST_TIMEOUT (seconds per
# test, default 90), STRAND_UCX_GTEST_FILTER (an extended regexp the test
# names must match), STRAND_UCX_GTEST_PARALLEL (tests at once, default 1: each
# on a software fabric of its own), strand-run on PATH.
set -u
gtest=${1:?gtest binary}
logs=${2:?log directory}
shift 2
tls=${*:-dc_strand rc_strand strand}
limit=${STRAND_UCX_GTEST_TIMEOUT:-90}
jobs=${STRAND_UCX_GTEST_PARALLEL:-1}
filter=${STRAND_UCX_GTEST_FILTER:-.}
mkdir -p "$logs"
export UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn UCX_NET_DEVICES=all
bad=0

# the tests of instantiation TL, one name per line
list() {
    strand-run "$gtest" --gtest_list_tests --gtest_filter="$1/*" 2>/dev/null |
        awk '/^[^ \[]/ {suite = $1} /^  / {print suite $1}' | grep -E "$filter"
}

# run TL NAME: the verdict line of one test
run() {
    local tl=$1 t=$2 log rc verdict why env=() fabric
    log=$logs/$(echo "$t" | tr '/' '_').log
    fabric=ucx_gtest_$$_$RANDOM
    case "$t" in
    */test_tag.*)
        env+=("UCX_$(echo "$tl" | tr a-z A-Z)_TM_ENABLE=y") ;;
    esac
    env "${env[@]}" STRAND_SIM_FABRIC="$fabric" \
        timeout -k 10 "$limit" strand-run "$gtest" --gtest_filter="$t" \
        >"$log" 2>&1
    rc=$?
    # the last process to leave a fabric removes it; one that was killed
    # or crashed leaves it in /dev/shm
    rm -f "/dev/shm/$fabric"
    why=$(grep -m1 -o '^\[     SKIP \] (.*' "$log" | sed 's/^\[     SKIP \] //')
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        verdict=HANG; why="no end in ${limit} s"
    elif grep -q '^\[  FAILED  \]' "$log"; then
        verdict=FAIL; why=$(grep -m1 -A3 'Failure' "$log" | tr '\n' ' ' | cut -c1-200)
    elif [ $rc = 0 ] && grep -q '^\[  PASSED  \] 1 test' "$log"; then
        if [ -n "$why" ]; then verdict=SKIP; else verdict=PASS; fi
    else
        verdict=CRASH; why="exit $rc: $(grep -m1 -E 'Caught signal|Assertion|Segmentation|Abort' "$log" | cut -c1-160)"
    fi
    echo "$verdict $t${why:+  $why}"
}

for tl in $tls; do
    p=0 f=0 h=0 c=0 s=0
    names=$(list "$tl")
    if [ -z "$names" ]; then
        echo "FAIL $tl/*  no test of $tl: is the plugin loaded (strand-run)?"
        bad=1; continue
    fi
    # the verdicts in the list's order, the tests $jobs at a time
    export -f run; export logs limit gtest
    printf '%s\n' $names |
        xargs -P "$jobs" -I @ bash -c \
            'run "$1" "$2" >"$logs/$(echo "$2" | tr / _).verdict"' _ "$tl" @
    for t in $names; do
        line=$(cat "$logs/$(echo "$t" | tr / _).verdict")
        echo "$line"
        case "$line" in
        PASS*) p=$((p + 1)) ;;
        SKIP*) s=$((s + 1)) ;;
        HANG*) h=$((h + 1)) ;;
        CRASH*) c=$((c + 1)) ;;
        *) f=$((f + 1)) ;;
        esac
    done
    echo "$tl: $p passed, $f failed, $h hung, $c crashed, $s skipped"
    [ $((f + h + c)) = 0 ] || bad=1
done
exit $bad
