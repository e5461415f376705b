# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the benchmark scripts (after they set `here`, their own
# directory): `run` becomes the strand-run to start programs with (the
# build tree's, the one next to the scripts, or the installed one; empty
# when there is none), and STRAND_PLUGIN the build tree's plugin when
# STRAND_BUILDDIR is set and the caller did not choose one.
run=${STRAND_BUILDDIR:+$STRAND_BUILDDIR/contrib/strand-run}
[ -x "${run:-}" ] || run=$here/../strand-run
[ -x "$run" ] || run=$(command -v strand-run)
if [ -z "${STRAND_PLUGIN:-}" ] && [ -n "${STRAND_BUILDDIR:-}" ]; then
    export STRAND_PLUGIN=$STRAND_BUILDDIR/.libs/libuct_strand.so
fi

# strand_mpi_build ME SOURCE: an MPI benchmark built into the new directory
# $tmp (removed at exit, with the /dev/shm fabrics named ME_PID_*), run as
# root where needed; exits 2 when strand-run, mpicc (MPICC) or mpirun is
# missing or the build fails
strand_mpi_build() {
    local mpicc=${MPICC:-mpicc}
    if [ -z "$run" ] || ! command -v "$mpicc" >/dev/null ||
       ! command -v mpirun >/dev/null; then
        echo "$1.sh: needs contrib/strand-run (build first), mpicc and mpirun" >&2
        exit 2
    fi
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064 # the names are fixed now
    trap "rm -rf '$tmp'; rm -f /dev/shm/$1_$$_*" EXIT
    "$mpicc" -O2 -Wall -o "$tmp/$(basename "$2" .c)" "$2" || exit 2
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
}
