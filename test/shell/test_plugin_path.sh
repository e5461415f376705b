#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# UCX >= 1.22 loads third-party modules from UCX_PLUGIN_PATH, no preload:
# strand's build tree on it lists strand's transports in ucx_info -d. The
# naming rule (v1.22.0 src/ucs/sys/module.c): a directory's
# lib<framework>_<name>.so.0 is loaded when <name> has no further '_'
# (libuct_strand.so.0 is; a copy named libuct_strand_dev.so.0 is not), one
# library per name, the directories of UCX_PLUGIN_PATH before UCX's own.
. "$(dirname "$0")/lib.sh"

if ! ucx_has_plugin_path; then
    skip "UCX_PLUGIN_PATH loads strand without preload" \
        "UCX $(ucx_version | tr ' ' .) has no UCX_PLUGIN_PATH (1.22 and later): strand-run preloads"
    exit 0
fi
libs=$(dirname "$STRAND_PLUGIN")
check "the build tree holds libuct_strand.so.0 (the name UCX looks for)" \
    test -e "$libs/libuct_strand.so.0"

# no strand-run, no LD_PRELOAD: only UCX_PLUGIN_PATH
env -u LD_PRELOAD UCX_PLUGIN_PATH="$libs" ucx_info -d >"$tmpdir/d" 2>&1
check "UCX_PLUGIN_PATH=<build tree>: ucx_info -d lists component strand" \
    grep -q '^# *Component: strand$' "$tmpdir/d"
for t in dc_strand rc_strand; do
    check "UCX_PLUGIN_PATH=<build tree>: ucx_info -d lists $t" \
        grep -q "^# *Transport: $t\$" "$tmpdir/d"
done
check "UCX_PLUGIN_PATH=<build tree>: no strand refusal, no crash" \
    bash -c "! grep -qi 'strand: not loaded\|segmentation\|backtrace' '$tmpdir/d'"

env -u LD_PRELOAD ucx_info -d >"$tmpdir/plain" 2>&1
check "without UCX_PLUGIN_PATH (not installed): no strand" \
    bash -c "! grep -q '^# *Component: strand$' '$tmpdir/plain'"

# the naming rule, on copies in a directory of their own
mkdir -p "$tmpdir/bad" "$tmpdir/good"
cp "$STRAND_PLUGIN" "$tmpdir/bad/libuct_strand_dev.so.0"
env -u LD_PRELOAD UCX_PLUGIN_PATH="$tmpdir/bad" ucx_info -d >"$tmpdir/b" 2>&1
check "a second '_' in the name (libuct_strand_dev.so.0): UCX skips it" \
    bash -c "! grep -q '^# *Component: strand$' '$tmpdir/b'"

# two directories with a strand each: one is loaded (one component)
cp "$STRAND_PLUGIN" "$tmpdir/good/libuct_strand.so.0"
env -u LD_PRELOAD UCX_PLUGIN_PATH="$libs:$tmpdir/good" ucx_info -d \
    >"$tmpdir/two" 2>&1
check "two directories with strand: one component strand, listed once" \
    test "$(grep -c '^# *Component: strand$' "$tmpdir/two")" = 1

# UCP over it, no strand-run: a stand-in for it that only sets
# UCX_PLUGIN_PATH runs lib.sh's ucx_perftest pair
mkdir -p "$tmpdir/bin"
printf '#!/bin/sh\nexec env -u LD_PRELOAD UCX_PLUGIN_PATH="%s" "$@"\n' "$libs" \
    >"$tmpdir/bin/strand-run"
chmod +x "$tmpdir/bin/strand-run"
PATH="$tmpdir/bin:$PATH" UCX_TLS=$tl,self \
    perf "ucx_perftest tag_lat over $tl with UCX_PLUGIN_PATH only" \
    -t tag_lat -n 1000
