#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Rendezvous under UCP, hardware (the receiver's device reads the data and
# sends the FIN; UCX_DC_STRAND_TM_ENABLE=y) against UCP's software
# rendezvous (RTS, RDMA GET by the receiver's transport, ATS; tag matching
# off), measured in one run (make bench-tm):
#   contrib/bench/tm_rndv.sh [--iters N]
# For 1, 4 and 16 MiB: ucx_perftest tag_bw bandwidth, and the CPU time of
# the receiving and the sending process per message (user + system, all
# threads: on the software device the NIC's work is in those processes).
# Prints one table; exit 0 when every run completed, 1 otherwise.
here=$(cd "$(dirname "$0")" && pwd)
iters=40
while [ $# -gt 0 ]; do
    case $1 in
    --iters) iters=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tm_rndv.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. "$here/strand_env.sh"
if [ -z "$run" ] || ! command -v ucx_perftest >/dev/null; then
    echo "tm_rndv.sh: needs contrib/strand-run (build first) and ucx_perftest" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f /dev/shm/tm_rndv_$$_*' EXIT
export UCX_TLS=dc_strand,self UCX_NET_DEVICES=smlx5_0:1 UCX_LOG_LEVEL=info
listening() { ss -ltnH 2>/dev/null | grep -q ":$1\b"; }

# one SIZE MODE(hw|sw): "bw_MBps server_cpu_s client_cpu_s server_exp_rndv"
one() {
    local size=$1 mode=$2 port srv i bw
    export UCX_DC_STRAND_TM_ENABLE=$([ "$mode" = hw ] && echo y || echo n)
    export STRAND_SIM_FABRIC=tm_rndv_$$_${mode}_$size
    port=$((20000 + RANDOM % 20000))
    while listening "$port"; do port=$((20000 + RANDOM % 20000)); done
    ( TIMEFORMAT='%U %S'; time "$run" ucx_perftest -p "$port" \
        >"$tmp/srv" 2>&1 ) 2>"$tmp/srv_cpu" &
    srv=$!
    for i in $(seq 100); do listening "$port" && break; sleep 0.1; done
    ( TIMEFORMAT='%U %S'; time "$run" ucx_perftest 127.0.0.1 -p "$port" \
        -t tag_bw -s "$size" -n "$iters" -w 4 -f >"$tmp/cli" 2>&1 ) \
        2>"$tmp/cli_cpu"
    wait "$srv"
    bw=$(grep -E '^ *(Final: *)?[0-9]+ +[0-9.]+ ' "$tmp/cli" | tail -1 |
         sed 's/Final://' | awk '{print $5}')
    [ -n "$bw" ] || { echo "FAILED"; return 1; }
    echo "$bw $(awk '{print $1 + $2}' "$tmp/srv_cpu" | tail -1)" \
         "$(awk '{print $1 + $2}' "$tmp/cli_cpu" | tail -1)" \
         "$(grep -o 'exp_rndv [0-9]*' "$tmp/srv" | awk '{s += $2} END {print s + 0}')"
}

status=0
printf "%-7s | %-38s | %-38s | %s\n" size "hardware rendezvous (TM on)" \
       "software rendezvous (TM off)" "hw/sw"
printf "%-7s | %9s %13s %13s | %9s %13s %13s | %5s %6s\n" "" "MB/s" \
       "srv us/msg" "cli us/msg" "MB/s" "srv us/msg" "cli us/msg" "bw" "srvcpu"
for size in 1048576 4194304 16777216; do
    hw=$(one "$size" hw) || status=1
    sw=$(one "$size" sw) || status=1
    read -r hbw hsc hcc hexp <<<"$hw"
    read -r sbw ssc scc _ <<<"$sw"
    if [ "$hbw" = FAILED ] || [ "$sbw" = FAILED ]; then
        echo "$size: a run failed"; status=1; continue
    fi
    awk -v s="$size" -v n="$iters" -v hb="$hbw" -v hs="$hsc" -v hc="$hcc" \
        -v sb="$sbw" -v ss="$ssc" -v sc="$scc" -v he="$hexp" 'BEGIN {
        printf "%-7s | %9.0f %13.0f %13.0f | %9.0f %13.0f %13.0f | %5.2f %6.2f  (server exp_rndv %d)\n",
               s / 1048576 "MiB", hb, hs * 1e6 / n, hc * 1e6 / n,
               sb, ss * 1e6 / n, sc * 1e6 / n, hb / sb, hs / ss, he }'
done
echo "(CPU per message includes process start and wire-up; the process"
echo " whose exp_rndv counts the device's reads is the receiver)"
exit $status
