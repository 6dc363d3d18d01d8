#!/usr/bin/env bash
# Collectives side by side: bench/coll.c (OSU-style, see its header) built
# with Iris's, MPICH's and Open MPI's mpicc, every op at every rank count in
# turn (iris, mpich, openmpi, iris, ...) ROUNDS times, so that all meet the
# same machine weather. A missing MPI is skipped.
#   bench/coll.sh [build-dir] [rounds] [ranks...]
# Env: OPS (default "allreduce bcast reduce allgather alltoall barrier";
# also gather gatherv scatter scatterv allgatherv, and iallreduce ireduce ibcast ibarrier iallgather
# iallgatherv ialltoall igather iscatter with their overlap),
# MAX (largest size, default 1 MiB), ITERS (calls per small size, 1000),
# BASE=other-build-dir adds that build of Iris (iris_base), ONLY="iris mpich"
# runs just those. Prints "name round op ranks bytes mean_us" lines; pipe
# them to bench/coll_summary.py for medians and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
shift $(($# > 2 ? 2 : $#))
ranks=${*:-2 4 8}
ops=${OPS:-allreduce bcast reduce allgather alltoall barrier}
max=${MAX:-1048576}
iters=${ITERS:-1000}
out=${OUT:-/tmp/iris-coll}
mkdir -p "$out"

ninja -C "$build" bench/coll pmi/mpiexec >/dev/null
names="iris"
declare -A run
run[iris]="$build/pmi/mpiexec -n"
declare -A prog
prog[iris]=$build/bench/coll
# MESSAGES=1 adds Iris with IRIS_COLL_SHM=0 (iris_msgs): every collective
# through messages, as before the node segment.
if [ -n "${MESSAGES:-}" ]; then
  names="$names iris_msgs"
  run[iris_msgs]="env IRIS_COLL_SHM=0 $build/pmi/mpiexec -n"
  prog[iris_msgs]=$build/bench/coll
fi
# ASYNC=1 adds Iris with its progress thread on (iris_async,
# IRIS_ASYNC_PROGRESS=on): nonblocking collectives advance while the
# program computes.
if [ -n "${ASYNC:-}" ]; then
  names="$names iris_async"
  run[iris_async]="env IRIS_ASYNC_PROGRESS=on $build/pmi/mpiexec -n"
  prog[iris_async]=$build/bench/coll
fi
if [ -n "${BASE:-}" ]; then
  ninja -C "$BASE" bench/coll pmi/mpiexec >/dev/null
  names="iris_base $names"
  run[iris_base]="$BASE/pmi/mpiexec -n"
  prog[iris_base]=$BASE/bench/coll
fi
if command -v mpicc.mpich >/dev/null; then
  mpicc.mpich -O2 -o "$out/coll.mpich" bench/coll.c
  run[mpich]="mpiexec.mpich -n"
  prog[mpich]=$out/coll.mpich
  names="$names mpich"
fi
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$out/coll.openmpi" bench/coll.c
  # More ranks than cores: Open MPI needs --oversubscribe (which also drops
  # its binding); its tuned collectives over vader are its defaults.
  run[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe -n"
  prog[openmpi]=$out/coll.openmpi
  names="$names openmpi"
fi
names=${ONLY:-$names}
for round in $(seq 1 "$rounds"); do
  for n in $ranks; do
    for op in $ops; do
      for name in $names; do
        # shellcheck disable=SC2086  # the command line is meant to split
        timeout 600 ${run[$name]} "$n" "${prog[$name]}" "$op" "$max" "$iters" 2>/dev/null |
          sed "s/^/$name $round /" || echo "$name $round $op $n failed" >&2
      done
    done
  done
done
