# SPDX-License-Identifier: BSD-3-Clause
# Nodes of a cluster on this machine, for tests (sourced): each node is a
# network namespace with its own link to a switch, its own hostname (UTS
# namespace), its own /dev/shm and /etc/hosts (mount namespace), as a
# container or a machine of its own would be. The switch is a bridge in a
# namespace of its own: no node and no packet ever touches this machine's
# own network.
#
#   nodes_up N        nodes node1 .. nodeN at 10.<net>.0.1 .. N on one
#                     switch; sets nodes_dir (the rsh agent's directory)
#   node_run K CMD... CMD in node K (its network, hostname, /dev/shm)
#   node_addr K       node K's address
#   nodes_down        everything removed: processes of the nodes, links,
#                     namespaces (also run at exit, also after a failure)
#   nodes_left        what of this harness is still on the machine (empty
#                     when nothing)
#
# Needs root (ip netns, unshare, nsenter); nodes_can says whether this
# machine allows it, and why not.
#
# A node's namespaces are held by a process of its own (started in its
# network namespace by unshare --uts --mount): every command on the node
# enters them (nsenter), so all its processes share one /dev/shm and one
# hostname, as on a real node. test/hosts/rsh is mpirun's agent into them.

nodes_id=strand-$$-                 # namespace names: unique per test run
nodes_net=$((200 + $$ % 50))        # 10.<net>.0.0/24
nodes_count=0
nodes_dir=

nodes_can() {
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (network namespaces)"; return 1
    fi
    local t=${nodes_id}probe
    if ! ip netns add "$t" 2>/dev/null; then
        echo "ip netns add fails here"; return 1
    fi
    ip netns del "$t"
    if ! unshare --uts --mount true 2>/dev/null; then
        echo "unshare --uts --mount fails here"; return 1
    fi
    command -v nsenter >/dev/null || { echo "no nsenter"; return 1; }
}

node_addr() { echo "10.$nodes_net.0.$1"; }

