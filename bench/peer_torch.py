#!/usr/bin/env python3
"""PyTorch's CPU scaled_dot_product_attention on the shape of an sdpa-cts case ID.

Prints one JSON line with the same keys as `sdpa-cts bench` (seconds_best, seconds_median,
gflops_best, kv_gbytes_per_s_best, ...), so bench/compare.sh can put them side by side.

    .venv-bench/bin/python bench/peer_torch.py --case b4.hq16.l2048.s2048.dqk128.f32 \
        --threads 2 --repeat 5 [--sdpa-backend default|flash|math]

Only the fields that define the computed shape are accepted (b, hq, hkv, l, s, dqk, dv, the
dtype, causal, seed, gen, lse, bwd); anything else is an error, since torch would not compute
the same problem. Inputs are torch.randn in the case's dtype, contiguous [B, H, L, D].
With `bwd` it also times the backward alone, as `sdpa-cts bench` does: torch.autograd.grad of
the output with dO (the forward run once, outside the timing, with retain_graph),
backward_seconds_*, backward_gflops_* (2.5 x the forward's FLOPs) and backward_over_forward.
"""
import argparse
import json
import re
import sys
import time

DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16"}
SIZES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2}


def die(message):
    print(f"peer_torch.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_case(case_id):
    shape = {"hkv": None, "dv": None, "causal": None}
    dtype = None
    # Tokens split on '.', a token starting with a digit continues the previous one.
    tokens = []
    for seg in case_id.split("."):
        if seg and seg[0].isdigit() and tokens:
            tokens[-1] += "." + seg
        else:
            tokens.append(seg)
    for tok in tokens:
        if tok in DTYPES:
            dtype = tok
            continue
        m = re.fullmatch(r"(b|hq|hkv|l|s|dqk|dv)(\d+)", tok)
        if m:
            shape[m.group(1)] = int(m.group(2))
            continue
        if tok in ("causal=tl", "causal=br"):
            shape["causal"] = tok.split("=")[1]
            continue
        if re.fullmatch(r"seed\d+|gen=[a-z0-9_]+|lse", tok):
            continue
        if tok == "bwd":
            shape["bwd"] = True
            continue
        die(f"case field '{tok}' is not supported by this peer")
    for k in ("b", "hq", "l", "s", "dqk"):
        if k not in shape:
            die(f"case field '{k}' is missing")
    if dtype is None:
        die("the case has no dtype")
    shape["hkv"] = shape["hkv"] or shape["hq"]
    shape["dv"] = shape["dv"] or shape["dqk"]
    if shape["causal"] == "br" and shape["l"] != shape["s"] and shape["l"] != 1:
        die("torch's is_causal is top-left; causal=br needs L == S")
    return shape, dtype


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--sdpa-backend", default="default", choices=["default", "flash", "math"])
    args = ap.parse_args()
    shape, dt = parse_case(args.case)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, DTYPES[dt])
    B, H, Hk, L, S, D, Dv = (shape[k] for k in ("b", "hq", "hkv", "l", "s", "dqk", "dv"))
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, H, L, D, generator=g).to(dtype)
    k = torch.randn(B, Hk, S, D, generator=g).to(dtype)
    v = torch.randn(B, Hk, S, Dv, generator=g).to(dtype)
    causal = shape["causal"] is not None and L > 1
    kwargs = {"is_causal": causal}
    if Hk != H:
        kwargs["enable_gqa"] = True
    backends = {
        "default": None,
        "flash": [SDPBackend.FLASH_ATTENTION],
        "math": [SDPBackend.MATH],
    }[args.sdpa_backend]

    def call():
        with torch.no_grad():
            if backends is None:
                return F.scaled_dot_product_attention(q, k, v, **kwargs)
            with sdpa_kernel(backends):
                return F.scaled_dot_product_attention(q, k, v, **kwargs)

    def timed(fn):
        """(best, median) seconds of --repeat calls after --warmup untimed ones."""
        for _ in range(args.warmup):
            fn()
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        times.sort()
        return times[0], times[len(times) // 2]

    best, median = timed(call)
    flops = 2.0 * B * H * L * S * (D + Dv) / (2 if causal else 1)
    kv_bytes = float(B * Hk * S * (D + Dv) * SIZES[dt])
    result = {
        "backend": f"torch.{args.sdpa_backend}",
        "torch": torch.__version__,
        "case": args.case,
        "threads": torch.get_num_threads(),
        "repeat": args.repeat,
        "seconds_best": best,
        "seconds_median": median,
        "gflops_best": flops / best * 1e-9,
        "gflops_median": flops / median * 1e-9,
        "kv_bytes": kv_bytes,
        "kv_gbytes_per_s_best": kv_bytes / best * 1e-9,
        "kv_gbytes_per_s_median": kv_bytes / median * 1e-9,
    }
    if shape.get("bwd"):
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
        if backends is None:
            out = F.scaled_dot_product_attention(qg, kg, vg, **kwargs)
        else:
            with sdpa_kernel(backends):
                out = F.scaled_dot_product_attention(qg, kg, vg, **kwargs)
        d_o = torch.randn(out.shape, generator=g).to(dtype)

        def backward():
            torch.autograd.grad(out, (qg, kg, vg), d_o, retain_graph=True)

        bbest, bmedian = timed(backward)
        result.update({
            "backward_seconds_best": bbest,
            "backward_seconds_median": bmedian,
            "backward_gflops_best": 2.5 * flops / bbest * 1e-9,
            "backward_gflops_median": 2.5 * flops / bmedian * 1e-9,
            "backward_over_forward": bbest / best,
        })
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
