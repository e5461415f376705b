#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A blocking UCP program over dc_strand or rc_strand (test/ucp/ucp_wakeup.c): a 10000
# iteration ping-pong where both sides sleep on the worker's event fd
# whenever progress finds nothing. It must neither hang (every wait has a
# deadline) nor spin (loops per iteration are counted).
. "$(dirname "$0")/lib.sh"

cc=${CC:-cc}
if ! $cc -O2 -Wall -o "$tmpdir/ucp_wakeup" \
        "$STRAND_SRCDIR/test/ucp/ucp_wakeup.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        2>"$tmpdir/cc"; then
    not_ok "ucp_wakeup builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1

for tls in $tl $tl,self; do
    export UCX_TLS=$tls STRAND_SIM_FABRIC="${fabric_prefix}${tls//,/_}"
    if timeout 300 strand-run "$tmpdir/ucp_wakeup" 10000 >"$tmpdir/out" 2>&1 &&
       grep -q '^ucp_wakeup: PASS$' "$tmpdir/out"; then
        ok "UCX_TLS=$tls: 10000 event-driven ping-pongs," \
           "$(sed -n 's/^ucp_wakeup: rank 0: .*(\(.*\) per iteration).*/\1 loops per iteration/p' "$tmpdir/out")"
    else
        not_ok "UCX_TLS=$tls: event-driven ping-pong"
        sed 's/^/#   /' "$tmpdir/out" | tail -20
    fi
done
