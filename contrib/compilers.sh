# SPDX-License-Identifier: BSD-3-Clause
# Sourced (bash) by contrib/setup.sh and test/ucx/build-strand-for-ucx.sh:
# sets cc_args, the compiler variables their configure gets. With ccache
# installed (setup.sh installs it) the compilers go through it: `make
# check` builds strand three times from a fresh clone (for UCX 1.13.1,
# 1.18.1 and 1.22.0), and a machine that compiled the same sources before
# then compiles only what changed. STRAND_CCACHE=0 leaves the compilers as
# they are.
cc_args=()
if [ "${STRAND_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
    case "${CC:-gcc} ${CXX:-g++}" in
    *ccache*) ;;
    *) cc_args=(CC="ccache ${CC:-gcc}" CXX="ccache ${CXX:-g++}") ;;
    esac
fi
