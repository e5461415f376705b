#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Integrity-checked GETs under UCP and Open MPI: the software device damages
# 1% of the 512-byte blocks of every READ's data past the link CRC
# (STRAND_SIM_FAULTS sdc_read=0.01). With UCX_DC_STRAND_INTEGRITY (in the rc
# mode: rc_strand and UCX_RC_STRAND_INTEGRITY) every byte
# arrives right, and each interface counts at close (UCX_LOG_LEVEL=info) the
# bad blocks it found and the pieces it read again: the check is what saves
# the data. Without it the same damage reaches the application.
. "$(dirname "$0")/lib.sh"

# the device modes do not change what is checked: once per transport (and
# UCX version: UCP >= 1.18 reads and flushes differently)
if ! default_mode && ! ucx_mode && is_dc; then
    skip "integrity checks under UCP and MPI" "runs in the default and rc modes"
    exit 0
fi

cc=${CC:-cc}
if ! $cc -O2 -Wall -o "$tmpdir/ucp_check" "$STRAND_SRCDIR/test/ucp/ucp_check.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        2>"$tmpdir/cc"; then
    not_ok "ucp_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1 UCX_LOG_LEVEL=info
export STRAND_SIM_FAULTS="sdc_read=0.01"

# counter LOG NAME: NAME summed over the interfaces' integrity lines
# ("crc32c: 16 checked, 4900 pieces read, 953 bad reads, 953 read again,
# 0 failed, 0 unchecked, 953 mkeys renewed")
counter() {
    grep -o "integrity [a-z0-9]*: .*" "$1" | grep -o "[0-9]* $2" |
        awk '{s += $1} END {print s + 0}'
}

# counted NAME LOG: bad blocks found, every bad read read again through a
# new landing mkey (one that reported an error stays silent: spec 9), no
# GET failed, nothing read unchecked
counted() {
    local bad again failed unchecked renewed
    bad=$(counter "$2" "bad reads")
    again=$(counter "$2" "read again")
    failed=$(counter "$2" "failed")
    unchecked=$(counter "$2" "unchecked")
    renewed=$(counter "$2" "mkeys renewed")
    if [ "$bad" -gt 0 ] && [ "$again" = "$bad" ] && [ "$failed" = 0 ] &&
       [ "$unchecked" = 0 ] && [ "$renewed" = "$bad" ]; then
        ok "$1 ($bad bad reads found and read again)"
    else
        not_ok "$1 (bad $bad, read again $again, failed $failed, unchecked $unchecked, mkeys renewed $renewed)"
        grep "integrity " "$2" | sed 's/^/#   /' | head -4
    fi
}

# ucp KIND: ucp_check's data traffic (tag 1 B .. 16 MiB, PUT/GET, ...) with
# integrity KIND; the logs in $tmpdir/ucp.KIND
ucp() {
    local d p0 rc0 rc1
    d=$(mktemp -d "$tmpdir/ucp.XXXX")
    export UCX_TLS=$tl "${tlp}INTEGRITY=$1"
    export STRAND_SIM_FABRIC="${fabric_prefix}ucp$1"
    timeout 240 strand-run "$tmpdir/ucp_check" "$d" 0 data >"$d/0.log" 2>&1 &
    p0=$!
    timeout 240 strand-run "$tmpdir/ucp_check" "$d" 1 data >"$d/1.log" 2>&1
    rc1=$?
    wait "$p0"; rc0=$?
    cat "$d/0.log" "$d/1.log" >"$tmpdir/ucp.$1"
    echo "$rc0 $rc1"
}

# ucp_right WHAT KIND: ucp_check with integrity KIND, every byte right on
# both ranks (WHAT names the run in the verdict)
ucp_right() {
    local rcs
    rcs=$(ucp "$2")
    if [ "$rcs" = "0 0" ] &&
       [ "$(grep -c '^ucp_check: rank [01]: PASS$' "$tmpdir/ucp.$2")" = 2 ]; then
        ok "$1, integrity $2, 1% of READ blocks damaged: every byte right"
    else
        not_ok "$1, integrity $2: ucp_check (exit $rcs)"
        grep 'ucp_check' "$tmpdir/ucp.$2" | sed 's/^/#   /' | tail -6
    fi
}

