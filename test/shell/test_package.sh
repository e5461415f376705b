#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package (debian/): built with dpkg-buildpackage from a copy of
# the tracked source, it depends on the UCX release it was built against,
# installs the plugin where that UCX loads its modules from and strand-run,
# strand-perftest and strand-hwcheck into /usr/bin; installed, strand-run
# ucx_info -d lists both transports; purged, none of its files is left.
# Needs root (dpkg -i); a strand this machine already has (the package, or
# make install's files) is never replaced or removed: the test skips.
. "$(dirname "$0")/lib.sh"

pkg=ucx-strand
src=$STRAND_SRCDIR
name="Debian package"

if ! default_mode; then
    skip "$name" "checked in the default mode"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    skip "$name" "needs root (dpkg -i, dpkg --purge)"
    exit 0
fi
for tool in dpkg-buildpackage dh; do
    if ! command -v "$tool" >/dev/null; then
        skip "$name" "$tool not found (contrib/setup.sh installs dpkg-dev and debhelper)"
        exit 0
    fi
done
if ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    skip "$name" "$src is not a git checkout (the package is built from the files git tracks)"
    exit 0
fi
ucx_ver=$(pkg-config --modversion ucx)
moddir=$(pkg-config --variable=libdir ucx)/ucx
# the source of the system's UCX (a build for another UCX names its own in
# STRAND_UCX_SRC: not this one)
if [ "${STRAND_UCX_VERSION:-$ucx_ver}" = "$ucx_ver" ]; then
    ucx_src=${STRAND_UCX_SRC:-$src/.deps/ucx-$ucx_ver}
else
    ucx_src=$src/.deps/ucx-$ucx_ver
fi
if [ ! -f "$ucx_src/src/uct/base/uct_iface.h" ]; then
    skip "$name" "no UCX $ucx_ver source in $ucx_src (contrib/setup.sh unpacks it)"
    exit 0
fi

# The installed tools run with this machine's PATH (not the build tree's
# contrib/, which lib.sh puts first) and without make check's STRAND_PLUGIN.
# A build for another UCX (its prefix first on PATH and LD_LIBRARY_PATH)
# leaves that out too: the package is for the system's UCX.
syspath=$(tr ':' '\n' <<<"$PATH" | grep -vxF "$STRAND_BUILDDIR/contrib" |
          grep -vxF "${STRAND_UCX_PREFIX:-/nonexistent}/bin" | paste -sd:)
sys=(env -u STRAND_PLUGIN -u LD_PRELOAD -u UCX_PLUGIN_PATH -u LD_LIBRARY_PATH
     PATH="$syspath" STRAND_SIM_FABRIC="${fabric_prefix}pkg")

# ------------------------------------------- what this machine already has
status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
    skip "$name" "$pkg is on this machine already (dpkg: $status): not replacing or purging it"
    exit 0
fi
in_the_way=""
for f in "$moddir"/libuct_strand.so* /usr/bin/strand-run /usr/bin/strand-perftest \
         /usr/bin/strand-hwcheck /usr/libexec/strand/strand_hwcheck \
         $(PATH=$syspath command -v strand-run); do
    case "$in_the_way " in *" $f "*) continue ;; esac
    if [ -e "$f" ] || [ -L "$f" ]; then in_the_way="$in_the_way $f"; fi
done
if [ -n "$in_the_way" ]; then
    skip "$name" "a strand not from the package is installed (make install?):$in_the_way; not overwriting or removing it"
    exit 0
fi

# The package never stays installed, whatever happens below (lib.sh's
# cleanup runs too). installed=1 from just before dpkg -i.
installed=0
purge() {
    if [ "$installed" = 1 ]; then
        dpkg --purge "$pkg" >>"$tmpdir/purge.log" 2>&1
        installed=0
    fi
}
trap 'purge; rm -rf "$tmpdir"; rm -f /dev/shm/"$fabric_prefix"*' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# show FILE: a failure's log, its last lines
show() { tail -"${2:-25}" "$1" | sed 's/^/#   /'; }

# ------------------------------------------------------------------ build
# A copy of what git tracks (the working tree's versions): the build must
# not need anything but the source, and dpkg-buildpackage cleans the tree
# it builds in.
copy=$tmpdir/build/strand
mkdir -p "$copy"
git -C "$src" ls-files -z |
    tar -C "$src" --null -T - --ignore-failed-read -cf - 2>"$tmpdir/copy.log" |
    tar -C "$copy" -xf -
check "the tracked source copied (git ls-files)" test -x "$copy/debian/rules"

# (without make check's make variables: debian/rules is a make of its own;
# with the system's UCX only: a build for another UCX has that UCX's
# libraries on LD_LIBRARY_PATH, where dpkg-shlibdeps would look)
t0=$SECONDS
(cd "$copy" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES "${sys[@]:1}" \
    STRAND_UCX_SRC="$ucx_src" DEB_BUILD_OPTIONS="nocheck parallel=2" \
    timeout 600 dpkg-buildpackage -b -us -uc) >"$tmpdir/build.log" 2>&1
