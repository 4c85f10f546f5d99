"""Shared helpers of the Python package's tests: a plain numpy SDPA to judge."""

import numpy as np
import pytest

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - the pinned test requirements install it
    ml_dtypes = None


def numpy_sdpa(case, scale_factor=1.0):
    """SDPA in f64 numpy for cases without masks, windows, dropout, softcap or lengths; O in
    the case's dtype. scale_factor != 1 plants a wrong scale."""
    x = case.inputs()
    p = case.params
    q, k, v = (x[n].astype(np.float64) for n in ("q", "k", "v"))
    g = p["heads_q"] // max(p["heads_kv"], 1)
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * p["scale"] * scale_factor
    L, S = p["len_q"], p["len_kv"]
    if p["causal"] != "none":
        off = S - L if p["causal"] == "br" else 0
        allowed = np.arange(S)[None, :] <= np.arange(L)[:, None] + off
        s = np.where(allowed, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    z = e.sum(axis=-1, keepdims=True)
    o = (e @ v) / np.where(z > 0, z, 1.0)
    dtype = {"f32": np.float32, "f16": np.float16, "f64": np.float64}.get(p["dtype"])
    if dtype is None:
        dtype = ml_dtypes.bfloat16
    return o.astype(dtype)


PLAIN_IDS = [
    "b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.seed1.gen=normal",
    "b1.hq2.l17.s17.dqk16.f32.causal=tl.seed2.gen=normal",
    "b1.hq2.l9.s31.dqk16.f16.causal=br.seed3.gen=normal",
    "b1.hq2.l9.s31.dqk32.bf16.seed4.gen=normal",
]


@pytest.fixture
def plain_ids():
    return list(PLAIN_IDS)


pytest_plugins = ["pytester"]
