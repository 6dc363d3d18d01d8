#!/usr/bin/env python3
"""Medians of bench/coll.sh's lines ("name round op ranks bytes mean_us"),
one row per (op, ranks, bytes), and Iris's ratio to the best peer (below 1:
Iris is faster). Rows of OP_overlap (percent of a nonblocking collective
hidden behind computation: higher is better) have no ratio. Reads standard
input or the files named."""
import collections
import fileinput
import statistics

times = collections.defaultdict(list)
names = []
for line in fileinput.input():
    parts = line.split()
    if len(parts) != 6:
        continue
    name, _, op, ranks, size, us = parts
    times[(op, int(ranks), int(size), name)].append(float(us))
    if name not in names:
        names.append(name)

peers = [n for n in names if not n.startswith("iris")]
rows = sorted({(op, r, s) for (op, r, s, _) in times})
print("| op | ranks | bytes | " + " | ".join(names) + " | iris / best peer |")
print("|---|---:|---:|" + "---:|" * len(names) + "---:|")
for op, r, s in rows:
    med = {n: statistics.median(times[(op, r, s, n)]) for n in names if times[(op, r, s, n)]}
    best = min((med[p] for p in peers if p in med), default=None)
    ratio = f"{med['iris'] / best:.2f}" if best and "iris" in med else ""
    if op.endswith("_overlap"):
        ratio = ""
    cells = " | ".join(f"{med[n]:.2f}" if n in med else "" for n in names)
    print(f"| {op} | {r} | {s} | {cells} | {ratio} |")