rc=$?
echo "# dpkg-buildpackage -b -us -uc: $((SECONDS - t0)) s"
debs=("$tmpdir/build/${pkg}_"*.deb)
deb=${debs[0]}
if [ "$rc" != 0 ] || [ ! -f "$deb" ]; then
    check_exit "dpkg-buildpackage -b -us -uc builds $pkg" "$rc"
    [ "$rc" = 0 ] && echo "#   no ${pkg}_*.deb in $tmpdir/build"
    show "$tmpdir/build.log"
    exit 1
fi
ok "dpkg-buildpackage -b -us -uc builds $pkg"

depends=$(dpkg-deb -f "$deb" Depends)
next=$(awk -F. '{ print $1 "." $2 "." $3 + 1 }' <<<"$ucx_ver")
echo "# Depends: $depends"
check "Depends: libucx0 (>= $ucx_ver), libucx0 (<< $next~) (the UCX built against)" \
    grep -qF "libucx0 (>= $ucx_ver), libucx0 (<< $next~)" <<<"$depends"

# ---------------------------------------------------------------- install
installed=1
dpkg -i "$deb" >"$tmpdir/install.log" 2>&1
rc=$?
check_exit "dpkg -i $(basename "$deb")" "$rc"
if [ "$rc" != 0 ]; then
    show "$tmpdir/install.log"
    exit 1
fi
dpkg -L "$pkg" >"$tmpdir/files"
# owned_by_pkg FILE: FILE is there and the package's
owned_by_pkg() { { [ -e "$1" ] || [ -L "$1" ]; } && grep -qxF "$1" "$tmpdir/files"; }
for f in libuct_strand.so libuct_strand.so.0; do
    check "$f in UCX's module directory ($moddir)" owned_by_pkg "$moddir/$f"
done
for f in strand-run strand-perftest strand-hwcheck; do
    check "$f in /usr/bin" owned_by_pkg "/usr/bin/$f"
done
hwprog=$(sed -n 's/^prog="\(.*\)"$/\1/p' /usr/bin/strand-hwcheck)
check "strand-hwcheck's program ($hwprog) installed" \
    bash -c "[ -x '$hwprog' ] && grep -qxF '$hwprog' '$tmpdir/files'"

"${sys[@]}" timeout 120 strand-run ucx_info -d >"$tmpdir/d" 2>&1
for t in dc_strand rc_strand; do
    check "installed strand-run ucx_info -d lists $t" \
        grep -q "^# *Transport: $t$" "$tmpdir/d" || show "$tmpdir/d" 10
done

"${sys[@]}" timeout 120 strand-hwcheck --sim >"$tmpdir/hw" 2>&1
rc=$?
grep '^  plugin ' "$tmpdir/hw" | sed 's/^/# /'
if [ "$rc" = 0 ] && grep -qE "^  plugin +$moddir/libuct_strand\.so" "$tmpdir/hw"; then
    ok "installed strand-hwcheck --sim: no check fails, with the installed plugin"
else
    not_ok "installed strand-hwcheck --sim (exit $rc)"
    grep -E 'FAIL|plugin' "$tmpdir/hw" | sed 's/^/#   /' | head -10
fi

"${sys[@]}" timeout 120 strand-perftest -n 10000 >"$tmpdir/perf" 2>&1
rc=$?
check "installed strand-perftest -n 10000 (am_lat over dc_strand)" \
    bash -c "[ $rc = 0 ] && grep -q '^Final:' '$tmpdir/perf'" || show "$tmpdir/perf" 10

# ------------------------------------------------------------------ purge
# every file (not directory) the package installed, and its own directories
while read -r f; do
    if [ -L "$f" ] || [ ! -d "$f" ]; then echo "$f"; fi
done <"$tmpdir/files" >"$tmpdir/pkg_files"
printf '%s\n' /usr/libexec/strand "/usr/share/doc/$pkg" >>"$tmpdir/pkg_files"
dpkg --purge "$pkg" >"$tmpdir/purge.log" 2>&1
rc=$?
check_exit "dpkg --purge $pkg" "$rc" || show "$tmpdir/purge.log"
installed=0
left=$(while read -r f; do
           if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
       done <"$tmpdir/pkg_files")
if [ -z "$left" ]; then
    ok "purged: none of the package's $(wc -l <"$tmpdir/pkg_files") files and directories is left"
else
    not_ok "purged: files of the package are left"
    sed 's/^/#   left: /' <<<"$left" | head -20
fi
check "purged: strand-run is not on PATH" \
    bash -c "! PATH='$syspath' command -v strand-run"
status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)
check "purged: dpkg lists $pkg as not installed" \
    test -z "$status" -o "$status" = not-installed
