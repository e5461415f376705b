#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# UCP over dc_strand (rc_strand in the rc mode) with test/ucp/ucp_check.c: every byte of tag (eager
# and rendezvous, expected and unexpected), stream, active message, PUT/GET
# and atomic traffic checked; and peer failure: a rank killed mid-traffic
# fails only its own endpoint, within the configured transport timeout.
. "$(dirname "$0")/lib.sh"

cc=${CC:-cc}
if ! $cc -O2 -Wall -o "$tmpdir/ucp_check" "$STRAND_SRCDIR/test/ucp/ucp_check.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        2>"$tmpdir/cc"; then
    not_ok "ucp_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1

# show LOG...: the logs of a failed run
show() { for f in "$@"; do sed "s|^|#   $(basename "$f"): |" "$f" | tail -25; done; }

# data TLS [WHAT]: two ranks, all traffic kinds, both must print PASS
data() {
    local tls=$1 what=${2:-} d rc0 rc1 p0
    d=$(mktemp -d "$tmpdir/data.XXXX")
    export UCX_TLS=$tls STRAND_SIM_FABRIC="$fabric_prefix${tls//,/_}"
    timeout 180 strand-run "$tmpdir/ucp_check" "$d" 0 data >"$d/0.log" 2>&1 &
    p0=$!
    timeout 180 strand-run "$tmpdir/ucp_check" "$d" 1 data >"$d/1.log" 2>&1
    rc1=$?
    wait "$p0"; rc0=$?
    if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] &&
       grep -q '^ucp_check: rank 0: PASS$' "$d/0.log" &&
       grep -q '^ucp_check: rank 1: PASS$' "$d/1.log"; then
        ok "UCX_TLS=$tls: tag, stream, AM, put/get, atomics byte for byte${what:+ ($what)}"
    else
        not_ok "UCX_TLS=$tls: ucp_check data (exit $rc0/$rc1)"
        show "$d/0.log" "$d/1.log"
    fi
}
data $tl
data $tl,self
if is_dc; then
    # scarce resources: one DCI, a short send queue and a small credit
    # window put every pending and flow-control path under the same traffic
    UCX_DC_STRAND_NUM_DCI=1 UCX_DC_STRAND_TX_QUEUE_LEN=16 \
    UCX_DC_STRAND_FC_WND_SIZE=8 data dc_strand "one DCI, short queue, small window"
else
    # a short send queue and a small receive queue: pending and
    # receiver-not-ready retries under the same traffic
    UCX_RC_STRAND_TX_QUEUE_LEN=16 UCX_RC_STRAND_RX_QUEUE_LEN=32 \
    data rc_strand "short send queue, 32 receive buffers"
    # with dc_strand next to it (UCP picks rc_strand: no DC connect cost)
    data rc_strand,dc_strand,self
fi