# tag_bw_damaged WHAT LOG: UCP tag_bw through rendezvous, 64 KiB .. 16 MiB,
# integrity crc32c; both sides' output in LOG
tag_bw_damaged() {
    : >"$2"
    for size in 65536 1048576 16777216; do
        perf "$1 $size, integrity crc32c, 1% damaged" -t tag_bw \
            -s "$size" -n $((size > 1048576 ? 10 : 100)) -w 2
        cat "$tmpdir/srv" "$tmpdir/cli" >>"$2"
    done
}

for kind in crc32c t10dif; do
    ucp_right ucp "$kind"
    counted "ucp, integrity $kind: the damage was found and read again" \
        "$tmpdir/ucp.$kind"
done

rcs=$(ucp off)
if [ "$rcs" != "0 0" ] &&
   grep -q '^ucp_check: rank [01]: FAIL (.*wrong byte' "$tmpdir/ucp.off"; then
    ok "ucp, integrity off: the same damage reaches the application ($(
        grep -o 'FAIL (.*)' "$tmpdir/ucp.off" | head -1))"
else
    not_ok "ucp, integrity off: the damage should show (exit $rcs)"
    grep 'ucp_check' "$tmpdir/ucp.off" | sed 's/^/#   /' | tail -4
fi

# UCP tag_bw through rendezvous, 64 KiB .. 16 MiB, read with GETs (UCP >=
# 1.18 picks its rendezvous from the transport's estimates, which the
# device measures when it opens: on a loaded machine it may pick a PUT,
# which the sender writes and nothing checks)
export UCX_RNDV_SCHEME=get_zcopy
export UCX_TLS=$tl,self "${tlp}INTEGRITY=crc32c"
export STRAND_SIM_FABRIC="${fabric_prefix}perf"
tag_bw_damaged "ucp tag_bw" "$tmpdir/perf.log"
counted "ucp tag_bw 64k..16MiB: the damage was found and read again" \
    "$tmpdir/perf.log"
unset UCX_RNDV_SCHEME

# rc_strand with tag matching: the transport reads each matched rendezvous
# itself with its FIN pipelined behind the READ; a bad block stops the QP
# in SQD before the FIN, the FIN is cancelled and the piece read again.
# rndv_counter LOG NAME: NAME summed over the rendezvous lines at close
rndv_counter() {
    grep -o "rc_strand rendezvous: .*" "$1" | grep -o " $2 [0-9]*" |
        awk '{s += $2} END {print s + 0}'
}
# pipelined NAME LOG: rendezvous read by the transport, stops handled and
# FINs cancelled, nothing failed
pipelined() {
    local xfers stops cancelled failed
    xfers=$(rndv_counter "$2" xfers)
    stops=$(rndv_counter "$2" stops)
    cancelled=$(rndv_counter "$2" fins_cancelled)
    failed=$(rndv_counter "$2" failed)
    if [ "$xfers" -gt 0 ] && [ "$stops" -gt 0 ] && [ "$cancelled" -gt 0 ] &&
       [ "$failed" = 0 ]; then
        ok "$1 ($xfers rendezvous, $stops stops in SQD, $cancelled FINs cancelled)"
    else
        not_ok "$1 (rendezvous $xfers, stops $stops, FINs cancelled $cancelled, failed $failed)"
        grep "rc_strand rendezvous" "$2" | sed 's/^/#   /' | head -4
    fi
}
if ! is_dc; then
    export "${tlp}TM_ENABLE=y"
    for kind in crc32c t10dif; do
        ucp_right "ucp, tag matching" "$kind"
        # (ucp_check's receives come after their messages: UCP reads
        # those rendezvous itself, through checked GETs)
        counted "ucp, tag matching, integrity $kind: the damage was found" \
            "$tmpdir/ucp.$kind"
    done
    export UCX_TLS=$tl,self "${tlp}INTEGRITY=crc32c"
    export STRAND_SIM_FABRIC="${fabric_prefix}tmperf"
    # UCP >= 1.18's protocols choose between the transport's rendezvous
    # and their own from estimates the device measures at open (1.22 counts
    # a copy on the receiver for an offloaded one, "remote copy" in
    # UCX_PROTO_INFO_DIR's graphs): not always the transport's. Its v1
    # protocols use the transport's (docs/ucx-versions.md)
    set -- $(ucx_version)
    [ "$1" -gt 1 ] || [ "$2" -ge 18 ] && export UCX_PROTO_ENABLE=n
    tag_bw_damaged "ucp tag_bw, tag matching," "$tmpdir/tmperf.log"
    unset UCX_PROTO_ENABLE
    counted "ucp tag_bw 64k..16MiB, tag matching: the damage was found" \
        "$tmpdir/tmperf.log"
    pipelined "ucp tag_bw 64k..16MiB, tag matching: pipelined FINs" \
        "$tmpdir/tmperf.log"
    unset "${tlp}TM_ENABLE"
