#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The software device against bare shared memory, measured in one run:
#   contrib/bench/sim_bench.sh [--callgrind | --callgrind-only]
#                              [--iters N] [--rounds R] [--mb M] [--msgs K]
# (make bench-sim builds and runs it). Prints a table and the two targets.
# --callgrind adds a row that does not depend on the machine's load: the
# instructions of the device's work per 1 MiB RDMA_WRITE, counted by
# callgrind (valgrind) in two runs of SIM_BENCH_CG_WRITES (default 100) and
# twice as many WRITEs, whose difference leaves out the setup: the posts,
# the packets each side handles and the timers, in both processes. The
# polling that waits (its count follows the machine's speed, not the work)
# and the kernel's copy are not in it; the row says how many
# process_vm_readv() calls, the copy, a WRITE makes. --callgrind-only prints
# that row alone.
here=$(cd "$(dirname "$0")" && pwd)
bin=${STRAND_BUILDDIR:+$STRAND_BUILDDIR/contrib/bench/sim_bench}
[ -x "${bin:-}" ] || bin=$here/sim_bench
if [ ! -x "$bin" ]; then
    echo "sim_bench.sh: $bin not built: run 'make contrib/bench/sim_bench'" >&2
    exit 2
fi

callgrind=0
n=$#
while [ "$n" -gt 0 ]; do
    a=$1
    shift
    n=$((n - 1))
    case "$a" in
    --callgrind)      callgrind=1 ;;
    --callgrind-only) callgrind=2 ;;
    *)                set -- "$@" "$a" ;;
    esac
done
[ "$callgrind" = 0 ] && exec "$bin" "$@"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "sim_bench.sh: --callgrind needs valgrind" >&2
    exit 2
fi
if [ "$callgrind" = 1 ]; then
    "$bin" "$@" || exit $?
fi

# The device's work: the calls into its entry points from outside them (a
# post, a packet taken from the ring: never one inside another), and what
# an engine pass runs besides taking packets (the requesters the completer
# queued, resumed senders, the timers). Its empty passes and CQ polls are
# the waiting, left out.
SIM_ENTRY_RE='^(smlx5_post_send|smlx5_post_send_dc|smlx5_post_recv|sim_engine_rx|sim_engine_rx_wire)$'
SIM_PASS_RE='^(sim_req_process|sim_req_resume|sim_resp_resume_reads|sim_engine_requesters|sim_engine_resume|sim_engine_timers|sim_comp_timers|sim_comp_qp_timers|sim_resp_ack_timers|sim_fault_release|sim_tm_engine)(\.[a-z]+\.[0-9]+)*$'
. "$here/callgrind_read.sh"

writes=${SIM_BENCH_CG_WRITES:-100}
case "$writes" in
'' | *[!0-9]* | 0)
    echo "sim_bench.sh: SIM_BENCH_CG_WRITES takes a positive integer" >&2
    exit 2
    ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sim_bench_cg.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

# cg_run N: "WORK COPIES" of a run of N 1 MiB WRITEs (everything else at
# its smallest)
cg_run() {
    mkdir "$tmp/$1" || return 1
    if ! valgrind --tool=callgrind --callgrind-out-file="$tmp/$1/cg.%p" \
        "$bin" --iters 10 --msgs 2 --rounds 1 --mb "$1" \
        >"$tmp/$1/log" 2>&1; then
        echo "sim_bench.sh: the callgrind run of $1 WRITEs failed:" >&2
        tail -n 20 "$tmp/$1/log" >&2
        return 1
    fi
    # shellcheck disable=SC2046 # "COST CALLS", split into the arguments
    set -- $(cg_arcs "!$SIM_ENTRY_RE" "$SIM_ENTRY_RE" "$tmp/$1"/cg.*) \
        $(cg_arcs '^sim_engine_pass$' "$SIM_PASS_RE" "$tmp/$1"/cg.*) \
        $(cg_arcs '^sim_' '^process_vm_readv$' "$tmp/$1"/cg.*)
    echo "$(($1 + $3)) $6"
}
one=$(cg_run "$writes") || exit 2
two=$(cg_run $((2 * writes))) || exit 2
echo "$one $two" | awk -v n="$writes" '{
    printf "%-34s %11.0f ins %14s %8s\n", "1 MiB RDMA_WRITE device work",
           ($3 - $1) / n, "-", "-"
    printf "  (callgrind, per WRITE, both processes, %d vs %d WRITEs; " \
           "kernel copies per WRITE: %.2f process_vm_readv)\n",
           n, 2 * n, ($4 - $2) / n }'
