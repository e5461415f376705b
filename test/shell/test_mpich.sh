#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# MPICH (Debian's, device ch4:ucx) over dc_strand (rc_strand in the rc
# mode), through its hydra launcher (mpiexec.mpich), which strand-run hands
# the plugin with -genv: test/mpi/mpi_check.c (point-to-point, collectives,
# one-sided) and test/mpi/mpi_rma.c (every MPI-3 RMA operation and
# synchronisation, on allocated, created and dynamic windows) at 2 and 4
# ranks, also with integrity-checked GETs and with lost and duplicated
# packets; the lanes UCP chose. In the default mode also: what reaches the
# ranks hydra starts through an rsh launcher on other "hosts". Open MPI
# stays the mpi alternative (test_mpi).
. "$(dirname "$0")/lib.sh"

if ! command -v mpicc.mpich >/dev/null ||
   ! command -v mpiexec.mpich >/dev/null; then
    skip "MPICH tests" "mpicc.mpich/mpiexec.mpich not installed (contrib/setup.sh installs mpich)"
    exit 0
fi
for prog in mpi_check mpi_rma; do
    if ! mpicc.mpich -O2 -o "$tmpdir/$prog" \
            "$STRAND_SRCDIR/test/mpi/$prog.c" 2>"$tmpdir/cc"; then
        not_ok "$prog builds with mpicc.mpich"; sed 's/^/#   /' "$tmpdir/cc"
        exit 0
    fi
done

# hydra gives the ranks the caller's whole environment (the device mode's
# settings, LD_LIBRARY_PATH of the ucx modes, STRAND_SIM_*), the plugin
# from strand-run's -genv
export UCX_NET_DEVICES=smlx5_0:1

# run NAME NP PROG [VAR=VALUE...]: PROG on NP ranks over $tl and self,
# UCX_LOG_LEVEL=info (every rank prints its endpoint configurations); its
# output in $tmpdir/NAME, mpiexec's status in $rc
run() {
    local name=$1 np=$2 prog=$3; shift 3
    env "$@" UCX_TLS="$tl,self" UCX_LOG_LEVEL=info \
        STRAND_SIM_FABRIC="$fabric_prefix$name" \
        timeout 240 strand-run mpiexec.mpich -n "$np" "$tmpdir/$prog" \
        >"$tmpdir/$name" 2>&1
    rc=$?
}

# verdict NAME NP PROG: PROG's verdict (lib.sh) on $tmpdir/NAME
verdict() {
    mpi_verdict "MPICH $1: $2 ranks over $tl" "$3" "$2" "$rc" "$tmpdir/$1"
}

# The default and rc modes: 2 and 4 ranks, also with integrity-checked
# GETs and through a lossy fabric; the other UCX versions (ucx118, ucx122,
# both transports): 4 ranks. (Not run in the DC variants num_dci1, dcs,
# cqe128, roce, signaled: they differ below UCP, where test_mpi and
# test_ucp hold them; MPICH adds its launcher and RMA mapping, the same on
# each.)
full=0
case "${STRAND_TEST_MODE:-default}" in default|rc) full=1 ;; esac
nps=4; [ "$full" = 1 ] && nps="2 4"
for np in $nps; do
    run "check_np$np" "$np" mpi_check
    verdict "check_np$np" "$np" mpi_check
    check "MPICH np $np: MPI messages between ranks use $tl" \
        grep -qE "$ep_cfg_re tag\($tl/smlx5_0:1\)" "$tmpdir/check_np$np"

    run "rma_np$np" "$np" mpi_rma
    verdict "rma_np$np" "$np" mpi_rma
    # MPICH 4.0's ch4:ucx puts and gets through UCP RMA (the rma lane:
    # RDMA WRITE/READ), and carries accumulates and atomics as its own
    # active messages (it calls no ucp_atomic_*: no amo lane)
    check "MPICH np $np: puts/gets (rma) and active messages between ranks use $tl" \
        grep -qE "$ep_cfg_re tag\($tl/smlx5_0:1\) +rma\($tl/smlx5_0:1\) +am\($tl/smlx5_0:1\)" \
        "$tmpdir/rma_np$np"
done
[ "$full" = 1 ] || exit 0

