#!/usr/bin/env bash
# Lone messages, each rendezvous engine: pingpong.c (a plain OSU-style
# ping-pong) at 16 KiB-4 MiB with Iris under IRIS_RNDV_ENGINE=auto, cma and
# pipeline, then Open MPI (with and without CMA, and bound to cores) and
# MPICH, ROUNDS times in turn, 2 ranks on shared memory. BASE=<build dir>
# adds that build of Iris (auto) as iris_base. Prints a table of medians:
# latency (us), auto against the best peer, and auto against the faster of
# Iris's two engines in the same round. Needs `apt-get install mpich
# openmpi-bin libmpich-dev libopenmpi-dev`; a missing MPI is skipped.
#   [BASE=dir] [OUT=dir] bench/engines.sh [build-dir] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
out=${OUT:-/tmp/iris-engines}
mkdir -p "$out"
ninja -C "$build" bench/pingpong pmi/mpiexec >/dev/null
declare -A run
names="iris_auto iris_cma iris_pipeline"
for e in auto cma pipeline; do
  run[iris_$e]="env IRIS_RNDV_ENGINE=$e $build/pmi/mpiexec -n 2 $build/bench/pingpong"
done
if [ -n "${BASE:-}" ]; then
  ninja -C "$BASE" mpicc pmi/mpiexec >/dev/null  # an older tree may not have pingpong.c
  "$BASE/mpicc" -O2 -o "$out/pingpong.base" bench/pingpong.c
  names="$names iris_base"
  run[iris_base]="$BASE/pmi/mpiexec -n 2 $out/pingpong.base"
fi
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$out/pingpong.openmpi" bench/pingpong.c
  ompi="mpirun.openmpi --allow-run-as-root --oversubscribe -n 2"
  names="$names openmpi openmpi_bind openmpi_nocma"
  run[openmpi]="$ompi $out/pingpong.openmpi"
  run[openmpi_bind]="mpirun.openmpi --allow-run-as-root --bind-to core -n 2 $out/pingpong.openmpi"
  run[openmpi_nocma]="$ompi --mca btl_vader_single_copy_mechanism none $out/pingpong.openmpi"
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
  mpicc.mpich -O2 -o "$out/pingpong.mpich" bench/pingpong.c
  names="$names mpich"
  run[mpich]="mpiexec.mpich -n 2 $out/pingpong.mpich"
fi
sizes="16384 32768 65536 131072 262144 524288 1048576 2097152 4194304"
: > "$out/runs.txt"
for r in $(seq 1 "$rounds"); do
  for s in $sizes; do
    iterations=$((s >= 1048576 ? 300 : 2000))
    for n in $names; do
      echo "$n $r $(${run[$n]} "$s" "$iterations" 2>/dev/null | tail -1)" >> "$out/runs.txt"
    done
  done
done
python3 - "$out/runs.txt" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4:
        runs[(p[0], int(p[2]))][int(p[1])] = float(p[3])
names = list(dict.fromkeys(n for n, _ in runs))
peers = [n for n in names if not n.startswith("iris")]
print("| bytes | " + " | ".join(names) + " | auto / best peer | auto / faster engine |")
print("|---:" * (len(names) + 3) + "|")
for size in sorted({s for _, s in runs}):
    med = {n: statistics.median(runs[(n, size)].values()) for n in names if (n, size) in runs}
    auto = runs[("iris_auto", size)]
    paired = [auto[r] / min(runs[("iris_cma", size)][r], runs[("iris_pipeline", size)][r])
              for r in auto if r in runs[("iris_cma", size)] and r in runs[("iris_pipeline", size)]]
    best = min((med[n] for n in peers if n in med), default=None)
    cells = [f"{med[n]:.2f}" if n in med else "-" for n in names]
    cells.append(f"{best / med['iris_auto']:.2f}" if best else "-")
    cells.append(f"{statistics.median(paired):.3f}" if paired else "-")
    print(f"| {size} | " + " | ".join(cells) + " |")
print("\nlatency: half the round trip (us), median over rounds; 'auto / best peer' above 1:"
      " Iris ahead; 'auto / faster engine': the same round's faster of cma and pipeline")
PY
