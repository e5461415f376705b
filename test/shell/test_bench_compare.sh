#!/bin/bash
# The comparison benchmark still runs end to end (a smoke test: one short
# run per pair, no callgrind; the figures come from `make bench-compare`).
. "$(dirname "$0")/lib.sh"
out=$tmpdir/compare.out
timeout 300 "$STRAND_SRCDIR/contrib/bench/compare.sh" --quick --no-callgrind \
    >"$out" 2>&1
rc=$?
check "compare.sh --quick exits 0 (every measurement taken)" test "$rc" = 0
for m in "UCT am_lat 8 B" "UCT put_lat 8 B" "UCT am_bw 8 B" \
         "UCT put_bw 1 MiB" "UCP tag_lat 8 B" "UCP tag_bw 1 MiB"; do
    check "compare.sh measures $m for dc_strand and posix" \
        grep -Eq "^\| $m[^|]*\| [0-9.]+ \| [0-9.]+" "$out"
done
check "compare.sh prints a verdict per target" \
    bash -c "[ \$(grep -Ec '\| (met|MISSED)' '$out') -ge 4 ]"
[ "$rc" = 0 ] || sed 's/^/#   /' "$out" | tail -30
