#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One formatting rule for the tree (.clang-format at its root): every C and
# C++ source file git tracks is as clang-format writes it. A file that is
# not is named with the first lines of its difference; `make format`
# rewrites the files of a change (`make format FORMAT_FILES=...`).
# STRAND_FORMAT_BASE=REV checks only the files changed since REV.
. "$(dirname "$0")/lib.sh"

src=$STRAND_SRCDIR
if ! default_mode; then
    skip "format" "checked in the default mode"
    exit 0
fi
if ! command -v clang-format >/dev/null; then
    not_ok "clang-format is installed (contrib/setup.sh installs it)"
    exit 0
fi
if ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    skip "the tree follows .clang-format" "not a git checkout"
    exit 0
fi

# the sources: C and C++ the project wrote (not test data, not configure's)
sources() {
    if [ -n "${STRAND_FORMAT_BASE:-}" ]; then
        git -C "$src" diff --name-only --diff-filter=AMR "$STRAND_FORMAT_BASE" --
    else
        git -C "$src" ls-files
    fi | grep -E '\.(c|h|cc)$'
}

# unformatted: each file clang-format would change, and how
unformatted() {
    local f bad=0
    while read -r f; do
        [ -f "$src/$f" ] || continue
        if ! clang-format --style=file "$src/$f" | cmp -s - "$src/$f"; then
            echo "$f:"
            clang-format --style=file "$src/$f" | diff "$src/$f" - | head -8 |
                sed 's/^/    /'
            bad=1
        fi
    done < <(sources)
    return $bad
}

n=$(sources | wc -l)
check "the $n C/C++ files follow .clang-format ($(clang-format --version | sed 's/.*version \([0-9.]*\).*/\1/'))" \
    unformatted

# the rule's own check can fail: a file planted out of shape is caught
printf 'int  f( int x ){return x;}\n' >"$tmpdir/bad.c"
cp "$src/.clang-format" "$tmpdir/"
check "a planted file out of shape is caught" \
    eval '! clang-format --style=file "$tmpdir/bad.c" | cmp -s - "$tmpdir/bad.c"'
