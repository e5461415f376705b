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
