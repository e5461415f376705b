#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# UCP's protocol thresholds follow the estimates the device gives: with
# STRAND_SIM_PERF the software device reports fixed latency, bandwidth and
# overhead, and ucx_info's endpoint configuration (eager zcopy and
# rendezvous thresholds of tag_send) moves when they change; without it the
# device's measured costs give sane figures; a bad value is an error
# message, not a crash.
. "$(dirname "$0")/lib.sh"

# UCX_BCOPY_BW: UCP's own memcpy estimate (else taken from the CPU model),
# which the zero-copy threshold is weighed against
export UCX_TLS=dc_strand,self UCX_NET_DEVICES=smlx5_0:1 UCX_BCOPY_BW=5000MBs
export STRAND_SIM_FABRIC="${fabric_prefix}info"
# under AddressSanitizer: ucx_info -e leaks 45 bytes of UCX's own, and
# LeakSanitizer's exit then loses what it wrote to the pipe
[ -n "${STRAND_ASAN_RUNTIME:-}" ] && export ASAN_OPTIONS=detect_leaks=0
base="latency_ns=300,bw_mbs=20000,overhead_ns=60"

# tag_send PERF: the tag_send line of an endpoint to a peer on another node
# (UCX 1.13: "0..<egr/short>..177..<egr/bcopy>..<N>..<rndv>..(inf)"); UCX
# >= 1.18 prints a table per operation instead: its rows of
# "tagged message by ucp_tag_send* from host memory" in the same shape
# ("..<first size>..<protocol>" each; multi-fragment eager is egr/mf)
tag_send() {
    STRAND_SIM_PERF=$1 strand-run ucx_info -e -u t -P inter 2>&1 | awk '
        function bytes(s,  k) { k = 1
            if (s ~ /K$/) k = 1024; if (s ~ /M$/) k = 1048576
            if (s ~ /G$/) k = 1073741824; sub(/[KMG]$/, "", s); return s * k }
        /^# *tag_send: / { sub(/^# *tag_send: /, ""); print; done = 1; exit }
        /\| tagged message by ucp_tag_send\* from host memory / { t = 1; next }
        t && /^# *\+/ { next }
        t && /\| *Range *\|/ { next }   # 1.22: a header row
        t && /^# *\| *[0-9]/ {
            split($0, c, "|"); r = c[2]; gsub(/ /, "", r); split(r, ab, /\.\./)
            p = c[3]
            if (p ~ /rendezvous/) k = "rndv"
            else if (p ~ /multi-frag/) k = "egr/mf"
            else if (p ~ /zero-copy/) k = "egr/zcopy"
            else if (p ~ /copy-in/) k = "egr/bcopy"
            else if (p ~ /short/) k = "egr/short"
            else k = "other"
            line = line ".." bytes(ab[1]) "..<" k ">"; next }
        t { t = 0; if (line != "") { print line; done = 1; exit } }
        END { if (!done && line != "") print line }'
}
# rndv_from LINE / zcopy_from LINE: the size the protocol starts at ("" if none)
rndv_from()  { sed -n 's/.*\.\.\([0-9]*\)\.\.<rndv>.*/\1/p' <<<"$1"; }
zcopy_from() { sed -n 's/.*\.\.\([0-9]*\)\.\.<egr\/zcopy>.*/\1/p' <<<"$1"; }
# gt A B: A and B are numbers and A > B
gt() { [ -n "$1" ] && [ -n "$2" ] && [ "$1" -gt "$2" ]; }

b=$(tag_send "$base")
echo "# $base: $b"
check "tag_send has eager zcopy and rendezvous thresholds ($base)" \
    bash -c "[ -n '$(zcopy_from "$b")' ] && [ -n '$(rndv_from "$b")' ]"

slow=$(tag_send "latency_ns=3000,bw_mbs=20000,overhead_ns=60")
echo "# latency 3000 ns: $slow"
r=$(rndv_from "$b")
check "10x the latency: rendezvous starts at over 4x the size" \
    gt "$(rndv_from "$slow")" "${r:+$((r * 4))}"

