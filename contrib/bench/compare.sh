#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dc_strand against UCX's own transports on this machine, in one run:
#   contrib/bench/compare.sh [--quick] [--repeat N] [--budget S] [--logs DIR]
# ucx_perftest server/client pairs over dc_strand (software device, through
# strand-run), posix shared memory and tcp on the loopback: UCT am_lat,
# put_lat, am_bw message rate, put_bw 1 MiB, UCP tag_lat and tag_bw 1 MiB;
# and, with callgrind, the instructions per am_short/put_short post with the
# device emulation counted apart. Prints a table with the targets (and a
# markdown copy of it). Exit 0 when every run succeeded and every
# measurement was taken (targets missed are reported, not failed), 1 when a
# ucx_perftest run failed (even if a repeat measured the cell) or a
# measurement could not be taken, 2 on a usage or setup error.

me=compare.sh
here=$(cd "$(dirname "$0")" && pwd)

usage() {
    cat <<EOF
usage: contrib/bench/compare.sh [--quick] [--repeat N] [--budget SECONDS]
                                [--timeout SECONDS] [--no-callgrind]
                                [--logs DIR] [-h|--help]

Compares dc_strand (smlx5_0:1, through strand-run) with UCX's posix shared
memory and tcp (loopback) transports with ucx_perftest, and prints
  metric | dc_strand | posix | tcp | dc/posix | dc/tcp | target | verdict
then the same table in markdown.

  --quick          short run (fewer iterations, one run per pair)
  --repeat N       runs per server/client pair, best one kept (default
                   \$REPEAT or 3; 1 with --quick)
  --budget S       no further repeat rounds once S seconds have passed
                   (default 150; the first round always runs in full)
  --timeout S      limit for one ucx_perftest run (default 60; callgrind: 5x)
  --no-callgrind   skip the instruction counts (valgrind)
  --logs DIR       keep every ucx_perftest/callgrind log in DIR

Environment: STRAND_PLUGIN (the plugin; default: the build tree's
.libs/libuct_strand.so next to this script, else strand-run's default),
STRAND_RUN (the launcher; default ../strand-run next to this script, else
strand-run on PATH), STRAND_BUILDDIR (a separate build tree), REPEAT,
UCX_PERFTEST (default ucx_perftest on PATH), TCP_DEV (the tcp device;
default the loopback interface).
EOF
}

# ------------------------------------------------------------ arguments
quick=0
repeat=${REPEAT:-}
budget=150
run_timeout=60
callgrind=1
logdir=""
# value_of OPTION ARG: ARG, which OPTION needs
value_of() {
    [ -n "$2" ] || { echo "$me: $1 needs a value" >&2; usage >&2; exit 2; }
    echo "$2"
}
while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help)      usage; exit 0 ;;
    --quick)        quick=1 ;;
    --repeat)       repeat=$(value_of "$1" "${2:-}") || exit 2; shift ;;
    --repeat=*)     repeat=${1#*=} ;;
    --budget)       budget=$(value_of "$1" "${2:-}") || exit 2; shift ;;
    --budget=*)     budget=${1#*=} ;;
    --timeout)      run_timeout=$(value_of "$1" "${2:-}") || exit 2; shift ;;
    --timeout=*)    run_timeout=${1#*=} ;;
    --no-callgrind) callgrind=0 ;;
    --logs)         logdir=$(value_of "$1" "${2:-}") || exit 2; shift ;;
    --logs=*)       logdir=${1#*=} ;;
    *)              echo "$me: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[ -n "$repeat" ] || repeat=$([ "$quick" = 1 ] && echo 1 || echo 3)
for v in "$repeat" "$budget" "$run_timeout"; do
    case "$v" in
    ''|*[!0-9]*|0) echo "$me: --repeat, --budget and --timeout take a positive integer" >&2
                   exit 2 ;;
    esac
done

# iteration counts: latency, am_bw (8 B message rate), 1 MiB bandwidth, callgrind
if [ "$quick" = 1 ]; then
    LAT=(-n 3000 -w 300);  MR=(-n 50000 -w 2000);  BW=(-n 100 -w 10)
    CG_N=5000
else
    LAT=(-n 10000 -w 1000); MR=(-n 200000 -w 10000); BW=(-n 500 -w 50)
    CG_N=20000
fi
CG_W=100
MIB=1048576
DC_DEV=smlx5_0:1
SIM_FUNC_RE='^(smlx5_|sim_|dev_sim_)'   # the software device's functions
# the short entry points the software device's interfaces take (queues that
# ring a plain doorbell with a kick: uct_mlx5/common/ep_short.h)
AM_SHORT_FN=strand_dc_ep_kick_am_short
PUT_SHORT_FN=strand_dc_ep_kick_put_short

# ---------------------------------------------------------------- tools
die() { echo "$me: $*" >&2; exit 2; }

perftest=${UCX_PERFTEST:-$(command -v ucx_perftest)}
[ -n "$perftest" ] && [ -x "$perftest" ] || die "ucx_perftest not found (apt-get install ucx-utils, or set UCX_PERFTEST)"
ucx_info=$(command -v ucx_info) || die "ucx_info not found"

strand_run=${STRAND_RUN:-}
if [ -z "$strand_run" ]; then
    for c in ${STRAND_BUILDDIR:+"$STRAND_BUILDDIR/contrib/strand-run"} \
             "$here/../strand-run"; do
        if [ -x "$c" ]; then strand_run=$(cd "$(dirname "$c")" && pwd)/strand-run; break; fi
    done
fi
[ -n "$strand_run" ] || strand_run=$(command -v strand-run) ||
    die "strand-run not found (neither $here/../strand-run nor on PATH; set STRAND_RUN)"

if [ -z "${STRAND_PLUGIN:-}" ]; then
    for c in ${STRAND_BUILDDIR:+"$STRAND_BUILDDIR/.libs/libuct_strand.so"} \
             "$here/../../.libs/libuct_strand.so"; do
        if [ -r "$c" ]; then STRAND_PLUGIN=$(cd "$(dirname "$c")" && pwd)/libuct_strand.so; break; fi
    done
