#!/usr/bin/env python3
"""The err/tol of gradients per dtype and tensor (p50 / max over cases) from a run's results:
   scripts/gradient-ratios.py REPORT_DIR [BACKEND]
prints the Markdown table of docs/CONFORMANCE.md ("The gradients' bound")."""
import json
import sys
from collections import defaultdict
from pathlib import Path

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
backend = sys.argv[2] if len(sys.argv) == 3 else None
ratios = defaultdict(lambda: defaultdict(list))
for line in (Path(sys.argv[1]) / "results.jsonl").read_text().splitlines():
    r = json.loads(line)
    t = r.get("tensor_ratios", {})
    if (backend and r["backend"] != backend) or "dq" not in t:
        continue
    dtype = next(f.split("=", 1)[1] for f in r["features"] if f.startswith("dtype="))
    for name in ("dq", "dk", "dv"):
        ratios[dtype][name].append(float(t[name]))  # "inf", "nan" are strings
if not ratios:
    sys.exit(f"{sys.argv[1]}: no judged backward results")
print("| dtype | results | dq p50 / max | dk p50 / max | dv p50 / max |")
print("|---|---|---|---|---|")
for dtype in ("f64", "f32", "bf16", "f16"):
    if dtype not in ratios:
        continue
    cells = []
    for name in ("dq", "dk", "dv"):
        v = sorted(ratios[dtype][name])
        cells.append(f"{v[len(v) // 2]:.2g} / {v[-1]:.2g}")
    print(f"| {dtype} | {len(ratios[dtype]['dq'])} | " + " | ".join(cells) + " |")
