#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# build-strand-for-ucx.sh VERSION OUT_DIR: strand built against UCX VERSION
# (1.18.1, 1.22.0, ...) in OUT_DIR, for the ucxNNN modes of run-tests.sh.
#
# The UCX comes from contrib/ucx-build.sh's cache (~/.cache/strand/ucx-VERSION,
# STRAND_UCX_CACHE) or, where the cache is missing, from the release tarball
# ucx-VERSION.tar.gz in STRAND_UCX_TARBALLS (default: ../shared/ucx next to
# the source tree), built into the cache once. strand's own sources (the
# files git knows in STRAND_SRCDIR, committed or not) are copied to
# OUT_DIR/src and built there (a copy, because the source tree itself may be
# configured for another UCX); a second run rebuilds what changed.
#
# Prints "prefix=", "src=" (UCX's) and "build=" (strand's build tree) on
# success. Exit status 2: the UCX is not available here (the reason on
# stderr: the mode is skipped); 1: something failed (the end of the log on
# stderr).
set -euo pipefail

ver=${1:?UCX version}
out=${2:?output directory}
srcdir=${STRAND_SRCDIR:?}
cache=${STRAND_UCX_CACHE:-$HOME/.cache/strand}
tarballs=${STRAND_UCX_TARBALLS:-$srcdir/../shared/ucx}
jobs=${STRAND_BUILD_JOBS:-2}

if [ -f "$cache/ucx-$ver/stamp" ] && [ -d "$cache/ucx-$ver/src" ]; then
    from=$cache/ucx-$ver/src       # ucx-build.sh reuses the build
elif [ -f "$tarballs/ucx-$ver.tar.gz" ]; then
    from=$tarballs/ucx-$ver.tar.gz
else
    echo "no UCX $ver: neither built in $cache/ucx-$ver nor a release tarball ucx-$ver.tar.gz in $tarballs (set STRAND_UCX_TARBALLS)" >&2
    exit 2
fi
if ! git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
    echo "the source tree is not a git checkout: cannot tell strand's sources from build output" >&2
    exit 2
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)     # the build below runs in another directory
log=$out/build.log
: >"$log"
fail() {
    echo "$1; the end of $log:" >&2
    tail -25 "$log" >&2
    exit 1
}

built=$("$srcdir/contrib/ucx-build.sh" "$from" 2>>"$log") ||
    fail "building UCX $ver failed"
prefix=$(sed -n 's/^prefix=//p' <<<"$built")
ucx_src=$(sed -n 's/^src=//p' <<<"$built")

# the copy: tar keeps the files' times, so make rebuilds only what changed
mkdir -p "$out/src"
( cd "$srcdir" && git ls-files -co --exclude-standard |
      while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done |
      tar -cf - -T - ) | tar -xf - -C "$out/src" ||
    fail "copying the sources failed"

cd "$out/src"
{
    [ -x configure ] || ./autogen.sh
    if [ ! -f Makefile ] ||
       [ "$(sed -n 's/^UCX_VERSION = //p' Makefile)" != "$ver" ]; then
        . "$srcdir/contrib/compilers.sh"
        ./configure --with-ucx="$prefix" --with-ucx-src="$ucx_src" "${cc_args[@]}" \
                    ${STRAND_CONFIGURE_FLAGS:-}
    fi
    make -j"$jobs" all
    make -j"$jobs" test/gtest/strand_gtest test/uct/dc_peers
} >>"$log" 2>&1 || fail "building strand against UCX $ver failed"

echo "prefix=$prefix"
echo "src=$ucx_src"
echo "build=$out/src"
