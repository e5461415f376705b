#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The source tree keeps its layers (docs/architecture.md): the transports'
# shared core (uct_mlx5/common) knows neither transport, rc_strand reaches
# dc_strand only through UCT, dc_strand never asks which transport it
# serves; no function of the transport grows past 80 lines; every source
# file says its license.
. "$(dirname "$0")/lib.sh"

src=$STRAND_SRCDIR
if ! default_mode; then
    skip "layers" "checked in the default mode"
    exit 0
fi

# includes of uct_mlx5/<folder>/ headers in the files of $1
includes_of() {
    grep -Hn '#include "\(uct_mlx5/\)\?\('"$2"'\)/' "$src"/uct_mlx5/"$1"/*.[ch]
}
no_output() { local out; out=$("$@"); [ -z "$out" ] || { echo "$out"; return 1; }; }

check "rc/ includes no dc/ header" no_output includes_of rc dc
check "common/ includes no dc/ or rc/ header" no_output includes_of common 'dc\|rc'
check "common/ names no dc_strand or rc_strand symbol" \
    no_output grep -Hn 'strand_\(dc\|rc\)_\|STRAND_\(DC\|RC\)_' \
    "$src"/uct_mlx5/common/*.[ch]
check "dc/ has no rc_strand branch (iface->rc)" \
    no_output grep -Hn 'iface->rc\b' "$src"/uct_mlx5/dc/*.[ch]

# No circle of calls between the object files of the transport: each file
# calls only files below it, read from what each object defines and leaves
# undefined (nm), so the rule holds whatever tool draws the tree. First the
# reader itself, on two objects planted to call each other.
circles=$src/test/shell/call_circles.sh
objects_of() { find "$STRAND_BUILDDIR/$1" -name '*.o' -path '*/.libs/*' | sort; }
printf 'int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n' >"$tmpdir/a.c"
printf 'int a(int);\nint b(int x) { return x ? a(x - 1) : 1; }\n' >"$tmpdir/b.c"
if ${CC:-cc} -c -o "$tmpdir/a.o" "$tmpdir/a.c" && ${CC:-cc} -c -o "$tmpdir/b.o" "$tmpdir/b.c"; then
    check "the circle reader finds a planted back-call (a.o -> b.o -> a.o)" \
        eval '! "$circles" 1 "$tmpdir/a.o" "$tmpdir/b.o" >"$tmpdir/planted" &&
              grep -q "^2 files: " "$tmpdir/planted"'
else
    not_ok "the circle reader finds a planted back-call (no C compiler)"
fi
mapfile -t uct_objects < <(objects_of uct_mlx5)
if [ ${#uct_objects[@]} -gt 30 ]; then
    check "no circle of calls between the ${#uct_objects[@]} objects of uct_mlx5" \
        "$circles" 1 "${uct_objects[@]}"
else
    not_ok "no circle of calls in uct_mlx5 (${#uct_objects[@]} objects built)"
fi
# the software device's stages hand work up through queues: a circle of
# more than 3 of its files is one stage calling back up
mapfile -t sim_objects < <(objects_of src/sim)
if [ ${#sim_objects[@]} -gt 20 ]; then
    check "no circle of calls over 3 of the ${#sim_objects[@]} objects of src/sim" \
        "$circles" 3 "${sim_objects[@]}"
else
    not_ok "no circle of calls in src/sim (${#sim_objects[@]} objects built)"
fi

# functions (from a '{' in column 0 to its '}') of more than 80 lines
long_functions() {
    awk 'FNR == 1 { start = 0 }
         /^\{/ { start = FNR }
         /^\}/ && start { if (FNR - start > 80) print FILENAME ":" start ": " FNR - start " lines"; start = 0 }' \
        "$src"/uct_mlx5/*.c "$src"/uct_mlx5/*/*.c
}
check "no function of uct_mlx5 over 80 lines" no_output long_functions

# every source file the project tracks carries its SPDX line (debian/'s
# changelog and source/format have no comment syntax; debian/copyright
# states the license, as LICENSE does)
unlicensed() {
    git -C "$src" ls-files | grep -v '\.md$\|^NEWS$\|^LICENSE$\|^\.gitignore$\|\.supp$' |
        grep -vx 'debian/changelog\|debian/source/format\|debian/copyright' |
        while read -r f; do
            grep -q 'SPDX-License-Identifier: BSD-3-Clause' "$src/$f" || echo "$f"
        done
}
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    check "every source file has an SPDX line" no_output unlicensed
else
    skip "every source file has an SPDX line" "not a git checkout"
fi
