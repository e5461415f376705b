#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# UCX's own uct test suite (UCX 1.13.1's test/gtest/uct, built by
# test/ucx/build-ucx-gtest.sh) on dc_strand, rc_strand and the strand
# memory domain: one TAP line per UCX test (its own skips are skips, with
# UCX's reason), and per transport that at least 150 of its tests pass.
# docs/ucx-conformance.md lists the results and every skip.
. "$(dirname "$0")/lib.sh"

default_mode || ucx_mode || exit 0
src=${STRAND_UCX_SRC:-}
if [ -z "$src" ] || [ ! -f "$src/test/gtest/uct/uct_test.h" ]; then
    skip "UCX's uct test suite" "no UCX source tree (configure --with-ucx-src)"
    exit 0
fi
out=${STRAND_UCX_GTEST_DIR:-${STRAND_UCX_CACHE:-$HOME/.cache/strand}/ucx-gtest-1.13.1}
if ! bin=$(bash "$STRAND_SRCDIR/test/ucx/build-ucx-gtest.sh" "$src" "$out" \
               2>"$tmpdir/build.log"); then
    not_ok "UCX's uct test suite builds"
    tail -20 "$tmpdir/build.log" | sed 's/^/#   /'
    exit 0
fi
ok "UCX's uct test suite builds"

# two tests at a time on two cores (most of them wait on timers and each
# other's processes: 211 -> 156 s on the 2-core reference VM), at most 4
jobs=$(nproc 2>/dev/null || echo 1)
[ "$jobs" -gt 4 ] && jobs=4
STRAND_UCX_GTEST_PARALLEL=${STRAND_UCX_GTEST_PARALLEL:-$jobs} \
bash "$STRAND_SRCDIR/test/ucx/run-ucx-gtest.sh" "$bin" \
    "$STRAND_BUILDDIR/test/results/ucx" dc_strand rc_strand strand \
    >"$tmpdir/run" 2>&1
while read -r verdict name why; do
    case "$verdict" in
    PASS) ok "UCX $name" ;;
    SKIP) skip "UCX $name" "${why#(}" ;;
    FAIL|HANG|CRASH)
        not_ok "UCX $name ($verdict)"
        echo "#   $why"
        echo "#   log: $STRAND_BUILDDIR/test/results/ucx/$(echo "$name" | tr / _).log" ;;
    esac
done < <(grep -E '^(PASS|SKIP|FAIL|HANG|CRASH) ' "$tmpdir/run")
grep -E '^[a-z_]+: [0-9]+ passed' "$tmpdir/run" | sed 's/^/# /'

for tl in dc_strand rc_strand; do
    n=$(grep -Ec "^PASS $tl/" "$tmpdir/run")
    check "UCX's uct suite: $n of its tests pass on $tl (at least 150)" \
        test "$n" -ge 150
done
