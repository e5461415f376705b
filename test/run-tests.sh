#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs every strand test suite (gtest and shell level), lists what failed
# and what was skipped, and ends with one line
#   N passed, N failed, N skipped
# A skip never counts as a pass; a suite that crashes, hangs, exits non-zero
# without reporting a failure or reports nothing at all counts as a failure.
#
# The transport suites (TRANSPORT_GTEST, TRANSPORT_SHELL) run once per device
# mode of STRAND_TEST_MODES; everything else runs once, in the default mode.
# A mode's logs are in test/results/<mode>/, its results are named
# "[<mode>] <suite>: <test>".
#
# Environment (set by make): STRAND_BUILDDIR, STRAND_SRCDIR, STRAND_PLUGIN;
# STRAND_TEST_MODES: the modes to run (default: ALL_MODES; without
# "default" only the transport suites run); STRAND_UNDER_VALGRIND=1 runs the
# gtest suites under valgrind memcheck (and no shell tests); STRAND_STRESS=1
# adds the long soak/stress suites; GTEST_FILTER narrows the gtest suites.
set -u

# The suites that exercise the transport on the device: a gtest filter and
# shell tests (test/shell/<name>.sh).
TRANSPORT_GTEST='dc_strand*.*:*/dc_strand*.*:strand_md*.*'
TRANSPORT_SHELL='test_perftest test_ucp test_ucp_wakeup test_ucp_events test_fabric_identity test_dc_peers test_mpi test_shmem'

# The device modes and the environment each sets for every process the
# tests start (test/shell/lib.sh forwards it to MPI and OpenSHMEM ranks).
# Each mode starts from the device's defaults: the variables any mode sets
# are cleared first.
declare -A MODE_ENV=(
    [default]=''
    [num_dci1]='UCX_DC_STRAND_NUM_DCI=1'
    [dcs]='UCX_DC_STRAND_TX_POLICY=dcs'
    [cqe128]='MLX5_CQE_SIZE=128'
    [roce]='STRAND_SIM_LINK_LAYER=ethernet'
    [signaled]='UCX_DC_STRAND_TX_CQ_MODERATION=1'
    [rc]='STRAND_TEST_TL=rc_strand'
    [ucx118]=''
    [ucx122]='UCX_MEM_BISTRO_GRACE_DURATION=1ms'
)
# (UCX 1.22's memory hooks wait 50 ms per function they patch, for threads
# that may be running it: 0.4 s at every process start, some 10 minutes of
# this mode's thousands of processes. Tests start no threads before UCX;
# UCX 1.13 and 1.18 patch with no wait at all.)
ALL_MODES='default num_dci1 dcs cqe128 roce signaled rc ucx118 ucx122'
# Modes that run other transport suites than TRANSPORT_GTEST/SHELL: rc runs
# the suites on rc_strand (the shell tests read STRAND_TEST_TL), cqe128 and
# roce both transports'.
declare -A MODE_GTEST=(
    [rc]='rc_strand*.*:*/rc_strand*.*'
)
# the device modes (not DC's options) hold both transports' suites
MODE_GTEST[cqe128]="$TRANSPORT_GTEST:${MODE_GTEST[rc]}"
MODE_GTEST[roce]="$TRANSPORT_GTEST:${MODE_GTEST[rc]}"
declare -A MODE_SHELL=(
    [rc]='test_perftest test_ucp test_ucp_wakeup test_ucp_events test_fabric_identity test_mpi test_mpich test_shmem test_integrity test_tag_offload'
)
# Modes on another UCX (test/ucx/build-strand-for-ucx.sh builds strand
# against it): both transports' suites, a shell test NAME@rc on rc_strand,
# UCX's own uct suite of that version, and loading without preload.
declare -A MODE_UCX=([ucx118]=1.18.1 [ucx122]=1.22.0)
UCX_MODE_GTEST='abi.*:strand_md*.*:dc_strand*.*:*/dc_strand*.*:rc_strand*.*:*/rc_strand*.*'
UCX_MODE_SHELL='test_ucx_info test_strand_run test_plugin_path test_perftest test_ucp test_ucp_events test_dc_peers test_mpi test_mpich test_shmem test_integrity test_tag_offload test_perftest@rc test_ucp@rc test_ucp_events@rc test_mpi@rc test_mpich@rc test_shmem@rc test_integrity@rc test_tag_offload@rc test_ucx_uct'
for m in "${!MODE_UCX[@]}"; do
    MODE_GTEST[$m]=$UCX_MODE_GTEST
    MODE_SHELL[$m]=$UCX_MODE_SHELL
