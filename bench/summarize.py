#!/usr/bin/env python3
"""Summarizes bench/compare.sh output: per size, the median over rounds of
each MPI's latency, bandwidth and bidirectional bandwidth, with Iris's ratio
to the best peer (latency: best/iris, so >1 means Iris is faster; bandwidth:
iris/best). With runs of "iris_base" (compare.sh's BASE), a second table
compares Iris with that build (ratio >1: this build is better).
Usage: bench/summarize.py DIR (default /tmp/iris-compare)."""
import glob
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/iris-compare"
names = ["iris", "mpich", "openmpi", "openmpi_nocma", "openmpi_bind"]
data = {}  # name -> size -> list of (lat, bw, bibw)
rate = {}
for name in names + ["iris_base"]:
    for path in sorted(glob.glob(os.path.join(d, f"{name}.*.txt"))):
        for line in open(path):
            parts = line.split()
            if line.startswith("# 8-byte message rate"):
                rate.setdefault(name, []).append(float(parts[-3]))
            elif len(parts) == 4 and parts[0].isdigit():
                data.setdefault(name, {}).setdefault(int(parts[0]), []).append(
                    tuple(float(x) for x in parts[1:]))

def med(name, size, i):
    vals = [v[i] for v in data.get(name, {}).get(size, [])]
    return statistics.median(vals) if vals else None

peers = [n for n in names[1:] if n in data]
print("| bytes | " + " | ".join(f"lat {n} (us)" for n in names if n in data) +
      " | lat ratio | " + " | ".join(f"bw {n}" for n in names if n in data) +
      " | bw ratio | " + " | ".join(f"bibw {n}" for n in names if n in data) + " | bibw ratio |")
print("|---:" * (3 * (len(peers) + 1) + 4) + "|")
for size in sorted(data["iris"]):
    row = [str(size)]
    for i, better_low in ((0, True), (1, False), (2, False)):
        vals = {n: med(n, size, i) for n in names if n in data}
        digits = 3 if i == 0 else 4  # small messages' bandwidth needs the fourth
        row += [f"{vals[n]:.{digits}f}" if vals[n] is not None else "-" for n in names if n in data]
        peer_vals = [vals[n] for n in peers if vals[n]]
        if not peer_vals or not vals["iris"]:
            row.append("-")
        elif better_low:
            row.append(f"{min(peer_vals) / vals['iris']:.2f}")
        else:
            row.append(f"{vals['iris'] / max(peer_vals):.2f}")
    print("| " + " | ".join(row) + " |")
print()
print("8-byte message rate (M msgs/s): " +
      ", ".join(f"{n} {statistics.median(rate[n]):.3f}" for n in names if n in rate))

if "iris_base" in data:
    print()
    print("| bytes | lat base (us) | lat iris (us) | lat ratio | bw base | bw iris | bw ratio | "
          "bibw base | bibw iris | bibw ratio |")
    print("|---:" * 10 + "|")
    for size in sorted(data["iris"]):
        row = [str(size)]
        for i, better_low in ((0, True), (1, False), (2, False)):
            base, new = med("iris_base", size, i), med("iris", size, i)
            digits = 3 if i == 0 else 4
            row += [f"{base:.{digits}f}" if base is not None else "-",
                    f"{new:.{digits}f}" if new is not None else "-"]
            if not base or not new:
                row.append("-")
            else:
                row.append(f"{(base / new) if better_low else (new / base):.3f}")
        print("| " + " | ".join(row) + " |")
    print()
    print("8-byte message rate (M msgs/s): " +
          ", ".join(f"{n} {statistics.median(rate[n]):.3f}" for n in ("iris_base", "iris")
                    if n in rate))
