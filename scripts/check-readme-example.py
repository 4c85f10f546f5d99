#!/usr/bin/env python3
"""Runs the README's Python example (section "From Python") and checks the counts the README
states for it, so that the numbers a newcomer reads are the ones the example gives.

    VENV/bin/python scripts/check-readme-example.py [README.md]

Needs the sdpa_cts package and PyTorch in the running interpreter (scripts/peers-check.sh runs
it after installing them). Exit 1, naming both sentences, when the README's differ from the
run's; the run's sentence is printed either way."""

import contextlib
import io
import os
import re
import sys
import tempfile

SENTENCE = re.compile(r"this passes (\d+) of the ci tier's cases, fails (\d+) and declines "
                      r"the (\d+) its\s+contract leaves out")


def example(readme: str) -> str:
    """The first python code block after the heading "## From Python"."""
    section = readme.split("## From Python", 1)[1]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    if not m:
        raise SystemExit("check-readme-example: no python block under '## From Python'")
    return m.group(1)


def main() -> int:
    path = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    readme = open(path).read()
    stated = SENTENCE.search(readme)
    if not stated:
        print(f"check-readme-example: {path} has no sentence matching '{SENTENCE.pattern}'")
        return 1
    code = example(readme)
    scope: dict = {}
    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        os.chdir(d)  # the example writes its report folder here
        exec(compile(code, "README.md (From Python)", "exec"), scope)
    counts = scope["summary"].counts
    got = (counts.get("PASS", 0), counts.get("FAIL", 0), counts.get("NOT_SUPPORTED", 0))
    run = (f"this passes {got[0]} of the ci tier's cases, fails {got[1]} and declines the "
           f"{got[2]} its contract leaves out")
    print(f"check-readme-example: the example gives: {run} (all statuses: {dict(counts)})")
    if tuple(int(x) for x in stated.groups()) != got:
        print(f"check-readme-example: {path} says: {' '.join(stated.group(0).split())}; "
              "update it (and its date)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
