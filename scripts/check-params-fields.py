#!/usr/bin/env python3
"""Fails when include/sdpa_cts/params.h and the kernels disagree on which fields are live.

params.h marks the slots of coming features "(reserved)" (a group comment that starts with it
covers the fields up to the next blank line; a field's own comment may say it too). Policy:
  * a reserved field is never read by a kernel: no file under kernels/ or plugins/ other than
    the lowering (kernels/lowered_problem.cpp, which sets every reserved field to its neutral
    value) names it;
  * the docs say the same: docs/KERNELS.md's line "Reserved fields of `sdpa_cts_params`
    today: `a`, `b`, ..." names exactly params.h's reserved fields (a field the docs call
    reserved while kernels use it, or the reverse, fails).
Usage: check-params-fields.py [REPO_ROOT]   (standard library only)
"""
import os
import re
import sys

FIELD = re.compile(r"^\s*(?:const\s+)?[A-Za-z_][A-Za-z0-9_]*\s*\*?\s*([a-z_][a-z0-9_]*)\s*(?:\[\d+\])?\s*;")
SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")
LOWERING = os.path.join("kernels", "lowered_problem.cpp")
DOCS_LINE = "Reserved fields of `sdpa_cts_params` today:"


def params_fields(text):
    """[(name, reserved)] of struct sdpa_cts_params, in order."""
    body = text[text.index("typedef struct sdpa_cts_params {"):text.index("} sdpa_cts_params;")]
    fields, group_reserved = [], False
    for line in body.splitlines()[1:]:
        stripped = line.strip()
        if not stripped:
            group_reserved = False
            continue
        if stripped.startswith("/*"):
            group_reserved = stripped.startswith("/* (reserved)")
            continue
        m = FIELD.match(line)
        if m:
            fields.append((m.group(1), group_reserved or "(reserved)" in line))
    return fields


def uses(root, name):
    """Files under kernels/ and plugins/ that read `.name` or `->name`."""
    pattern = re.compile(r"(\.|->)" + re.escape(name) + r"\b")
    found = []
    for top in ("kernels", "plugins"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if not f.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if pattern.search(fh.read()):
                        found.append(os.path.relpath(path, root))
    return found


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    with open(os.path.join(root, "include", "sdpa_cts", "params.h"), encoding="utf-8") as f:
        fields = params_fields(f.read())
    problems = []
    for name, reserved in fields:
        readers = [p for p in uses(root, name) if p != LOWERING]
        if reserved and readers:
            problems.append(f"params.h marks '{name}' reserved, but {', '.join(readers)} use it: "
                            "document its meaning in params.h (and docs/KERNELS.md) or stop using it")
    header_reserved = {n for n, r in fields if r}
    docs = os.path.join(root, "docs", "KERNELS.md")
    with open(docs, encoding="utf-8") as f:
        text = " ".join(f.read().split())
    m = re.search(DOCS_LINE + r"(.*?)\.", text)
    if not m:
        problems.append(f"docs/KERNELS.md has no line '{DOCS_LINE} `field`, ...': add it")
    else:
        docs_reserved = set(re.findall(r"`([a-z_0-9]+)`", m.group(1)))
        for n in sorted(docs_reserved - header_reserved):
            problems.append(f"docs/KERNELS.md calls '{n}' reserved, params.h does not")
        for n in sorted(header_reserved - docs_reserved):
            problems.append(f"params.h marks '{n}' reserved, docs/KERNELS.md's list does not name it")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"params.h: {len(fields)} fields, {len(header_reserved)} reserved "
          f"({', '.join(sorted(header_reserved))}): read by no kernel, named by docs/KERNELS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
