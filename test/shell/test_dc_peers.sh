#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# DCI streams, multi-process (test/uct/dc_peers.c): a hub with many
# endpoints to peer processes it forks; a bad key or killed peers fail only
# the endpoints they concern, in time; every other endpoint's active
# messages arrive once and in order, its last PUT and its atomic count are
# exact; streams and DCIs in error come back.
. "$(dirname "$0")/lib.sh"

prog=$STRAND_BUILDDIR/test/uct/dc_peers
if [ ! -x "$prog" ]; then
    not_ok "dc_peers is built (make check builds it)"; exit 0
fi

for scenario in bad_rkey peer_kill dci_err dci_err1; do
    export STRAND_SIM_FABRIC="$fabric_prefix$scenario"
    timeout 300 strand-run "$prog" "$scenario" \
        >"$tmpdir/$scenario.out" 2>"$tmpdir/$scenario.err"
    rc=$?
    cat "$tmpdir/$scenario.out"
    if [ "$rc" != 0 ]; then
        # the checks that failed said so above; a crash or hang says here
        grep -q '^not ok' "$tmpdir/$scenario.out" ||
            check_exit "dc_peers $scenario runs to its end" "$rc"
        sed 's/^/#   /' "$tmpdir/$scenario.err" | tail -20
    fi
done
