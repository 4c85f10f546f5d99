#!/usr/bin/env python3
"""Generates the golden data of sdpa-cts (golden/SCHEMA.md) with mpmath.

    python3 golden/generate.py --set smoke --output golden/data/smoke.h5
    python3 golden/generate.py --set ci --output golden/data/ci.h5 --jobs 2
    python3 golden/generate.py --self-test

Every case's inputs are made here (our own seeded Philox stream), rounded once to the
element type and stored as the very bytes the C++ side reads; the expected outputs are
computed at sdpa_math.PRECISION_DIGITS significant digits and rounded once to binary64.
Regenerating gives byte-identical files (no timestamps, fixed order of everything).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import backward  # noqa: E402
import golden_sets  # noqa: E402
import h5writer  # noqa: E402
import mha  # noqa: E402
import sdpa_math as sm  # noqa: E402
from cases import Case, compute, make_inputs  # noqa: E402

GENERATOR_VERSION = "1.0.0"


def sdpa_group(case: Case):
    """The datasets and attributes of one SDPA case (computed in a worker process)."""
    pr = case.prob
    t = make_inputs(pr, case.flavor)
    o, lse, w = compute(pr, t)
    datasets = []
    for name in ("q", "k", "v"):
        datasets.append((name, sm.to_storage(t[name], pr.dtype), {"dtype": pr.dtype}))
    if pr.mask == "bool":
        datasets.append(("mask", t["mask"].astype("u1"), {"dtype": "bool"}))
    elif pr.mask == "add":
        datasets.append(("mask", sm.to_storage(t["mask"], pr.dtype), {"dtype": pr.dtype}))
    if pr.qlen is not None:
        datasets.append(("seqlens_q", np.array(pr.qlen, dtype="<i4"), {}))
    if pr.kvlen is not None:
        datasets.append(("seqlens_kv", np.array(pr.kvlen, dtype="<i4"), {}))
    if pr.packed:
        datasets.append(("cu_seqlens_q", np.array(pr.cu(True), dtype="<i4"), {}))
        datasets.append(("cu_seqlens_kv", np.array(pr.cu(False), dtype="<i4"), {}))
    datasets.append(("o", o.astype("<f8"), {}))
    datasets.append(("lse", lse.astype("<f8"), {}))
    if w is not None:
        datasets.append(("weights", w.astype("<f8"), {}))
    if pr.bwd:  # schema version 2: dO (in O's view, element type) and the exact gradients
        dq, dk, dv, dbias = backward.compute_backward(pr, t)
        datasets.append(("d_out", sm.to_storage(t["d_out"], pr.dtype), {"dtype": pr.dtype}))
        datasets.append(("dq", dq.astype("<f8"), {}))
        datasets.append(("dk", dk.astype("<f8"), {}))
        datasets.append(("dv", dv.astype("<f8"), {}))
        if dbias is not None:  # d bias: the mask's stored shape
            datasets.append(("dbias", dbias.astype("<f8"), {}))
    attrs = {"seed": np.uint64(pr.seed), "family": case.family, "data": case.flavor.name,
             "note": case.note}
    return case.case_id, datasets, attrs


def mha_group(case):
    return case.name, *mha.generate(case)


def _work(item):
    kind, case = item
    t0 = time.perf_counter()
    out = sdpa_group(case) if kind == "sdpa" else mha_group(case)
    return out, time.perf_counter() - t0


def self_test():
    """Known answers: Philox4x32-10 vectors, the keep-mask threshold, rounding against
    numpy's own conversions, the case-ID number format."""
    for ctr, key, want in sm.PHILOX_KAT:
        got = sm.philox4x32_10(ctr, key)
        assert got == want, f"philox {ctr} {key}: {got} != {want}"
        got_np = sm.philox4x32_10_np(*[np.array([c], np.uint64) for c in ctr], *key)
        assert tuple(int(x[0]) for x in got_np) == want, "vectorized philox"
    assert sm.dropout_threshold(0.0) == 0
    assert sm.dropout_threshold(0.5) == 1 << 31
    assert sm.dropout_threshold(math.nextafter(1.0, 0.0)) == 0xFFFFFFFF
    assert sm.dropout_threshold(2.0 ** -33) == 0 and sm.dropout_threshold(3 * 2.0 ** -33) == 2
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 9, 2000),
                         rng.standard_normal(200) * 1e-6, [65504.0, 65520.0, 65519.99, 2.0 ** -25,
                                                           3 * 2.0 ** -26, 2.0 ** -150]])
    with np.errstate(over="ignore"):
        for x in xs:
            x = float(x)
            assert sm.round_float(x, "f32") == float(np.float32(x)), x
            assert sm.round_float(x, "f16") == float(np.float16(x)), x
    assert sm.round_float(1.0 + 2.0 ** -8, "bf16") == 1.0  # tie to even
    assert sm.round_float(1.0 + 3 * 2.0 ** -9, "bf16") == 1.0 + 2.0 ** -7
    assert sm.round_float(3.4e38, "bf16") == math.inf
    from mpmath import mp, mpf
    with mp.workdps(sm.PRECISION_DIGITS):
        assert sm.round_mpf_to_f64(mpf(1) / 3) == 1 / 3
        assert sm.round_mpf_to_f64(mpf(2) ** -1075) == 0.0  # exact tie to even: 0
        assert sm.round_mpf_to_f64(mpf(2) ** -1075 * 3) == 2.0 ** -1073
        assert sm.round_mpf_to_f64(mpf(2) ** 1024) == math.inf
    from cases import format_real
    for x, s in [(0.125, "0.125"), (1e-05, "1e-05"), (100.0, "100"), (1e20, "1e+20"),
                 (-0.5, "-0.5"), (5.0, "5")]:
        assert format_real(x) == s, (x, format_real(x))
    print("self-test: Philox4x32-10 known answers, keep threshold, rounding, number format: ok")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(golden_sets.SETS), help="which golden set")
    ap.add_argument("--output", help="HDF5 file to write")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--list", action="store_true", help="print the group names and exit")
    ap.add_argument("--self-test", action="store_true", help="run the known-answer tests")
    ap.add_argument("--timing", action="store_true", help="print the slowest cases")
    args = ap.parse_args(argv)
    self_test()
    if args.self_test:
        return 0
    if not args.set:
        ap.error("--set is required")
    sdpa_cases, mha_cases = golden_sets.SETS[args.set]()
    ids = [c.case_id for c in sdpa_cases]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise SystemExit(f"duplicate case IDs: {dup[:5]}")
    if args.list:
        print("\n".join(sorted(ids) + sorted(c.name for c in mha_cases)))
        return 0
    if not args.output:
        ap.error("--output is required")
    t0 = time.perf_counter()
    items = [("sdpa", c) for c in sdpa_cases] + [("mha", c) for c in mha_cases]
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            results = pool.map(_work, items, chunksize=1)
    else:
        results = [_work(it) for it in items]
    sdpa_groups = sorted((r for (r, _), it in zip(results, items) if it[0] == "sdpa"),
                         key=lambda g: g[0])
    mha_groups = sorted((r for (r, _), it in zip(results, items) if it[0] == "mha"),
                        key=lambda g: g[0])
    root_attrs = {
        "schema": "sdpa-cts-golden",
        # Version 2 adds the backward's datasets; a file without a backward case stays
        # version 1, byte for byte what it was (and readable by older loaders).
        "schema_version": np.int64(2 if any(c.prob.bwd for c in sdpa_cases)
                                   else h5writer.SCHEMA_VERSION),
        "semantics_version": h5writer.SEMANTICS_VERSION,
        "generator": "golden/generate.py",
        "generator_version": GENERATOR_VERSION,
        "precision_digits": np.int64(sm.PRECISION_DIGITS),
        "set": args.set,
        "seed": np.uint64(golden_sets.BASE_SEED[args.set]),
    }
    h5writer.write_file(args.output, root_attrs, sdpa_groups, mha_groups)
    dt = time.perf_counter() - t0
    print(f"{args.output}: {len(sdpa_groups)} SDPA + {len(mha_groups)} MHA cases, "
          f"{os.path.getsize(args.output)} bytes, {dt:.1f} s with {args.jobs} job(s)")
    if args.timing:
        slow = sorted(((t, it[1]) for (_, t), it in zip(results, items)), key=lambda x: -x[0])
        for t, c in slow[:10]:
            print(f"  {t:7.2f} s  {getattr(c, 'case_id', getattr(c, 'name', '?'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
