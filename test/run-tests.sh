#!/bin/bash
# Runs every strand test suite (gtest and shell level), prints one summary
# line "N passed, N failed" and fails when anything failed or crashed.
#
# Environment (set by make): STRAND_BUILDDIR, STRAND_SRCDIR, STRAND_PLUGIN;
# STRAND_UNDER_VALGRIND=1 runs the gtest suite under valgrind memcheck;
# STRAND_STRESS=1 adds the long soak/stress suites; GTEST_FILTER narrows.
set -u
builddir=${STRAND_BUILDDIR:-$(pwd)}
srcdir=${STRAND_SRCDIR:-$(pwd)}
results=$builddir/test/results
mkdir -p "$results"
export PATH="$builddir/contrib:$PATH"

passed=0; failed=0; failures=()

count_gtest() { # $1 = log, $2 = exit code, $3 = suite name
    local p f
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*listed below.*/\1/p' "$1" | tail -n1)
    [ -z "$f" ] && f=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$1")
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    grep '^\[  FAILED  \] [A-Za-z_]*\.' "$1" | sed 's/^\[  FAILED  \] /  FAILED: /' | sort -u
    if [ "$2" != 0 ] && [ "${f:-0}" = 0 ]; then
        echo "  $3 exited with status $2 (crash, leak or valgrind error): see $1"
        failed=$((failed + 1)); failures+=("$3")
    fi
}

count_tap() { # $1 = log, $2 = exit code, $3 = suite name
    local p f
    p=$(grep -c '^ok ' "$1"); f=$(grep -c '^not ok ' "$1")
    passed=$((passed + p)); failed=$((failed + f))
    grep '^not ok ' "$1" | sed "s/^not ok /  FAILED: $3: /"
    if [ "$2" != 0 ] && [ "$f" = 0 ]; then
        echo "  $3 exited with status $2 without reporting a failure: see $1"
        failed=$((failed + 1)); failures+=("$3")
    fi
}

gtest=$builddir/test/gtest/strand_gtest
if [ -x "$gtest" ]; then
    log=$results/gtest.log
    runner=()
    if [ "${STRAND_UNDER_VALGRIND:-0}" = 1 ]; then
        log=$results/gtest-valgrind.log
        runner=(valgrind -q --error-exitcode=99 --leak-check=full
                --errors-for-leak-kinds=definite --show-leak-kinds=definite
                --trace-children=no
                --suppressions="$srcdir/test/valgrind.supp")
    fi
    echo "== gtest${runner:+ (valgrind)}"
    "${runner[@]}" "$gtest" --gtest_color=no ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} >"$log" 2>&1
    count_gtest "$log" $? gtest
fi

if [ "${STRAND_UNDER_VALGRIND:-0}" != 1 ]; then
    for t in "$srcdir"/test/shell/test_*.sh; do
        [ -e "$t" ] || continue
        name=$(basename "$t" .sh)
        case "$name" in *_stress) [ "${STRAND_STRESS:-0}" = 1 ] || continue ;; esac
        echo "== $name"
        log=$results/$name.log
        timeout 900 bash "$t" >"$log" 2>&1
        count_tap "$log" $? "$name"
    done
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
