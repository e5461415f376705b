# Helpers for shell-level tests: TAP-style "ok - name" / "not ok - name".
: "${STRAND_BUILDDIR:?run through make check}"
export PATH="$STRAND_BUILDDIR/contrib:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT

ok()     { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
# check NAME CMD...: ok when CMD succeeds (returns its failure too)
check() {
    local name=$1; shift
    if "$@"; then ok "$name"; else not_ok "$name"; return 1; fi
}
