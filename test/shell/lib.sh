# SPDX-License-Identifier: BSD-3-Clause
# Helpers for shell-level tests. Every result is one TAP line:
#   ok - NAME            passed
#   not ok - NAME        failed
#   ok - NAME # SKIP WHY not run here: counted as skipped, never as passed
set -u
: "${STRAND_BUILDDIR:?run through make check}"
export PATH="$STRAND_BUILDDIR/contrib:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmpdir=$(mktemp -d)
# Software fabrics (STRAND_SIM_FABRIC) named "$fabric_prefix..." are
# removed at exit: each is a /dev/shm segment its last user removes, and a
# process killed (or crashed) with its device open never detaches.
fabric_prefix="$(basename "$0" .sh)_$$_"
trap 'rm -rf "$tmpdir"; rm -f /dev/shm/"$fabric_prefix"*' EXIT

# The device mode run-tests.sh runs this test in (default, num_dci1, ...):
# parts that do not touch the device run in the default mode only.
default_mode() { [ "${STRAND_TEST_MODE:-default}" = default ]; }
# a mode on another UCX than the build's (ucx118, ucx122: run-tests.sh)
ucx_mode() { case "${STRAND_TEST_MODE:-}" in ucx1*) true ;; *) false ;; esac; }
# the UCX the test runs on, as "1 22" (major minor) for comparisons
ucx_version() { local v=${STRAND_UCX_VERSION:-$(pkg-config --modversion ucx)}
                echo "${v%%.*} $(echo "$v" | cut -d. -f2)"; }
# UCX >= 1.22: strand is found on UCX_PLUGIN_PATH (strand-run sets it)
ucx_has_plugin_path() { set -- $(ucx_version); [ "$1" -gt 1 ] || [ "$2" -ge 22 ]; }

# The transport under test: dc_strand, or rc_strand (STRAND_TEST_TL, set by
# the rc mode); tlp: its configuration prefix. Parts about DCIs, streams or
# credits run on dc_strand only (is_dc).
tl=${STRAND_TEST_TL:-dc_strand}
case "$tl" in
rc_strand) tlp=UCX_RC_STRAND_ ;;
*)         tl=dc_strand; tlp=UCX_DC_STRAND_ ;;
esac
is_dc() { [ "$tl" = dc_strand ]; }

ok()     { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
# skip NAME WHY...: NAME cannot run here (a missing tool, a sanitizer build)
skip()   { local name=$1; shift; echo "ok - $name # SKIP $*"; }
# check NAME CMD...: ok when CMD succeeds (returns its failure too)
check() {
    local name=$1; shift
    if "$@"; then ok "$name"; else not_ok "$name"; return 1; fi
}
# check_exit NAME STATUS: ok when a command's exit STATUS is 0; a failure
# tells a timeout (timeout's 124) and a crash apart
check_exit() {
    if [ "$2" = 0 ]; then
        ok "$1"
    elif [ "$2" = 124 ]; then
        not_ok "$1 (timed out)"
    elif [ "$2" -gt 128 ]; then
        not_ok "$1 (killed by signal $(($2 - 128)))"
    else
        not_ok "$1 (exit $2)"
    fi
}

# mpi_verdict NAME PROG NP RC FILE: an MPI job of NP ranks running test/mpi
# PROG passed when every rank printed "PROG: rank R of NP: PASS", no line
# says FAIL or UCX ERROR and the launcher exited 0 (RC); FILE is its output
mpi_verdict() {
    local name=$1 prog=$2 np=$3 rc=$4 out=$5 pass fail
    pass=$(grep -c "^$prog: rank [0-9]* of $np: PASS$" "$out")
    fail=$(grep -c "FAIL\|UCX  ERROR" "$out")
    if [ "$rc" = 0 ] && [ "$pass" = "$np" ] && [ "$fail" = 0 ]; then
        ok "$name"
    else
        not_ok "$name (launcher exit $rc, $pass of $np ranks passed)"
        grep -v " INFO " "$out" | sed 's/^/#   /' | tail -40
    fi
}

# target NAME VERDICT DETAIL: a performance target a benchmark judged. A
# missed target passes, the miss in the line (the figures depend on the
# machine and its load); no verdict means the benchmark did not judge it.
target() {
    case "$2" in
    met*|PASS)   ok "$1" ;;
    MISS*)       ok "$1 (target missed: $3)" ;;
    *)           not_ok "$1 (no verdict${2:+: '$2'})" ;;
    esac
}

