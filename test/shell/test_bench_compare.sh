#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The comparison benchmark still runs end to end (a smoke test: one short
# run per pair, no callgrind; the figures come from `make bench-compare`).
# Fails when the benchmark fails (a ucx_perftest run that errors, a crash,
# a timeout) or a figure is missing or not a number; a missed target is
# only reported.
. "$(dirname "$0")/lib.sh"
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
for m in "UCT am_lat 8 B" "UCT put_lat 8 B" "UCT am_bw 8 B" "UCP tag_bw 1 MiB"; do
    IFS=$'\t' read -r _ dc posix tcp _ _ goal verdict <<<"$(row "$m")"
    target "compare.sh judges $m: $goal" "$verdict" \
        "dc_strand $dc, posix $posix, tcp $tcp"
done
