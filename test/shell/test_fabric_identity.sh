#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two fabrics are two subnets, also under one name: "nodes" that are mount
# namespaces with a /dev/shm of their own (as containers or pods on one
# host have) each make the fabric STRAND_SIM_FABRIC names. A process of
# node 2 connecting to the address of a process of node 1 must be told
# "unreachable" (the subnet or GID prefix is the fabric's identity, random
# per segment), and no message may reach anyone: not node 1's process, and
# not the process of node 2 that holds the same LID (the defect before:
# the prefixes were a hash of the name, the LIDs allocated alike, and node
# 2's sender delivered every message to node 2's decoy). Needs root for
# the namespaces (skipped otherwise).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! unshare --mount true 2>/dev/null; then
    skip "fabric identity across mount namespaces" "needs root and unshare --mount"
    exit 0
fi
cc=${CC:-cc}
if ! $cc -O2 -Wall -o "$tmpdir/ucp_fabrics" \
        "$STRAND_SRCDIR/test/ucp/ucp_fabrics.c" \
        $(pkg-config --cflags --libs ucx 2>/dev/null || echo -lucp -lucs) \
        2>"$tmpdir/cc"; then
    not_ok "ucp_fabrics builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
export UCX_NET_DEVICES=smlx5_0:1
# the segments live in the namespaces' own /dev/shm: gone with them
export STRAND_SIM_FABRIC="${fabric_prefix}same_name"
run=$(command -v strand-run)

# node COMMAND: COMMAND in a mount namespace with a /dev/shm of its own
node() {
    unshare --mount --propagation private sh -c \
        "mount -t tmpfs tmpfs /dev/shm && $1"
}

for tls in $tl,self; do
    d=$(mktemp -d "$tmpdir/ns.XXXX")
    export UCX_TLS=$tls
    node "exec timeout 60 $run $tmpdir/ucp_fabrics listen $d A 4" \
        >"$d/A.log" 2>&1 &
    a=$!
    node "timeout 60 $run $tmpdir/ucp_fabrics listen $d D 4 >$d/D.log 2>&1 &
          for i in \$(seq 1000); do
              [ -f $d/A.addr ] && [ -f $d/D.addr ] && break; sleep 0.01
          done
          timeout 60 $run $tmpdir/ucp_fabrics send $d A >$d/S.log 2>&1
          wait" &
    b=$!
    wait $a $b
    if grep -q '^send: ep_create: Destination is unreachable' "$d/S.log" &&
       grep -q 'Destination is unreachable' "$d/S.log"; then
        ok "UCX_TLS=$tls: a peer on another fabric of the same name is unreachable"
    else
        not_ok "UCX_TLS=$tls: a peer on another fabric of the same name: $(
            grep -h '^send:' "$d/S.log" | tr '\n' ' ')"
        sed 's/^/#   /' "$d/S.log" | tail -5
    fi
    if grep -q '^A: received 0$' "$d/A.log" &&
       grep -q '^D: received 0$' "$d/D.log"; then
        ok "UCX_TLS=$tls: no message reached node 1's process or node 2's decoy"
    else
        not_ok "UCX_TLS=$tls: messages went astray: $(cat "$d/A.log" "$d/D.log" |
                                                     grep received | tr '\n' ' ')"
    fi
done

# The finding as a user met it: an MPI job on two "nodes" x 2 ranks
# (mpirun through an rsh agent that enters a namespace per node), UCX_TLS
# with shared memory inside a node and the transport between them. Each
# node makes a fabric of its own: the ranks must be told at once that the
# other node is unreachable (before: every rank received other ranks'
# messages, 768 wrong on each, then the job hung).
mpicc=$(command -v mpicc)
if [ -z "$mpicc" ]; then
    skip "MPI on two nodes of two fabrics" "no mpicc"
    exit 0
fi
if ! "$mpicc" -O2 -o "$tmpdir/mpi_check" "$STRAND_SRCDIR/test/mpi/mpi_check.c" \
        2>"$tmpdir/cc"; then
    not_ok "mpi_check builds"; sed 's/^/#   /' "$tmpdir/cc"; exit 0
fi
printf 'node-a slots=2\nnode-b slots=2\n' >"$tmpdir/hosts"
t0=$SECONDS
timeout 60 strand-run mpirun --hostfile "$tmpdir/hosts" -np 4 \
    --mca plm_rsh_agent "$STRAND_SRCDIR/test/shell/node_rsh.sh" \
    --mca oob_tcp_if_include lo \
    -x UCX_TLS=$tl,sm,self -x UCX_NET_DEVICES=smlx5_0:1 \
    -x STRAND_SIM_FABRIC="${fabric_prefix}mpi" \
    "$tmpdir/mpi_check" >"$tmpdir/mpi.out" 2>&1
rc=$?
took=$((SECONDS - t0))
if [ $rc = 124 ]; then
    not_ok "MPI on two nodes of two fabrics: hung (no end in 60 s)"
elif [ $rc = 0 ]; then
    not_ok "MPI on two nodes of two fabrics: ran as if one fabric"
elif grep -q 'Destination is unreachable' "$tmpdir/mpi.out" &&
     ! grep -q '^mpi_check: rank' "$tmpdir/mpi.out"; then
    ok "MPI on two nodes of two fabrics ($tl,sm,self): unreachable in ${took} s, no message delivered"
else
    not_ok "MPI on two nodes of two fabrics: exit $rc without 'unreachable'"
    sed 's/^/#   /' "$tmpdir/mpi.out" | tail -15
fi
