"""What the peers in this folder share: their command line, the known-deviations file they are
gated on (the causes: deviations.py).

    python python/peers/<peer>.py [--tier T] [--without-lse] [--report DIR] [--grad]
                                  [--expect FILE] [--write-expect FILE] [--only NAME,...]

--without-lse runs, instead of the tier, its generated cases that ask for the LSE with that
request taken out of their IDs: a public attention call returns no LSE, so it declines those
cases, among them every backward case of the ci tier.

Exit code: 0 when every deviation is a known one (a listed FAIL is XFAIL), 1 when one is new,
2 on a usage error. A listed case that passes is printed ("unexpectedly passing"), as
`sdpa-cts run --expect` does, without failing: a deviation at the edge of its bound may come
and go with the host's instruction set.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence, Tuple

import sdpa_cts
from deviations import group


def expect_lines(name: str, summary: sdpa_cts.Summary) -> list:
    """Known-failures lines (the grammar of `sdpa-cts run --expect`) for every failure and
    every known failure of a check: the function's name, the case ID and the cause."""
    lines = []
    for v in summary.verdicts:
        if v.status in ("PASS", "NOT_SUPPORTED"):
            continue
        status = v.status
        if status == "XFAIL":  # the record keeps the original message
            status = "FAIL"
        cause = group(status, v.message)
        lines.append(f"{name} {v.case_id} {cause.replace('FAIL: ', '')}")
    return lines


def without_lse_ids(tier: str) -> list:
    """The tier's generated cases that ask for the LSE, with that request taken out."""
    return [c.id.replace(".lse.", ".") for c in sdpa_cts.cases(tier)
            if ".lse." in c.id and not c.golden]


def main(functions: Sequence[Tuple[Callable, sdpa_cts.Contract]], description: str,
         argv=None) -> int:
    """Runs `check` on each (function, contract) with the command line above."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--tier", default="ci")
    ap.add_argument("--report", default="", help="folder: one report folder per function in it")
    ap.add_argument("--without-lse", action="store_true",
                    help="the tier's generated cases that ask for the LSE, without that request")
    ap.add_argument("--grad", action="store_true", help="judge the backward cases' gradients too")
    ap.add_argument("--expect", default="", help="the known deviations (sdpa-cts --expect grammar)")
    ap.add_argument("--write-expect", default="",
                    help="write every deviation of this run as a known-deviations file")
    ap.add_argument("--only", default="", help="comma-separated function names to run")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    names = [fn.__name__ for fn, _ in functions]
    if only - set(names):
        ap.error(f"--only: unknown function(s) {sorted(only - set(names))}; known: {names}")
    selection = {"tier": args.tier}
    if args.without_lse:
        selection = {"ids": without_lse_ids(args.tier)}
    status, lines = 0, []
    for fn, contract in functions:
        if only and fn.__name__ not in only:
            continue
        report = f"{args.report}/{fn.__name__}" if args.report else None
        s = sdpa_cts.check(fn, contract=contract, report=report, grad=args.grad,
                           expect=args.expect or None, **selection)
        print(f"{fn.__name__}: {s}", file=sys.stderr)
        if s.failures:
            status = 1
        lines += expect_lines(fn.__name__, s)
    if args.write_expect:
        with open(args.write_expect, "w") as out:
            out.write(f"# Known deviations: {' '.join(sys.argv)}\n")
            out.write("\n".join(lines) + ("\n" if lines else ""))
        print(f"{len(lines)} deviations written to {args.write_expect}", file=sys.stderr)
    return status