# one-sided with integrity-checked GETs, then through a lossy fabric: a
# transport timeout of 200 ms (UCX's 1 s makes each lost packet at the end
# of a burst cost a second: about a minute for this run; at 50 ms, 8 tries
# were too few for a rank the scheduler left out on a loaded machine: the
# software device acknowledges from the receiving process)
run rma_integrity 4 mpi_rma "${tlp}INTEGRITY=crc32c"
verdict rma_integrity 4 mpi_rma
run rma_faults 4 mpi_rma STRAND_SIM_FAULTS=drop=0.02,dup=0.02,seed=11 \
    "${tlp}TIMEOUT=200ms"
verdict rma_faults 4 mpi_rma

default_mode || exit 0

# ----------------------------------------------------------- launching
check "strand-run's help shows MPICH's launcher" \
    bash -c "strand-run --help 2>&1 | grep -q 'mpiexec.mpich'"
check "Open MPI is still the mpi alternative (mpirun, mpicc)" \
    bash -c "[ \"\$(basename \"\$(readlink -f \"\$(command -v mpirun)\")\")\" = orterun ] &&
             mpicc --showme >/dev/null 2>&1"

# mpirun.mpich is hydra too: the plugin reaches its ranks through -genv,
# not through the launcher's own environment (with LD_PRELOAD: hydra's
# proxy, a rank's parent, runs without it)
if ucx_has_plugin_path; then want='UCX_PLUGIN_PATH=.*/\.libs'; else want='LD_PRELOAD=.*libuct_strand'; fi
timeout 60 strand-run mpirun.mpich -n 2 sh -c \
    'echo "rank $(env | grep -cE "^(LD_PRELOAD|UCX_PLUGIN_PATH)=.*strand") parent $(tr "\0" "\n" </proc/$PPID/environ | grep -c "^LD_PRELOAD=.*libuct_strand")"' \
    >"$tmpdir/mpirun_mpich" 2>&1
if ucx_has_plugin_path; then parent='[0-9]+'; else parent=0; fi
check "strand-run mpirun.mpich: both ranks have the plugin, the launcher not" \
    bash -c "[ \$(grep -cE '^rank 1 parent $parent\$' '$tmpdir/mpirun_mpich') = 2 ]" ||
    sed 's/^/#   /' "$tmpdir/mpirun_mpich"

# hydra's rsh launcher on two "hosts": an agent that records the host it
# was asked for and runs the proxy here. The ranks get the plugin (and the
# caller's UCX_TLS) through hydra's own protocol, not through the agent.
cat >"$tmpdir/rsh" <<EOS
#!/bin/sh
echo "\$1" >>"$tmpdir/rsh_hosts"
host=\$1; shift
exec sh -c "\$*"
EOS
chmod +x "$tmpdir/rsh"
UCX_TLS="$tl,self" timeout 120 strand-run mpiexec.mpich -launcher rsh \
    -launcher-exec "$tmpdir/rsh" -hosts nodea,nodeb -n 2 \
    sh -c 'echo "rank $PMI_RANK $(env | grep -E "^(LD_PRELOAD|UCX_PLUGIN_PATH|UCX_TLS)=" | tr "\n" " ")"' \
    >"$tmpdir/launch" 2>&1
rc=$?
check_exit "hydra's rsh launcher on two hosts runs both ranks" "$rc"
check "the agent was asked for both hosts" \
    bash -c "grep -qx nodea '$tmpdir/rsh_hosts' && grep -qx nodeb '$tmpdir/rsh_hosts'"
check "both ranks, started by proxies on the two hosts, have the plugin and UCX_TLS" \
    bash -c "[ \$(grep -E '^rank [01] ' '$tmpdir/launch' | grep -E '$want' | grep -c 'UCX_TLS=$tl,self') = 2 ]" ||
    sed 's/^/#   /' "$tmpdir/launch"
# and over strand, the two ranks on two "hosts" of one fabric
STRAND_SIM_FABRIC="${fabric_prefix}rsh" UCX_TLS="$tl,self" \
    timeout 240 strand-run mpiexec.mpich -launcher rsh \
    -launcher-exec "$tmpdir/rsh" -hosts nodea,nodeb -n 2 \
    "$tmpdir/mpi_check" >"$tmpdir/rsh_check" 2>&1
rc=$?
verdict rsh_check 2 mpi_check