done
modes=${STRAND_TEST_MODES:-$ALL_MODES}

builddir=${STRAND_BUILDDIR:-$(pwd)}
srcdir=${STRAND_SRCDIR:-$(pwd)}
results=$builddir/test/results
export PATH="$builddir/contrib:$PATH"
# a build for a UCX of its own prefix (configure --with-ucx, setup.sh's
# STRAND_UCX_SRC): that UCX's programs and libraries, not the system's
if [ -n "${STRAND_UCX_PREFIX:-}" ] && [ "$STRAND_UCX_PREFIX" != /usr ]; then
    export PATH="$builddir/contrib:$STRAND_UCX_PREFIX/bin:$PATH"
    export LD_LIBRARY_PATH="$STRAND_UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
gtest=$builddir/test/gtest/strand_gtest
valgrind=${STRAND_UNDER_VALGRIND:-0}

passed=0; failed=0; skipped=0; failures=(); skips=()

# tally MODE SUITE LOG RC: counts the "pass|fail|skip<TAB>NAME[<TAB>WHY]"
# records on stdin; prints the suite's line
tally() {
    local mode=$1 suite=$2 log=$3 rc=$4 kind name why p=0 f=0 s=0
    while IFS=$'\t' read -r kind name why; do
        case "$kind" in
        pass) p=$((p + 1)) ;;
        fail) f=$((f + 1)); failures+=("[$mode] $suite: $name")
              echo "   FAILED: $name"
              # what the test printed about it (shown here: a CI log
              # keeps this output, not the test's own log)
              [ -n "$why" ] && tr '\037' '\n' <<<"$why" | sed 's/^/      /' ;;
        skip) s=$((s + 1)); skips+=("[$mode] $suite: $name${why:+ ($why)}") ;;
        esac
    done
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        f=1; failures+=("[$mode] $suite: exited with status $rc$(
            [ "$rc" = 124 ] && echo ' (timeout)') without reporting a failure")
    elif [ $((p + f + s)) = 0 ]; then
        f=1; failures+=("[$mode] $suite: reported no results")
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    echo "   $p passed, $f failed, $s skipped in $((SECONDS - t0))s: $log"
}

# gtest_results LOG: one record per test from gtest's per-test lines; a test
# that started and never ended (crash, timeout) is a failure
gtest_results() {
    awk '
        function name() { n = $4; sub(/,$/, "", n); return n }
        /^\[ RUN      \] /                 { cur = name(); why = ""; in_skip = 0; msg = ""; nmsg = 0; in_fail = 0; next }
        /^\[       OK \] .*\([0-9]+ ms\)$/ { print "pass\t" name(); cur = ""; next }
        /^\[  FAILED  \] .*\([0-9]+ ms\)$/ { print "fail\t" name() "\t" msg; cur = ""; next }
        cur != "" && /: Failure$/          { in_fail = 1 }
        in_fail && nmsg < 8                { msg = msg (nmsg++ ? "\037" : "") $0; next }
        /^\[  SKIPPED \] .*\([0-9]+ ms\)$/ { print "skip\t" name() "\t" why; cur = ""; next }
        cur != "" && /: Skipped$/          { in_skip = 1; next }
        in_skip && NF                      { why = why (why == "" ? "" : "; ") $0 }
        END { if (cur != "") print "fail\t" cur " (never finished: crash or timeout)\t" msg }
    ' "$1"
}

