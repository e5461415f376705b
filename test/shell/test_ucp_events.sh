#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A sleeping UCP worker wakes for what is its (test/ucp/ucp_events.c): a
# sender and a receiver worker in one process; the receiver (or the
# initiator of a PUT, GET or atomic) arms its worker and sleeps in poll()
# on UCP's event fd or in epoll_wait() on an epoll fd of its own; the
# message was sent before it slept or after. Every scenario on a new
# endpoint (its first contact with the peer), every sleep bounded: an
# event that never comes fails the scenario, it never hangs the suite.
. "$(dirname "$0")/lib.sh"

cc=${CC:-cc}
if ! $cc -O2 -Wall -o "$tmpdir/ucp_events" \
        "$STRAND_SRCDIR/test/ucp/ucp_events.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        -lpthread 2>"$tmpdir/cc"; then
    not_ok "ucp_events builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1
scenarios='tag_sent_before tag_sent_before_epoll tag_sent_after
           tag_sent_after_epoll am_sent_before put_completion get_completion
           atomic_completion'

for tls in $tl,self $tl; do
    export UCX_TLS=$tls STRAND_SIM_FABRIC="$fabric_prefix${tls//,/_}"
    timeout 300 strand-run "$tmpdir/ucp_events" $scenarios \
        >"$tmpdir/out" 2>&1
    rc=$?
    for s in $scenarios; do
        line=$(grep "^ucp_events: $s: " "$tmpdir/out")
        case "$line" in
        *": PASS"*) ok "UCX_TLS=$tls: $s: ${line#*PASS }" ;;
        "")         not_ok "UCX_TLS=$tls: $s: no verdict (exit $rc$(
                        [ $rc = 124 ] && echo ', timed out'))"
                    sed 's/^/#   /' "$tmpdir/out" | tail -15 ;;
        *)          not_ok "UCX_TLS=$tls: $s: ${line#*FAIL }"
                    sed 's/^/#   /' "$tmpdir/out" | grep -v '^#   ucp_events' |
                        tail -10 ;;
        esac
    done
done
