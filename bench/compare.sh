#!/usr/bin/env bash
# Side-by-side: builds bench/pt2pt.c with Iris's, MPICH's and Open MPI's
# mpicc and runs them in turn, ROUNDS times (A, B, C, A, B, C, ...), so that
# all three meet the same machine weather. Needs `apt-get install mpich
# openmpi-bin libmpich-dev libopenmpi-dev`; a missing MPI is skipped.
#   bench/compare.sh [build-dir] [max_bytes] [rounds] [trials]
# Prints each run's table into OUT (default /tmp/iris-compare) and the paths.
# TRANSPORT=tcp compares the TCP paths instead of shared memory: Iris with
# IRIS_SHM=0, MPICH with UCX_TLS=tcp,self, Open MPI with its tcp btl.
# TRANSPORT=ofi compares libfabric's tcp;ofi_rxm provider: Iris's OFI netmod,
# Iris's TCP netmod (the 1.5x bar), and Open MPI's ofi mtl (pml cm); MPICH
# (built on UCX here) has no OFI path and is left out.
# BASE=other-build-dir also runs that build of Iris ("iris_base") in every
# round, for a refactor's before/after in one session (summarize.py prints
# its own table of the two).
# ONLY="iris_base iris" runs just those (a quick A/B without the peers).
# Over shared memory Open MPI also runs without CMA (openmpi_nocma). Open
# MPI runs unbound (openmpi, --oversubscribe) and bound to cores
# (openmpi_bind, as mpirun -n 2 does by default on this machine).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
max=${2:-4194304}
rounds=${3:-2}
trials=${4:-5}
out=${OUT:-/tmp/iris-compare}
mkdir -p "$out"

ninja -C "$build" bench/pt2pt >/dev/null
transport=${TRANSPORT:-shm}
iris_env="" mpich_env="" ompi_args=""
names="iris mpich openmpi"
if [ "$transport" = tcp ]; then
  iris_env="env IRIS_SHM=0" mpich_env="env UCX_TLS=tcp,self" ompi_args="--mca pml ob1 --mca btl self,tcp"
elif [ "$transport" = ofi ]; then
  iris_env="env IRIS_SHM=0 IRIS_NETMOD=ofi IRIS_OFI_PROVIDER=tcp;ofi_rxm"
  ompi_args="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp;ofi_rxm"
  names="iris iris_tcp openmpi"
fi
declare -A run
run[iris]="$iris_env $build/pmi/mpiexec -n 2 $build/bench/pt2pt"
run[iris_tcp]="env IRIS_SHM=0 IRIS_NETMOD=tcp $build/pmi/mpiexec -n 2 $build/bench/pt2pt"
if [ -n "${BASE:-}" ]; then
  ninja -C "$BASE" bench/pt2pt pmi/mpiexec >/dev/null
  names="iris_base $names"
  run[iris_base]="$iris_env $BASE/pmi/mpiexec -n 2 $BASE/bench/pt2pt"
fi
if [ "$transport" != ofi ] && command -v mpicc.mpich >/dev/null; then
  mpicc.mpich -O2 -Wno-stringop-overflow -o "$out/pt2pt.mpich" bench/pt2pt.c
  run[mpich]="$mpich_env mpiexec.mpich -n 2 $out/pt2pt.mpich"
fi
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -Wno-stringop-overflow -o "$out/pt2pt.openmpi" bench/pt2pt.c
  run[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe $ompi_args -n 2 $out/pt2pt.openmpi"
  # --oversubscribe also drops mpirun's binding; a user's `mpirun -n 2`
  # binds each rank to a core, and Open MPI's 8-byte rate is higher so.
  run[openmpi_bind]="mpirun.openmpi --allow-run-as-root --bind-to core $ompi_args -n 2 $out/pt2pt.openmpi"
  names="$names openmpi_bind"
  if [ "$transport" = shm ]; then
    # Without CMA Open MPI copies through its shared-memory FIFO: its
    # stronger configuration here for mid-size streams (peers.md).
    run[openmpi_nocma]="mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -n 2 $out/pt2pt.openmpi"
    names="$names openmpi_nocma"
  fi
fi

names=${ONLY:-$names}
for round in $(seq 1 "$rounds"); do
  for name in $names; do
    [ -n "${run[$name]:-}" ] || continue
    file="$out/$name.$round.txt"
    # shellcheck disable=SC2086  # the command line is meant to split
    ${run[$name]} "$max" "$trials" > "$file" 2>&1 || echo "$name round $round failed" >&2
    echo "$file"
  done
done
