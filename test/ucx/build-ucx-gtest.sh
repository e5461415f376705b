#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# build-ucx-gtest.sh UCX_SRC OUT_DIR: UCX's own uct test suite (the uct part
# of test/gtest of the UCX source tree that matches the installed UCX),
# built against the installed UCX's libraries with Debian's build macros,
# with strand's transports added to its transport lists. The UCX is the
# system's (pkg-config) unless STRAND_UCX_CFLAGS / STRAND_UCX_LIBS name
# another (configure's UCX_CFLAGS and UCX_LIBS: make passes them). The
# sources are those of UCX 1.13 to 1.22 that exist in UCX_SRC (later
# versions add test_uct_iface.cc; gtest-matchers.cc in their googletest).
# What is patched:
#   - uct_test.h: dc_strand and rc_strand in UCT_TEST_NO_SELF_TLS (every
#     test instantiated for all transports but self), in place of the three
#     ugni transports (Cray's, built on no machine here): from UCX 1.18 on
#     the list is as long as UCS_PP_FOREACH can take;
#   - test_tag.cc: dc_strand and rc_strand next to rc_mlx5 and dc_mlx5;
#   - test_md.cc: the strand component next to UCX's own MDs;
#   - test_flush.cc: dc_strand and rc_strand next to dc_mlx5, rc_mlx5 and
#     rc_verbs in the transports uct_cancel_test runs on (the others skip
#     "not supported yet").
# The copy and the objects live in OUT_DIR (outside any source tree); a
# build whose inputs did not change is reused (OUT_DIR/stamp). Prints the
# path of the binary.
#
# Left out (they need parts of UCX that are not installed, or test other
# transports only): test_uct_perf.cc (libucxperf), test_mm.cc (posix and
# sysv only), test_mem.cc (memory allocators, no transport), test_stats.cc
# (UCX_STATS is off in Debian's build), v2/, ib/, tcp/, cuda/, rocm/; of
# later versions: test_atomic_key_reg_rdma_mem_type.cc (rc_mlx5 and dc_mlx5
# only), test_sockaddr.cc (connection managers: strand has none),
# test_device.cc (GPU-initiated device endpoints), common/test_perf.cc and
# test_obj_size.cc (libucxperf; UCP's object sizes), cuda_context.cc.
set -euo pipefail

src=${1:?UCX source tree}
out=${2:?output directory}
here=$(cd "$(dirname "$0")" && pwd)
cxx=${CXX:-g++}
jobs=${STRAND_UCX_GTEST_JOBS:-2}

[ -f "$src/test/gtest/uct/uct_test.h" ] || {
    echo "build-ucx-gtest: no UCX test sources in $src" >&2; exit 1; }

common="main.cc test_gtest_cmn.cc mem_buffer.cc test_helpers.cc
        test_watchdog.cc test.cc"
uct="uct_test.cc uct_p2p_test.cc test_amo.cc test_amo_add_xor.cc
     test_amo_and_or.cc test_amo_cswap.cc test_amo_fadd_fxor.cc
     test_amo_fand_for.cc test_amo_swap.cc test_event.cc test_fence.cc
     test_flush.cc test_many2one_am.cc test_md.cc test_p2p_am.cc
     test_p2p_err.cc test_p2p_mix.cc test_p2p_rma.cc test_pending.cc
     test_progress.cc test_uct_ep.cc test_zcopy_comp.cc test_peer_failure.cc
     test_tag.cc test_uct_iface.cc"
gtest="gtest.cc gtest-death-test.cc gtest-filepath.cc gtest-port.cc
       gtest-printers.cc gtest-test-part.cc gtest-typed-test.cc
       gtest-matchers.cc"
