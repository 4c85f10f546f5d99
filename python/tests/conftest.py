"""Shared helpers of the Python package's tests: a plain numpy SDPA to judge."""

import numpy as np
import pytest

import sdpa_cts

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


# The contract of numpy_sdpa: no masks, windows, softcap, dropout or lengths.
PLAIN = sdpa_cts.Contract(different_v_dim=True, causal_top_left=True, causal_bottom_right=True,
                          gqa=True, empty_problems=True)

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


def numpy_sdpa_backward(case, d_term=True):
    """dQ, dK, dV of numpy_sdpa's O for the case's dO (f64, then the case's dtype); d_term=False
    plants a backward without the softmax Jacobian's D term."""
    x = case.inputs()
    p = case.params
    q, k, v, d_o = (x[n].astype(np.float64) for n in ("q", "k", "v", "d_out"))
    g = p["heads_q"] // max(p["heads_kv"], 1)
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    scale = p["scale"]
    s = q @ kr.transpose(0, 1, 3, 2) * scale
    L, S = p["len_q"], p["len_kv"]
    if p["causal"] != "none":
        off = S - L if p["causal"] == "br" else 0
        s = np.where(np.arange(S)[None, :] <= np.arange(L)[:, None] + off, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    z = e.sum(axis=-1, keepdims=True)
    pr = e / np.where(z > 0, z, 1.0)
    o = pr @ vr
    dp = d_o @ vr.transpose(0, 1, 3, 2)
    dd = (d_o * o).sum(axis=-1, keepdims=True) if d_term else 0.0
    ds = pr * (dp - dd)
    dq = scale * ds @ kr
    dk = scale * ds.transpose(0, 1, 3, 2) @ q
    dv = pr.transpose(0, 1, 3, 2) @ d_o
    b, hk = dk.shape[0], p["heads_kv"]
    dk = dk.reshape(b, hk, g, S, -1).sum(axis=2)
    dv = dv.reshape(b, hk, g, S, -1).sum(axis=2)
    dtype = {"f32": np.float32, "f16": np.float16, "f64": np.float64}.get(p["dtype"])
    if dtype is None:
        dtype = ml_dtypes.bfloat16
    return {"dq": dq.astype(dtype), "dk": dk.astype(dtype), "dv": dv.astype(dtype)}


BWD_IDS = [
    "b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.bwd.seed1.gen=normal",
    "b1.hq2.hkv2.l17.s17.dqk16.dv16.f32.causal=tl.bwd.seed2.gen=normal",
    "b1.hq2.hkv2.l9.s31.dqk32.dv32.bf16.bwd.seed4.gen=normal",
]
