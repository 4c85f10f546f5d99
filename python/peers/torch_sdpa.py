"""PyTorch's CPU scaled_dot_product_attention judged from Python, each kernel forced
(torch.nn.attention.sdpa_kernel): the peer of plugins/torch (the C plugin), through the
Python package (docs/PYTHON.md, "Real peers").

    python python/peers/torch_sdpa.py --tier ci --report DIR   # one report folder per kernel

Each kernel's contract says what the call below can express (no sliding windows, softcap,
per-batch lengths, or bottom-right causal, and dropout draws from PyTorch's own generator, not
the suite's keep-mask) and how it rounds: the math path computes f16 / bf16 in f32; the
flash kernel rounds P (and in its backward P and dS) to the input type and runs an online
softmax over blocks of keys; for a case that asks for the LSE it is called through its ATen op
(`_scaled_dot_product_flash_attention_for_cpu`), which returns it (and kills the process with
SIGFPE on L = 0 or S = 0: empty problems are declined). `grad=True` judges the
backward by torch.autograd.
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import sdpa_cts

# The keys per block of PyTorch's CPU flash kernel (its split size for these shapes; the C
# plugin declares the same).
FLASH_KEY_BLOCK = 512

COMMON = dict(window=False, softcap=False, dropout=False, padded_seqlens=False,
              packed_seqlens=False, causal_bottom_right=False, dtypes=("f64", "f32", "f16", "bf16"))
CONTRACTS = {
    "math": sdpa_cts.Contract(accumulate="f32", **COMMON),
    "flash": sdpa_cts.Contract(accumulate="f32", p_type="input", ds_type="input",
                               online_softmax=True, key_block=FLASH_KEY_BLOCK,
                               different_v_dim=False, last_dim_contiguous=True, lse=True,
                               empty_problems=False, **COMMON),
}
KERNELS = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION}


def sdpa_with(kernel: str):
    """A function of a case calling torch SDPA with `kernel` forced."""

    def torch_sdpa(case):
        x = case.inputs(framework="torch")
        p = case.params
        mask = x.get("mask")
        causal = p["causal"] == "tl"
        if causal and mask is not None:  # PyTorch takes one or the other: fold causal in
            keep = torch.ones(p["len_q"], p["len_kv"], dtype=torch.bool).tril()
            mask = mask & keep if mask.dtype == torch.bool else mask.masked_fill(~keep, -torch.inf)
            causal = False
        if kernel == "flash" and p["want_lse"]:  # the public call returns no LSE: its kernel's op
            if mask is not None and mask.dtype == torch.bool:  # the op takes additive masks only
                mask = torch.zeros(mask.shape, dtype=x["q"].dtype).masked_fill(~mask, -torch.inf)
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                x["q"], x["k"], x["v"], 0.0, causal, attn_mask=mask, scale=p["scale"])
            return {"o": o, "lse": lse}
        with sdpa_kernel([KERNELS[kernel]]):
            return torch.nn.functional.scaled_dot_product_attention(
                x["q"], x["k"], x["v"], attn_mask=mask, is_causal=causal, scale=p["scale"],
                enable_gqa=p["heads_q"] != p["heads_kv"])

    torch_sdpa.__name__ = f"torch_sdpa_{kernel}"
    return torch_sdpa


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="ci")
    ap.add_argument("--report", default="", help="folder: one report folder per kernel in it")
    ap.add_argument("--kernels", default="math,flash")
    ap.add_argument("--grad", action="store_true", help="judge the backward cases' gradients too")
    args = ap.parse_args(argv)
    for kernel in args.kernels.split(","):
        report = f"{args.report}/torch_sdpa_{kernel}" if args.report else None
        s = sdpa_cts.check(sdpa_with(kernel), args.tier, contract=CONTRACTS[kernel], report=report,
                           grad=args.grad)
        print(f"torch_sdpa_{kernel}: {s}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
