"""PyTorch's CPU scaled_dot_product_attention judged from Python: the peer of plugins/torch
(the C plugin), with the same three functions, through the Python package (docs/PYTHON.md,
"Real peers").

    python python/peers/torch_sdpa.py --tier ci --grad --report DIR \\
        --expect python/peers/expected/torch_sdpa.expect     # options: python/peers/peer_main.py

- `torch_sdpa`: the public op as a user calls it (PyTorch picks the kernel);
- `torch_sdpa_flash`: its CPU flash kernel forced (`sdpa_kernel`); for a case that asks for
  the LSE it is called through its ATen op (`_scaled_dot_product_flash_attention_for_cpu`),
  which returns it (and kills the process with SIGFPE on L = 0 or S = 0: empty problems are
  declined);
- `torch_sdpa_math`: the math path forced.

Each contract says what the call can express (no sliding windows, softcap or per-batch lengths,
and dropout draws from PyTorch's own generator, not the suite's keep-mask) and how it rounds:
the math path computes f16 / bf16 in f32; the flash kernel rounds P (and in its backward P and
dS) to the input type and runs an online softmax over blocks of keys, and the public op's
contract is the flash kernel's, which also bounds the math path it takes for Dv != Dqk and
empty problems. A causal mask is PyTorch's `is_causal` where that is the same function
(top-left, or bottom-right with L = S, and no mask), else one explicit mask, as in the C
plugin. `--grad` judges the backward by torch.autograd.
"""

from __future__ import annotations

import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import peer_main
import sdpa_cts

# The keys per block of PyTorch's CPU flash kernel (its split size for these shapes; the C
# plugin declares the same).
FLASH_KEY_BLOCK = 512

# What every path takes (each feature is declared; what is left out is not taken): masks,
# both causal alignments, GQA; no windows, softcap, dropout or per-batch lengths.
COMMON = dict(bool_mask=True, additive_mask=True, causal_top_left=True, causal_bottom_right=True,
              gqa=True, dtypes=("f64", "f32", "f16", "bf16"))
FLASH_ROUNDING = dict(accumulate="f32", p_type="input", ds_type="input", online_softmax=True,
                      key_block=FLASH_KEY_BLOCK)
CONTRACTS = {
    "torch_sdpa": sdpa_cts.Contract(**FLASH_ROUNDING, different_v_dim=True, empty_problems=True,
                                    **COMMON),
    "torch_sdpa_flash": sdpa_cts.Contract(**FLASH_ROUNDING, last_dim_contiguous=True, lse=True,
                                          **COMMON),
    "torch_sdpa_math": sdpa_cts.Contract(accumulate="f32", different_v_dim=True,
                                         empty_problems=True, **COMMON),
}
FORCED = {"torch_sdpa": None, "torch_sdpa_flash": SDPBackend.FLASH_ATTENTION,
          "torch_sdpa_math": SDPBackend.MATH}


def mask_args(case, x):
    """(attn_mask, is_causal) for PyTorch: is_causal alone where it is the same function,
    else the case's mask with the causal rule folded in (boolean, or additive in the dtype)."""
    p = case.params
    mask = x.get("mask")
    L, S = p["len_q"], p["len_kv"]
    if p["causal"] == "none":
        return mask, False
    if (p["causal"] == "tl" or L == S) and mask is None:
        return None, True
    offset = S - L if p["causal"] == "br" else 0  # attend iff j <= i + offset
    allowed = torch.ones(L, S, dtype=torch.bool).tril(offset)
    if mask is None:
        return allowed, False
    if mask.dtype == torch.bool:
        return mask & allowed, False
    return mask.masked_fill(~allowed, -torch.inf), False


def sdpa_as(name: str):
    """A function of a case calling torch SDPA as `name` says."""

    def torch_sdpa(case):
        x = case.inputs(framework="torch")
        p = case.params
        mask, causal = mask_args(case, x)
        if name == "torch_sdpa_flash" and p["want_lse"]:  # the public call returns no LSE
            if mask is not None and mask.dtype == torch.bool:  # the op takes additive masks only
                mask = torch.zeros(mask.shape, dtype=x["q"].dtype).masked_fill(~mask, -torch.inf)
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                x["q"], x["k"], x["v"], 0.0, causal, attn_mask=mask, scale=p["scale"])
            return {"o": o, "lse": lse}

        def call():
            return torch.nn.functional.scaled_dot_product_attention(
                x["q"], x["k"], x["v"], attn_mask=mask, is_causal=causal, scale=p["scale"],
                enable_gqa=p["heads_q"] != p["heads_kv"])

        if FORCED[name] is None:
            return call()
        with sdpa_kernel([FORCED[name]]):
            return call()

    torch_sdpa.__name__ = name
    return torch_sdpa


def main(argv=None) -> int:
    return peer_main.main([(sdpa_as(n), CONTRACTS[n]) for n in CONTRACTS],
                          __doc__.splitlines()[0], argv, facts={"torch": torch.__version__})


if __name__ == "__main__":
    sys.exit(main())
