#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench-hosts: strand between two nodes (network namespaces on a
# switch of their own, test/hosts/nodes.sh) against what the same veth
# link gives without it, all measured in this one run:
#   - a UDP ping-pong (contrib/bench/udp_pingpong.c): the floor;
#   - ucx_perftest: 8 B am_lat and 1 MiB put_bw (zcopy) for UCX's tcp and
#     for dc_strand and rc_strand on a fabric across the nodes;
#   - an MPI ping-pong sweep 8 B .. 4 MiB (contrib/bench/mpi_pingpong.c,
#     Open MPI, one rank per node) for the same three;
#   - every round trip of a UCP tag ping-pong timed (contrib/bench/
#     ucp_pingpong.c): median, 99th percentile, the worst after the first
#     and how many took over 1 ms, between the nodes and, on one host,
#     beside two processes that keep both cores busy (a build's load).
# Prints a table and the ratios the targets are stated in (docs/
# performance.md, "Between hosts"). Needs root (namespaces): otherwise it
# says why and stops.
set -u
src=${STRAND_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${STRAND_BUILDDIR:-$src}
run=$build/contrib/strand-run
. "$src/test/hosts/nodes.sh"
if ! why=$(nodes_can); then
    echo "bench-hosts: not run: $why"; exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-hosts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/udp_pingpong" "$src/contrib/bench/udp_pingpong.c" || exit 1
${MPICC:-mpicc} -O2 -o "$tmp/mpi_pingpong" "$src/contrib/bench/mpi_pingpong.c" ||
    exit 1
cc -O2 -o "$tmp/ucp_pingpong" "$src/contrib/bench/ucp_pingpong.c" \
    $(pkg-config --cflags --libs ucx) || exit 1
nodes_up 2 || { echo "bench-hosts: the nodes did not come up"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export STRAND_SIM_HOSTS=node1,node2 UCX_WARN_UNUSED_ENV_VARS=n
a2=$(node_addr 2)
iters=${BENCH_HOSTS_ITERS:-20000}

# UDP ping-pong, 8 bytes
node_run 2 "$tmp/udp_pingpong" server 5999 >/dev/null 2>&1 &
sleep 0.5
udp=$(node_run 1 "$tmp/udp_pingpong" client "$a2" 5999 "$iters" 8 |
      awk '{ print $4 }')
wait

# perftest TL DEV TEST SIZE [ARGS]: the client's overall latency (us) or
# bandwidth (MB/s), server on node2, client on node1
perftest() {
    local tl=$1 dev=$2 test=$3 size=$4 n=$iters; shift 4
    local col=3 # Final: iters, latency median, average, overall, ...
    case $test in *_bw) col=7; n=$((iters / 20)) ;; esac # ... MB/s overall
    export STRAND_SIM_FABRIC=udp:bench-$$-$tl
    node_run 2 timeout 120 "$run" ucx_perftest -p 6000 >/dev/null 2>&1 &
    sleep 1
    node_run 1 timeout 120 "$run" ucx_perftest "$a2" -p 6000 -t "$test" \
        -x "$tl" -d "$dev" -s "$size" -n "$n" "$@" 2>/dev/null |
        awk -v c="$col" '/^Final:/ { print $c }'
    wait
}
declare -A lat bw
for tl in tcp dc_strand rc_strand; do
    dev=smlx5_0:1; [ "$tl" = tcp ] && dev=eth0
    lat[$tl]=$(perftest "$tl" "$dev" am_lat 8)
    bw[$tl]=$(perftest "$tl" "$dev" put_bw 1048576 -D zcopy)
done

# MPI ping-pong sweep, one rank per node
printf 'node1 slots=1\nnode2 slots=1\n' >"$tmp/hosts"
sweep() {
    local tl=$1 devs=$2
    node_run 1 timeout 300 "$run" mpirun --hostfile "$tmp/hosts" -np 2 --bind-to none \
        --mca plm_rsh_agent "$src/test/hosts/rsh" \
        --mca oob_tcp_if_include eth0 -x UCX_TLS="self,$tl" \
        -x UCX_NET_DEVICES="$devs" -x STRAND_SIM_FABRIC="udp:bench-$$-mpi-$tl" \
        -x STRAND_SIM_HOSTS "$tmp/mpi_pingpong" 2>/dev/null |
        awk '/^pingpong [0-9]/ { printf "%s %.1f %.3f\n", $2, $4, $5 }' >"$tmp/sweep.$tl"
}
sweep tcp eth0
sweep dc_strand smlx5_0:1
sweep rc_strand smlx5_0:1

# every round trip: UCP tag ping-pong, server on node2
rtts() {
    local tl=$1 devs=$2
    node_run 2 env UCX_TLS="self,$tl" UCX_NET_DEVICES="$devs" \
        STRAND_SIM_FABRIC="udp:bench-$$-rtt-$tl" \
        timeout 120 "$run" "$tmp/ucp_pingpong" server 6001 >/dev/null 2>&1 &
    node_run 1 env UCX_TLS="self,$tl" UCX_NET_DEVICES="$devs" \
        STRAND_SIM_FABRIC="udp:bench-$$-rtt-$tl" \
        timeout 120 "$run" "$tmp/ucp_pingpong" client "$a2" 6001 "$iters" 8 \
        2>/dev/null | awk '/^ucp_pingpong/ { print $4, $5, $6, $7 }'
    wait
}
declare -A rtt
for tl in tcp dc_strand rc_strand; do
    dev=smlx5_0:1; [ "$tl" = tcp ] && dev=eth0
    rtt[$tl]=$(rtts "$tl" "$dev")
done
nodes_down

# one host, both cores kept busy beside the pair (what a build does):
# does a round trip wait for the scheduler's tick?
loaded() {
    local tl=$1 busy=() r srv
    for _ in 1 2; do (while :; do :; done) & busy+=($!); done
    UCX_TLS="self,$tl" UCX_NET_DEVICES=smlx5_0:1 \
        STRAND_SIM_FABRIC="bench-$$-load" \
        timeout 120 "$run" "$tmp/ucp_pingpong" server 6002 >/dev/null 2>&1 &
    srv=$!
    r=$(UCX_TLS="self,$tl" UCX_NET_DEVICES=smlx5_0:1 \
        STRAND_SIM_FABRIC="bench-$$-load" \
        timeout 120 "$run" "$tmp/ucp_pingpong" client 127.0.0.1 6002 \
        "$iters" 8 2>/dev/null | awk '/^ucp_pingpong/ { print $4, $5, $6, $7 }')
    wait "$srv" 2>/dev/null
    kill "${busy[@]}"; wait "${busy[@]}" 2>/dev/null
    echo "$r"
}
load_dc=$(loaded dc_strand)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
echo "bench-hosts: two nodes on one veth link (this machine, $(nproc) cores)"
echo
printf '%-24s %12s %12s %12s %10s\n' "UCT (ucx_perftest)" tcp dc_strand rc_strand floor
printf '%-24s %12s %12s %12s %10s\n' "am_lat 8 B (us, median)" "${lat[tcp]:--}" \
    "${lat[dc_strand]:--}" "${lat[rc_strand]:--}" "udp $udp"
printf '%-24s %12s %12s %12s\n' "put_bw 1 MiB (MB/s)" "${bw[tcp]:--}" \
    "${bw[dc_strand]:--}" "${bw[rc_strand]:--}"
echo
printf '%-10s %20s %20s %20s %7s %7s\n' "MPI size" "tcp us  Gbit/s" \
    "dc_strand us  Gbit/s" "rc_strand us  Gbit/s" "dc/tcp" "rc/tcp"
join "$tmp/sweep.tcp" "$tmp/sweep.dc_strand" | join - "$tmp/sweep.rc_strand" |
    sort -n | while read -r size tu tg du dg ru rg; do
        printf '%-10s %11s %8s %11s %8s %11s %8s %7s %7s\n' "$size" "$tu" "$tg" \
            "$du" "$dg" "$ru" "$rg" "$(ratio "$dg" "$tg")" "$(ratio "$rg" "$tg")"
    done
echo "(a round trip's time; Gbit/s: 2 x size x 8 bits per round trip;"
echo " the ratios are bandwidth against tcp's, target >= 1.0 at every size)"
echo
printf '%-34s %10s %10s %10s %8s\n' "UCP round trips, 8 B ($iters)" \
    "median us" "p99 us" "worst us" ">1 ms"
for tl in tcp dc_strand rc_strand; do
    read -r m p w o <<<"${rtt[$tl]:-- - - -}"
    printf '%-34s %10s %10s %10s %8s\n' "$tl between the nodes" "$m" "$p" "$w" "$o"
done
read -r m p w o <<<"${load_dc:-- - - -}"
printf '%-34s %10s %10s %10s %8s\n' "dc_strand, one host, cores busy" "$m" "$p" "$w" "$o"
echo "(worst: after the first round trip, which connects; target: none over 1 ms)"
echo
for tl in dc_strand rc_strand; do
    echo "$tl: am_lat / tcp $(ratio "${lat[$tl]:-0}" "${lat[tcp]:-0}") (target <= 1.0)," \
         "am_lat / udp floor $(ratio "${lat[$tl]:-0}" "$udp") (target <= 1.5)," \
         "put_bw / tcp $(ratio "${bw[$tl]:-0}" "${bw[tcp]:-0}") (target >= 1.0)"
done