# tap_results LOG: one record per TAP line ("ok 3 - name # SKIP why"); a
# failure's record carries the comment lines ("# ...", up to 8) after it
tap_results() {
    awk '
        function flush() { if (held != "") print held "\t" msg; held = "" }
        held != "" && /^#/ { if (nmsg < 8) msg = msg (nmsg++ ? "\037" : "") $0; next }
        /^(not )?ok([ \t]|$)/ {
            flush()
            kind = /^not / ? "fail" : "pass"
            line = $0; sub(/^(not )?ok[ \t]*([0-9]+)?[ \t]*(-[ \t]*)?/, "", line)
            why = ""
            if (match(line, /[ \t]+#[ \t]*[Ss][Kk][Ii][Pp]/)) {
                why = substr(line, RSTART + RLENGTH); line = substr(line, 1, RSTART - 1)
                sub(/^[^ \t]*[ \t]*/, "", why)  # the rest of "SKIP", "skipped"
                if (kind == "pass") kind = "skip"
            }
            if (kind == "fail") { held = kind "\t" line; msg = ""; nmsg = 0; next }
            print kind "\t" line "\t" why
        }
        END { flush() }' "$1"
}

# gtest_names FILTER: the tests FILTER selects, one "suite.test" a line
gtest_names() {
    "$gtest" --gtest_list_tests --gtest_filter="$1" |
        awk '/^[^ ]/ { suite = $1; next } { print suite $1 }' | sort
}

# sweep_fabrics STAMP: the software device's fabrics (138 MiB of /dev/shm
# each) that gtest processes made since STAMP and left behind: the last
# process to leave a fabric removes it, one that crashed cannot, and a
# fixture that failed halfway may not get there. The suite's fixtures name
# theirs strand_<kind>_<pid>_<n>; only those whose process is gone go.
sweep_fabrics() {
    local f pid
    while read -r f; do
        [[ $(basename "$f") =~ ^strand_[a-z]+_([0-9]+)_[0-9]+$ ]] || continue
        pid=${BASH_REMATCH[1]}
        kill -0 "$pid" 2>/dev/null || rm -f "$f"
    done < <(find /dev/shm -maxdepth 1 -type f -name 'strand_*' -newer "$1" \
                 2>/dev/null)
}

# run_gtest MODE FILTER: the gtest binary (under valgrind with
# STRAND_UNDER_VALGRIND=1); FILTER empty: every test
run_gtest() {
    local mode=$1 filter=$2 log=$results/$1/gtest.log runner=(timeout 900)
    if [ "$valgrind" = 1 ]; then
        log=$results/$mode/gtest-valgrind.log
        # --fair-sched: the software device's progress thread is the
        # NIC; valgrind's default scheduling lets a thread that polls
        # starve it for seconds (rc_strand's tests then time out waiting
        # for completions a NIC would have delivered)
        runner=(timeout 3600 valgrind -q --fair-sched=yes
                --error-exitcode=99 --leak-check=full
                --errors-for-leak-kinds=definite --show-leak-kinds=definite
                --trace-children=no
                --suppressions="$srcdir/test/valgrind.supp")
    fi
    echo "== [$mode] gtest${filter:+ --gtest_filter=$filter}$(
        [ "$valgrind" = 1 ] && echo ' (valgrind)')"
    t0=$SECONDS
    local stamp rc
    stamp=$(mktemp)
    "${mode_env[@]}" "${runner[@]}" "$gtest" --gtest_color=no \
        ${filter:+"--gtest_filter=$filter"} >"$log" 2>&1
    rc=$?
    sweep_fabrics "$stamp"
    rm -f "$stamp"
    tally "$mode" gtest "$log" $rc < <(gtest_results "$log")
}

# run_shell MODE NAME: one shell test, TAP on its stdout (NAME@rc: on
# rc_strand)
run_shell() {
    local mode=$1 name=$2 log=$results/$1/$2.log t=$srcdir/test/shell/${2%@rc}.sh
    local tl_env=()
    [ "$name" != "${name%@rc}" ] && tl_env=(STRAND_TEST_TL=rc_strand)
    echo "== [$mode] $name"
    t0=$SECONDS
    if [ ! -r "$t" ]; then
        failed=$((failed + 1)); failures+=("[$mode] $name: $t is missing")
        echo "   FAILED: $t is missing"
        return
    fi
    "${mode_env[@]}" "${tl_env[@]}" timeout 900 bash "$t" >"$log" 2>&1
    tally "$mode" "$name" "$log" $? < <(tap_results "$log")
}

# mode_filter MODE: the gtest filter of a non-default mode: its transport
# suites, narrowed to GTEST_FILTER's tests when that is set ("" when none is
# left)
mode_filter() {
    local suites=${MODE_GTEST[$1]:-$TRANSPORT_GTEST}
    if [ -z "${GTEST_FILTER:-}" ]; then
        echo "$suites"
    else
        comm -12 <(gtest_names "$suites") <(gtest_names "$GTEST_FILTER") |
            paste -sd:
    fi
}

has_gtest=1
if [ "${STRAND_TEST_GTEST:-1}" = 0 ]; then
    has_gtest=0
    skipped=$((skipped + 1))
    skips+=("gtest: STRAND_TEST_GTEST=0")
elif [ ! -x "$gtest" ]; then
    has_gtest=0
    failed=$((failed + 1))
    failures+=("gtest: $gtest is missing (googletest is required: contrib/setup.sh installs it; configure, then make check)")
    echo "== gtest: $gtest missing"
fi

clear_env=()
for mode in "${!MODE_ENV[@]}"; do
    for v in ${MODE_ENV[$mode]}; do clear_env+=(-u "${v%%=*}"); done
done

