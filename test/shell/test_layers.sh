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
