#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# strand setup: installs every build/test dependency from Debian's packages and
# unpacks the UCX source package (internal headers) into a build-local,
# git-ignored directory, then configures strand for Debian's UCX (1.13.1).
# Idempotent: safe to run again.
#
# STRAND_UCX_SRC=PATH (a UCX release tarball or source tree, e.g. UCX
# 1.18.1 or 1.22.0): strand is configured for that UCX instead, built once
# into ~/.cache/strand/ucx-VERSION by contrib/ucx-build.sh (docs/ucx-versions.md).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ucx_src_dir="$top/.deps"

pkgs=(build-essential autoconf automake libtool pkg-config dpkg-dev debhelper
      libucx-dev ucx-utils libibverbs-dev ibverbs-providers rdma-core
      libhwloc-dev openmpi-bin libopenmpi-dev mpich libmpich-dev
      googletest libgtest-dev valgrind ccache
      tshark iproute2 nftables libisal-dev clang-format)
# ISA-L: the CRC-32 of the software device's datagrams between hosts;
# tshark: test_wire reads the device's RoCEv2 datagrams with it; iproute2
# (ip netns, veth, bridge): test/hosts's nodes; nftables: loss and
# duplication on their links (this kernel family may lack sch_netem);
# clang-format: make format-check (the tree follows .clang-format)
# cross compilers: test_barriers reads the fences the data path emits on
# POWER and Arm (Debian ships them for amd64 hosts)
if [ "$(dpkg --print-architecture)" = amd64 ]; then
    pkgs+=(gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross
           gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done

# The UCX source package needs a deb-src entry mirroring the Debian one.
src_list=/etc/apt/sources.list.d/strand-deb-src.sources
need_update=0
if [ ! -f "$src_list" ]; then
    base=/etc/apt/sources.list.d/debian.sources
    if [ -f "$base" ]; then
        sed -n '/^Types:/,/^$/p' "$base" | sed 's/^Types: deb$/Types: deb-src/' \
            | as_root tee "$src_list" >/dev/null
    else
        grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
            | as_root tee /etc/apt/sources.list.d/strand-deb-src.list >/dev/null
    fi
    need_update=1
fi
if [ ${#missing[@]} -gt 0 ] || [ $need_update = 1 ]; then
    as_root apt-get update -q
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

ucx_ver=$(pkg-config --modversion ucx)
if [ ! -f "$ucx_src_dir/ucx-$ucx_ver/src/uct/base/uct_iface.h" ]; then
    mkdir -p "$ucx_src_dir"
    ( cd "$ucx_src_dir" && apt-get source --download-only -q "ucx=$(dpkg-query -W -f='${Version}' libucx-dev)" )
    dsc=$(ls "$ucx_src_dir"/ucx_*.dsc | head -n1)
    rm -rf "$ucx_src_dir/ucx-$ucx_ver"
    dpkg-source --no-check -x "$dsc" "$ucx_src_dir/ucx-$ucx_ver" >/dev/null
fi
echo "setup: UCX $ucx_ver source headers in $ucx_src_dir/ucx-$ucx_ver"

# MPICH (mpiexec.mpich, mpicc.mpich) stands beside Open MPI: the mpi
# alternative (mpicc, mpirun) stays Open MPI's, which Debian prefers too
if [ "$(basename "$(readlink -f "$(command -v mpirun)")")" != orterun ] &&
   [ -x /usr/bin/mpicc.openmpi ]; then
    as_root update-alternatives --set mpi /usr/bin/mpicc.openmpi
    as_root update-alternatives --set mpirun /usr/bin/mpirun.openmpi
fi

ucx_flags=()
want_ver=$ucx_ver
if [ -n "${STRAND_UCX_SRC:-}" ]; then
    built=$("$top/contrib/ucx-build.sh" "$STRAND_UCX_SRC")
    ucx_prefix=$(sed -n 's/^prefix=//p' <<<"$built")
    ucx_flags=(--with-ucx="$ucx_prefix"
               --with-ucx-src="$(sed -n 's/^src=//p' <<<"$built")")
    want_ver=$(PKG_CONFIG_PATH=$ucx_prefix/lib/pkgconfig pkg-config --modversion ucx)
    echo "setup: UCX $want_ver built in $ucx_prefix"
fi

cd "$top"
[ -x configure ] || ./autogen.sh
# configured already, for this UCX: keep it (a tree configured for another
# UCX is configured again)
if [ ! -f Makefile ] ||
   [ "$(sed -n 's/^UCX_VERSION = //p' Makefile)" != "$want_ver" ]; then
    . "$top/contrib/compilers.sh"
    ./configure "${ucx_flags[@]}" "${cc_args[@]}" ${STRAND_CONFIGURE_FLAGS:-}
fi
echo "setup: done. Next: make check"