# wait_until SECONDS CMD...: polls until CMD succeeds; 1 when SECONDS pass
# first. For state another process creates (a file, a listening port):
# waiting for the state itself, never a fixed sleep, orders the two.
wait_until() {
    local end=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.01
    done
}

gone() { ! kill -0 "$1" 2>/dev/null; }

# kill_at_traffic DIR P0 VICTIM VPID: for test/ucp/ucp_check's failure and
# keepalive runs in DIR: once rank 0 (pid P0) writes "traffic", rank VICTIM
# dies by SIGKILL (the process itself, its pid in its ready file: a kill of
# the timeout wrapper VPID would leave it running) and "killed" tells rank
# 0 so; if rank 0 died first, the victim's wrapper is stopped. Waits for
# the victim either way.
kill_at_traffic() {
    local d=$1 p0=$2 victim=$3 vpid=$4
    traffic_or_gone() { [ -e "$d/traffic" ] || gone "$p0"; }
    wait_until 60 traffic_or_gone
    if [ -e "$d/traffic" ]; then
        kill -9 "$(cat "$d/ready.$victim")"
        touch "$d/killed"
    else
        kill "$vpid" 2>/dev/null
    fi
    wait "$vpid" 2>/dev/null
}
# finish PID SECONDS: the exit status of PID (a child of this shell) once it
# ends; stopped (SIGTERM) when it runs longer than SECONDS
finish() {
    wait_until "$2" gone "$1" || kill "$1" 2>/dev/null
    wait "$1"
}

# port_used PORT [STATE]: a TCP socket is bound to PORT here (in STATE:
# 0A = listening). Plain bash, no process: wait_until polls it.
port_used() {
    local port f _ addr state
    printf -v port ':%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        while read -r _ addr _ state _; do
            [ "${addr: -5}" = "$port" ] && [ "${2:-$state}" = "$state" ] &&
                return 0
        done <"$f"
    done
    return 1
}
port_listening() { port_used "$1" 0A; }

# free_port: a TCP port no socket uses right now
free_port() {
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 30000))
        port_used "$p" || { echo "$p"; return 0; }
    done
    return 1
}

# rank_env_args: sets the array rank_env to "-x NAME" for every device-mode
# variable in the environment (UCX_DC_STRAND_*, UCX_RC_STRAND_*, MLX5_CQE_SIZE,
# MLX5_SCATTER_TO_CQE, STRAND_SIM_*, UCX_MEM_BISTRO_GRACE_DURATION). mpirun and oshrun promise ranks only
# the variables named with -x (strand-run adds LD_PRELOAD itself); a test
# passes its own -x NAME=VALUE after these, and the last one wins.
rank_env_args() {
    local name
    rank_env=()
    for name in $(compgen -e); do
        case "$name" in
        UCX_DC_STRAND_*|UCX_RC_STRAND_*|MLX5_CQE_SIZE|MLX5_SCATTER_TO_CQE|STRAND_SIM_*|LD_LIBRARY_PATH|UCX_MEM_BISTRO_GRACE_DURATION)
            rank_env+=(-x "$name") ;;
        esac
    done
}