nodes_up() {
    local n=$1 k sw=${nodes_id}sw
    nodes_reap
    nodes_dir=$(mktemp -d "${TMPDIR:-/tmp}/strand-nodes-$$.XXXXXX")
    export STRAND_NODES_DIR=$nodes_dir
    nodes_trap
    ip netns add "$sw" || return 1
    ip -n "$sw" link add br0 type bridge || return 1
    ip -n "$sw" link set br0 up
    for k in $(seq 1 "$n"); do
        echo "$(node_addr "$k") node$k" >>"$nodes_dir/hosts"
    done
    echo "127.0.0.1 localhost" >>"$nodes_dir/hosts"
    for k in $(seq 1 "$n"); do
        nodes_count=$k
        ip netns add "$nodes_id$k" || return 1
        ip -n "$nodes_id$k" link set lo up
        # eth0 in the node, its peer on the switch's bridge
        ip link add "stn$$-$k" netns "$nodes_id$k" type veth \
            peer name "p$k" netns "$sw" || return 1
        ip -n "$nodes_id$k" link set "stn$$-$k" name eth0
        ip -n "$nodes_id$k" addr add "$(node_addr "$k")/24" dev eth0
        ip -n "$nodes_id$k" link set eth0 up
        ip -n "$sw" link set "p$k" master br0 up
        # the holder: hostname, /dev/shm, /etc/hosts of the node
        # (not a job of this shell: nodes_down kills it, nobody waits)
        (ip netns exec "$nodes_id$k" unshare --uts --mount \
            --propagation private sh -c '
                hostname "$1" && mount -t tmpfs tmpfs /dev/shm &&
                mount --bind "$2/hosts" /etc/hosts &&
                echo $$ >"$2/$1.pid" && exec sleep infinity' \
            node "node$k" "$nodes_dir" </dev/null >/dev/null 2>&1 &)
        local i
        for i in $(seq 500); do
            [ -s "$nodes_dir/node$k.pid" ] && break
            sleep 0.01
        done
        [ -s "$nodes_dir/node$k.pid" ] || return 1
    done
}

node_pid() { cat "$nodes_dir/node$1.pid"; }

# nodes_down at exit, before what the caller had there (lib.sh's cleanup);
# a TERM or INT ends the test through it too
nodes_trap() {
    local prev
    prev=$(trap -p EXIT)
    eval "set -- $prev" # trap -- CMD EXIT
    nodes_prev_exit=${3:-}
    trap 'nodes_down; eval "$nodes_prev_exit"' EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
}

# What a run killed outright (SIGKILL: no trap) left: namespaces and
# directories named after a process that is gone, with the processes
# still in them. Only this harness's names (strand-PID-...).
nodes_reap() {
    local ns pid d
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' |
                grep -E '^strand-[0-9]+-'); do
        pid=${ns#strand-}; pid=${pid%%-*}
        kill -0 "$pid" 2>/dev/null && continue
        for p in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$p" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null
    done
    for d in "${TMPDIR:-/tmp}"/strand-nodes-*; do
        [ -d "$d" ] || continue
        pid=${d##*/strand-nodes-}; pid=${pid%%.*}
        kill -0 "$pid" 2>/dev/null || rm -rf "$d"
    done
}

node_run() {
    local k=$1; shift
    nsenter -t "$(node_pid "$k")" --uts --mount --net -- "$@"
}

# every process in a node's namespaces, the holder last
node_procs() {
    local holder=$1 ns p
    ns=$(readlink "/proc/$holder/ns/mnt") || return 0
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" = "$holder" ] && continue
        [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$ns" ] && echo "$p"
    done
    echo "$holder"
}

# nodes_faults DROP DUP: the switch drops every DROP-th and duplicates
# every DUP-th UDP packet it sends out of each port (nftables on the ports'
# egress, counted: a test can rely on the faults happening; the kernel's
# netem, which could also delay and reorder, is not always there). A
# packet here may be a batch of datagrams (UDP segmentation offload): the
# batch is lost or doubled whole, a burst. nodes_faults 0 0: a clean
# switch again.
nodes_faults() {
    local drop=$1 dup=$2 k sw=${nodes_id}sw
    ip netns exec "$sw" nft delete table netdev strand_faults 2>/dev/null
    [ "$drop" = 0 ] && [ "$dup" = 0 ] && return 0
    {
        echo "table netdev strand_faults {"
        for k in $(seq 1 "$nodes_count"); do
            echo "  chain out_p$k {"
            echo "    type filter hook egress device \"p$k\" priority 0;"
            [ "$drop" != 0 ] &&
                echo "    meta l4proto udp numgen inc mod $drop 0 counter drop"
            [ "$dup" != 0 ] &&
                echo "    meta l4proto udp numgen inc mod $dup 0 counter dup to \"p$k\""
            echo "  }"
        done
        echo "}"
    } | ip netns exec "$sw" nft -f -
}

# the packets nodes_faults dropped and duplicated so far: "DROPPED DUPED"
nodes_fault_counts() {
    ip netns exec "${nodes_id}sw" nft list table netdev strand_faults 2>/dev/null |
        awk '/counter/ { n = $0; sub(/.*packets /, "", n); sub(/ .*/, "", n);
                         if ($0 ~ / drop/) d += n; else u += n }
             END { print d + 0, u + 0 }'
}

nodes_down() {
    local k pid p
    [ -n "$nodes_dir" ] || return 0
    for k in $(seq 1 "$nodes_count"); do
        pid=$(cat "$nodes_dir/node$k.pid" 2>/dev/null) || continue
        for p in $(node_procs "$pid"); do
            kill -9 "$p" 2>/dev/null
        done
    done
    for k in $(seq 1 "$nodes_count"); do
        pid=$(cat "$nodes_dir/node$k.pid" 2>/dev/null) || continue
        for p in $(seq 200); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.01
        done
    done
    for k in $(seq 1 "$nodes_count"); do
        ip netns del "$nodes_id$k" 2>/dev/null
    done
    ip netns del "${nodes_id}sw" 2>/dev/null
    rm -rf "$nodes_dir"
    nodes_dir=
}

nodes_left() {
    ip netns list 2>/dev/null | grep -E "^$nodes_id" | sed 's/^/namespace /'
    ip -o link 2>/dev/null | grep -E "stn$$-" | sed 's/^/link /'
    [ -n "$nodes_dir" ] && [ -e "$nodes_dir" ] && echo "directory $nodes_dir"
    true
}
