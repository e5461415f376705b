#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A fabric that spans hosts (STRAND_SIM_FABRIC=udp:<name>, src/sim/sim_net.c)
# with its two hosts on this machine's loopback, 127.0.0.1 and 127.0.0.2
# (each "host" a segment of its own, STRAND_SIM_HOST saying which one a
# process is): every packet between them crosses as a RoCEv2 datagram.
# Needs no privilege: the multi-node suites with namespaces are in
# test_hosts.sh.
#  - UCP's traffic of every kind, each byte checked (ucp_check data);
#  - a peer killed on the other host: its endpoint fails in time, the
#    survivors' traffic goes on (ucp_check failure);
#  - a capture of the traffic on lo read by tshark as RoCEv2 (source port
#    4791, opcodes, no malformed datagram);
#  - a configuration the device cannot use is refused with its reason.
. "$(dirname "$0")/lib.sh"

cc=${CC:-cc}
if ! $cc -O2 -Wall -o "$tmpdir/ucp_check" "$STRAND_SRCDIR/test/ucp/ucp_check.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        2>"$tmpdir/cc"; then
    not_ok "ucp_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
if ! (exec 3<>/dev/udp/127.0.0.2/9) 2>/dev/null; then
    skip "two hosts on loopback" "127.0.0.2 is not a local address here"
    exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1
export STRAND_SIM_FABRIC="udp:${fabric_prefix}u"
export STRAND_SIM_HOSTS=127.0.0.1,127.0.0.2
# ports of this run's own (make check runs tests side by side)
export STRAND_SIM_UDP_PORT=$((10000 + ($$ % 150) * 128))

show() { for f in "$@"; do sed "s|^|#   $(basename "$f"): |" "$f" | tail -20; done; }
# on HOST (1, 2) COMMAND...
on() { local h=$1; shift; STRAND_SIM_HOST=127.0.0.$h "$@"; }

# data TLS: rank 0 on host 1, rank 1 on host 2, all traffic kinds
data() {
    local tls=$1 what=$2 d rc0 rc1 p0
    d=$(mktemp -d "$tmpdir/data.XXXX")
    UCX_TLS=$tls on 1 timeout 180 strand-run "$tmpdir/ucp_check" "$d" 0 data \
        >"$d/0.log" 2>&1 &
    p0=$!
    UCX_TLS=$tls on 2 timeout 180 strand-run "$tmpdir/ucp_check" "$d" 1 data \
        >"$d/1.log" 2>&1
    rc1=$?
    wait "$p0"; rc0=$?
    if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] &&
       grep -q '^ucp_check: rank 0: PASS$' "$d/0.log" &&
       grep -q '^ucp_check: rank 1: PASS$' "$d/1.log"; then
        ok "$what: tag, stream, AM, put/get, atomics byte for byte between two hosts"
    else
        not_ok "$what: ucp_check data between two hosts (exit $rc0/$rc1)"
        show "$d/0.log" "$d/1.log"
    fi
}

capture=
if command -v tshark >/dev/null && [ "$(id -u)" = 0 ]; then
    # a kernel buffer that holds a burst of the 1 MiB transfers: with the
    # default 2 MiB one a loaded host drops thousands of datagrams from the
    # capture (not from the fabric), and a rare opcode with them
    tshark -i lo -B 256 -w "$tmpdir/lo.pcap" -f "udp and src port 4791" \
        >"$tmpdir/tshark.out" 2>&1 &
    capture=$!
    wait_until 20 grep -q "Capturing on" "$tmpdir/tshark.out"
