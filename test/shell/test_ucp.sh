#!/bin/bash
# UCP over dc_strand with test/ucp/ucp_check.c: every byte of tag (eager
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

# data TLS: two ranks, all traffic kinds, both must print PASS
data() {
    local tls=$1 d rc0 rc1 p0
    d=$(mktemp -d "$tmpdir/data.XXXX")
    export UCX_TLS=$tls STRAND_SIM_FABRIC="ucp_$$_${tls//,/_}"
    timeout 180 strand-run "$tmpdir/ucp_check" "$d" 0 data >"$d/0.log" 2>&1 &
    p0=$!
    timeout 180 strand-run "$tmpdir/ucp_check" "$d" 1 data >"$d/1.log" 2>&1
    rc1=$?
    wait "$p0"; rc0=$?
    if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] &&
       grep -q '^ucp_check: rank 0: PASS$' "$d/0.log" &&
       grep -q '^ucp_check: rank 1: PASS$' "$d/1.log"; then
        ok "UCX_TLS=$tls: tag, stream, AM, put/get, atomics byte for byte${UCX_DC_STRAND_NUM_DCI:+ (one DCI, short queue, small window)}"
    else
        not_ok "UCX_TLS=$tls: ucp_check data (exit $rc0/$rc1)"
        show "$d/0.log" "$d/1.log"
    fi
}
data dc_strand
data dc_strand,self
# scarce resources: one DCI, a short send queue and a small credit window
# put every pending and flow-control path under the same traffic
UCX_DC_STRAND_NUM_DCI=1 UCX_DC_STRAND_TX_QUEUE_LEN=16 \
UCX_DC_STRAND_FC_WND_SIZE=8 data dc_strand

# Peer failure. Transport timeout 100 ms x (3 retries + 1): the error must
# reach rank 0 within that plus scheduling slack on a busy 2-core machine.
d=$(mktemp -d "$tmpdir/fail.XXXX")
export UCX_TLS=dc_strand STRAND_SIM_FABRIC="ucp_$$_failure"
export UCX_DC_STRAND_TIMEOUT=100ms UCX_DC_STRAND_RETRY_COUNT=3
export STRAND_CHECK_ERR_TIMEOUT=3
timeout 150 strand-run "$tmpdir/ucp_check" "$d" 0 failure >"$d/0.log" 2>&1 &
p0=$!
timeout 150 strand-run "$tmpdir/ucp_check" "$d" 1 failure >"$d/1.log" 2>&1 &
p1=$!
strand-run "$tmpdir/ucp_check" "$d" 2 failure >"$d/2.log" 2>&1 &
p2=$!
for _ in $(seq 1200); do
    [ -e "$d/traffic" ] && break
    kill -0 "$p0" 2>/dev/null || break
    sleep 0.05
done
if [ -e "$d/traffic" ]; then
    kill -9 "$p2"
    touch "$d/killed"
else
    kill "$p2" 2>/dev/null
fi
wait "$p2" 2>/dev/null
wait "$p0"; rc0=$?
wait "$p1"; rc1=$?
check "peer failure: traffic with both peers before the kill" \
    grep -q '200 ping-pongs with ranks 1 and 2 done' "$d/0.log"
check "peer failure: the killed peer's endpoint reports an error in time" \
    grep -q 'endpoint to rank 2 failed with' "$d/0.log"
check "peer failure: the other endpoint keeps working, bytes checked" \
    grep -q '200 ping-pongs with rank 1 after the failure done' "$d/0.log"
if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] &&
   grep -q '^ucp_check: rank 0: PASS$' "$d/0.log" &&
   grep -q '^ucp_check: rank 1: PASS$' "$d/1.log"; then
    ok "peer failure: survivors pass and exit cleanly, nothing hangs"
    grep -h 'failed with' "$d/0.log" | sed 's/^/# /'
else
    not_ok "peer failure: survivors (exit $rc0/$rc1)"
    show "$d/0.log" "$d/1.log"
fi
