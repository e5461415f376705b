#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# strand-hwcheck: the software device's report (--sim) has an ok line for
# everything the device offers, an off line (never ok) for what a device
# without it lacks, and FAIL lines for damaged bytes; without a NIC the
# command says so in one line; UCX_STRAND_DEVICE_TYPE=hw ucx_info -d says
# why there is no strand device.
. "$(dirname "$0")/lib.sh"

export STRAND_SIM_FABRIC="${fabric_prefix}hwcheck"

# hwcheck NAME ARGS...: runs strand-hwcheck ARGS, its output in
# $tmpdir/NAME, its exit status in $rc
hwcheck() {
    local name=$1; shift
    timeout 300 strand-hwcheck "$@" >"$tmpdir/$name" 2>&1
    rc=$?
}

# line NAME VERDICT FILE: FILE has the check NAME's line with VERDICT
line() {
    grep -qE "^  $1 +$2( \(|$)" "$3"
}

# show FILE: a failed check's evidence (make check shows these lines)
show() {
    sed 's/^/#   /' "$1" | head -70
}

# ------------------------------------------------ the software device
hwcheck sim --sim
check_exit "strand-hwcheck --sim exits 0" "$rc"
[ "$rc" = 0 ] || show "$tmpdir/sim"
items=("am short" "am bcopy" "am zcopy" "put short" "put bcopy" "put zcopy"
       "get bcopy" "get zcopy" "atomic32 post" "atomic32 fetch"
       "atomic64 post" "atomic64 fetch" "tag eager short" "tag eager bcopy"
       "tag eager zcopy" "tag unexpected" "tag rndv zcopy" "bad rkey"
       "other endpoint")
for tl in dc_strand rc_strand; do
    missing=""
    for item in "${items[@]}"; do
        line "$tl $item" ok "$tmpdir/sim" || missing="$missing, $item"
    done
    check "--sim: $tl: an ok line for every traffic item, the bad rkey and the other endpoint${missing:+ (not ok:${missing#,})}" \
        test -z "$missing"
done
for tl in dc_strand rc_strand; do
    check "--sim: $tl: armed interfaces woke for a receive and a send completion" \
        line "$tl events" ok "$tmpdir/sim"
    check "--sim: $tl: queues of one register posting in turn lost nothing" \
        line "$tl one register" ok "$tmpdir/sim"
done
check "--sim: a signature check with the wrong seed failed (SIG_ERR)" \
    line "integrity SIG_ERR" ok "$tmpdir/sim"
check "--sim: the same mkey then landed a good block; a fresh one reported" \
    grep -qE '^  integrity after SIG_ERR +ok \(the same mkey configured right landed the block intact; configured wrong again it stayed silent' "$tmpdir/sim"
check "--sim: dc_strand's DCI stream was reset" \
    line "dc_strand stream reset" ok "$tmpdir/sim"
check "--sim: all 32- and 64-bit atomic operations ran" \
    bash -c "grep -qE '^  dc_strand atomic64 fetch +ok \(add and or xor swap cswap\)$' '$tmpdir/sim' &&
             grep -qE '^  rc_strand atomic32 post +ok \(add and or xor\)$' '$tmpdir/sim'"
check "--sim: nothing off, nothing failed" \
    grep -qE '^summary: [0-9]+ ok, 0 off, 0 FAIL$' "$tmpdir/sim"
check "--sim: the header names UCX, the plugin and the device" \
    bash -c "grep -qE '^  UCX +[0-9]+\.[0-9]+' '$tmpdir/sim' &&
             grep -qE '^  plugin +/.*libuct_strand' '$tmpdir/sim' &&
             grep -qE '^  device +smlx5_0:1, the software mlx5 device' '$tmpdir/sim'"
check "--sim: the report ends with what to send" \
    bash -c "grep -q '^what to send us' '$tmpdir/sim' &&
             grep -q 'ibv_devinfo -v' '$tmpdir/sim' &&
             grep -q 'strand-run ucx_info -d' '$tmpdir/sim'"

# -------------------- a device without masked atomics, tags, DCI streams
STRAND_SIM_CAPS=masked_atomics=0,tm_max_num_tags=0,dci_log_concurent=0,dci_log_errored=0 \
    hwcheck lesser --sim
check_exit "a lesser device: exits 0 (off is no failure)" "$rc"
[ "$rc" = 0 ] || show "$tmpdir/lesser"
check "a lesser device: 32-bit atomics off with the reason, never ok" \
    bash -c "grep -qE '^  dc_strand atomic32 post +off \(add and or xor: .*masked atomics\)$' '$tmpdir/lesser' &&
             ! grep -qE '^  (dc|rc)_strand atomic32 (post|fetch) +ok' '$tmpdir/lesser'"
check "a lesser device: 64-bit fetch: add and cswap ok, the others off" \
    bash -c "grep -qE '^  rc_strand atomic64 fetch +ok \(add cswap\)$' '$tmpdir/lesser' &&
             grep -qE '^  rc_strand atomic64 fetch +off \(and or xor swap: ' '$tmpdir/lesser'"