# check_rank_env LAUNCHER (after rank_env_args): every rank LAUNCHER
# (mpirun, oshrun) starts with "${rank_env[@]}" sees those variables with
# their values here (no line when there are none: the default mode).
check_rank_env() {
    local launcher=$1 np=2 name names="" missing=""
    [ "${#rank_env[@]}" -gt 0 ] || return 0
    timeout 120 strand-run "$launcher" -np "$np" --oversubscribe \
        "${rank_env[@]}" env >"$tmpdir/rank_env" 2>&1
    for name in "${rank_env[@]}"; do
        [ "$name" = -x ] && continue
        names="$names $name"
        [ "$(grep -cxF "$name=${!name}" "$tmpdir/rank_env")" = "$np" ] ||
            missing="$missing $name"
    done
    if [ -z "$missing" ]; then
        ok "$launcher: all $np ranks see the device mode's$names"
    else
        not_ok "$launcher: ranks lack$missing"
        # what the launcher said besides the ranks' environment
        grep -v '^[A-Za-z_][A-Za-z0-9_]*=' "$tmpdir/rank_env" | sed 's/^/#   /' | head -20
    fi
}

# UCX_LOG_LEVEL=info's line for each endpoint configuration of UCP, up to
# its lanes: "ep_cfg[0]: tag(...)" (UCX 1.13), "<name> intra-node cfg#0
# tag(...)" (1.18 and later); an extended regular expression
ep_cfg_re='(ep_cfg\[[0-9]+\]:|cfg#[0-9]+)'

# ------------------------------------------------------ ucx_perftest pairs
# serve [ARGS]: a ucx_perftest server on a free port ($port, pid $spid)
# that listens, its output in $tmpdir/srv; 1 when it exits (a port taken
# meanwhile) or hangs before that. ARGS: its own -x/-d (UCX >= 1.18 keeps
# the server's transport and device, not the client's)
serve() {
    spid=""
    port=$(free_port) || return 1
    timeout 180 strand-run ucx_perftest -p "$port" "$@" >"$tmpdir/srv" 2>&1 &
    spid=$!
    wait_until 60 listening_or_gone && port_listening "$port"
}
listening_or_gone() { port_listening "$port" || gone "$spid"; }

# perf NAME CLIENT-ARGS...: runs a server and a client; ok when both exit 0
# and the client printed its final numbers (kept in the log).
perf() {
    local name=$1; shift
    local port spid rc=1 src=1 line a prev="" srv_args=()
    for a in "$@"; do  # the client's transport and device, for the server
        case "$prev" in -x|-d) srv_args+=("$prev" "$a") ;; esac
        prev=$a
    done
    echo "no ucx_perftest server listened" >"$tmpdir/cli"
    for _ in 1 2 3; do  # another port if the server lost this one meanwhile
        if serve "${srv_args[@]}"; then
            timeout 180 strand-run ucx_perftest 127.0.0.1 -p "$port" -f "$@" \
                >"$tmpdir/cli" 2>&1
            rc=$?
            # the server ends with its client; a failed client may leave it
            # waiting
            finish "$spid" "$([ "$rc" = 0 ] && echo 30 || echo 5)"; src=$?
            break
        fi
        [ -n "$spid" ] && finish "$spid" 0
    done
    line=$(grep -E '^ *(Final: *)?[0-9]+ +[0-9.]+ ' "$tmpdir/cli" | tail -1)
    echo "# $name: ucx_perftest $*"
    echo "#   iters  lat50(us) lat_avg lat_overall bw_avg(MB/s) bw_overall msgrate_avg msgrate_overall"
    echo "#   $line"
    if [ "$rc" = 0 ] && [ "$src" = 0 ] && [ -n "$line" ]; then
        ok "$name"
    else
        not_ok "$name (client $rc, server $src)"
        # the errors first (make check shows a failure's first lines)
        grep -h ' ERROR ' "$tmpdir/cli" "$tmpdir/srv" | sed 's/^/#   error: /' | head -4
        sed 's/^/#   cli: /' "$tmpdir/cli" | tail -15
        sed 's/^/#   srv: /' "$tmpdir/srv" | tail -15
    fi
}

