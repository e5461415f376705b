#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make install puts the module where UCX's modules live, also under the
# name UCX >= 1.22 loads (libuct_strand.so.0), and strand-run into bin/.
. "$(dirname "$0")/lib.sh"
dest=$tmpdir/root
make -s -C "$STRAND_BUILDDIR" install DESTDIR="$dest" >"$tmpdir/install.log" 2>&1
check "make install DESTDIR=... succeeds" test $? = 0
moddir=$dest${STRAND_UCX_MODULEDIR:-$(pkg-config --variable=libdir ucx)/ucx}
check "libuct_strand.so installed in UCX's module directory" test -e "$moddir/libuct_strand.so"
check "libuct_strand.so.0 installed (UCX >= 1.22 plugin name)" test -e "$moddir/libuct_strand.so.0"
check "no libtool archive left next to UCX's modules" test ! -e "$moddir/libuct_strand.la"
check "strand-run installed" bash -c "find '$dest' -path '*/bin/strand-run' | grep -q ."
check "strand-hwcheck installed, its program in libexec/strand" \
    bash -c "find '$dest' -path '*/bin/strand-hwcheck' | grep -q . &&
             find '$dest' -path '*/libexec/strand/strand_hwcheck' -perm -u+x | grep -q ."
STRAND_PLUGIN=$moddir/libuct_strand.so strand-run ucx_info -d >"$tmpdir/d" 2>&1
check "the installed module registers component strand" grep -q '^# *Component: strand$' "$tmpdir/d"

# make uninstall takes back every file make install put there (automake
# leaves the directories)
make -s -C "$STRAND_BUILDDIR" uninstall DESTDIR="$dest" >"$tmpdir/uninstall.log" 2>&1
check "make uninstall DESTDIR=... succeeds" test $? = 0
find "$dest" ! -type d >"$tmpdir/left" 2>&1
if [ -s "$tmpdir/left" ]; then
    not_ok "make uninstall leaves no file behind"
    sed "s|^$dest|#   left: |" "$tmpdir/left" | head -20
else
    ok "make uninstall leaves no file behind"
fi
