#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The software device against bare shared memory, measured in one run:
#   contrib/bench/sim_bench.sh [--iters N] [--rounds R] [--mb M] [--msgs K]
# (make bench-sim builds and runs it). Prints a table and the two targets.
here=$(cd "$(dirname "$0")" && pwd)
bin=${STRAND_BUILDDIR:+$STRAND_BUILDDIR/contrib/bench/sim_bench}
[ -x "${bin:-}" ] || bin=$here/sim_bench
if [ ! -x "$bin" ]; then
    echo "sim_bench.sh: $bin not built: run 'make contrib/bench/sim_bench'" >&2
    exit 2
fi
exec "$bin" "$@"