# ucx_mode_prepare MODE: strand built against the mode's UCX; sets gtest and
# ucx_env (what the mode's processes see: that build, that UCX's programs
# and libraries); non-zero when the mode cannot run (recorded here)
ucx_mode_prepare() {
    local mode=$1 ver=${MODE_UCX[$1]} out rc t0=$SECONDS prefix src build
    echo "== [$mode] strand against UCX $ver"
    if [ "${STRAND_UCX_VERSION:-}" = "$ver" ]; then
        skipped=$((skipped + 1))
        skips+=("[$mode]: this build is for UCX $ver already (the other modes ran on it)")
        return 1
    fi
    out=$("$srcdir/test/ucx/build-strand-for-ucx.sh" "$ver" \
              "$builddir/test/ucx-build-$ver" 2>"$results/$mode/build.err")
    rc=$?
    if [ $rc = 2 ]; then
        skipped=$((skipped + 1))
        skips+=("[$mode]: $(tail -1 "$results/$mode/build.err")")
        echo "   SKIPPED: $(tail -1 "$results/$mode/build.err")"
        return 1
    elif [ $rc != 0 ]; then
        failed=$((failed + 1))
        failures+=("[$mode] strand builds against UCX $ver")
        echo "   FAILED: strand builds against UCX $ver"
        sed 's/^/      /' "$results/$mode/build.err"
        return 1
    fi
    passed=$((passed + 1))
    prefix=$(sed -n 's/^prefix=//p' <<<"$out")
    src=$(sed -n 's/^src=//p' <<<"$out")
    build=$(sed -n 's/^build=//p' <<<"$out")
    echo "   built in $((SECONDS - t0))s: $build"
    gtest=$build/test/gtest/strand_gtest
    ucx_env=(STRAND_BUILDDIR="$build" STRAND_PLUGIN="$build/.libs/libuct_strand.so"
             PATH="$build/contrib:$prefix/bin:$PATH"
             LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
             STRAND_UCX_VERSION="$ver" STRAND_UCX_PREFIX="$prefix"
             STRAND_UCX_SRC="$src" STRAND_UCX_GTEST_DIR="${STRAND_UCX_CACHE:-$HOME/.cache/strand}/ucx-gtest-$ver"
             STRAND_UCX_CFLAGS="-I$prefix/include"
             STRAND_UCX_LIBS="-L$prefix/lib -Wl,-rpath,$prefix/lib -lucp -luct -lucs")
}

main_gtest=$gtest
for mode in $modes; do
    gtest=$main_gtest
    ucx_env=()
    if [ -z "${MODE_ENV[$mode]+set}" ]; then
        failed=$((failed + 1))
        failures+=("[$mode]: unknown device mode (known: $ALL_MODES)")
        continue
    fi
    mkdir -p "$results/$mode"
    # shellcheck disable=SC2206 # MODE_ENV values are NAME=VALUE words
    if [ -n "${MODE_UCX[$mode]:-}" ]; then
        [ "$valgrind" = 1 ] && continue  # valgrind runs on this build's UCX
        ucx_mode_prepare "$mode" || continue
    fi
    mode_env=(env "${clear_env[@]}" ${MODE_ENV[$mode]} STRAND_TEST_MODE="$mode"
              "${ucx_env[@]}")
    if [ "$mode" = default ]; then
        [ "$has_gtest" = 1 ] && run_gtest "$mode" "${GTEST_FILTER:-}"
        shells=$(cd "$srcdir/test/shell" && ls test_*.sh | sed 's/\.sh$//')
    else
        if [ "$has_gtest" = 1 ]; then
            filter=$(mode_filter "$mode")
            [ -n "$filter" ] && run_gtest "$mode" "$filter"
        fi
        shells=${MODE_SHELL[$mode]:-$TRANSPORT_SHELL}
    fi
    [ "$valgrind" = 1 ] && continue  # valgrind checks the gtest suites only
    for name in $shells; do
        case "$name" in *_stress) [ "${STRAND_STRESS:-0}" = 1 ] || continue ;; esac
        # STRAND_TEST_SHELLS="test_x test_y@rc": only those (a developer's
        # shortcut; the gtest suites run unless STRAND_TEST_GTEST=0)
        case " ${STRAND_TEST_SHELLS:-$name} " in *" $name "*) ;; *) continue ;; esac
        run_shell "$mode" "$name"
    done
done
case " $modes " in
*" default "*) ;;
*) echo "note: STRAND_TEST_MODES='$modes' has no default mode: only the transport suites ran" ;;
esac

echo
for f in "${failures[@]}"; do echo "FAILED:  $f"; done
for s in "${skips[@]}"; do echo "SKIPPED: $s"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
