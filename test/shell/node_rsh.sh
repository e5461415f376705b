#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# An rsh agent for mpirun (plm_rsh_agent) whose "hosts" are namespaces of
# this machine: "node_rsh.sh HOST COMMAND..." runs COMMAND (a shell command
# line, as rsh takes it) in a new mount and UTS namespace whose hostname is
# HOST and whose /dev/shm is a tmpfs of its own, as a container or a pod on
# one host has. Every process mpirun starts there (its orted and the ranks)
# shares that /dev/shm; the namespace goes with its last process. The
# network is this machine's: mpirun and the orteds talk over loopback.
host=${1:?host}
shift
exec unshare --mount --uts --propagation private sh -c \
    "mount -t tmpfs tmpfs /dev/shm && hostname \"\$1\" && shift && exec sh -c \"\$*\"" \
    node_rsh "$host" "$@"