narrow=$(tag_send "latency_ns=300,bw_mbs=3000,overhead_ns=60")
echo "# bandwidth 3000 MB/s: $narrow"
wide=$(tag_send "latency_ns=300,bw_mbs=1000000,overhead_ns=60")
echo "# bandwidth 1 TB/s: $wide"
if [ "${b#..}" = "$b" ]; then
    check "a link slower than memcpy: no eager zcopy" \
        bash -c "[ -n '$narrow' ] && [ -z '$(zcopy_from "$narrow")' ]"
    check "a link slower than memcpy: rendezvous threshold moves" \
        bash -c "[ -n '$(rndv_from "$narrow")' ] && [ '$(rndv_from "$narrow")' != '$(rndv_from "$b")' ]"
    check "a faster link: eager zcopy starts at a smaller size" \
        gt "$(zcopy_from "$b")" "$(zcopy_from "$wide")"
else
    why="UCX >= 1.18's protocol selection weighs zero-copy against copying by memcpy and registration costs, which the link's bandwidth does not change"
    skip "a link slower than memcpy: no eager zcopy" "$why"
    skip "a link slower than memcpy: rendezvous threshold moves" "$why"
    skip "a faster link: eager zcopy starts at a smaller size" "$why"
fi

STRAND_SIM_PERF="latency_ns=1234,bw_mbs=5678,overhead_ns=91" \
    strand-run ucx_info -d -t dc_strand >"$tmpdir/d" 2>&1
# ucx_info prints bandwidth in MiB/s: 5678e6 / 2^20 = 5414.96; the latency
# has a DC connect packet's 60 ns on top (as UCX's dc_mlx5)
check "ucx_info -d shows the override's latency, bandwidth and overhead" \
    bash -c "grep -q 'latency: *1294 nsec' '$tmpdir/d' &&
             grep -q 'bandwidth: *5414.9[0-9]/ppn' '$tmpdir/d' &&
             grep -q 'overhead: *91 nsec' '$tmpdir/d'"

unset STRAND_SIM_PERF
strand-run ucx_info -d -t dc_strand >"$tmpdir/m" 2>&1
lat=$(sed -n 's/.*latency: *\([0-9]*\) nsec.*/\1/p' "$tmpdir/m" | head -n1)
echo "# measured: $(grep -E 'latency|bandwidth|overhead' "$tmpdir/m" | tr -s ' ' | paste -sd' ')"
check "measured: a latency from 1 ns to 1 ms" \
    bash -c "[ -n '$lat' ] && [ '$lat' -ge 1 ] && [ '$lat' -lt 1000000 ]"
m=$(tag_send "")
echo "# measured: $m"
check "measured: UCP computes a rendezvous threshold" \
    bash -c "[ -n '$(rndv_from "$m")' ]"

# ucx_info -e exits with UCP's error (the device is gone, so is every
# active-message transport); a crash would be 128 + a signal number
STRAND_SIM_PERF="bw_mbs=fast" strand-run ucx_info -e -u t -P inter \
    >"$tmpdir/bad" 2>&1
rc=$?
check "a bad STRAND_SIM_PERF value is named, and is no crash" \
    bash -c "grep -q \"STRAND_SIM_PERF: bw_mbs='fast'\" '$tmpdir/bad' &&
             ! { [ $rc -gt 128 ] && [ $rc -lt 160 ]; } &&
             ! grep -qi 'segmentation\|backtrace\|caught signal' '$tmpdir/bad'"
STRAND_SIM_PERF="latency_ns=-1" strand-run ucx_info -d >"$tmpdir/bad_d" 2>&1
check_exit "ucx_info -d with a bad STRAND_SIM_PERF exits 0" $?
check "... and names the value" \
    grep -q "STRAND_SIM_PERF: latency_ns='-1': a number from 1 to" "$tmpdir/bad_d"
