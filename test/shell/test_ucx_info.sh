#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# strand-run makes the installed UCX see the strand component.
. "$(dirname "$0")/lib.sh"

strand-run ucx_info -d >"$tmpdir/d" 2>&1
check "ucx_info -d lists component strand" grep -q '^# *Component: strand$' "$tmpdir/d"
check "ucx_info -d prints no strand refusal" bash -c "! grep -q 'strand: not loaded' '$tmpdir/d'"

ucx_info -d >"$tmpdir/plain" 2>&1
check "plain ucx_info (no preload) does not list strand" \
    bash -c "! grep -q '^# *Component: strand$' '$tmpdir/plain'"

strand-run ucx_info -c -f >"$tmpdir/c" 2>&1
check "ucx_info -c -f lists UCX_STRAND_DEVICE_TYPE" \
    grep -q '^UCX_STRAND_DEVICE_TYPE=auto$' "$tmpdir/c"
check "UCX_STRAND_DEVICE_TYPE has a doc string" \
    bash -c "grep -B12 '^UCX_STRAND_DEVICE_TYPE=' '$tmpdir/c' | grep -q 'software mlx5 device'"

UCX_STRAND_DEVICE_TYPE=bogus strand-run ucx_info -c >"$tmpdir/bad" 2>&1
check "a bad UCX_STRAND_DEVICE_TYPE value is reported, not a crash" \
    bash -c "grep -qi 'DEVICE_TYPE' '$tmpdir/bad' && ! grep -qi 'segmentation\|backtrace' '$tmpdir/bad'"

# tag matching asked for: ucx_info (which opens interfaces without the
# unexpected-message callbacks) shows the tag capabilities of both
for tl in dc_strand rc_strand; do
    env "UCX_$(echo $tl | tr a-z A-Z)_TM_ENABLE=y" strand-run ucx_info -d \
        -t "$tl" >"$tmpdir/tm_$tl" 2>&1
    check "UCX_$(echo $tl | tr a-z A-Z)_TM_ENABLE=y: ucx_info -d shows $tl's tag capabilities" \
        bash -c "for c in tag_eager_short tag_eager_bcopy tag_eager_zcopy tag_rndv_zcopy tag_recv; do grep -q \"^# *\$c: \" '$tmpdir/tm_$tl' || exit 1; done"
    strand-run ucx_info -d -t "$tl" >"$tmpdir/notm_$tl" 2>&1
    check "by default ucx_info -d shows no tag capabilities for $tl" \
        bash -c "grep -q 'Transport: $tl' '$tmpdir/notm_$tl' && ! grep -q 'tag_eager_short' '$tmpdir/notm_$tl'"
done

# FC_ENABLE also answers to UCX's own name for it (RC_FC_ENABLE)
UCX_DC_STRAND_RC_FC_ENABLE=n strand-run ucx_info -c -f >"$tmpdir/fc" 2>&1
check "UCX_DC_STRAND_RC_FC_ENABLE=n turns dc_strand's flow control off" \
    grep -q '^UCX_DC_STRAND_FC_ENABLE=n$' "$tmpdir/fc"
