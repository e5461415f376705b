#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ucx-build.sh SRC: builds the UCX of a release tarball or source tree into
# a prefix kept outside any clone, once per version, and prints two lines:
#   prefix=DIR   (give to configure --with-ucx)
#   src=DIR      (its configured source tree: --with-ucx-src)
# The cache is ${STRAND_UCX_CACHE:-~/.cache/strand}/ucx-VERSION; a build
# that finished leaves a stamp there and is reused, anything else is redone.
#
# The configure line is Debian's (debian/rules of its ucx package: --enable-mt,
# --enable-devel-headers, CMA, no backtrace detail) so that the struct layouts
# strand and UCX's gtest share with the libraries are the ones configure.ac's
# UCX_ABI_CPPFLAGS describe; valgrind annotations off (as Debian's). Left out
# because strand does not use them and they cost build time: UCX's own verbs
# transports (strand drives the NIC through rdma-core itself), rdmacm, the
# GPU and kernel-assisted modules, Java and Go bindings, documentation.
#
# No MPI either, as Debian's ucx_perftest has none: UCX's configure turns MPI
# on whenever MPICC is in the environment (config/m4/mpi.m4 tests only
# `-n "$MPICC"`, whatever --with-mpi says), and `make check` exports MPICC
# for its own MPI programs. An ucx_perftest built with MPI calls MPI_Init
# whenever stdin is not a terminal and then wants 2 MPI ranks instead of a
# server and a client ("This test should be run with exactly 2 processes
# in p2p case"). A cached build made that way is made again.
set -euo pipefail
unset MPICC MPIRUN SHMEMCC

src=${1:?usage: ucx-build.sh UCX_TARBALL_OR_SOURCE_DIR}
cache=${STRAND_UCX_CACHE:-$HOME/.cache/strand}
jobs=${STRAND_UCX_JOBS:-$(nproc)}

ucx_version_of() {  # configure.ac on stdin -> 1.18.1
    grep -E '^define\(\[ucx_ver_(major|minor|patch)\]' |
        sed 's/.*, *\([0-9]*\).*/\1/' | paste -sd.
}
if [ -d "$src" ]; then
    src=$(cd "$src" && pwd)
    ver=$(ucx_version_of <"$src/configure.ac")
else
    [ -f "$src" ] || { echo "ucx-build: no such file or directory: $src" >&2; exit 1; }
    ver=$(tar -xzOf "$src" --wildcards --no-wildcards-match-slash '*/configure.ac' \
              2>/dev/null | ucx_version_of) || true
fi
[ -n "$ver" ] || { echo "ucx-build: $1 is not a UCX source (no version in configure.ac)" >&2; exit 1; }

dir=$cache/ucx-$ver
prefix=$dir/prefix
flags="--enable-mt --enable-devel-headers --enable-cma --without-valgrind
       --disable-backtrace-detail --disable-logging --disable-doxygen-doc
       --without-verbs --without-rdmacm --without-cuda --without-rocm
       --without-knem --without-xpmem --without-java --without-go
       --without-fuse3 --disable-examples"
key=$(echo "$ver $flags $(gcc --version | head -1)" | sha1sum | cut -c1-16)
if [ "$(cat "$dir/stamp" 2>/dev/null)" = "$key" ] && [ -f "$prefix/lib/pkgconfig/ucx.pc" ] &&
   ! grep -q '^#define HAVE_MPI 1' "$dir/src/config.h" 2>/dev/null; then
    echo "prefix=$prefix"
    echo "src=$dir/src"
    exit 0
fi

echo "ucx-build: building UCX $ver into $prefix (a few minutes, once)" >&2
rm -rf "$dir"
mkdir -p "$dir/src"
if [ -d "$src" ]; then
    cp -a "$src/." "$dir/src/"
else
    tar -xzf "$src" -C "$dir/src" --strip-components=1
fi
cd "$dir/src"
{
    [ -x configure ] || ./autogen.sh
    # shellcheck disable=SC2086
    ./configure --prefix="$prefix" $flags
    make -j"$jobs"
    make install
} >"$dir/build.log" 2>&1 || {
    echo "ucx-build: building UCX $ver failed; the end of $dir/build.log:" >&2
    tail -30 "$dir/build.log" >&2
    exit 1
}
echo "$key" >"$dir/stamp"
echo "prefix=$prefix"
echo "src=$dir/src"