# only what this UCX version has
exists() { local dir=$1 f; shift; for f; do if [ -f "$src/test/gtest/$dir/$f" ]; then echo "$f"; fi; done; }
common=$(exists common $common)
uct=$(exists uct $uct)
gtest=$(exists common/googletest $gtest)
# Debian's UCX build macros (configure.ac's UCX_ABI_CPPFLAGS: the struct
# layouts the tests share with the libraries)
flags="-O2 -g -std=c++11 -DENABLE_ASSERT=1 -DENABLE_PARAMS_CHECK=1
       -DENABLE_DEBUG_DATA=0 -DENABLE_MT=1
       -DUCS_MAX_LOG_LEVEL=UCS_LOG_LEVEL_DEBUG -UENABLE_STATS -DNVALGRIND
       -DTOP_SRCDIR=\\\"$src\\\" -DGTEST_UCM_HOOK_LIB_DIR=\\\"/nonexistent\\\"
       -I$src/src ${STRAND_UCX_CFLAGS:-} -I$out/test -I$out/test/gtest
       -Wno-deprecated-declarations"
libs="${STRAND_UCX_LIBS:-$(pkg-config --libs ucx 2>/dev/null || echo -lucp -luct -lucs)}
      -lucm -lpthread -ldl -lrt"

key=$( { cat "$0"; echo "$src $cxx $flags $libs"; $cxx --version | head -1; } |
       sha1sum | cut -c1-16)
if [ -x "$out/gtest" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$key" ]; then
    echo "$out/gtest"
    exit 0
fi

rm -rf "$out/test"
mkdir -p "$out/obj" "$out/test"
cp -r "$src/test/gtest" "$out/test/gtest"
g=$out/test/gtest
python3 - "$g" <<'PY'
import sys
g = sys.argv[1]
def patch(path, old, new):
    s = open(path).read()
    if old not in s:
        sys.exit("build-ucx-gtest: %s changed: cannot add strand to it" % path)
    open(path, "w").write(s.replace(old, new, 1))
patch(g + "/uct/uct_test.h",
      "    ugni_rdma,               \\\n    ugni_udt,                \\\n"
      "    ugni_smsg,               \\\n",
      "    dc_strand,               \\\n    rc_strand,               \\\n")
patch(g + "/uct/test_tag.cc",
      "    _UCT_INSTANTIATE_TEST_CASE(_test_case, dc_mlx5)\n",
      "    _UCT_INSTANTIATE_TEST_CASE(_test_case, dc_mlx5) \\\n"
      "    _UCT_INSTANTIATE_TEST_CASE(_test_case, dc_strand) \\\n"
      "    _UCT_INSTANTIATE_TEST_CASE(_test_case, rc_strand)\n")
patch(g + "/uct/test_flush.cc",
      "        if ((GetParam()->tl_name != \"dc_mlx5\") &&\n",
      "        if ((GetParam()->tl_name != \"dc_mlx5\") &&\n"
      "            (GetParam()->tl_name != \"dc_strand\") &&\n"
      "            (GetParam()->tl_name != \"rc_strand\") &&\n")
patch(g + "/uct/test_md.cc",
      "UCS_PP_FOREACH(_UCT_MD_INSTANTIATE_TEST_CASE, _test_case, \\\n",
      "UCS_PP_FOREACH(_UCT_MD_INSTANTIATE_TEST_CASE, _test_case, \\\n"
      "                   strand, \\\n")
PY

# a Makefile, for make's parallel and incremental build
{
    echo "CXX = $cxx"
    echo "FLAGS = $(echo $flags)"
    objs=""
    for s in $common; do objs="$objs obj/common_$s.o"
        printf 'obj/common_%s.o: test/gtest/common/%s\n\t$(CXX) $(FLAGS) -c $< -o $@\n' "$s" "$s"; done
    for s in $uct; do objs="$objs obj/uct_$s.o"
        printf 'obj/uct_%s.o: test/gtest/uct/%s\n\t$(CXX) $(FLAGS) -c $< -o $@\n' "$s" "$s"; done
    for s in $gtest; do objs="$objs obj/gtest_$s.o"
        printf 'obj/gtest_%s.o: test/gtest/common/googletest/%s\n\t$(CXX) $(FLAGS) -c $< -o $@\n' "$s" "$s"; done
    printf 'gtest:%s\n\t$(CXX) -o $@ $^ %s\n' "$objs" "$(echo $libs)"
} >"$out/Makefile"
rm -f "$out/gtest"
make -C "$out" -j"$jobs" -s gtest >&2
echo "$key" >"$out/stamp"
echo "$out/gtest"
