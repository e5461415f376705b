#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# UCP with 4 workers in 4 threads of one process on each side (spec section
# 9, BlueFlame registers): 10k tagged messages each way per worker, eager
# and rendezvous, every byte checked, on dc_strand and rc_strand. The
# workers share the device; each interface must ring a BlueFlame register of
# its own, or the software device flags doorbells of two threads on one
# register ("BlueFlame conflict", what a NIC turns into torn WQEs).
. "$(dirname "$0")/lib.sh"

cc=${CC:-cc}
if ! $cc -O2 -Wall -pthread -o "$tmpdir/ucp_threads" \
        "$STRAND_SRCDIR/test/ucp/ucp_threads.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        2>"$tmpdir/cc"; then
    not_ok "ucp_threads builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1
unset MLX5_SINGLE_THREADED

# threads TL: both ranks PASS, no BlueFlame conflict in either
threads() {
    local tl=$1 d p0 rc0 rc1
    d=$(mktemp -d "$tmpdir/threads.XXXX")
    export UCX_TLS=$tl,self STRAND_SIM_FABRIC="${fabric_prefix}$tl"
    timeout 300 strand-run "$tmpdir/ucp_threads" "$d" 0 4 10000 \
        >"$d/0.log" 2>&1 &
    p0=$!
    timeout 300 strand-run "$tmpdir/ucp_threads" "$d" 1 4 10000 \
        >"$d/1.log" 2>&1
    rc1=$?
    wait "$p0"; rc0=$?
    if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] &&
       grep -q '^ucp_threads: rank 0: PASS' "$d/0.log" &&
       grep -q '^ucp_threads: rank 1: PASS' "$d/1.log"; then
        ok "UCX_TLS=$tl,self: 4 workers in 4 threads, 10k messages each way each, byte for byte"
    else
        not_ok "UCX_TLS=$tl,self: ucp_threads (exit $rc0/$rc1)"
        for f in "$d/0.log" "$d/1.log"; do
            sed "s|^|#   $(basename "$f"): |" "$f" | tail -15
        done
    fi
    if grep -q 'BlueFlame' "$d/0.log" "$d/1.log"; then
        not_ok "UCX_TLS=$tl,self: no BlueFlame conflict"
        grep -h 'BlueFlame' "$d/0.log" "$d/1.log" | sed 's/^/#   /' | head -4
    else
        ok "UCX_TLS=$tl,self: no BlueFlame conflict"
    fi
}

threads dc_strand
threads rc_strand
