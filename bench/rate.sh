#!/usr/bin/env bash
# The small-message rate as a user's OSU-style benchmark sees it (rate.c:
# windows of 64 MPI_Isend, a 4-byte ack, OSU's 10+100 windows), with one
# buffer and with a buffer per message, each MPI bound to cores and not,
# in turn each round (A, B, C, A, B, C). Needs `apt-get install mpich
# openmpi-bin libmpich-dev libopenmpi-dev`; a missing MPI is skipped.
#   bench/rate.sh [build] [rounds] [bytes] [iterations] [trials]
# Prints one line per run: `name buffers median-of-trials first-trial`, then
# per name and buffers the median over rounds of both (M msgs/s).
# BASE=<build dir> adds that build (iris_base, iris_base_bind); ONLY= picks
# names (iris iris_bind mpich mpich_bind openmpi openmpi_bind iris_base
# iris_base_bind).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
bytes=${3:-8}
iterations=${4:-100}
trials=${5:-5}
out=${OUT:-/tmp/iris-rate}
mkdir -p "$out"

ninja -C "$build" bench/rate pmi/mpiexec >/dev/null
declare -A run
run[iris]="$build/pmi/mpiexec --bind-to none -n 2 $build/bench/rate"
run[iris_bind]="$build/pmi/mpiexec --bind-to core -n 2 $build/bench/rate"
names="iris iris_bind"
if [ -n "${BASE:-}" ]; then
  ninja -C "$BASE" bench/rate pmi/mpiexec >/dev/null
  run[iris_base]="$BASE/pmi/mpiexec --bind-to none -n 2 $BASE/bench/rate"
  run[iris_base_bind]="$BASE/pmi/mpiexec --bind-to core -n 2 $BASE/bench/rate"
  names="iris_base iris_base_bind $names"
fi
if command -v mpicc.mpich >/dev/null; then
  mpicc.mpich -O2 -Wno-stringop-overflow -o "$out/rate.mpich" bench/rate.c
  run[mpich]="mpiexec.mpich -n 2 $out/rate.mpich"
  run[mpich_bind]="mpiexec.mpich -bind-to core -n 2 $out/rate.mpich"
  names="$names mpich mpich_bind"
fi
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$out/rate.openmpi" bench/rate.c
  run[openmpi]="mpirun.openmpi --allow-run-as-root --bind-to none -n 2 $out/rate.openmpi"
  run[openmpi_bind]="mpirun.openmpi --allow-run-as-root --bind-to core -n 2 $out/rate.openmpi"
  names="$names openmpi openmpi_bind"
fi
names=${ONLY:-$names}
results="$out/results.txt"
: > "$results"
for round in $(seq 1 "$rounds"); do
  for buffers in single multiple; do
    for name in $names; do
      [ -n "${run[$name]:-}" ] || continue
      file="$out/$name.$buffers.$round.txt"
      # shellcheck disable=SC2086  # the command line is meant to split
      ${run[$name]} "$bytes" "$buffers" "$iterations" 10 "$trials" > "$file" 2>&1 ||
        echo "$name $buffers round $round failed" >&2
      median=$(sed -n 's/^median: \([0-9.]*\).*/\1/p' "$file")
      first=$(sed -n 's/^trial 0: \([0-9.]*\).*/\1/p' "$file")
      echo "$name $buffers ${median:-nan} ${first:-nan}" | tee -a "$results"
    done
  done
done
echo "# medians over $rounds rounds (M msgs/s): name buffers median first-trial"
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, buffers, median, first = line.split()
    runs.setdefault((name, buffers), []).append((float(median), float(first)))
for (name, buffers), values in runs.items():
    print(f"{name:16} {buffers:8} {statistics.median(v[0] for v in values):7.2f} "
          f"{statistics.median(v[1] for v in values):7.2f}")
PY
