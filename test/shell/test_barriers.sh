#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The data path's memory barriers (src/mlx5/barrier.h, UCX's ucs/arch
# fences) emit, on each architecture, what rdma-core's providers/mlx5
# orders with at the same place: the doorbells and the CQE read of
# test/mlx5/barrier_probe.c compiled natively and with the cross compilers
# contrib/setup.sh installs (POWER, Arm), and their fence instructions read
# from the assembly. A release fence (lwsync on POWER) between the SRQ's
# WQEs and its doorbell record orders nothing for the device.
. "$(dirname "$0")/lib.sh"

if ! default_mode; then
    skip "barriers" "checked in the default mode"
    exit 0
fi
ucx_src=$(sed -n 's/^UCX_SRC = //p' "$STRAND_BUILDDIR/Makefile")

# fences CC: "function instruction" lines of the probe's fences, built by CC
fences() {
    local cc=$1 out="$tmpdir/$1.s"
    "$cc" -O2 -S -o "$out" -I"$STRAND_BUILDDIR" -I"$STRAND_SRCDIR/src" \
        -I"$ucx_src/src" -idirafter /usr/include \
        "$STRAND_SRCDIR/test/mlx5/barrier_probe.c" || return 1
    awk '/^probe_[a-z_]*:/ { f = substr($1, 7, length($1) - 7) }
         f && /^\t(sync|lwsync|hwsync|eieio|dmb|dsb|sfence|lfence|mfence)/ {
             $1 = $1; print f, $0 }' "$out"
}

# has CC FUNCTION REGEX: the function's fences match REGEX (grep -E)
has() {
    grep -E "^$2 ($3)\$" "$tmpdir/$1.fences" >/dev/null ||
        { sed 's/^/#   /' "$tmpdir/$1.fences"; return 1; }
}
# only CC FUNCTION REGEX: every fence of the function matches REGEX
only() {
    ! grep -E "^$2 " "$tmpdir/$1.fences" | grep -vE "^$2 ($3)\$" >/dev/null ||
        { sed 's/^/#   /' "$tmpdir/$1.fences"; return 1; }
}

arch=$(uname -m)
for cc in gcc powerpc64le-linux-gnu-gcc aarch64-linux-gnu-gcc; do
    case $cc in
    gcc) target=$arch ;;
    powerpc64le*) target=ppc64le ;;
    aarch64*) target=aarch64 ;;
    esac
    if [ "$cc" != gcc ] && [ "$target" = "$arch" ]; then
        continue # the native compiler did it
    fi
    if ! command -v "$cc" >/dev/null; then
        skip "$target: the probe's fences" "no $cc (contrib/setup.sh installs it)"
        continue
    fi
    check "$target: the probe compiles" bash -c "$(declare -f fences); \
        tmpdir='$tmpdir' STRAND_BUILDDIR='$STRAND_BUILDDIR' \
        STRAND_SRCDIR='$STRAND_SRCDIR' ucx_src='$ucx_src' \
        fences $cc >'$tmpdir/$cc.fences'"
    case $target in
    x86_64)
        # TSO: a compiler barrier for coherent memory, as rdma-core; sfence
        # around the register's write-combining store
        check "x86_64: SRQ WQEs before the doorbell record: no fence instruction (TSO)" \
            bash -c "! grep -q '^srq_doorbell ' '$tmpdir/$cc.fences'"
        check "x86_64: the send doorbell record, then the register: sfence before and after" \
            bash -c "[ \$(grep -c '^sq_doorbell sfence\$' '$tmpdir/$cc.fences') = 2 ]"
        check "x86_64: a CQE's ownership, then its contents: no fence instruction" \
            bash -c "! grep -q '^cqe_get ' '$tmpdir/$cc.fences'"
        ;;
    ppc64le)
        check "POWER: SRQ WQEs before the doorbell record: sync, not lwsync" \
            has "$cc" srq_doorbell 'sync|hwsync'
        check "POWER: no lwsync anywhere a device must see the order" \
            only "$cc" 'srq_doorbell|sq_doorbell' 'sync|hwsync'
        check "POWER: a CQE's ownership, then its contents: a barrier" \
            has "$cc" cqe_get 'sync|hwsync|lwsync'
        ;;
    aarch64)
        check "Arm: SRQ WQEs before the doorbell record: dmb oshst" \
            has "$cc" srq_doorbell 'dmb oshst|dmb osh|dsb st'
        check "Arm: the send doorbell record and the register: outer-shareable store barriers" \
            only "$cc" sq_doorbell 'dmb oshst|dmb osh|dsb st'
        check "Arm: a CQE's ownership, then its contents: dmb oshld" \
            has "$cc" cqe_get 'dmb oshld|dmb osh'
        ;;
    esac
done
