#!/usr/bin/env bash
# MPI_THREAD_MULTIPLE side by side: builds bench/threads_rate.c with Iris's,
# MPICH's and Open MPI's mpicc and runs them in turn, ROUNDS times, 2 ranks
# on shared memory: Iris at SINGLE and at MULTIPLE (one thread's latency),
# then each MPI at MULTIPLE with 1, 2 and 4 threads per rank, and Iris's
# one-thread stream at SERIALIZED (no locking: the reference for one thread
# at MULTIPLE). With BASE=<build of an older tree>, that build's SINGLE and
# MULTIPLE runs too, in the same rounds. Prints each run's lines prefixed by
# the run's name; a missing MPI is skipped. TRANSPORT=tcp runs every MPI
# over TCP on loopback instead (Iris with IRIS_SHM=0 IRIS_NETMOD=tcp, MPICH
# with UCX_TLS=tcp,self, Open MPI with its tcp btl), as compare.sh does.
# BYTES=n (more than 8) streams messages of n bytes instead of 8 and says
# GB/s (threads_rate.c, "bandwidth").
#   [BASE=dir] [TRANSPORT=tcp] [BYTES=n] bench/threads.sh [build-dir] [rounds] [trials]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
trials=${3:-5}
out=${OUT:-/tmp/iris-threads}
mkdir -p "$out"
ninja -C "$build" bench/threads_rate pmi/mpiexec >/dev/null
iris_env="" mpich_env="" ompi_args=""
if [ "${TRANSPORT:-shm}" = tcp ]; then
  iris_env="env IRIS_SHM=0 IRIS_NETMOD=tcp" mpich_env="env UCX_TLS=tcp,self"
  ompi_args="--mca pml ob1 --mca btl self,tcp"
fi
declare -A run
names="iris_single iris iris_serialized"
run[iris_single]="$iris_env $build/pmi/mpiexec -n 2 $build/bench/threads_rate single"
run[iris]="$iris_env $build/pmi/mpiexec -n 2 $build/bench/threads_rate multiple"
run[iris_serialized]="$iris_env $build/pmi/mpiexec -n 2 $build/bench/threads_rate serialized"
if [ -n "${BASE:-}" ]; then
  ninja -C "$BASE" bench/threads_rate pmi/mpiexec >/dev/null
  run[base_single]="$iris_env $BASE/pmi/mpiexec -n 2 $BASE/bench/threads_rate single"
  run[base]="$iris_env $BASE/pmi/mpiexec -n 2 $BASE/bench/threads_rate multiple"
  names="base_single base $names"
fi
if command -v mpicc.mpich >/dev/null; then
  mpicc.mpich -O2 -Wno-stringop-overflow -o "$out/threads_rate.mpich" bench/threads_rate.c -lpthread
  run[mpich]="$mpich_env mpiexec.mpich -n 2 $out/threads_rate.mpich multiple"
  names="$names mpich"
fi
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -Wno-stringop-overflow -o "$out/threads_rate.openmpi" bench/threads_rate.c -lpthread
  run[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe $ompi_args -n 2 $out/threads_rate.openmpi multiple"
  names="$names openmpi"
fi
for round in $(seq 1 "$rounds"); do
  for name in $names; do
    # shellcheck disable=SC2086  # the command line is meant to split
    ${run[$name]} "$trials" ${BYTES:-} 2>&1 | sed "s/^/$name round $round: /" || echo "$name round $round failed"
  done
done
