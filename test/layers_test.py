#!/usr/bin/env python3
"""layers.py's own test: on a small tree with one include that goes up a
layer and one cycle it must fail and name both; on the same tree mended it
must pass."""
import pathlib
import subprocess
import sys
import tempfile

checker = pathlib.Path(__file__).resolve().parent / "layers.py"


def write(root, path, text):
    f = root / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)


def run(root):
    # An argument it must ignore comes first, as suite.sh's sanitizer passes add one.
    done = subprocess.run([sys.executable, str(checker), "--gtest_filter=-X.*", f"--root={root}"],
                          capture_output=True, text=True)
    return done.returncode, done.stdout


failures = []
with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    write(root, "device/layers.txt", "# lowest first\ndevice/low\ndevice/high\n")
    write(root, "device/low/a.hpp", '#pragma once\n#include "device/low/b.hpp"\n')
    write(root, "device/low/b.hpp", '#pragma once\n\n#include "device/high/c.hpp"\n')
    write(root, "device/high/c.hpp", '#pragma once\n#include "device/high/d.hpp"\n')
    write(root, "device/high/d.hpp", '#pragma once\n#include "device/high/c.hpp"\n')
    write(root, "test/t.cpp", '#include "device/high/c.hpp"\n')  # not a layer: anything goes
    write(root, "device/low/e.hpp", '#pragma once\n#include "../high/f.hpp"\n')  # relative, upward
    write(root, "device/high/f.hpp", "#pragma once\n")
    code, out = run(root)
    if code != 1:
        failures.append(f"an upward include and a cycle: exit {code}, not 1")
    if "device/low/b.hpp:3: includes device/high/c.hpp" not in out:
        failures.append("the upward include is not named with its file and line")
    if "cycle: device/high/c.hpp -> device/high/d.hpp -> device/high/c.hpp" not in out:
        failures.append("the cycle is not named")
    if "device/low/e.hpp:2: includes device/high/f.hpp" not in out:
        failures.append("an upward include named relative to the file is not caught")
    if "test/t.cpp" in out:
        failures.append("a file outside the layers was judged")
    write(root, "device/low/b.hpp", "#pragma once\n")
    write(root, "device/high/d.hpp", "#pragma once\n")
    write(root, "device/low/e.hpp", "#pragma once\n")
    code, out = run(root)
    if code != 0:
        failures.append(f"the mended tree: exit {code}:\n{out}")

for f in failures:
    print(f"layers_test.py: {f}")
print(f"layers_test.py: {6 - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
