"""Arrays between sdpa_cts and the frameworks: the case's numpy views as numpy, PyTorch or JAX
arrays, and a function's outputs in a form the engine reads (DLPack or the buffer protocol)."""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # bf16 then stays as its uint16 bits in numpy
    _ml_dtypes = None


def as_framework(a: np.ndarray, name: str, dtype: str, framework: str) -> Any:
    """The input ``a`` (a read-only numpy view; bf16 as uint16 bits, a bool mask as uint8) in
    ``framework``."""
    is_bool_mask = name == "mask" and a.dtype == np.uint8
    if framework == "numpy":
        if is_bool_mask:
            return a.view(np.bool_)
        if dtype == "bf16" and _ml_dtypes is not None:
            return a.view(_ml_dtypes.bfloat16)
        return a
    if framework == "torch":
        import warnings

        import torch

        with warnings.catch_warnings():  # the judge's buffers are read-only to the function
            warnings.simplefilter("ignore", UserWarning)
            t = torch.from_numpy(a.view(np.bool_) if is_bool_mask else a)
        if dtype == "bf16" and not is_bool_mask:
            t = t.view(torch.bfloat16)
        return t
    if framework == "jax":
        import jax.numpy as jnp

        if is_bool_mask:
            return jnp.asarray(a.view(np.bool_))
        if dtype == "bf16":
            if _ml_dtypes is None:
                raise ImportError("bf16 inputs for JAX need ml_dtypes")
            return jnp.asarray(a.view(_ml_dtypes.bfloat16))
        return jnp.asarray(a)
    raise ValueError(f"unknown framework {framework!r} (numpy, torch, jax)")


def _one(x: Any) -> Any:
    if x is None:
        return None
    if hasattr(x, "detach") and hasattr(x, "requires_grad"):  # torch
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        return x
    if isinstance(x, np.ndarray):
        if x.dtype.name == "bfloat16":
            return x.view(np.uint16)
        return x
    if type(x).__module__.startswith("jax"):
        a = np.asarray(x)
        return a.view(np.uint16) if a.dtype.name == "bfloat16" else a
    return x


def normalize_outputs(out: Any) -> Any:
    """A function's result with every array in a form the engine reads."""
    if isinstance(out, dict):
        return {k: _one(v) for k, v in out.items()}
    if isinstance(out, tuple):
        return tuple(_one(v) for v in out)
    return _one(out)
