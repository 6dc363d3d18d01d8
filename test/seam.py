#!/usr/bin/env python3
"""Checks the transport seam's naming rule (device/README.md): outside the
transports' own folder (device/transports/), no file in device/ includes a
shm/ or netmods/ header, names the shm:: or netmod:: namespaces, or calls
process_vm_readv. The protocols see only device/core/transport.hpp.
Prints each line that breaks the rule and exits 1."""
import pathlib
import re
import sys

device = pathlib.Path(__file__).resolve().parent.parent / "device"
rule = re.compile(r'#include "(shm|netmods)/|\b(shm|netmod)::|process_vm_readv')
broken = []
for path in sorted(device.rglob("*")):
    if path.suffix not in (".cpp", ".hpp") or path.relative_to(device).parts[0] == "transports":
        continue
    for number, line in enumerate(path.read_text().split("\n"), 1):
        code = line.split("//", 1)[0]
        if rule.search(code):
            broken.append(f"{path.relative_to(device.parent)}:{number}: {line.strip()}")
for line in broken:
    print(f"seam.py: {line}: only device/transports/ may name a transport's internals")
sys.exit(1 if broken else 0)