fi
if [ -z "${STRAND_PLUGIN:-}" ]; then  # strand-run's built-in default
    STRAND_PLUGIN=$(sed -n 's/^plugin=\${STRAND_PLUGIN:-"\(.*\)"}$/\1/p' "$strand_run")
fi
[ -r "$STRAND_PLUGIN" ] || die "plugin '$STRAND_PLUGIN' not found: build it or set STRAND_PLUGIN"

post_cost=""
for c in ${STRAND_BUILDDIR:+"$STRAND_BUILDDIR/contrib/bench/post_cost"} \
         "$here/post_cost"; do
    [ -x "$c" ] && { post_cost=$c; break; }
done

if [ "$callgrind" = 1 ]; then
    command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
        die "valgrind/callgrind_annotate not found (apt-get install valgrind, or --no-callgrind)"
fi

# ------------------------------------------------- processes and cleanup
work=$(mktemp -d "${TMPDIR:-/tmp}/strand-compare.XXXXXX") || die "mktemp failed"
keep_work=0
PIDS=" "        # processes this script started and has not reaped yet
FABRICS=""      # STRAND_SIM_FABRIC names used
fab_seq=0

cleanup() {
    local p f
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$p" 2>/dev/null && kill -9 "$p"
    done
    for f in $FABRICS; do rm -f "/dev/shm/$f"; done
    if [ -n "$logdir" ]; then
        mkdir -p "$logdir" && cp -r "$work"/. "$logdir"/ 2>/dev/null
        rm -f "$logdir/libuct_strand.so"
    fi
    if [ "$keep_work" = 1 ]; then
        rm -f "$work/libuct_strand.so"
        echo "$me: logs kept in $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

track()   { PIDS="$PIDS$1 "; }
untrack() { PIDS=${PIDS/ $1 / }; }

# wait_pid PID SECONDS: its exit status; killed (status 124) after SECONDS
wait_pid() {
    local pid=$1 end=$((SECONDS + $2)) rc
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$end" ]; then
            kill "$pid" 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
            wait "$pid" 2>/dev/null
            untrack "$pid"
            return 124
        fi
        sleep 0.05
    done
    wait "$pid"; rc=$?
    untrack "$pid"
    return $rc
}

new_fabric() {
    fab_seq=$((fab_seq + 1))
    fabric="strand_cmp_$$_$fab_seq"
    FABRICS="$FABRICS $fabric"
}

# port_states PORT: the states (hex, 0A = listening) of TCP sockets on PORT
port_states() {
    awk -v h="$(printf ':%04X' "$1")" \
        'FNR > 1 && substr($2, length($2) - 4) == h { print $4 }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() {
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 40000))
        [ -z "$(port_states "$p")" ] && { echo "$p"; return 0; }
    done
    return 1
}

# The plugin is copied once, so a rebuild during the run cannot mix two
# builds between a server and its client.
cp -L "$STRAND_PLUGIN" "$work/libuct_strand.so" || die "cannot copy $STRAND_PLUGIN"
plugin_src=$STRAND_PLUGIN
plugin_date=$(date -r "$plugin_src" '+%Y-%m-%d %H:%M' 2>/dev/null)
rev=$(git -C "$here/../.." describe --always --dirty 2>/dev/null)
ucxv=$("$ucx_info" -v 2>/dev/null | sed -n -e 's/^# *Version *//p' -e 's/^# *Library version: *//p' | head -1)
export STRAND_PLUGIN="$work/libuct_strand.so"
unset UCX_TLS UCX_NET_DEVICES   # set per pair below

# ---------------------------------------------------------- one pair
# Set before calling pair: P_DC (1: dc_strand, through strand-run, fresh
# fabric), P_ENV (VAR=VALUE words), P_PRE (words before ucx_perftest on the
# client, e.g. valgrind), P_TIMEOUT.
# pair LOG CLIENT-ARGS...: 0 when server and client exit 0 and the client
# printed its final line (in LOG.cli).
pair() {
    local log=$1; shift
    local envs=($P_ENV) wrap=() port spid cpid rc src try c a prev=""
    local srv_args=()
    for a in "$@"; do  # UCX >= 1.18's server keeps its own -x and -d
        case "$prev" in -x|-d) srv_args+=("$prev" "$a") ;; esac
        prev=$a
    done
    if [ "$P_DC" = 1 ]; then
        new_fabric
        envs+=("STRAND_SIM_FABRIC=$fabric")
        wrap=("$strand_run")
    fi
    rc=1
    for try in 1 2 3; do
        port=$(free_port) || { echo "no free TCP port" >"$log.cli"; return 1; }
        env "${envs[@]}" "${wrap[@]}" "$perftest" -p "$port" "${srv_args[@]}" \
            >"$log.srv" 2>&1 &
        spid=$!; track "$spid"
        # until it listens (it exits at once if the port was taken meanwhile)
        for _ in $(seq 200); do
            kill -0 "$spid" 2>/dev/null || break
            case " $(port_states "$port" | tr '\n' ' ') " in *" 0A "*) break ;; esac
            sleep 0.025
        done
        if ! kill -0 "$spid" 2>/dev/null; then
            wait_pid "$spid" 1
            continue
        fi
        for c in 1 2 3 4 5; do
            env "${envs[@]}" "${wrap[@]}" $P_PRE "$perftest" 127.0.0.1 -p "$port" -f \
                "$@" >"$log.cli" 2>&1 &
            cpid=$!; track "$cpid"
            wait_pid "$cpid" "$P_TIMEOUT"; rc=$?
            grep -q "Connection refused" "$log.cli" || break
            sleep 0.3
        done
        # the server ends right after its client; not if the client failed
        wait_pid "$spid" $([ "$rc" = 0 ] && echo 20 || echo 2); src=$?
        break
    done
    [ "$P_DC" = 1 ] && rm -f "/dev/shm/$fabric"
    [ "$rc" = 0 ] && [ "${src:-1}" = 0 ] && [ -n "$(final_line "$log.cli")" ]
}

