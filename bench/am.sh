#!/usr/bin/env bash
# One-sided and active messages side by side: builds bench/am.c with Iris's
# mpicc (build/mpicc), MPICH's and Open MPI's and runs them in turn, ROUNDS
# times (A, B, C, A, B, C, ...), 2 ranks on shared memory. Open MPI runs
# unbound (openmpi, --oversubscribe) and without CMA (openmpi_nocma,
# --mca btl_vader_single_copy_mechanism none), as compare.sh runs them.
# Prints a table of medians over rounds and, when Iris ran, its ratios to
# the best peer: latency best/Iris, bandwidth Iris/best (above 1: Iris
# ahead), for Iris's MPI figure and for its MPIX one. Needs `apt-get
# install mpich openmpi-bin libmpich-dev libopenmpi-dev`; a missing MPI is
# skipped.
#   [MPIS="iris mpich openmpi openmpi_nocma"] [OUT=dir] [BUSY=1] [CAP=15] \
#     bench/am.sh [build-dir] [rounds] [trials] [max_bytes]
# Raw runs go to OUT (default /tmp/iris-am) as NAME.ROUND.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
trials=${3:-5}
max=${4:-4194304}
out=${OUT:-/tmp/iris-am}
mkdir -p "$out"
mpis=${MPIS:-iris mpich openmpi openmpi_nocma}
declare -A run
names=""
for m in $mpis; do
  case "$m" in
    iris)
      ninja -C "$build" mpicc pmi/mpiexec device/libiris.so.0.1.0 >/dev/null
      "$build/mpicc" -O2 -o "$out/am.iris" bench/am.c
      run[iris]="$build/pmi/mpiexec -n 2 $out/am.iris"
      ;;
    mpich)
      if ! command -v mpicc.mpich >/dev/null || ! command -v mpiexec.mpich >/dev/null; then continue; fi
      mpicc.mpich -O2 -o "$out/am.mpich" bench/am.c
      run[mpich]="mpiexec.mpich -n 2 $out/am.mpich"
      ;;
    openmpi | openmpi_nocma)
      if ! command -v mpicc.openmpi >/dev/null || ! command -v mpirun.openmpi >/dev/null; then continue; fi
      [ -n "${run[openmpi]:-}" ] || mpicc.openmpi -O2 -o "$out/am.openmpi" bench/am.c
      run[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 $out/am.openmpi"
      run[openmpi_nocma]="mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -n 2 $out/am.openmpi"
      ;;
    *) echo "am.sh: unknown MPI $m" >&2; exit 2 ;;
  esac
  names="$names $m"
done

for round in $(seq 1 "$rounds"); do
  for name in $names; do
    file="$out/$name.$round.txt"
    # shellcheck disable=SC2086  # the command line is meant to split
    ${run[$name]} "$max" "$trials" "${BUSY:-1}" "${CAP:-15}" > "$file" 2>&1 ||
      echo "$name round $round failed" >&2
  done
done

# shellcheck disable=SC2086  # one argument per name
python3 - "$out" $names <<'PY'
import collections, glob, os, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
runs = collections.defaultdict(list)  # (name, api, figure, bytes) -> values over rounds
library = {}
for name in names:
    for path in sorted(glob.glob(os.path.join(out, f"{name}.*.txt"))):
        for line in open(path):
            p = line.split()
            if line.startswith("# ") and name not in library:
                library[name] = line[2:].strip()
            elif len(p) == 4 and p[0] in ("mpi", "mpix"):
                runs[(name, p[0], p[1], int(p[2]))].append(float(p[3]))
for name in names:
    print(f"# {name}: {library.get(name, '(no output)')}")

def med(name, api, figure, size):
    v = runs.get((name, api, figure, size))
    return statistics.median(v) if v else None

# Each row: label, Iris's MPI figure, Iris's MPIX figure, the peers' figure.
rows = [("put_lat_us", "put_lat_us", "put_lat_us", "put_lat_us"),
        ("put_fence_lat_us (peers: put_lat_us)", None, "put_fence_lat_us", "put_lat_us"),
        ("get_lat_us", "get_lat_us", "get_lat_us", "get_lat_us"),
        ("put_bw_MBps", "put_bw_MBps", "put_bw_MBps", "put_bw_MBps"),
        ("get_bw_MBps", "get_bw_MBps", None, "get_bw_MBps")] + [
        (f, f, None, f) for f in ("acc_lat_us", "fop_lat_us", "cas_lat_us", "fence_round_us",
                                  "pscw_round_us")] + [
        ("rtt_us: MPIX am_rtt_us, MPI sendrecv_rtt_us (reference)", "sendrecv_rtt_us", "am_rtt_us",
         "sendrecv_rtt_us")] + [
        (f, f, f, f) for f in ("busy_s", "busy_ratio", "busy_rounds_in_compute", "busy_rounds")] + [
        (f, f, None, f) for f in ("busy_lock_s", "busy_lock_ratio", "busy_lock_rounds_in_compute",
                                  "busy_lock_rounds")]
peers = [n for n in names if n != "iris"]
cols = (["iris (MPI)", "iris (MPIX)"] if "iris" in names else []) + peers
print("| figure | bytes | " + " | ".join(cols) + " | best peer |" +
      (" Iris MPI / best peer | Iris MPIX / best peer |" if "iris" in names else ""))
print("|---|---:" + "|---:" * (len(cols) + 1 + 2 * ("iris" in names)) + "|")
fmt = lambda v: "-" if v is None else (f"{v:.0f}" if v >= 1000 else f"{v:.3g}" if v < 1 else f"{v:.4g}")
sizes = sorted({k[3] for k in runs})
for label, mpi_fig, mpix_fig, peer_fig in rows:
    for size in sizes:
        iris_mpi = med("iris", "mpi", mpi_fig, size) if mpi_fig else None
        iris_mpix = med("iris", "mpix", mpix_fig, size) if mpix_fig else None
        vals = [med(n, "mpi", peer_fig, size) for n in peers]
        if iris_mpi is None and iris_mpix is None and (mpi_fig is None or all(v is None for v in vals)):
            continue  # an MPIX-only row without Iris would repeat the peers' row
        higher = label.endswith("MBps") or "_rounds" in label
        known = [v for v in vals if v is not None]
        best = (max(known) if higher else min(known)) if known else None
        cells = ([fmt(iris_mpi), fmt(iris_mpix)] if "iris" in names else []) + [fmt(v) for v in vals]
        cells.append(fmt(best))
        if "iris" in names:
            for iris in (iris_mpi, iris_mpix):
                ratio = "-"
                if iris and best and "_rounds" not in label:
                    ratio = f"{(iris / best) if higher else (best / iris):.2f}"
                cells.append(ratio)
        print(f"| {label} | {size} | " + " | ".join(cells) + " |")
print(f"\nmedians over rounds; raw runs in {out}")
PY