check "a lesser device: tag offload off, saying why, no tag line ok" \
    bash -c "grep -qE '^  dc_strand tag offload +off \(.*TM_ENABLE=try.*no tag matching\)$' '$tmpdir/lesser' &&
             ! grep -qE '^  (dc|rc)_strand tag .* ok' '$tmpdir/lesser'"
check "a lesser device: no DCI streams: the stream reset is off (dcs_quota)" \
    line "dc_strand stream reset" "off" "$tmpdir/lesser"
check "a lesser device: the bad rkey and the other endpoint still ok" \
    bash -c "grep -qE '^  dc_strand bad rkey +ok' '$tmpdir/lesser' &&
             grep -qE '^  dc_strand other endpoint +ok' '$tmpdir/lesser'"

# --------------------- a device without DEVX (streams and tags need it)
STRAND_SIM_CAPS=devx=0 hwcheck nodevx --sim
check_exit "without DEVX: exits 0 (off is no failure)" "$rc"
[ "$rc" = 0 ] || show "$tmpdir/nodevx"
check "without DEVX: the stream reset is off (no DEVX), not FAIL" \
    grep -qE '^  dc_strand stream reset +off \(off \(no DEVX\)' "$tmpdir/nodevx"
check "without DEVX: tag offload off, naming DEVX" \
    grep -qE '^  rc_strand tag offload +off \(.*no DEVX' "$tmpdir/nodevx"
STRAND_SIM_CAPS=signature=0 hwcheck nosig --sim
check "without signature offload: the integrity checks are off, exit 0" \
    bash -c "[ $rc = 0 ] && grep -qE '^  integrity SIG_ERR +off \(' '$tmpdir/nosig' &&
             grep -qE '^  integrity after SIG_ERR +off \(' '$tmpdir/nosig'"
check "without DEVX: the bad rkey and the other endpoint still ok" \
    bash -c "grep -qE '^  dc_strand bad rkey +ok' '$tmpdir/nodevx' &&
             grep -qE '^  dc_strand other endpoint +ok' '$tmpdir/nodevx'"

# ----------------------------------------- damaged bytes are found
STRAND_SIM_FAULTS=sdc=0.5,seed=3 hwcheck damaged --sim --timeout 5
check "damaged data: exits 1" test "$rc" = 1 || show "$tmpdir/damaged"
check "damaged data: the zero-copy PUT and GET FAIL with the bytes wrong" \
    bash -c "grep -qE '^  dc_strand put zcopy +FAIL \([0-9]+ of [0-9]+ bytes wrong' '$tmpdir/damaged' &&
             grep -qE '^  rc_strand get zcopy +FAIL \([0-9]+ of [0-9]+ bytes wrong' '$tmpdir/damaged'"
check "damaged data: the summary lists the failed checks" \
    grep -qE '^failed: .*dc_strand put zcopy' "$tmpdir/damaged"

# ------------------------------------------------------ no NIC here
has_mlx5=0
for d in /sys/class/infiniband/*/device/driver; do
    [ "$(basename "$(readlink "$d" 2>/dev/null)")" = mlx5_core ] && has_mlx5=1
done
if [ "$has_mlx5" = 1 ]; then
    skip "without a NIC: one line, exit 2" "this machine has an mlx5 NIC"
    skip "UCX_STRAND_DEVICE_TYPE=hw ucx_info -d says why there is no device" \
        "this machine has an mlx5 NIC"
else
    hwcheck nonic
    check "without a NIC: exit 2" test "$rc" = 2 || show "$tmpdir/nonic"
    check "without a NIC: exactly one line, naming the fix" \
        bash -c "[ \$(wc -l <'$tmpdir/nonic') = 1 ] &&
                 grep -qE '^strand-hwcheck: no mlx5 NIC on this machine \(.*\); use --sim' '$tmpdir/nonic'"

    UCX_STRAND_DEVICE_TYPE=hw strand-run ucx_info -d >"$tmpdir/hw" 2>&1
    check "UCX_STRAND_DEVICE_TYPE=hw ucx_info -d says why there is no device, once" \
        bash -c "[ \$(grep -c 'UCX_STRAND_DEVICE_TYPE=hw, but no hardware mlx5 device: no RDMA device' '$tmpdir/hw') = 1 ]" ||
        show "$tmpdir/hw"
fi
for type in auto sim; do
    UCX_STRAND_DEVICE_TYPE=$type strand-run ucx_info -d >"$tmpdir/$type" 2>&1
    check "UCX_STRAND_DEVICE_TYPE=$type ucx_info -d: no such line, strand listed" \
        bash -c "! grep -q 'no hardware mlx5 device' '$tmpdir/$type' &&
                 grep -q '^# *Component: strand$' '$tmpdir/$type'"
done

# ---------------------------------------------------------- options
hwcheck help --help
check "--help: usage, exit 0" \
    bash -c "[ $rc = 0 ] && grep -q '^usage: strand-hwcheck' '$tmpdir/help'"
hwcheck bad --no-such-option
check "a bad option: usage, exit 2" \
    bash -c "[ $rc = 2 ] && grep -q '^usage: strand-hwcheck' '$tmpdir/bad'"
