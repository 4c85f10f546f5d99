#!/usr/bin/env python3
"""Writes a golden file (golden/SCHEMA.md) from numpy arrays: the way to bring results
captured from another framework to sdpa-cts.

    python3 golden/examples/write_from_numpy.py my_golden.h5
    build/release/cli/sdpa-cts golden verify my_golden.h5

Replace `attention()` below by the framework you want to compare (PyTorch, JAX, ...):
keep its inputs as the exact arrays you fed it, in their element type, and store its
outputs as f64. Only h5py and numpy are needed.
"""

import sys

import h5py
import numpy as np


def attention(q, k, v, causal_bottom_right):
    """Stand-in for "another framework": plain softmax attention in float64 with GQA
    (contiguous groups) and a bottom-right causal mask. Returns O and LSE."""
    B, Hq, L, D = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    kk = np.repeat(k, Hq // Hkv, axis=1)
    vv = np.repeat(v, Hq // Hkv, axis=1)
    s = np.einsum("bhld,bhsd->bhls", q, kk) / np.sqrt(D)
    if causal_bottom_right:
        i = np.arange(L)[:, None]
        j = np.arange(S)[None, :]
        s = np.where(j <= i + (S - L), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    z = e.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(z > 0, e / z, 0.0)  # fully masked rows: O = 0
        lse = np.where(z[..., 0] > 0, m[..., 0] + np.log(z[..., 0]), -np.inf)
    return np.einsum("bhls,bhsd->bhld", p, vv), lse


def main(path):
    # The case: its canonical ID names everything the arrays do not (docs/CASE_ID.md).
    # L = 5 > S = 3 with bottom-right causal: the first two query rows see no key.
    case_id = "b1.hq2.hkv1.l5.s3.dqk8.dv4.f16.causal=br.lse.seed7.gen=numpy"
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 2, 5, 8)).astype(np.float16)  # inputs in their element type
    k = rng.standard_normal((1, 1, 3, 8)).astype(np.float16)
    v = rng.standard_normal((1, 1, 3, 4)).astype(np.float16)
    o, lse = attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), True)

    with h5py.File(path, "w") as f:
        f.attrs["schema"] = "sdpa-cts-golden"
        f.attrs["schema_version"] = 1
        f.attrs["semantics_version"] = "1"
        f.attrs["generator"] = "golden/examples/write_from_numpy.py"
        f.attrs["generator_version"] = f"numpy {np.__version__}"
        f.attrs["precision_digits"] = 16  # computed in float64
        g = f.create_group("sdpa").create_group(case_id)
        for name, x in (("q", q), ("k", k), ("v", v)):
            # f16 / bf16: the raw 16-bit patterns plus a dtype attribute. (bf16 from a
            # framework: take the tensor's raw bits, e.g. torch's x.view(torch.int16).)
            d = g.create_dataset(name, data=x.view(np.uint16))
            d.attrs["dtype"] = "f16"
        g.create_dataset("o", data=o.astype(np.float64))
        g.create_dataset("lse", data=lse.astype(np.float64))
        g.attrs["note"] = "written from numpy arrays"
    print(f"{path}: 1 case ({case_id})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "numpy_golden.h5")
