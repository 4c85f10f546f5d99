"""What judging from Python costs against the command: `sdpa_cts.check` with the reference
wrapped as the function, against `sdpa-cts run` of the same cases on one backend (docs/PYTHON.md,
"Speed"). Both judge every case against the reference; the Python function's own work (the
reference again, rounded to the case's dtype) is timed apart and subtracted.

    .venv-python/bin/python bench/python_check_overhead.py --tier ci --backend cpu.math

The backward cases are left out of both (the reference as a function has no gradient).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

import sdpa_cts

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

DTYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16}


def packed(o, p):
    """[B, H, L, D] as a packed case's O: [1, H, total rows, D]."""
    cu, lens = p["cu_seqlens_q"], p["seqlens_q"]
    rows = [o[b, :, : lens[b]] for b in range(p["batch"])]
    return np.concatenate(rows, axis=1)[None] if rows else o[:0]


def rounded_reference(case):
    r = sdpa_cts.reference(case)
    p = case.params
    t = DTYPES.get(p["dtype"]) or ml_dtypes.bfloat16
    o = packed(r["o"], p) if p["packed"] else r["o"]
    out = {"o": o.astype(t), "lse": r["lse"].astype(np.float32)}
    if "weights" in r:
        out["weights"] = r["weights"].astype(t)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", default="ci")
    ap.add_argument("--backend", default="cpu.math")
    ap.add_argument("--cli", default="build/release/cli/sdpa-cts")
    # The backward cases are left out of both: the function has no gradient here.
    ap.add_argument("--filter", default=r"^((?!\.bwd).)*$")
    args = ap.parse_args(argv)
    contract = sdpa_cts.Contract(dtypes=("f64", "f32", "f16", "bf16"), lse=True, weights=True)
    cases = sdpa_cts.cases(args.tier, filter=args.filter)
    t0 = time.perf_counter()
    for c in cases:  # the function's own work, timed alone
        if c.params["backward"]:
            continue
        try:
            rounded_reference(c)
        except Exception:
            pass
    fn_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    s = sdpa_cts.check(rounded_reference, args.tier, filter=args.filter, contract=contract,
                       progress=False)
    check_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([args.cli, "run", "--tier", args.tier, "--filter", args.filter, "--backend",
                    args.backend, "--jobs", "1", "--no-report"], check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    cli_seconds = time.perf_counter() - t0
    print(f"cases {len(cases)}: {dict(s.counts)}")
    print(f"check {check_seconds:.1f} s, of which the function {fn_seconds:.1f} s; "
          f"judging {check_seconds - fn_seconds:.1f} s")
    print(f"sdpa-cts run --backend {args.backend} --jobs 1: {cli_seconds:.1f} s")
    print(f"ratio (check minus the function) / run: {(check_seconds - fn_seconds) / cli_seconds:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
