#!/usr/bin/env python3
"""Checks the layering of device/layers.txt: every #include "..." of a file
in a listed folder names a header of the same layer or of one listed before
it, and the includes between files form no cycle. Prints each include that
goes up a layer (file, line, both layers) and each cycle, and exits 1 if
there is any."""
import pathlib
import re
import sys

# --root=DIR checks another tree (layers_test.py). Other arguments are
# ignored: suite.sh's sanitizer passes hand every test a --gtest_filter.
roots = [a[len("--root="):] for a in sys.argv[1:] if a.startswith("--root=")]
root = pathlib.Path(roots[0] if roots else pathlib.Path(__file__).resolve().parent.parent).resolve()
layers = [line.strip() for line in (root / "device" / "layers.txt").read_text().split("\n")
          if line.strip() and not line.startswith("#")]
rank = {name: i for i, name in enumerate(layers)}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
suffixes = (".c", ".h", ".cpp", ".hpp")


def layer_of(path):
    """The longest listed folder holding `path` (relative to the root), or None."""
    best = None
    for name in layers:
        if path == name or path.startswith(name + "/"):
            if best is None or len(name) > len(best):
                best = name
    return best


files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
               if p.suffix in suffixes and p.is_file() and ".git" not in p.parts
               and not p.relative_to(root).parts[0].startswith("build"))
problems = []
edges = {}
for path in files:
    mine = layer_of(path)
    if mine is None:
        continue
    targets = []
    text = (root / path).read_text(errors="replace").split("\n")
    for number, line in enumerate(text, 1):
        found = include.match(line)
        if not found:
            continue
        # Named from the top of the tree, or beside the including file
        # ("types.h" in include/iris/); otherwise generated or a system
        # header ("iris/pmpi.h", "rdma/..."), in no layer.
        target = found.group(1)
        if not (root / target).is_file():
            beside = (root / path).parent / target
            if not beside.is_file():
                continue
            target = beside.resolve().relative_to(root).as_posix()
        targets.append(target)
        theirs = layer_of(target)
        if theirs is not None and rank[theirs] > rank[mine]:
            problems.append(f"{path}:{number}: includes {target}: layer {theirs} is above "
                            f"{mine} (device/layers.txt)")
    edges[path] = targets

# Cycles between files: a depth-first search that reports each back edge once.
state = {}
stack = []


def visit(node):
    state[node] = 1
    stack.append(node)
    for nxt in edges.get(node, []):
        if state.get(nxt) == 1:
            cycle = stack[stack.index(nxt):] + [nxt]
            problems.append("cycle: " + " -> ".join(cycle))
        elif nxt not in state:
            visit(nxt)
    stack.pop()
    state[node] = 2


sys.setrecursionlimit(10000)
for node in sorted(edges):
    if node not in state:
        visit(node)

for line in problems:
    print(f"layers.py: {line}")
print(f"layers.py: {len(files)} files, {sum(len(t) for t in edges.values())} includes checked, "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
