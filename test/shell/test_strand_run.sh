#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# strand-run: preloading for plain commands, rank-only preloading and MCA
# defaults for mpirun/oshrun, clear errors.
. "$(dirname "$0")/lib.sh"

STRAND_PLUGIN=/nonexistent/libuct_strand.so strand-run true 2>"$tmpdir/err"
rc=$?
check "missing plugin: exit 127" test "$rc" = 127
check "missing plugin: message names the fix" grep -q "STRAND_PLUGIN" "$tmpdir/err"

strand-run 2>"$tmpdir/usage"; rc=$?
check "no command: usage, exit 2" bash -c "test $rc = 2 && grep -q usage '$tmpdir/usage'"

strand-run sh -c 'echo "LD_PRELOAD=$LD_PRELOAD"; echo "UCX_PLUGIN_PATH=$UCX_PLUGIN_PATH"' >"$tmpdir/env"
if ucx_has_plugin_path; then
    check "plain command: UCX_PLUGIN_PATH names the plugin's directory, no preload" \
        bash -c "grep -q '^UCX_PLUGIN_PATH=$(dirname "$STRAND_PLUGIN")' '$tmpdir/env' && grep -qx 'LD_PRELOAD=' '$tmpdir/env'"
else
    check "plain command gets the plugin preloaded" grep -q "^LD_PRELOAD=.*libuct_strand.so" "$tmpdir/env"
fi

# A stand-in launcher records its environment and arguments.
mkdir -p "$tmpdir/bin"
for l in mpirun oshrun; do
    cat >"$tmpdir/bin/$l" <<'EOS'
#!/bin/sh
echo "LAUNCHER_LD_PRELOAD=${LD_PRELOAD:-}"
for a in "$@"; do echo "ARG=$a"; done
EOS
    chmod +x "$tmpdir/bin/$l"
done
PATH="$tmpdir/bin:$PATH" strand-run mpirun -np 2 ./prog >"$tmpdir/mpi"
check "mpirun: launcher itself is not preloaded" grep -qx "LAUNCHER_LD_PRELOAD=" "$tmpdir/mpi"
if ucx_has_plugin_path; then
    check "mpirun: ranks get -x UCX_PLUGIN_PATH" bash -c "grep -A1 '^ARG=-x\$' '$tmpdir/mpi' | grep -qx 'ARG=UCX_PLUGIN_PATH'"
else
    check "mpirun: ranks get -x LD_PRELOAD=plugin" grep -q "^ARG=LD_PRELOAD=.*libuct_strand.so" "$tmpdir/mpi"
fi
check "mpirun: pml ucx selected" bash -c "grep -A1 '^ARG=pml\$' '$tmpdir/mpi' | grep -q '^ARG=ucx\$' || grep -q 'ARG=pml' '$tmpdir/mpi' && grep -A1 -- '^ARG=--mca\$' '$tmpdir/mpi' | grep -q pml"
check "mpirun: pml_ucx_tls any" bash -c "grep -A1 '^ARG=pml_ucx_tls\$' '$tmpdir/mpi' | grep -q '^ARG=any\$'"
check "mpirun: user arguments kept in order" bash -c "tail -n3 '$tmpdir/mpi' | tr '\n' ' ' | grep -q 'ARG=-np ARG=2 ARG=./prog'"
PATH="$tmpdir/bin:$PATH" strand-run oshrun -np 2 ./prog >"$tmpdir/osh"
check "oshrun: spml ucx selected" bash -c "grep -A1 '^ARG=spml\$' '$tmpdir/osh' | grep -q '^ARG=ucx\$'"
STRAND_RUN_MCA=no PATH="$tmpdir/bin:$PATH" strand-run mpirun -np 2 ./prog >"$tmpdir/nomca"
check "STRAND_RUN_MCA=no leaves MCA alone" bash -c "! grep -q '^ARG=--mca\$' '$tmpdir/nomca'"
