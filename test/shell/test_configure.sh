#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# configure refuses a missing or mismatched UCX source tree with one line
# that names the fix.
. "$(dirname "$0")/lib.sh"

# A scratch copy of the generated configure and what it checks for first.
work=$tmpdir/cfg
mkdir -p "$work/uct_mlx5"
cp "$STRAND_SRCDIR/configure" "$work/"
cp -r "$STRAND_SRCDIR/config" "$work/"
cp "$STRAND_SRCDIR/uct_mlx5/strand_component.c" "$work/uct_mlx5/"

(cd "$work" && ./configure --with-ucx-src=/nonexistent >out 2>&1); rc=$?
check "missing UCX source: configure fails" test "$rc" != 0
check "missing UCX source: the message names contrib/setup.sh" \
    grep -q "error: UCX internal headers not found.*contrib/setup.sh" "$work/out"

fake=$tmpdir/ucx-fake
mkdir -p "$fake/src/uct/base"
touch "$fake/src/uct/base/uct_iface.h"
printf 'define([ucx_ver_major], 1)\ndefine([ucx_ver_minor], 12)\ndefine([ucx_ver_patch], 0)\n' \
    >"$fake/configure.ac"
(cd "$work" && ./configure --with-ucx-src="$fake" >out2 2>&1); rc=$?
check "mismatched UCX source: configure fails" test "$rc" != 0
check "mismatched UCX source: the message gives both versions" \
    grep -q "error: UCX source in .* is 1.12.0 but the installed UCX is $(pkg-config --modversion ucx)" "$work/out2"
