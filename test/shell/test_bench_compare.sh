#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The comparison benchmark still runs end to end (a smoke test: one short
# run per pair, no callgrind; the figures come from `make bench-compare`).
# Fails when the benchmark fails (a ucx_perftest run that errors, a crash,
# a timeout) or a figure is missing or not a number, when any row of its
# table says FAILED, or when its callgrind reader miscounts (the
# instruction rows, which this short run leaves out, come from it); a
# missed target is only reported.
. "$(dirname "$0")/lib.sh"

# The fast-post reader on a callgrind file of known counts, its code above
# 2^31 (where a shared object lands in some address layouts): mawk, Debian's
# awk, once turned those addresses into one "%.6g" subscript and the rows
# printed FAILED.
here=$STRAND_SRCDIR/contrib/bench
SIM_FUNC_RE='^(smlx5_|sim_|dev_sim_)'
. "$here/callgrind_read.sh"
cat >"$tmpdir/cg.out" <<'OUT'
version: 1
positions: instr line
events: Ir
fn=(1) strand_post
0x80001000 10 100
+4 * 100
+4 * 95
calls=100 0x80002000 20
+4 * 5000
+4 * 100
+4 * 30
fn=(2) strand_other
0x80003000 1 100
fn=(1)
+4 * 100
OUT
n=$(cg_fast_len strand_post "$tmpdir/cg.out" 100)
check "the fast-post reader counts the 5 instructions run once a doorbell ($n; $(awk -W version 2>&1 | head -n1))" \
    test "$n" = 5
check "the fast-post reader refuses a file without the function (no figure)" \
    eval '! cg_fast_len strand_absent "$tmpdir/cg.out" 100'
out=$tmpdir/compare.out
timeout 300 "$STRAND_SRCDIR/contrib/bench/compare.sh" --quick --no-callgrind \
    >"$out" 2>"$tmpdir/compare.err"
rc=$?
check_exit "compare.sh --quick exits 0 (every run succeeded)" "$rc" ||
    sed 's/^/#   /' "$out" "$tmpdir/compare.err" | tail -30

# row METRIC: the fields of METRIC's row in the markdown table, trimmed:
# metric, dc_strand, posix, tcp, dc/posix, dc/tcp, target, verdict
row() {
    awk -F'|' -v m="| $1" 'index($0, m) == 1 {
        for (i = 2; i < NF; ++i) { gsub(/^ +| +$/, "", $i); printf "%s\t", $i }
        print ""; exit }' "$out"
}
# figures VALUE...: each VALUE is a number (maybe with its layout: "(bcopy)")
figures() {
    local v
    for v; do [[ $v =~ ^[0-9]+(\.[0-9]+)?( \([a-z]+\))?$ ]] || return 1; done
}
for m in "UCT am_lat 8 B" "UCT put_lat 8 B" "UCT am_bw 8 B" \
         "UCT put_bw 1 MiB" "UCP tag_lat 8 B" "UCP tag_bw 1 MiB"; do
    IFS=$'\t' read -r _ dc posix _ <<<"$(row "$m")"
    check "compare.sh measures $m for dc_strand and posix ($dc, $posix)" \
        figures "$dc" "$posix"
done
# every row measured: a cell that could not be is printed FAILED
failed_rows() { grep '^|' "$out" | grep 'FAILED'; }
check "no row of the table says FAILED" eval '! failed_rows'
for m in "UCT am_lat 8 B" "UCT put_lat 8 B" "UCT am_bw 8 B" "UCP tag_bw 1 MiB"; do
    IFS=$'\t' read -r _ dc posix tcp _ _ goal verdict <<<"$(row "$m")"
    target "compare.sh judges $m: $goal" "$verdict" \
        "dc_strand $dc, posix $posix, tcp $tcp"
done

# ab_perftest.sh, the before/after comparison of two builds: this build
# against itself, one pair, a short am_lat; every run's line, the medians
# and the B/A ratios; a tree that is not built is refused with its reason
ab=$here/ab_perftest.sh
"$ab" --pairs 1 "$STRAND_BUILDDIR" "$STRAND_BUILDDIR" -- \
    -t am_lat -x dc_strand -d smlx5_0:1 -s 8 -n 2000 >"$tmpdir/ab.out" 2>&1
rc=$?
check_exit "ab_perftest.sh runs one pair of a build against itself" "$rc" ||
    sed 's/^/#   /' "$tmpdir/ab.out"
check "... each tree's run has its latency and rate" \
    test "$(grep -cE '^1 +[ab] +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+$' "$tmpdir/ab.out")" = 2
check "... and the B/A ratio of each column over the pair" \
    test "$(grep -cE '^(typical us|average us|MB/s|msg/s) +[0-9.]+ +[0-9.]+ +[0-9.]+ +1$' "$tmpdir/ab.out")" = 4
check "... leaving no fabric behind" \
    bash -c "! ls /dev/shm | grep -q '^strand_ab_'"
"$ab" "$tmpdir" "$STRAND_BUILDDIR" -- -t am_lat >"$tmpdir/ab.bad" 2>&1
rc=$?
check "ab_perftest.sh refuses a tree that is not built, saying so (exit $rc)" \
    bash -c "[ $rc = 2 ] && grep -q 'is not a built tree' '$tmpdir/ab.bad'"
