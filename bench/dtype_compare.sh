#!/usr/bin/env bash
# Side-by-side derived-datatype bandwidth: builds bench/dtype_bw.c with
# Iris's, MPICH's and Open MPI's mpicc and runs them in turn, ROUNDS times
# (A, B, C, A, B, C, ...), so that all three meet the same machine weather;
# then prints the median over rounds of each layout's figure, and Iris's
# ratio to the better peer (above 1: Iris ahead), as a Markdown table.
#   bench/dtype_compare.sh [build-dir] [bytes] [rounds] [trials]
# Open MPI runs twice: as installed, and without CMA (openmpi_nocma).
# Runs go to OUT (default /tmp/iris-dtype-compare). A missing MPI is skipped.
# BASE=other-build-dir adds a column "base": Iris from another build (the
# commit before a change), in the same rounds, and the ratio iris/base.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bytes=${2:-33554432}
rounds=${3:-3}
trials=${4:-5}
out=${OUT:-/tmp/iris-dtype-compare}
mkdir -p "$out"
ninja -C "$build" bench/dtype_bw pmi/mpiexec >/dev/null
declare -A run
names="iris"
run[iris]="$build/pmi/mpiexec -n 2 $build/bench/dtype_bw"
if [ -n "${BASE:-}" ]; then
  ninja -C "$BASE" bench/dtype_bw pmi/mpiexec >/dev/null
  run[base]="$BASE/pmi/mpiexec -n 2 $BASE/bench/dtype_bw"
  names="$names base"
fi
if command -v mpicc.mpich >/dev/null; then
  mpicc.mpich -O2 -o "$out/dtype_bw.mpich" bench/dtype_bw.c
  run[mpich]="mpiexec.mpich -n 2 $out/dtype_bw.mpich"
  names="$names mpich"
fi
if command -v mpicc.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$out/dtype_bw.openmpi" bench/dtype_bw.c
  run[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 $out/dtype_bw.openmpi"
  # Without CMA Open MPI copies through its shared-memory FIFO, which is
  # its faster configuration here for mid-size streams (peers.md).
  run[openmpi_nocma]="mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 --mca btl_vader_single_copy_mechanism none $out/dtype_bw.openmpi"
  names="$names openmpi openmpi_nocma"
fi
for round in $(seq 1 "$rounds"); do
  for name in $names; do
    # shellcheck disable=SC2086  # the command line is meant to split
    ${run[$name]} "$bytes" "$trials" 3 > "$out/$name.$round.txt" 2>&1 ||
      echo "$name round $round failed" >&2
  done
done
python3 - "$out" $names <<'PY'
import glob, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
rates = {}  # layout -> name -> [GB/s per round]
order = []
for name in names:
    for path in sorted(glob.glob(f"{out}/{name}.*.txt")):
        for line in open(path):
            parts = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(parts) != 3:
                continue
            if parts[0] not in order:
                order.append(parts[0])
            rates.setdefault(parts[0], {}).setdefault(name, []).append(float(parts[2]))
base = "base" in names
print("| layout | " + " | ".join(f"{n} GB/s" for n in names) + " | ratio |" +
      (" iris/base |" if base else ""))
print("|---|" + "---:|" * (len(names) + 1 + base))
for layout in order:
    med = {n: statistics.median(rates[layout][n]) for n in names if n in rates[layout]}
    peers = [v for n, v in med.items() if n not in ("iris", "base")]
    ratio = f"{med['iris'] / max(peers):.2f}" if "iris" in med and peers else "-"
    cells = " | ".join(f"{med[n]:.3f}" if n in med else "-" for n in names)
    own = ""
    if base:
        own = f" {med['iris'] / med['base']:.2f} |" if "iris" in med and "base" in med else " - |"
    print(f"| {layout} | {cells} | {ratio} |{own}")
PY
