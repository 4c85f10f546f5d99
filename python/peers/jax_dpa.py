"""JAX's jax.nn.dot_product_attention (XLA on the CPU) judged from Python (docs/PYTHON.md,
"Real peers").

    python python/peers/jax_dpa.py --tier ci --grad --report DIR \
        --expect python/peers/expected/jax_dpa.expect        # options: python/peers/peer_main.py

Its contract: XLA computes the logits and the softmax in f32 and casts P to the input type
before P V (p_type="input"); the call takes GQA, a boolean mask or an additive bias, a causal
mask aligned top-left, and per-batch lengths in the padded layout. It needs Dv = Dqk, has no bottom-right causal
mask, and its windows have no S - L offset, so windows are left out; no softcap, no dropout,
and f64 only with jax_enable_x64 (not set here).
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp

import peer_main
import sdpa_cts

CONTRACT = sdpa_cts.Contract(accumulate="f32", p_type="input", ds_type="input",
                             dtypes=("f32", "f16", "bf16"),
                             bool_mask=True, additive_mask=True, causal_top_left=True,
                             gqa=True, padded_seqlens=True, empty_problems=True)


def jax_dpa(case):
    """jax.nn.dot_product_attention on one case; O back in [B, H, L, D]."""
    x = case.inputs(framework="jax")
    p = case.params
    q, k, v = (jnp.transpose(x[n], (0, 2, 1, 3)) for n in ("q", "k", "v"))  # BHLD -> BLHD
    kwargs = {}
    if p["mask"] == "bool":
        kwargs["mask"] = x["mask"]
    elif p["mask"] == "add":
        kwargs["bias"] = x["mask"]
    if p["seqlens_q"] is not None:
        kwargs["query_seq_lengths"] = jnp.asarray(p["seqlens_q"], dtype=jnp.int32)
    if p["seqlens_kv"] is not None:
        kwargs["key_value_seq_lengths"] = jnp.asarray(p["seqlens_kv"], dtype=jnp.int32)
    o = jax.nn.dot_product_attention(q, k, v, scale=p["scale"], is_causal=p["causal"] == "tl",
                                     implementation="xla", **kwargs)
    return jnp.transpose(o, (0, 2, 1, 3))


def main(argv=None) -> int:
    return peer_main.main([(jax_dpa, CONTRACT)], __doc__.splitlines()[0], argv,
                          facts={"jax": jax.__version__})


if __name__ == "__main__":
    sys.exit(main())
