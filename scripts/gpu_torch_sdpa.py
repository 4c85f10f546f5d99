#!/usr/bin/env python3
"""PyTorch's SDPA backends on GPU shapes given as case IDs (scripts/gpu-check.sh).

For each case ID (bB.hqH[.hkvK].lL.sS.dqkD.<dtype>[.causal=tl]) and each of PyTorch's CUDA
SDPA backends (flash, efficient, cuDNN, math), times torch.nn.functional
.scaled_dot_product_attention restricted to that backend with CUDA events: warm-up runs,
then timed runs; prints one JSON line per (case, backend) with the best and median seconds
and GFLOP/s (4*B*H*L*S*D, halved for causal), or the error when the backend declines.
"""
import json
import re
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "torch.flash": SDPBackend.FLASH_ATTENTION,
    "torch.efficient": SDPBackend.EFFICIENT_ATTENTION,
    "torch.cudnn": SDPBackend.CUDNN_ATTENTION,
    "torch.math": SDPBackend.MATH,
}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def parse(case_id):
    fields = case_id.split(".")
    shape = {"hkv": None, "causal": False}
    for f in fields:
        m = re.fullmatch(r"(b|hq|hkv|l|s|dqk)(\d+)", f)
        if m:
            shape[m.group(1)] = int(m.group(2))
        elif f in DTYPES:
            shape["dtype"] = DTYPES[f]
        elif f == "causal=tl":
            shape["causal"] = True
        else:
            raise ValueError(f"{case_id}: field '{f}' is not one this script times")
    if shape["hkv"] is None:
        shape["hkv"] = shape["hq"]
    return shape


def time_one(fn, warmup=2, repeat=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    times.sort()
    return times[0], times[len(times) // 2]


def main(case_ids):
    torch.manual_seed(0)
    for case_id in case_ids:
        s = parse(case_id)
        q = torch.randn(s["b"], s["hq"], s["l"], s["dqk"], device="cuda", dtype=s["dtype"])
        k = torch.randn(s["b"], s["hkv"], s["s"], s["dqk"], device="cuda", dtype=s["dtype"])
        v = torch.randn_like(k)
        flops = 4.0 * s["b"] * s["hq"] * s["l"] * s["s"] * s["dqk"] * (0.5 if s["causal"] else 1.0)
        gqa = s["hkv"] != s["hq"]
        for name, backend in BACKENDS.items():
            row = {"backend": name, "case": case_id, "torch": torch.__version__,
                   "device": torch.cuda.get_device_name()}
            try:
                with sdpa_kernel([backend]):
                    def fn():
                        torch.nn.functional.scaled_dot_product_attention(
                            q, k, v, is_causal=s["causal"], enable_gqa=gqa)
                    best, median = time_one(fn)
                row.update(seconds_best=best, seconds_median=median,
                           gflops_best=flops / best * 1e-9, gflops_median=flops / median * 1e-9)
            except Exception as e:  # a backend that declines the shape says why
                row["error"] = str(e).splitlines()[0][:300]
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
