#!/bin/bash
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
