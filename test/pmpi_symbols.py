#!/usr/bin/env python3
"""Every MPI_ function that mpi.h declares has its PMPI_ twin, declared by
mpi.h and exported by libiris at the same address as the MPI_ one.

    pmpi_symbols.py CC LIBIRIS INCLUDEDIR...

mpi.h goes through the C preprocessor (CC -E) and the function
declarations are read from its output; `nm -D LIBIRIS` gives the exports.
"""
import re
import subprocess
import sys


def declared(cc, includes):
    cmd = [cc, "-E", "-P", "-x", "c"] + ["-I" + d for d in includes] + ["-"]
    text = subprocess.run(cmd, input='#include "mpi.h"\n', capture_output=True, text=True,
                          check=True).stdout
    names = set()
    for statement in text.split(";"):
        statement = re.split(r"[{}]", statement)[-1].strip()
        if statement.startswith("typedef"):
            continue
        m = re.match(r"^[A-Za-z_][\w\s\*]*?\b(P?MPI_\w+)\s*\(", statement)
        if m:
            names.add(m.group(1))
    return names


def exported(lib):
    text = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                          check=True).stdout
    symbols = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            symbols[parts[2]] = (parts[0], parts[1])
    return symbols


def main():
    cc, lib, includes = sys.argv[1], sys.argv[2], sys.argv[3:]
    names = declared(cc, includes)
    functions = sorted(n for n in names if n.startswith("MPI_"))
    symbols = exported(lib)
    problems = []
    for name in functions:
        twin = "P" + name
        if twin not in names:
            problems.append("%s: mpi.h declares no %s" % (name, twin))
        if name not in symbols:
            problems.append("%s: declared by mpi.h, not exported by libiris" % name)
        elif twin not in symbols:
            problems.append("%s: libiris exports no %s" % (name, twin))
        elif symbols[twin] != symbols[name] or symbols[name][1] != "T":
            problems.append("%s at %s, %s at %s" % (name, symbols[name], twin, symbols[twin]))
    extra = sorted(n for n in names if n.startswith("PMPI_") and n[1:] not in names)
    problems += ["%s: declared without %s" % (n, n[1:]) for n in extra]
    for p in problems:
        print("pmpi_symbols: " + p)
    if len(functions) < 500:
        print("pmpi_symbols: only %d MPI_ functions found in mpi.h" % len(functions))
        return 1
    if problems:
        return 1
    print("pmpi_symbols: %d MPI_ functions, each with PMPI_ declared and exported at its address"
          % len(functions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
