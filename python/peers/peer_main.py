"""What the peers in this folder share: their command line, the known-deviations file they are
gated on (the causes: deviations.py).

    python python/peers/<peer>.py [--tier T] [--without-lse] [--report DIR] [--grad]
                                  [--expect FILE] [--write-expect FILE] [--only NAME,...]

--without-lse runs, instead of the tier, its generated cases that ask for the LSE with that
request taken out of their IDs: a public attention call returns no LSE, so it declines those
cases, among them every backward case of the ci tier.

Exit code: 0 when every deviation is a known one (a listed FAIL is XFAIL) and every listed one
that applies here appeared, 1 when a deviation is new or a listed one disappeared, 2 on a usage
error. Policy: a gate that only failed on new deviations would let the file grow stale, and a
deviation that comes and goes with the host (a CPU feature, the library's version) would pass
everywhere unnoticed; such an entry is conditioned on the hosts that show it instead
(`[when cpu:amx_bf16] ...`, `[when torch>=2.15] ...`: the grammar of `sdpa-cts run --expect`,
docs/CERTIFICATION.md), so a listed case that passes where its entry applies ("unexpectedly
passing") fails the run. An entry whose condition does not hold here does not apply: its case
is judged as if unlisted.

The conditions are judged with this host's CPU flags and ISA target and the framework's version
that each peer passes (`facts`: {"torch": torch.__version__}, {"jax": jax.__version__}).
--write-expect keeps the entries of --expect whose condition does not hold here (other hosts'
deviations) and the condition of those that do.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional, Sequence, Tuple

import sdpa_cts
from deviations import group


def expect_lines(name: str, summary: sdpa_cts.Summary, entries: Sequence[dict] = ()) -> list:
    """Known-failures lines (the grammar of `sdpa-cts run --expect`) for every failure and
    every known failure of a check: the function's name, the case ID and the cause. A case
    listed by a conditioned entry of `entries` (sdpa_cts.expectations) that applies here keeps
    that entry's line as written, its `[when ...]` with it."""
    conditioned = {(e["backend"], e["cases"]): e["text"] for e in entries
                   if e["condition"] and e["applies"]}
    lines = []
    for v in summary.verdicts:
        if v.status in ("PASS", "NOT_SUPPORTED"):
            continue
        if (name, v.case_id) in conditioned:
            lines.append(conditioned[(name, v.case_id)])
            continue
        status = v.status
        if status == "XFAIL":  # the record keeps the original message
            status = "FAIL"
        cause = group(status, v.message)
        lines.append(f"{name} {v.case_id} {cause.replace('FAIL: ', '')}")
    return lines


def other_hosts_lines(entries: Sequence[dict]) -> list:
    """The lines of the entries whose condition does not hold here: other hosts' deviations,
    which a run here cannot see and --write-expect must not drop."""
    return [e["text"] for e in entries if e["condition"] and not e["applies"]]


def unexpectedly_passing_lines(name: str, summary: sdpa_cts.Summary, expect: str) -> list:
    """One message per listed case that passed where its entry applies (the gate fails)."""
    return [f"unexpectedly passing: {name} {v.case_id} is listed in {expect} ({v.expected}) "
            f"and passed on this host: remove the entry, or condition it on the hosts that "
            f"show the deviation ('[when cpu:FLAG] ...', '[when NAME>=VERSION] ...')"
            for v in summary.unexpectedly_passing]


def without_lse_ids(tier: str) -> list:
    """The tier's generated cases that ask for the LSE, with that request taken out."""
    return [c.id.replace(".lse.", ".") for c in sdpa_cts.cases(tier)
            if ".lse." in c.id and not c.golden]


def main(functions: Sequence[Tuple[Callable, sdpa_cts.Contract]], description: str,
         argv=None, facts: Optional[dict] = None) -> int:
    """Runs `check` on each (function, contract) with the command line above; `facts`: the
    library versions the known deviations' conditions compare with."""
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
    facts = dict(facts or {})
    entries = sdpa_cts.expectations(args.expect, facts) if args.expect else []
    status, lines = 0, []
    for fn, contract in functions:
        if only and fn.__name__ not in only:
            continue
        report = f"{args.report}/{fn.__name__}" if args.report else None
        s = sdpa_cts.check(fn, contract=contract, report=report, grad=args.grad,
                           expect=args.expect or None,
                           expect_facts=facts if args.expect else None, **selection)
        print(f"{fn.__name__}: {s}", file=sys.stderr)
        if s.failures:
            status = 1
        for message in unexpectedly_passing_lines(fn.__name__, s, args.expect):
            print(message, file=sys.stderr)
            status = 1
        lines += expect_lines(fn.__name__, s, entries)
    if args.write_expect:
        kept = other_hosts_lines(entries)
        with open(args.write_expect, "w") as out:
            out.write(f"# Known deviations: {' '.join(sys.argv)}\n")
            out.write("\n".join(lines) + ("\n" if lines else ""))
            if kept:
                out.write("# Kept from --expect: entries whose condition does not hold on the "
                          "host that wrote this file\n")
                out.write("\n".join(kept) + "\n")
        print(f"{len(lines)} deviations written to {args.write_expect}"
              + (f", {len(kept)} entries for other hosts kept" if kept else ""), file=sys.stderr)
    return status