fi
data "$tl" "UCX_TLS=$tl"
if [ -n "$capture" ]; then
    sleep 1; kill "$capture"; wait "$capture" 2>/dev/null
    tshark -r "$tmpdir/lo.pcap" -d udp.port==4791,infiniband \
        -T fields -e infiniband.bth.opcode 2>/dev/null | sort | uniq -c \
        >"$tmpdir/ops"
    n=$(awk '{ s += $1 } END { print s + 0 }' "$tmpdir/ops")
    check "tshark reads the traffic as RoCEv2 from port 4791 ($n datagrams)" \
        test "$n" -gt 100
    tshark -r "$tmpdir/lo.pcap" -d udp.port==4791,infiniband -V \
        >"$tmpdir/verbose" 2>&1
    check "... and calls none of them malformed" \
        bash -c "! grep -qi malformed '$tmpdir/verbose'"
    # sends, RDMA writes and reads, atomics and their acknowledgements
    for op in 4 10 12 16 17 18; do
        grep -qE "^ *[0-9]+ $op$" "$tmpdir/ops" || missing="${missing:-} $op"
    done
    dropped=$(sed -n 's/^\([0-9]*\) packets dropped.*/\1/p' "$tmpdir/tshark.out")
    if [ -n "${missing:-}" ] && [ "${dropped:-0}" -gt 0 ]; then
        skip "... with SEND, WRITE, READ, ACK and atomic opcodes" \
            "the capture dropped $dropped datagrams; opcodes$missing not seen"
    else
        check "... with SEND, WRITE, READ, ACK and atomic opcodes" \
            test -z "${missing:-}" || sed 's/^/#   /' "$tmpdir/ops"
    fi
else
    skip "a capture of the traffic" "needs tshark and root"
fi
if is_dc; then
    data rc_strand "UCX_TLS=rc_strand"
else
    data dc_strand "UCX_TLS=dc_strand"
fi

# peer failure across hosts: rank 0 on host 1, ranks 1 and 2 on host 2;
# rank 2 killed, rank 0 must see its endpoint fail and go on with rank 1
d=$(mktemp -d "$tmpdir/fail.XXXX")
export UCX_TLS=$tl "${tlp}TIMEOUT=100ms" "${tlp}RETRY_COUNT=7"
export STRAND_CHECK_ERR_TIMEOUT=3 STRAND_CHECK_RANKS=3
pids=()
for r in 0 1 2; do
    on $((r == 0 ? 1 : 2)) timeout 150 strand-run "$tmpdir/ucp_check" "$d" \
        "$r" failure >"$d/$r.log" 2>&1 &
    pids[$r]=$!
done
kill_at_traffic "$d" "${pids[0]}" 2 "${pids[2]}"
wait "${pids[0]}"; rc0=$?
wait "${pids[1]}"; rc1=$?
check "a peer killed on the other host: its endpoint reports the error" \
    grep -q "endpoint to rank 2 failed with" "$d/0.log"
if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] &&
   grep -q "200 ping-pongs with ranks 1 .. 1 after the failure done" "$d/0.log" &&
   grep -q '^ucp_check: rank 1: PASS$' "$d/1.log"; then
    ok "... and the survivors' traffic between the hosts goes on, bytes checked"
else
    not_ok "... survivors (exit $rc0/$rc1)"; show "$d"/*.log
fi
unset STRAND_CHECK_RANKS "${tlp}TIMEOUT" "${tlp}RETRY_COUNT"

# configurations the device cannot use: the reason, no device, no crash
refused() {
    local what=$1 want=$2; shift 2
    env "$@" strand-run ucx_info -d >"$tmpdir/refused" 2>&1
    if grep -q "$want" "$tmpdir/refused" &&
       ! grep -q "smlx5_0:1" "$tmpdir/refused"; then
        ok "$what: refused, saying so"
    else
        not_ok "$what: refused with '$want'"; show "$tmpdir/refused"
    fi
}
refused "no host list" "needs STRAND_SIM_HOSTS" -u STRAND_SIM_HOSTS
refused "a host that does not resolve" "is not an IPv4 address or a name" \
    STRAND_SIM_HOSTS=127.0.0.1,no-such-host.invalid
# (documentation addresses, RFC 5737, that no interface here has)
refused "no host of the list is this one" "is an address of this host" \
    STRAND_SIM_HOSTS=198.51.100.7,203.0.113.7
refused "a port out of range" "STRAND_SIM_UDP_PORT='70000'" \
    STRAND_SIM_UDP_PORT=70000
