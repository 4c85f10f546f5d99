#!/usr/bin/env python3
"""Fails when the top-level folders of the product include each other in a cycle.

Policy: every top-level folder is a library (or a set of libraries) and data flows one
way. An edge A -> B exists when a file under A/ has `#include "B/..."`. The check fails
  * on any cycle in that graph (printed with one file per edge, so the fix is findable);
  * when a product folder includes from tests/ (tests depend on the product, never the
    reverse);
  * when a folder named in FORBIDDEN includes from the folder it must not know (the judge
    gives verdicts and the reports write them: neither includes the other, both use
    core/verdict.hpp).
Usage: check-include-cycles.py [REPO_ROOT] [--print-graph]
Standard library only, so .ci/run can call it before anything is installed.
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
SKIP_DIRS = {".git", "build", "out", "third_party", "_deps"}
# (folder, folder it must not include from, why): sub-folder rules the folder graph cannot see.
FORBIDDEN = [
    ("conformance/judge", "reports", "the judge's verdicts are core/verdict.hpp; records are the engine's"),
]


def project_includes(root, folder):
    """Yields (file path from root, line number, included top-level folder) for every
    `#include "X/..."` in the source files below `folder`."""
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m:
                        yield os.path.relpath(path, root), n, m.group(1)


def forbidden_includes(root):
    """Yields one problem per file of a FORBIDDEN folder that includes what it must not."""
    for folder, target, why in FORBIDDEN:
        for where, n, included in project_includes(root, folder):
            if included == target:
                yield f"{where}:{n} includes from {target}/ ({why})"


def top_level_folders(root):
    return sorted(
        d
        for d in os.listdir(root)
        if os.path.isdir(os.path.join(root, d)) and not d.startswith(".") and d not in SKIP_DIRS
    )


def include_edges(root):
    """Returns {(from, to): first file that makes the edge}."""
    folders = set(top_level_folders(root))
    edges = {}
    for top in sorted(folders):
        for where, _, included in project_includes(root, top):
            if included in folders and included != top:
                edges.setdefault((top, included), where)
    return edges


def find_cycles(edges):
    """Strongly connected components with more than one folder (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sccs


def main(argv):
    root = next((a for a in argv[1:] if not a.startswith("--")), ".")
    edges = include_edges(root)
    if "--print-graph" in argv:
        for (a, b), where in sorted(edges.items()):
            print(f"{a} -> {b}   ({where})")
    problems = []
    for (a, b), where in sorted(edges.items()):
        if b == "tests" and a != "tests":
            problems.append(f"{a}/ includes from tests/ ({where}); the product may not depend on its tests")
    problems.extend(forbidden_includes(root))
    for scc in find_cycles(edges):
        lines = [f"include cycle between top-level folders: {', '.join(scc)}"]
        for (a, b), where in sorted(edges.items()):
            if a in scc and b in scc:
                lines.append(f"  {a} -> {b}   e.g. {where}")
        problems.append("\n".join(lines))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"include graph: {len(edges)} edges between top-level folders, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
