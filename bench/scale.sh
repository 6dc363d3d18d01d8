#!/usr/bin/env bash
# Large nodes: for each rank count N and each MPI, runs test/mpi/allpairs.c
# (every rank sends 8 bytes to every other, every byte checked) and prints
# one line: start-up (slowest MPI_Init), the all-pairs exchange, the job's
# wall time (which includes 3 s of holding after the exchange, so that the
# samplers see the job's steady state), the node's shared memory at its
# peak (/proc/meminfo Shmem minus before the job), the peak sum of the
# ranks' RSS; then a 0<->1 ping-pong
# of 8 bytes while the other N-2 ranks sit in a blocking MPI_Recv.
#   bench/scale.sh [build-dir] [rank counts...]     (default: build 32 64 128)
# BASE=other-build-dir adds that build of Iris ("iris_base"); MPIS picks the
# MPIs (default "iris iris_base mpich openmpi"; a missing one is skipped).
# Oversubscribed on purpose: this measures memory and scaling, not speed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
counts=${*:-32 64 128}
out=${OUT:-/tmp/iris-scale}
mkdir -p "$out"
ninja -C "$build" test/mpi/allpairs pmi/mpiexec >/dev/null

declare -A launch program
launch[iris]="$build/pmi/mpiexec -n"
program[iris]="$build/test/mpi/allpairs"
if [ -n "${BASE:-}" ]; then
  # The baseline may predate allpairs.c: build it against that tree's library.
  cc -std=c11 -O2 -I"$BASE/../include" test/mpi/allpairs.c -L"$BASE/device" -liris \
    -Wl,-rpath,"$(realpath "$BASE/device")" -o "$out/allpairs.base"
  launch[iris_base]="$BASE/pmi/mpiexec -n"
  program[iris_base]="$out/allpairs.base"
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
  mpicc.mpich -O2 -Wno-stringop-overflow test/mpi/allpairs.c -o "$out/allpairs.mpich"
  launch[mpich]="mpiexec.mpich -n"
  program[mpich]="$out/allpairs.mpich"
fi
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  mpicc.openmpi -O2 -Wno-stringop-overflow test/mpi/allpairs.c -o "$out/allpairs.openmpi"
  launch[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe -n"
  program[openmpi]="$out/allpairs.openmpi"
fi

shmem_kb() { awk '/^Shmem:/ {print $2}' /proc/meminfo; }
rss_kb() { ps -C "$1" -o rss= 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

# Runs one job, sampling Shmem and the ranks' RSS every 50 ms; prints
# "wall_s shm_mib rss_mib" after the job's own output.
measure() {
  local name=$1
  shift
  local before peak_shm=0 peak_rss=0 start end
  before=$(shmem_kb)
  start=$(date +%s.%N)
  "$@" >"$out/last.txt" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    local s r
    s=$(($(shmem_kb) - before))
    r=$(rss_kb "$name")
    ((s > peak_shm)) && peak_shm=$s
    ((r > peak_rss)) && peak_rss=$r
    sleep 0.05
  done
  wait "$pid"
  local code=$?
  end=$(date +%s.%N)
  cat "$out/last.txt"
  echo "exit $code"
  awk -v a="$start" -v b="$end" -v s="$peak_shm" -v r="$peak_rss" \
    'BEGIN {printf "measured: wall %.2f s, shm %.1f MiB, rss %.1f MiB\n", b - a, s / 1024, r / 1024}'
}

printf '| mpi | ranks | start-up (s) | all-pairs (s) | wall (s) | node shm (MiB) | sum RSS (MiB) | ping-pong 0-1 8 B (us) |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|\n'
for n in $counts; do
  for mpi in ${MPIS:-iris iris_base mpich openmpi}; do
    [ -n "${program[$mpi]:-}" ] || continue
    exe=$(basename "${program[$mpi]}")
    # shellcheck disable=SC2086
    measure "$exe" timeout 600 ${launch[$mpi]} "$n" "${program[$mpi]}" 1 8 3 >"$out/$mpi-$n.txt"
    # shellcheck disable=SC2086
    timeout 600 ${launch[$mpi]} "$n" "${program[$mpi]}" pingpong 2000 8 >"$out/$mpi-$n-pp.txt" 2>&1
    awk -v mpi="$mpi" -v n="$n" '
      /^allpairs: / { for (i = 1; i <= NF; ++i) { if ($i == "start-up") su = $(i + 1); if ($i == "exchange") ex = $(i + 1) } }
      /^measured: / { wall = $3; shm = $6; rss = $9 }
      /^exit / { code = $2 }
      END { if (code != 0) ex = "failed (exit " code ")"
            printf "| %s | %d | %s | %s | %s | %s | %s |", mpi, n, su, ex, wall, shm, rss }' \
      "$out/$mpi-$n.txt"
    awk '/pingpong:/ { for (i = 1; i <= NF; ++i) if ($i == "us") us = $(i - 1) } END { printf " %s |\n", us == "" ? "-" : us }' \
      "$out/$mpi-$n-pp.txt"
  done
done
echo "raw outputs in $out"
