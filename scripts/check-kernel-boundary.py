#!/usr/bin/env python3
"""Fails when a kernel reads the harness's problem descriptor instead of the lowered one.

Policy (docs/KERNELS.md, "The kernel boundary"): every backend's supports(), run() and
run_backward() take a LoweredProblem (include/sdpa_cts/params.h plus the lowering's accessors).
The harness keeps `Problem` (core/problem.hpp) and lowers it in one place,
kernels/lowered_problem.{hpp,cpp}. So no other file under kernels/ or plugins/ names the type
`Problem` (as a word: `LoweredProblem` is the boundary itself), in code or in comments, which
would only teach a newcomer the wrong door.
Usage: check-kernel-boundary.py [REPO_ROOT]   (standard library only)
"""
import os
import re
import sys

ROOTS = ("kernels", "plugins")
LOWERING = {os.path.join("kernels", "lowered_problem.hpp"),
            os.path.join("kernels", "lowered_problem.cpp")}
SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")
WORD = re.compile(r"\bProblem\b")


def main(root):
    found = []
    for top in ROOTS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                if rel in LOWERING:
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if WORD.search(line):
                            found.append(f"{rel}:{number}: {line.strip()}")
    if found:
        print("check-kernel-boundary: kernels read the harness's Problem; take the LoweredProblem "
              "(kernels/lowered_problem.hpp) instead:", file=sys.stderr)
        for f in found:
            print("  " + f, file=sys.stderr)
        return 1
    print("check-kernel-boundary: no file under kernels/ or plugins/ outside the lowering names "
          "Problem")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