# Peer failure. Transport timeout 100 ms x (7 retries + 1): the error must
# reach rank 0 within that plus scheduling slack on a busy 2-core machine.
# The software device acknowledges from the receiving process, so a peer
# that the scheduler leaves out for 0.4 s (6 spinning ranks on 2 cores)
# would look dead after 3 retries; a NIC answers whatever its host does.
# failure N WHAT: N ranks, rank 0 talks to all, the last one is killed
failure() {
    local n=$1 what=$2 d r victim=$(($1 - 1)) p0 rc0 ok_all=1
    local -a pids=()
    d=$(mktemp -d "$tmpdir/fail.XXXX")
    export UCX_TLS=$tl STRAND_SIM_FABRIC="${fabric_prefix}failure$n"
    export "${tlp}TIMEOUT=100ms" "${tlp}RETRY_COUNT=7"
    export STRAND_CHECK_ERR_TIMEOUT=3 STRAND_CHECK_RANKS=$n
    for r in $(seq 0 "$victim"); do
        timeout 150 strand-run "$tmpdir/ucp_check" "$d" "$r" failure \
            >"$d/$r.log" 2>&1 &
        pids[$r]=$!
    done
    p0=${pids[0]}
    # rank 0 writes "traffic" once all peers answered (or dies trying)
    kill_at_traffic "$d" "$p0" "$victim" "${pids[$victim]}"
    wait "$p0"; rc0=$?
    check "$what: traffic with all $victim peers before the kill" \
        grep -q "200 ping-pongs with ranks 1 .. $victim done" "$d/0.log"
    check "$what: the killed peer's endpoint reports an error in time" \
        grep -q "endpoint to rank $victim failed with" "$d/0.log"
    check "$what: the other endpoints keep working, bytes checked" \
        grep -q "200 ping-pongs with ranks 1 .. $((victim - 1)) after the failure done" \
        "$d/0.log"
    for r in $(seq 1 $((victim - 1))); do
        wait "${pids[$r]}" || ok_all=0
        grep -q "^ucp_check: rank $r: PASS$" "$d/$r.log" || ok_all=0
    done
    if [ "$rc0" = 0 ] && [ "$ok_all" = 1 ] &&
       grep -q '^ucp_check: rank 0: PASS$' "$d/0.log"; then
        ok "$what: survivors pass and exit cleanly, nothing hangs"
        grep -h 'failed with' "$d/0.log" | sed 's/^/# /'
    else
        not_ok "$what: survivors (rank 0 exit $rc0)"
        show "$d"/*.log
    fi
    unset STRAND_CHECK_RANKS
}
# keepalive: rank 0's endpoint to rank 1 idle (a rendezvous send waits for
# rank 1, which never receives it); rank 1 killed. Only UCP's keepalive
# (uct_ep_check every UCX_KEEPALIVE_INTERVAL) can find it: the send must
# end with an error within 3 intervals of the kill (a transport timeout of
# 100 ms x 4 tries: the probe to the dead peer fails in ~0.5 s).
keepalive() {
    local d p0 p1 rc0 interval=2
    d=$(mktemp -d "$tmpdir/keepalive.XXXX")
    export UCX_TLS=$tl STRAND_SIM_FABRIC="${fabric_prefix}keepalive"
    export UCX_KEEPALIVE_INTERVAL=${interval}s
    # a rendezvous whatever UCP's protocol selection thinks of 1 MiB
    # (UCX >= 1.18 may choose eager for it from the estimates)
    export UCX_RNDV_THRESH=4096
    export "${tlp}TIMEOUT=100ms" "${tlp}RETRY_COUNT=3"
    export STRAND_CHECK_ERR_TIMEOUT=$((3 * interval))
    timeout 150 strand-run "$tmpdir/ucp_check" "$d" 0 keepalive \
        >"$d/0.log" 2>&1 &
    p0=$!
    timeout 150 strand-run "$tmpdir/ucp_check" "$d" 1 keepalive \
        >"$d/1.log" 2>&1 &
    p1=$!
    kill_at_traffic "$d" "$p0" 1 "$p1"
    wait "$p0"; rc0=$?
    if [ "$rc0" = 0 ] && grep -q '^ucp_check: rank 0: PASS$' "$d/0.log"; then
        ok "keepalive: an idle endpoint's killed peer is reported within 3 intervals ($interval s)"
        grep -h 'the send ended with' "$d/0.log" | sed 's/^/# /'
    else
        not_ok "keepalive: an idle endpoint's killed peer (rank 0 exit $rc0)"
        show "$d"/*.log
    fi
    unset UCX_KEEPALIVE_INTERVAL STRAND_CHECK_ERR_TIMEOUT UCX_RNDV_THRESH
}
keepalive

failure 3 "peer failure"
# more peers than DCIs: the UCP endpoints to 5 peers share 2 DCIs
is_dc && UCX_DC_STRAND_NUM_DCI=2 failure 6 "peer failure, 5 peers on 2 DCIs"
# a QP per endpoint: 5 peers, the last one killed
is_dc || failure 6 "peer failure, 5 peers"
