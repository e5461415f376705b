#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ucx_perftest over dc_strand (rc_strand in the rc mode) on the software device: UCT-level latency,
# bandwidth and atomics, and UCP tag matching (alone and with self) up to
# 16 MiB. Server and client are two processes on one software fabric.
. "$(dirname "$0")/lib.sh"
export STRAND_SIM_FABRIC="${fabric_prefix}pair"
DEV=smlx5_0:1

U=(-x "$tl" -d "$DEV")
perf "uct am_lat"             -t am_lat  "${U[@]}" -n 1000
perf "uct put_lat"            -t put_lat "${U[@]}" -n 1000
perf "uct am_bw short"        -t am_bw   "${U[@]}" -D short -n 10000
perf "uct am_bw bcopy 4k"     -t am_bw   "${U[@]}" -D bcopy -s 4096 -n 5000
perf "uct am_bw zcopy 8000"   -t am_bw   "${U[@]}" -D zcopy -s 8000 -n 5000
perf "uct put_bw short"       -t put_bw  "${U[@]}" -D short -n 10000
perf "uct put_bw bcopy 8k"    -t put_bw  "${U[@]}" -D bcopy -s 8192 -n 5000
perf "uct put_bw zcopy 64k"   -t put_bw  "${U[@]}" -D zcopy -s 65536 -n 2000
perf "uct get bcopy 4k"       -t get     "${U[@]}" -D bcopy -s 4096 -n 2000
perf "uct get zcopy 64k"      -t get     "${U[@]}" -D zcopy -s 65536 -n 1000
perf "uct add_lat"            -t add_lat "${U[@]}" -n 1000
perf "uct fadd"               -t fadd    "${U[@]}" -n 1000
perf "uct swap"               -t swap    "${U[@]}" -n 1000
perf "uct cswap"              -t cswap   "${U[@]}" -n 1000
perf "uct add_mr"             -t add_mr  "${U[@]}" -n 10000

export UCX_NET_DEVICES=$DEV
for tls in $tl $tl,self; do
    export UCX_TLS=$tls
    perf "ucp tag_lat 8 ($tls)"      -t tag_lat -n 1000
    perf "ucp tag_bw 8 ($tls)"       -t tag_bw  -n 10000
    perf "ucp tag_lat 8k ($tls)"     -t tag_lat -s 8192 -n 500
    perf "ucp tag_bw 64k ($tls)"     -t tag_bw  -s 65536 -n 500
    perf "ucp tag_bw 1MiB ($tls)"    -t tag_bw  -s 1048576 -n 50
    perf "ucp tag_lat 16MiB ($tls)"  -t tag_lat -s 16777216 -n 10 -w 2
    perf "ucp tag_bw 16MiB ($tls)"   -t tag_bw  -s 16777216 -n 10 -w 2
done
export UCX_TLS=$tl
perf "ucp put_lat"      -t ucp_put_lat -n 1000
perf "ucp get 64k"      -t ucp_get -s 65536 -n 500
perf "ucp put_bw 1MiB"   -t ucp_put_bw -s 1048576 -n 100
perf "ucp add"          -t ucp_add -n 1000
perf "ucp fadd"         -t ucp_fadd -n 1000
perf "ucp swap"         -t ucp_swap -n 1000
perf "ucp cswap"        -t ucp_cswap -n 1000
perf "ucp stream_bw 64k" -t stream_bw -s 65536 -n 500
perf "ucp stream_lat"   -t stream_lat -n 1000
perf "ucp am_lat"       -t ucp_am_lat -n 1000
perf "ucp am_bw 10000"  -t ucp_am_bw -s 10000 -n 1000

# The README's one-command pair, with no configuration at all (dc_strand)
is_dc || exit 0
unset UCX_TLS UCX_NET_DEVICES STRAND_SIM_FABRIC
# this build's strand-run (the script lives in the source tree, which in the
# ucx modes belongs to another build, made for another UCX)
export STRAND_RUN=$STRAND_BUILDDIR/contrib/strand-run
timeout 120 "$STRAND_SRCDIR/contrib/strand-perftest" -n 2000 >"$tmpdir/pair" 2>&1
rc=$?
check "strand-perftest: UCT am_lat pair over dc_strand, zero configuration" \
    bash -c "[ $rc = 0 ] && grep -q '^Final: *2000 ' '$tmpdir/pair'" ||
    sed 's/^/#   /' "$tmpdir/pair" | tail -15
timeout 120 "$STRAND_SRCDIR/contrib/strand-perftest" -t tag_bw -s 1048576 \
    -n 20 >"$tmpdir/pair2" 2>&1
rc=$?
check "strand-perftest: UCP tag_bw 1 MiB" \
    bash -c "[ $rc = 0 ] && grep -q '^Final: *20 ' '$tmpdir/pair2'" ||
    sed 's/^/#   /' "$tmpdir/pair2" | tail -15