fi

# ------------------------------------------------------------- Open MPI
mpicc=${MPICC:-mpicc}
if ! command -v "$mpicc" >/dev/null || ! command -v mpirun >/dev/null; then
    skip "Open MPI with integrity" "mpicc/mpirun not installed"
    exit 0
fi
if ! "$mpicc" -O2 -Wall -o "$tmpdir/mpi_check" \
        "$STRAND_SRCDIR/test/mpi/mpi_check.c" 2>"$tmpdir/cc"; then
    not_ok "mpi_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
asan=()
[ -n "${STRAND_ASAN_RUNTIME:-}" ] && asan=(-x ASAN_OPTIONS=detect_leaks=0)

# mpi KIND [TM]: mpi_check on 4 ranks with integrity KIND (and tag
# matching: TM y); the output in $tmpdir/mpi.KIND[TM]
mpi() {
    timeout 240 strand-run mpirun -np 4 --oversubscribe "${asan[@]}" \
        -x UCX_TLS="$tl,self" -x UCX_NET_DEVICES=smlx5_0:1 \
        -x UCX_LOG_LEVEL=info -x STRAND_SIM_FAULTS \
        -x "${tlp}INTEGRITY=$1" -x "${tlp}TM_ENABLE=${2:-n}" \
        -x UCX_TM_THRESH=0 \
        -x STRAND_SIM_FABRIC="${fabric_prefix}mpi$1${2:-}" \
        "$tmpdir/mpi_check" >"$tmpdir/mpi.$1${2:-}" 2>&1
}
mpi crc32c; rc=$?
pass=$(grep -c '^mpi_check: rank [0-9] of 4: PASS$' "$tmpdir/mpi.crc32c")
if [ "$rc" = 0 ] && [ "$pass" = 4 ]; then
    ok "mpirun -np 4, integrity crc32c, 1% damaged: every check passes"
else
    not_ok "mpirun -np 4, integrity crc32c (mpirun $rc, $pass of 4 passed)"
    grep 'mpi_check' "$tmpdir/mpi.crc32c" | sed 's/^/#   /' | tail -6
fi
counted "mpirun -np 4: the damage was found and read again" \
    "$tmpdir/mpi.crc32c"
mpi off; rc=$?
if [ "$rc" != 0 ] && grep -q 'FAIL (.*wrong byte' "$tmpdir/mpi.off"; then
    ok "mpirun -np 4, integrity off: the same damage reaches the application"
else
    not_ok "mpirun -np 4, integrity off: the damage should show (mpirun $rc)"
    grep 'mpi_check' "$tmpdir/mpi.off" | sed 's/^/#   /' | tail -4
fi
if ! is_dc; then
    mpi crc32c y; rc=$?
    pass=$(grep -c '^mpi_check: rank [0-9] of 4: PASS$' "$tmpdir/mpi.crc32cy")
    if [ "$rc" = 0 ] && [ "$pass" = 4 ]; then
        ok "mpirun -np 4, tag matching, integrity crc32c, 1% damaged: every check passes"
    else
        not_ok "mpirun -np 4, tag matching, integrity crc32c (mpirun $rc, $pass of 4 passed)"
        grep 'mpi_check' "$tmpdir/mpi.crc32cy" | sed 's/^/#   /' | tail -6
    fi
    counted "mpirun -np 4, tag matching: the damage was found and read again" \
        "$tmpdir/mpi.crc32cy"
    # UCP >= 1.18 picks the transport's rendezvous or its own from
    # estimates the device measures at open: Open MPI usually sends through
    # the transport's, not always on a loaded machine (its v1 protocols,
    # which would force it, fail Open MPI 4.1's tag matching on 1.22)
    set -- $(ucx_version)
    if { [ "$1" -gt 1 ] || [ "$2" -ge 18 ]; } &&
       [ "$(rndv_counter "$tmpdir/mpi.crc32cy" xfers)" = 0 ] &&
       [ "$(rndv_counter "$tmpdir/mpi.crc32cy" failed)" = 0 ]; then
        skip "mpirun -np 4, tag matching: MPI rendezvous read by the transport" \
            "UCP $1.$2 chose its own rendezvous this time"
    else
        pipelined "mpirun -np 4, tag matching: MPI rendezvous read by the transport" \
            "$tmpdir/mpi.crc32cy"
    fi
fi
