#!/usr/bin/env python3
"""Checks that every MPI binding in device/api/ takes the call lock of
MPI_THREAD_MULTIPLE (device/README.md, "Threads"): its body opens with
`const device::api_guard guard;` or (MPI_Send, MPI_Isend, MPI_Recv,
MPI_Irecv and the Wait and Test families: Wait, Test, Waitall, Waitany,
Waitsome, Testall, Testany, Testsome) is wrapped in
`device::api_send_call`, which first tries an eager send under one VC's
lock, matches a receive under its context's lock, or spins on requests'
completion polling through a try-lock, and takes the call lock
otherwise. The
table of unsupported functions needs neither: error_raise takes the lock.
Nor do MPI_Wtime, MPI_Wtick and the counters' MPIX_Counter_get and
MPIX_Counter_set: an atomic load or store, which any thread may make
while another computes or polls (include/iris/am.h).
Prints each binding that does not and exits 1."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "device" / "api"
missing = []
for path in sorted(root.rglob("*.cpp")):
    if path.name == "unsupported.cpp":
        continue
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^(?:int|double) (P?MPIX?_\w+)\(", line)
        if not m or m.group(1) in ("MPI_Wtime", "MPI_Wtick", "MPIX_Counter_get", "MPIX_Counter_set"):
            continue
        j = i
        while not lines[j].rstrip().endswith(("{", ";")):
            j += 1
        if lines[j].rstrip().endswith(";"):
            continue  # a declaration
        first = lines[j + 1].strip()
        if first not in ("const device::api_guard guard;", "return device::api_send_call("):
            missing.append(f"{path.name}:{i + 1}: {m.group(1)}")
for name in missing:
    print(f"takes no call lock: {name}")
sys.exit(1 if missing else 0)