# final_line LOG: the client's final numbers (the last line whose last 8
# fields are numbers): iterations, typical (50th percentile) latency, average
# latency, overall latency (us), average and overall bandwidth (MiB/s),
# average and overall message rate (msg/s)
final_line() {
    awk 'NF >= 8 { ok = 1
                   for (i = NF - 7; i <= NF; ++i) if ($i !~ /^[0-9]+(\.[0-9]+)?$/) ok = 0
                   if (ok) line = $(NF-7) " " $(NF-6) " " $(NF-5) " " $(NF-4) " " \
                                  $(NF-3) " " $(NF-2) " " $(NF-1) " " $NF }
         END { if (line != "") print line }' "$1" 2>/dev/null
}

# -------------------------------------------------- transports available
fabric=""
new_fabric
env STRAND_SIM_FABRIC="$fabric" "$strand_run" "$ucx_info" -d >"$work/ucx_info.txt" 2>&1
rm -f "/dev/shm/$fabric"

# caps TL DEV: the capability lines of one transport/device in ucx_info -d
caps() {
    awk -v tl="$1" -v dev="$2" '
        /^# *Memory domain:/ { t = ""; d = "" }
        /^# *Transport:/     { t = $3; d = "" }
        /^# *Device:/        { d = $3; next }
        t == tl && d == dev' "$work/ucx_info.txt"
}
has_tl() { caps "$1" "$2" | grep -q .; }

# layout TL DEV OP SIZE PREFERRED...: the first of the layouts (short, bcopy,
# zcopy) whose OP (put, am) capability covers SIZE bytes
layout() {
    local tl=$1 dev=$2 op=$3 size=$4 l; shift 4
    for l in "$@"; do
        caps "$tl" "$dev" | awk -v key="${op}_$l:" -v size="$size" '
            function bytes(s,   n, u, k) {
                n = s; sub(/[KMGT]$/, "", n); u = substr(s, length(s)); k = 1
                if (u == "K") k = 1024
                if (u == "M") k = 1048576
                if (u == "G") k = 1073741824
                if (u == "T") k = 1099511627776
                return n * k
            }
            $2 == key { found = 1; v = $0; sub(/^[^:]*: */, "", v)
                        if (v ~ /^unlimited/) ok = 1
                        else if (match(v, /(<= *|\.\.)[0-9]+[KMGT]?/)) {
                            m = substr(v, RSTART, RLENGTH); sub(/^(<= *|\.\.)/, "", m)
                            ok = (bytes(m) >= size)
                        } }
            END { exit !(found && ok) }' && { echo "$l"; return 0; }
    done
    return 1
}

if ! has_tl dc_strand "$DC_DEV"; then
    echo "$me: dc_strand/$DC_DEV is not available through $strand_run with" >&2
    echo "$me: STRAND_PLUGIN=$plugin_src; ucx_info -d said:" >&2
    grep -i "strand\|error\|warn" "$work/ucx_info.txt" | head -10 >&2
    exit 2
fi
has_tl posix memory || die "UCX has no posix/memory transport here"

