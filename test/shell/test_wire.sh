#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The software device's wire between hosts is RoCEv2 (src/sim/sim_wire.c,
# docs/software-device.md "The wire"): test/sim/wire_pcap frames one
# datagram of every BTH opcode the device sends and writes them as a
# capture (Ethernet, IPv4, UDP to port 4791); tshark, with nothing but its
# own RoCEv2 dissector, must read each one's opcode, destination QP and
# PSN as the device wrote them, and call none of them malformed.
. "$(dirname "$0")/lib.sh"

prog=$STRAND_BUILDDIR/test/sim/wire_pcap
if [ ! -x "$prog" ]; then
    not_ok "wire_pcap is built (make check builds it)"; exit 0
fi
if ! command -v tshark >/dev/null; then
    skip "tshark decodes the device's datagrams" "tshark not installed (contrib/setup.sh installs it)"
    exit 0
fi

"$prog" "$tmpdir/wire.pcap" >"$tmpdir/want"
check_exit "wire_pcap writes a datagram of every opcode" $?
# tshark prints the QP in hex: both sides as "opcode qp psn" in decimal
tshark -r "$tmpdir/wire.pcap" -T fields -e infiniband.bth.opcode \
    -e infiniband.bth.destqp -e infiniband.bth.psn 2>"$tmpdir/tshark.err" |
    while read -r op qp psn; do
        echo "$op $((qp)) $psn"
    done >"$tmpdir/got"
n=$(wc -l <"$tmpdir/want")
if [ "$n" -ge 23 ] && cmp -s "$tmpdir/want" "$tmpdir/got"; then
    ok "tshark reads the opcode, destination QP and PSN of all $n datagrams"
else
    not_ok "tshark's reading differs from what the device wrote (want | got)"
    paste "$tmpdir/want" "$tmpdir/got" | sed 's/^/#   /'
    sed 's/^/#   /' "$tmpdir/tshark.err" | tail -5
fi
tshark -r "$tmpdir/wire.pcap" -V >"$tmpdir/verbose" 2>&1
check "tshark calls no datagram malformed" \
    bash -c "! grep -qi 'malformed' '$tmpdir/verbose'"
# every opcode by its IBTA name (the summary line of each frame)
tshark -r "$tmpdir/wire.pcap" >"$tmpdir/summary" 2>/dev/null
for name in "Send First" "Send Middle" "Send Last" "Send Last Immediate" \
            "Send Only" "Send Only Immediate" "RDMA Write First" \
            "RDMA Write Middle" "RDMA Write Last" "RDMA Write Last Immediate" \
            "RDMA Write Only" "RDMA Write Only Immediate" "RDMA Read Request" \
            "RDMA Read Response First" "RDMA Read Response Middle" \
            "RDMA Read Response Last" "RDMA Read Response Only" \
            "Acknowledge" "Atomic Acknowledge" "Compare Swap" "Fetch Add" \
            "Send Last Invalidate" "Send Only Invalidate"; do
    grep -q "RC $name QP=" "$tmpdir/summary" ||
        { not_ok "tshark names '$name'"; continue; }
    names=$((${names:-0} + 1))
done
[ "${names:-0}" = 23 ] && ok "tshark names each of the 23 opcodes as the IBTA does"