# the loopback interface (ARPHRD_LOOPBACK), and whether UCX's tcp has it
lo=${TCP_DEV:-}
[ -n "$lo" ] || for f in /sys/class/net/*/type; do
    [ "$(cat "$f" 2>/dev/null)" = 772 ] && { lo=$(basename "$(dirname "$f")"); break; }
done
[ -n "$lo" ] || lo=lo
tcp_ok=0; has_tl tcp "$lo" && tcp_ok=1
tcp_na="n/a: no tcp/$lo"

# -------------------------------------------------------- the cells
# cell id: metric.transport; CELL_* hold how it is measured
declare -A CELL_ARGS CELL_ENV CELL_DC CELL_LAYOUT CELL_FIELD VALS RVAL NA
METRICS="am_lat put_lat am_bw put_bw tag_lat tag_bw"
TLS="dc posix tcp"
declare -A TL_UCT=([dc]="-x dc_strand -d $DC_DEV" [posix]="-x posix -d memory"
                   [tcp]="-x tcp -d $lo")
declare -A TL_NAME=([dc]=dc_strand [posix]=posix/memory [tcp]=tcp/$lo)
CELLS=""

# add_cell METRIC TL FIELD(lat|mr|bw) LAYOUT ARGS...
add_cell() {
    local id=$1.$2
    CELL_FIELD[$id]=$3; CELL_LAYOUT[$id]=$4; shift 4
    CELL_ARGS[$id]="$*"
    CELLS="$CELLS $id"
}

for tl in $TLS; do
    if [ "$tl" = tcp ] && [ "$tcp_ok" = 0 ]; then
        for m in $METRICS; do NA[$m.tcp]=$tcp_na; done
        continue
    fi
    uct=${TL_UCT[$tl]}
    dev=${uct##* }; name=${uct#-x }; name=${name%% *}
    add_cell am_lat "$tl" lat short -t am_lat $uct -s 8 "${LAT[@]}"
    if l=$(layout "$name" "$dev" put 8 short bcopy zcopy); then
        add_cell put_lat "$tl" lat "$l" -t put_lat $uct -D "$l" -s 8 "${LAT[@]}"
    else
        NA[put_lat.$tl]="n/a: no put"
    fi
    add_cell am_bw "$tl" mr short -t am_bw $uct -D short -s 8 "${MR[@]}"
    if l=$(layout "$name" "$dev" put $MIB zcopy bcopy); then
        add_cell put_bw "$tl" bw "$l" -t put_bw $uct -D "$l" -s $MIB "${BW[@]}"
    else
        NA[put_bw.$tl]="n/a: no 1 MiB put"
    fi
    add_cell tag_lat "$tl" lat - -t tag_lat -s 8 "${LAT[@]}"
    add_cell tag_bw "$tl" bw - -t tag_bw -s $MIB "${BW[@]}"
done
# metric by metric, so that the transports compared share the conditions
ordered=""
for m in $METRICS; do
    for tl in $TLS; do
        case " $CELLS " in *" $m.$tl "*) ordered="$ordered $m.$tl" ;; esac
    done
done
CELLS=$ordered
for id in $CELLS; do
    tl=${id#*.}
    CELL_DC[$id]=$([ "$tl" = dc ] && echo 1 || echo 0)
    case "$id" in
    tag_*.dc)     CELL_ENV[$id]="UCX_TLS=dc_strand UCX_NET_DEVICES=$DC_DEV" ;;
    tag_lat.posix) CELL_ENV[$id]="UCX_TLS=posix,self" ;;
    tag_bw.posix) CELL_ENV[$id]="UCX_TLS=posix,cma,self" ;;
    tag_*.tcp)    CELL_ENV[$id]="UCX_TLS=tcp,self UCX_NET_DEVICES=$lo" ;;
    *)            CELL_ENV[$id]="" ;;
    esac
done

# value LOG FIELD: the number a cell keeps from one run
value() {
    final_line "$1" | awk -v f="$2" '{ print (f == "lat") ? $2 : (f == "bw") ? $6 : $8 }'
}
# better FIELD A B: 0 when A is better than B (lower latency, higher rate)
better() {
    awk -v f="$1" -v a="$2" -v b="$3" 'BEGIN { exit !((f == "lat") ? a < b : a > b) }'
}

# ------------------------------------------------------------ callgrind
# cg_tree, cg_fast_len: reading callgrind's files (SIM_FUNC_RE above)
. "$here/callgrind_read.sh"

# cg_post FN TEST: the dc_strand client of an 8 B TEST (am_bw, put_bw;
# -D short) under callgrind (its server runs normally), collecting only
# inside FN, the transport's post function, with everything it calls.
# Calls refused for a full send queue (calls - doorbells) are cheap and
# would dilute the per-call figure, so a run with more than 1% of them is
# repeated (3 tries, the one with the fewest kept).
declare -A CG
cg_post() {
    local fn=$1 test=$2 log res try refused calls total sim db
    P_DC=1 P_ENV="" P_TIMEOUT=$((run_timeout * 5))
    for try in 1 2 3; do
        log="$work/cg.$fn.$try"
        P_PRE="valgrind --tool=callgrind --callgrind-out-file=$log.out --dump-instr=yes --toggle-collect=$fn"
        echo "$me: callgrind $fn: ucx_perftest -t $test -D short -s 8 -n $CG_N -w $CG_W (client under valgrind)" >&2
        if ! pair "$log" -t "$test" -x dc_strand -d "$DC_DEV" -D short -s 8 \
                -n "$CG_N" -w "$CG_W" || [ ! -s "$log.out" ]; then
            echo "$me:   failed" >&2
            tail -5 "$log.cli" "$log.srv" 2>/dev/null | sed 's/^/    /' >&2
            runs_failed="$runs_failed, callgrind $fn (try $try)"
            continue
        fi
        callgrind_annotate --inclusive=yes --tree=calling --threshold=100 \
            "$log.out" >"$log.tree" 2>&1
        if ! res=$(cg_tree "$fn" "$log.tree"); then
            echo "$me:   no calls to $fn in the profile ($log.tree)" >&2
            continue
        fi
        set -- $res
        calls=$1 total=$2 sim=$3 db=$4; shift 4
        refused=$((calls > db ? calls - db : 0))
        echo "$me:   $calls calls ($refused refused), $total Ir inclusive, device $sim Ir" >&2
        if [ -z "${CG[$fn.refused]}" ] || [ "$refused" -lt "${CG[$fn.refused]}" ]; then
            CG[$fn.calls]=$calls; CG[$fn.total]=$total; CG[$fn.sim]=$sim
            CG[$fn.db]=$db; CG[$fn.refused]=$refused; CG[$fn.via]="$*"
            CG[$fn.log]=$log.out
        fi
        [ $((refused * 100)) -le "$calls" ] && break
    done
    [ -n "${CG[$fn.calls]}" ] || return 1
    # post path per call; if calls were still refused, it lies between the
    # per-call figure (refused calls are cheaper) and the per-doorbell one
    set -- $(awk -v t="${CG[$fn.total]}" -v s="${CG[$fn.sim]}" -v c="${CG[$fn.calls]}" \
                 -v d="${CG[$fn.db]}" 'BEGIN { if (d < 1) d = c
                     printf "%.0f %.0f %.0f\n", (t - s) / c, (t - s) / d, s / d }')
    CG[$fn.post]=$1; CG[$fn.post_hi]=$2; CG[$fn.simper]=$3
    refused=${CG[$fn.refused]} calls=${CG[$fn.calls]}
    if [ $((refused * 100)) -gt "$calls" ]; then
        CG[$fn.cell]="$1..$2 ($((refused * 100 / calls))% refused)"
    else
        CG[$fn.cell]=$1
    fi
    CG[$fn.fast]=$(cg_fast_len "$fn" "${CG[$fn.log]}" "${CG[$fn.db]}")
    echo "$me:   $fn: post path ${CG[$fn.cell]}, a fast post ${CG[$fn.fast]:-?}, device ${CG[$fn.simper]} instructions per post" >&2
    # a row the table cannot fill is a measurement that failed
    [ -n "${CG[$fn.fast]}" ]
}

# cg_cost KEY MODE N FN [ENV...]: contrib/bench/post_cost MODE N (one
# process, two dc_strand interfaces) under callgrind, collecting inside
# its cost_* function of MODE; FN's calls and inclusive cost there, the
# device's part of it, and the program's own report ("calls C empty E
# events V"; refused: "refused N"), in CG[KEY.*]
cg_cost() {
    local key=$1 mode=$2 n=$3 fn=$4 toggle log res; shift 4
    case "$mode" in refused) toggle=cost_refused_put ;; *) toggle=cost_progress ;; esac
    log="$work/cost.$key"
    new_fabric
    echo "$me: callgrind post_cost $mode $n ($fn)" >&2
    env STRAND_SIM_FABRIC="$fabric" "$@" timeout $((run_timeout * 5)) "$strand_run" \
        valgrind --tool=callgrind --callgrind-out-file="$log.out" \
        --toggle-collect="$toggle" "$post_cost" "$mode" "$n" >"$log.txt" 2>"$log.err"
    local rc=$?
    rm -f "/dev/shm/$fabric"
    if [ $rc != 0 ] || [ ! -s "$log.out" ]; then
        echo "$me:   failed:" >&2; tail -3 "$log.err" | sed 's/^/    /' >&2
        return 1
    fi
    callgrind_annotate --inclusive=yes --tree=calling --threshold=100 \
        "$log.out" >"$log.tree" 2>&1
    res=$(cg_tree "$fn" "$log.tree") || { echo "$me:   no calls to $fn" >&2; return 1; }
    set -- $res
    CG[$key.calls]=$1 CG[$key.total]=$2 CG[$key.sim]=$3
    CG[$key.report]=$(tail -n1 "$log.txt")
    CG[$key.tree]=$log.tree
}
# report_field KEY FIELD: a number of post_cost's report
report_field() { awk -v f="$2" '{ for (i = 1; i < NF; ++i) if ($i == f) print $(i + 1) }' <<<"${CG[$1.report]}"; }

# the completion path and the refused post (post_cost): instructions of
# the transport per refused put_short, per send CQE (a CQE per put:
# moderation off) and per received active message (its handler, and the
# progress calls that found nothing at the idle cost, taken out), the
# device's work (SIM_FUNC_RE) counted apart
cg_costs() {
    local n=$CG_N e
    cg_cost refused refused "$n" $PUT_SHORT_FN &&
        CG[refused.cell]=$(awk -v t="${CG[refused.total]}" -v s="${CG[refused.sim]}" \
                               -v c="${CG[refused.calls]}" 'BEGIN { printf "%.0f", (t - s) / c }')
    cg_cost idle idle "$n" strand_iface_progress || return 1
    e=$(awk -v t="${CG[idle.total]}" -v s="${CG[idle.sim]}" -v c="${CG[idle.calls]}" \
            'BEGIN { printf "%.1f", (t - s) / c }')
    CG[idle.cell]=$e
    cg_cost send_cqe send_cqe "$n" strand_iface_progress UCX_DC_STRAND_TX_CQ_MODERATION=1 &&
        CG[send_cqe.cell]=$(awk -v t="${CG[send_cqe.total]}" -v s="${CG[send_cqe.sim]}" -v e="$e" \
                                -v z="$(report_field send_cqe empty)" -v v="$(report_field send_cqe events)" \
                                'BEGIN { printf "%.0f", (t - s - z * e) / v }')
    if cg_cost recv_am recv_am "$n" strand_iface_progress; then
        set -- $(cg_tree cost_am_handler "${CG[recv_am.tree]}")
        CG[recv_am.handler]=${2:-0}
        CG[recv_am.cell]=$(awk -v t="${CG[recv_am.total]}" -v s="${CG[recv_am.sim]}" -v e="$e" \
                               -v h="${CG[recv_am.handler]}" -v n="$n" \
                               -v z="$(report_field recv_am empty)" \
                               'BEGIN { printf "%.0f", (t - s - h - z * e) / n }')
    fi
}

# ------------------------------------------------------------------ run
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
ncells=$(echo $CELLS | wc -w)
echo "$me: $ncells server/client pairs x up to $repeat runs (budget ${budget}s after the first round); tcp: $([ $tcp_ok = 1 ] && echo "tcp/$lo" || echo "$tcp_na")" >&2

run_round() { # ROUND
    local id tl log v
    for id in $CELLS; do
        tl=${id#*.}
        log="$work/$id.$1"
        P_DC=${CELL_DC[$id]} P_ENV=${CELL_ENV[$id]} P_PRE="" P_TIMEOUT=$run_timeout
        if pair "$log" ${CELL_ARGS[$id]}; then
            v=$(value "$log.cli" "${CELL_FIELD[$id]}")
            VALS[$id]="${VALS[$id]:+${VALS[$id]} }$v"
            RVAL[$id.$1]=$v
            echo "$me: [$1/$repeat] ${id%%.*} ${TL_NAME[$tl]}: $v" >&2
        else
            echo "$me: [$1/$repeat] ${id%%.*} ${TL_NAME[$tl]}: FAILED" \
                 "(${CELL_ENV[$id]:+${CELL_ENV[$id]} }ucx_perftest ${CELL_ARGS[$id]})" >&2
            runs_failed="$runs_failed, ${id%%.*} ${TL_NAME[$tl]} (round $1)"
            tail -4 "$log.cli" "$log.srv" 2>/dev/null | sed 's/^/    /' >&2
        fi
    done
}

t0=$SECONDS
rounds=0
cg_failed=""
runs_failed=""  # every failed run, also when a repeat measured its cell
run_round 1; rounds=1
if [ "$callgrind" = 1 ]; then
    cg_post $AM_SHORT_FN am_bw || cg_failed="$cg_failed am_short"
    cg_post $PUT_SHORT_FN put_bw || cg_failed="$cg_failed put_short"
    if [ -n "$post_cost" ]; then
        cg_costs
        for k in refused send_cqe recv_am; do
            [ -n "${CG[$k.cell]}" ] || cg_failed="$cg_failed $k"
        done
    fi
fi
while [ "$rounds" -lt "$repeat" ]; do
    if [ $((SECONDS - t0)) -ge "$budget" ]; then
        echo "$me: budget of ${budget}s spent: $rounds of $repeat rounds" >&2
        break
    fi
    rounds=$((rounds + 1))
    run_round "$rounds"
done
elapsed=$((SECONDS - t0))
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# ---------------------------------------------------------------- table
declare -A BEST
failed=""
for id in $CELLS; do
    b=""
    for v in ${VALS[$id]}; do
        if [ -z "$b" ] || better "${CELL_FIELD[$id]}" "$v" "$b"; then b=$v; fi
    done
    if [ -n "$b" ]; then
        BEST[$id]=$b
    else
        failed="$failed, ${id%%.*} ${TL_NAME[${id#*.}]}"
    fi
done
for f in $cg_failed; do failed="$failed, callgrind $f"; done
failed=${failed#, }

# cell METRIC TL SCALE DECIMALS: the printed value (with its layout if it is
# not the metric's own)
fmt_cell() {
    local id=$1.$2 want
    if [ -n "${NA[$id]}" ]; then echo "${NA[$id]}"; return; fi
    if [ -z "${BEST[$id]}" ]; then echo "FAILED"; return; fi
    awk -v v="${BEST[$id]}" -v s="$3" -v d="$4" 'BEGIN { printf "%.*f", d, v / s }'
    case "$1" in put_lat) want=short ;; put_bw) want=zcopy ;; *) want=${CELL_LAYOUT[$id]} ;; esac
    [ "${CELL_LAYOUT[$id]}" != "$want" ] && printf ' (%s)' "${CELL_LAYOUT[$id]}"
    echo
}
# round_ratios METRIC TL: dc_strand / TL of each round where both ran (one
# after the other, so that both saw the same machine)
round_ratios() {
    local r a b
    for ((r = 1; r <= rounds; ++r)); do
        a=${RVAL[$1.dc.$r]} b=${RVAL[$1.$2.$r]}
        [ -n "$a" ] && [ -n "$b" ] || continue
        awk -v a="$a" -v b="$b" 'BEGIN { if (b != 0) printf "%.4g\n", a / b }'
    done
}
# ratio_of METRIC TL: the median of the rounds' ratios where two rounds or
# more have both (one lucky round of either side does not set it), else
# best / best; empty when one side has nothing
ratio_of() {
    local a=${BEST[$1.dc]} b=${BEST[$1.$2]} rr
    rr=$(round_ratios "$1" "$2" | sort -g)
    if [ "$(echo "$rr" | grep -c .)" -ge 2 ]; then
        echo "$rr" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                             printf "%.4g\n", m }'
    elif [ -n "$a" ] && [ -n "$b" ]; then
        awk -v a="$a" -v b="$b" 'BEGIN { if (b != 0) printf "%.4g\n", a / b }'
    fi
}
# ratio METRIC TL: dc_strand / TL as printed
ratio() {
    local r
    r=$(ratio_of "$1" "$2")
    [ -n "$r" ] || { echo "-"; return; }
    awk -v r="$r" 'BEGIN { printf "%.3gx\n", r }'
}
# best_ratio METRIC TL: best / best
best_ratio() {
    local a=${BEST[$1.dc]} b=${BEST[$1.$2]}
    [ -n "$a" ] && [ -n "$b" ] || { echo "-"; return; }
    awk -v a="$a" -v b="$b" 'BEGIN { if (b == 0) print "-"; else printf "%.3gx\n", a / b }'
}
# le/ge A B K: 1 when A <= K*B (A >= K*B), 0 when not, "" when one is missing
cmp_k() {
    [ -n "$2" ] && [ -n "$3" ] || return 0
    awk -v op="$1" -v a="$2" -v b="$3" -v k="$4" \
        'BEGIN { print ((op == "le") ? (a <= k * b) : (a >= k * b)) ? 1 : 0 }'
}
le() { cmp_k le "$@"; }
ge() { cmp_k ge "$@"; }

verdict_lat() { # METRIC K: latency <= K x posix (the ratio as printed)
    case "$(le "$(ratio_of "$1" posix)" 1 "$2")" in
    1) echo met ;; 0) echo MISSED ;; *) echo "n/a" ;;
    esac
}
verdict_ge() { # METRIC K
    case "$(ge "$(ratio_of "$1" posix)" 1 "$2")" in
    1) echo met ;; 0) echo MISSED ;; *) echo "n/a" ;;
    esac
}
POST_TARGET=80    # instructions per post
verdict_instr() { # FN: post path <= POST_TARGET (both bounds when calls were refused)
    [ -n "${CG[$1.post]}" ] || { echo "n/a"; return; }
    if [ "${CG[$1.post_hi]}" -le $POST_TARGET ]; then echo met
    elif [ "${CG[$1.post]}" -gt $POST_TARGET ]; then echo MISSED
    else echo "unclear (refused calls)"
    fi
}
instr() { [ -n "${CG[$1.$2]}" ] && echo "${CG[$1.$2]}" || echo "$3"; }
verdict_fast() { # FN: its fast path's length <= POST_TARGET
    [ -n "${CG[$1.fast]}" ] || { echo "n/a"; return; }
    [ "${CG[$1.fast]}" -le $POST_TARGET ] && echo met || echo MISSED
}
REFUSED_TARGET=40 # instructions per refused post
verdict_max() { # KEY MAX: KEY's cell <= MAX
    [ -n "${CG[$1.cell]}" ] || { echo "n/a"; return; }
    [ "${CG[$1.cell]}" -le "$2" ] && echo met || echo MISSED
}

# cg_breakdown FN: where FN's post path goes, instructions per call by the
# transport's source file the code comes from (inlined code counts for the
# header it is written in), largest first, then the rest (UCX, libc)
cg_breakdown() {
    local log=${CG[$1.log]} calls=${CG[$1.calls]} post=${CG[$1.post]}
    [ -n "$log" ] && [ -s "$log" ] && [ -n "$post" ] || return 0
    callgrind_annotate --threshold=100 "$log" 2>/dev/null | awk \
        -v calls="$calls" -v post="$post" '
        /^ *[0-9,]+ +\( *[0-9.]+%\) +[^ ]*(uct_mlx5|src\/mlx5)\// {
            c = $1; gsub(/,/, "", c); f = $0
            sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", f); sub(/ .*$/, "", f)
            sub(/^.*\/(uct_mlx5|src)\//, "", f); sub(/^uct_mlx5\//, "", f)
            sub(/:.*$/, "", f)
            by[f] += c }
        END { for (f in by) { n = by[f] / calls; sum += n
                              if (n >= 0.5) printf "%s %.0f\n", f, n }
              printf "~other(UCX,libc) %.0f\n", (post > sum) ? post - sum : 0 }' |
        sort -k2 -nr | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }
                            END { print "" }' | sed 's/~//'
}

# the CPU, and the round trip of a bare shared-memory ping-pong between
# two processes (what the device's own round trip is compared with in
# make bench-sim): ratios against posix move with it
cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)
bare_rtt=
sim_bench=
for c in ${STRAND_BUILDDIR:+"$STRAND_BUILDDIR/contrib/bench/sim_bench"} \
         "$here/sim_bench"; do
    [ -x "$c" ] && { sim_bench=$c; break; }
done
if [ -n "$sim_bench" ]; then
    bare_rtt=$(timeout 120 "$sim_bench" --iters 20000 --rounds 1 --mb 1 \
                   --msgs 1000 2>/dev/null |
               awk '/ping-pong RTT/ { print $(NF - 2) " ns"; exit }')
fi
HOST_LINE="CPU: ${cpu_model:-unknown}; bare shared-memory ping-pong round trip: ${bare_rtt:-not measured (contrib/bench/sim_bench not built)}"

ROWS=()
row() { ROWS+=("$(printf '%s\t' "$@")"); }
row "UCT am_lat 8 B, median (us)" "$(fmt_cell am_lat dc 1 3)" "$(fmt_cell am_lat posix 1 3)" \
    "$(fmt_cell am_lat tcp 1 3)" "$(ratio am_lat posix)" "$(ratio am_lat tcp)" \
    "<= 3x posix" "$(verdict_lat am_lat 3)"
row "UCT put_lat 8 B, median (us)" "$(fmt_cell put_lat dc 1 3)" "$(fmt_cell put_lat posix 1 3)" \
    "$(fmt_cell put_lat tcp 1 3)" "$(ratio put_lat posix)" "$(ratio put_lat tcp)" \
    "<= 3x posix" "$(verdict_lat put_lat 3)"
row "UCT am_bw 8 B short (Mmsg/s)" "$(fmt_cell am_bw dc 1e6 3)" "$(fmt_cell am_bw posix 1e6 3)" \
    "$(fmt_cell am_bw tcp 1e6 3)" "$(ratio am_bw posix)" "$(ratio am_bw tcp)" \
    ">= 0.5x posix" "$(verdict_ge am_bw 0.5)"
row "UCT put_bw 1 MiB zcopy (MiB/s)" "$(fmt_cell put_bw dc 1 0)" "$(fmt_cell put_bw posix 1 0)" \
    "$(fmt_cell put_bw tcp 1 0)" "$(ratio put_bw posix)" "$(ratio put_bw tcp)" "-" "-"
row "UCP tag_lat 8 B, median (us)" "$(fmt_cell tag_lat dc 1 3)" "$(fmt_cell tag_lat posix 1 3)" \
    "$(fmt_cell tag_lat tcp 1 3)" "$(ratio tag_lat posix)" "$(ratio tag_lat tcp)" \
    "<= 2.5x posix" "$(verdict_lat tag_lat 2.5)"
row "UCP tag_bw 1 MiB (MiB/s)" "$(fmt_cell tag_bw dc 1 0)" "$(fmt_cell tag_bw posix 1 0)" \
    "$(fmt_cell tag_bw tcp 1 0)" "$(ratio tag_bw posix)" "$(ratio tag_bw tcp)" \
    ">= 1.5x posix,cma,self" "$(verdict_ge tag_bw 1.5)"
if [ "$callgrind" = 1 ]; then
    row "am_short post path (instr/post)" "$(instr $AM_SHORT_FN cell FAILED)" - - - - \
        "<= $POST_TARGET" "$(verdict_instr $AM_SHORT_FN)"
    row "am_short post path, a fast post (instr)" "$(instr $AM_SHORT_FN fast FAILED)" - - - - \
        "<= $POST_TARGET" "$(verdict_fast $AM_SHORT_FN)"
    row "am_short device emulation (instr/post)" "$(instr $AM_SHORT_FN simper FAILED)" \
        - - - - "reported apart" "-"
    row "put_short post path (instr/post)" "$(instr $PUT_SHORT_FN cell FAILED)" - - - - \
        "<= $POST_TARGET" "$(verdict_instr $PUT_SHORT_FN)"
    row "put_short post path, a fast post (instr)" "$(instr $PUT_SHORT_FN fast FAILED)" - - - - \
        "<= $POST_TARGET" "$(verdict_fast $PUT_SHORT_FN)"
    row "put_short device emulation (instr/post)" "$(instr $PUT_SHORT_FN simper FAILED)" \
        - - - - "reported apart" "-"
    na=$([ -n "$post_cost" ] && echo FAILED || echo "not measured (contrib/bench/post_cost not built)")
    row "refused put_short, queue full (instr/call)" "$(instr refused cell "$na")" - - - - \
        "<= $REFUSED_TARGET" "$(verdict_max refused $REFUSED_TARGET)"
    row "send completion (instr/CQE)" "$(instr send_cqe cell "$na")" - - - - \
        "<= $POST_TARGET" "$(verdict_max send_cqe $POST_TARGET)"
    row "received AM, handler excluded (instr/AM)" "$(instr recv_am cell "$na")" - - - - \
        "<= $POST_TARGET" "$(verdict_max recv_am $POST_TARGET)"
fi

HEAD="metric	dc_strand	posix	tcp	dc/posix	dc/tcp	target	verdict	"

print_plain() {
    printf '%s\n' "$HEAD" "${ROWS[@]}" | awk -F'\t' '
        { n = NR; for (i = 1; i < NF; ++i) { c[NR, i] = $i
                                             if (length($i) > w[i]) w[i] = length($i) } }
        END { for (r = 1; r <= n; ++r) {
                  line = ""
                  for (i = 1; i <= 8; ++i) {
                      s = c[r, i]
                      line = line (i > 1 ? " | " : "") \
                             (i == 1 || i >= 7 ? sprintf("%-*s", w[i], s) : sprintf("%*s", w[i], s))
                  }
                  sub(/ +$/, "", line); print line
                  if (r == 1) { line = ""
                      for (i = 1; i <= 8; ++i) { d = sprintf("%*s", w[i], ""); gsub(/ /, "-", d)
                                                  line = line (i > 1 ? "-+-" : "") d }
                      print line }
              } }'
}
print_md() {
    printf '%s\n' "$HEAD" "${ROWS[@]}" | awk -F'\t' '
        { line = "|"; for (i = 1; i <= 8; ++i) line = line " " $i " |"; print line
          if (NR == 1) print "|---|--:|--:|--:|--:|--:|---|---|" }'
}

notes() {
    echo "- dc_strand: \`-x dc_strand -d $DC_DEV\` on the software device, each pair on its own fabric; posix: \`-x posix -d memory\`; tcp: \`-x tcp -d $lo\`$([ $tcp_ok = 1 ] || echo " ($tcp_na: not measured)")."
    echo "- UCP: \`UCX_TLS=dc_strand UCX_NET_DEVICES=$DC_DEV\`; posix column \`UCX_TLS=posix,self\` (tag_lat), \`posix,cma,self\` (tag_bw); tcp column \`UCX_TLS=tcp,self UCX_NET_DEVICES=$lo\`."
    echo "- Latency: ucx_perftest's typical (50th percentile) value, half a round trip, over the last <= 2048 iterations; bandwidth and message rate: its overall values (MiB/s = 2^20 bytes/s). Each value is the best of $rounds run(s) (lowest latency, highest rate); the ratios (and the verdicts) are the median of the rounds' own ratios where two rounds or more measured both sides (each round runs dc_strand, posix and tcp one after the other), else best / best; every round's ratio and best / best are listed under \"all runs\"."
    echo "- A layout in parentheses is used where the transport lacks the metric's own (put_lat: short; put_bw: zcopy)."
    if [ "$callgrind" = 1 ]; then
        echo "- Refused post and completions: callgrind on \`contrib/bench/post_cost\` (one process, two dc_strand interfaces on one fabric): a put_short on a full send queue, $CG_N times (the transport's function, per call); $CG_N 8-byte put_shorts with a CQE each (\`UCX_DC_STRAND_TX_CQ_MODERATION=1\`), the sender's \`uct_iface_progress\` per CQE; $CG_N 8-byte am_shorts, the receiver's \`uct_iface_progress\` per message, its handler excluded; progress calls that found nothing are taken out at the cost of an idle one (${CG[idle.cell]:-?} instructions); the device's work counted apart as above."
        echo "- Instructions: callgrind on the dc_strand client (server not under valgrind), \`-t am_bw\` / \`-t put_bw\` \`-D short -s 8 -n $CG_N -w $CG_W\`, collecting inside \`$AM_SHORT_FN\` / \`$PUT_SHORT_FN\` only; post path per call = (inclusive cost - device) / calls (a run with over 1% of its calls refused for a full send queue is repeated, as those are cheap and dilute it; if refused calls remain, the range per call..per doorbell is shown); a fast post: how many instructions of the function run at least 0.9 x doorbells times (\`--dump-instr=yes\`: the checks, WQE and doorbell of an 8-byte post, which has no loop; refused calls and the general path run other instructions); device per post = device cost / doorbells; the device emulation (calls into \`smlx5_*\`, \`sim_*\`, \`dev_sim_*\`: the doorbell processing the software device does inline) is counted apart and not in the post path."
    fi
}

echo
echo "dc_strand vs UCX transports: $(date '+%Y-%m-%d %H:%M'), $(nproc 2>/dev/null || echo '?') cores, UCX ${ucxv:-?}, strand ${rev:-?}"
echo "plugin: $plugin_src (built ${plugin_date:-?}); load average ${load_start:-?} at start, ${load_end:-?} at end; ${elapsed}s, $rounds round(s)$([ "$quick" = 1 ] && echo ", --quick")"
echo "$HOST_LINE"
echo
print_plain
echo
notes | sed 's/`//g'
echo
echo "all runs (latency us, rate msg/s, bandwidth MiB/s):"
for id in $CELLS; do
    printf '  %-8s %-13s %s\n' "${id%%.*}" "${TL_NAME[${id#*.}]}" "${VALS[$id]:-FAILED}"
done
echo "dc_strand / other, round by round (the median is the table's ratio):"
for m in $METRICS; do
    for tl in posix tcp; do
        rr=$(round_ratios "$m" "$tl" | tr '\n' ' ')
        [ -n "$rr" ] || continue
        printf '  %-8s /%-13s %s (best / best %s)\n' "$m" "${TL_NAME[$tl]}" "$rr" "$(best_ratio "$m" "$tl")"
    done
done
if [ "$callgrind" = 1 ]; then
    echo "callgrind (calls, inclusive Ir, device Ir by call edge):"
    for fn in $AM_SHORT_FN $PUT_SHORT_FN; do
        [ -n "${CG[$fn.calls]}" ] || { echo "  $fn: FAILED"; continue; }
        echo "  $fn: ${CG[$fn.calls]} calls (${CG[$fn.refused]} refused: queue full), ${CG[$fn.db]} doorbells, ${CG[$fn.total]} Ir inclusive, device ${CG[$fn.sim]} Ir (${CG[$fn.via]})"
        echo "    post path per call ${CG[$fn.post]}, per doorbell ${CG[$fn.post_hi]}; device per doorbell ${CG[$fn.simper]}"
        echo "    post path by source (instr/call): $(cg_breakdown $fn)"
    done
    for k in refused idle send_cqe recv_am; do
        [ -n "${CG[$k.calls]}" ] || { echo "  post_cost $k: FAILED"; continue; }
        echo "  post_cost $k: ${CG[$k.calls]} calls, ${CG[$k.total]} Ir inclusive, device ${CG[$k.sim]} Ir${CG[$k.handler]:+, handler ${CG[$k.handler]} Ir}; ${CG[$k.report]}; per unit ${CG[$k.cell]}"
    done
fi
echo
echo "markdown:"
echo
echo "dc_strand vs UCX transports ($(date '+%Y-%m-%d'), $(nproc 2>/dev/null || echo '?') cores, UCX ${ucxv:-?}, strand ${rev:-?}, load ${load_start:-?}):"
echo "$HOST_LINE."
echo
print_md
echo
notes
if [ "$callgrind" = 1 ]; then
    for fn in $AM_SHORT_FN $PUT_SHORT_FN; do
        [ -n "${CG[$fn.post]}" ] || continue
        echo "- \`${fn#strand_dc_ep_}\` post path by source (instructions per call; code inlined from a header counts for the header): $(cg_breakdown $fn)."
    done
fi

if [ -n "$failed" ] || [ -n "$runs_failed" ]; then
    keep_work=1
    echo
    for msg in ${failed:+"could not measure: $failed"} \
               ${runs_failed:+"runs that failed: ${runs_failed#, }"}; do
        echo "$me: $msg"
        echo "$me: $msg" >&2
    done
    exit 1
fi
exit 0
