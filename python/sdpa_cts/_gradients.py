"""Gradients of a Python function by its framework's own autograd, for the backward cases of
``check(fn, grad=...)``: dQ, dK, dV of fn's O for the case's dO."""

from __future__ import annotations

from typing import Any, Callable

from ._frameworks import as_framework, normalize_outputs

# id(case) -> the state of the gradient being taken for it (GradState), read by Case.inputs.
GRAD_STATE: dict = {}


class GradState:
    """What Case.inputs returns for q, k, v while a gradient is taken: PyTorch leaves that
    require grad, or the values JAX traces."""

    def __init__(self) -> None:
        self.framework = None  # the framework fn asked for
        self.leaves: dict = {}  # torch: q, k, v requiring grad
        self.traced: dict = {}  # jax: q, k, v being traced

    def inputs(self, framework: str, converted: dict) -> dict:
        self.framework = self.framework or framework
        if framework == "torch":
            if not self.leaves:
                self.leaves = {n: converted[n].detach().requires_grad_(True)
                               for n in ("q", "k", "v")}
            return self.leaves
        if framework == "jax" and self.traced:
            return self.traced
        return {}


def _o_of(out: Any) -> Any:
    if isinstance(out, dict):
        return out["o"]
    if isinstance(out, tuple):
        return out[0]
    return out


def _torch_grads(fn, case, state: GradState, d_out_np, dtype: str) -> dict:
    import torch

    o = _o_of(fn(case))
    leaves = [state.leaves[n] for n in ("q", "k", "v")]
    d_out = as_framework(d_out_np, "d_out", dtype, "torch")
    grads = torch.autograd.grad(o, leaves, grad_outputs=d_out, allow_unused=True)
    return {n: (g if g is not None else torch.zeros_like(x))
            for n, g, x in zip(("dq", "dk", "dv"), grads, leaves)}


def _jax_grads(fn, case, state: GradState, raw: dict, dtype: str) -> dict:
    import jax

    q, k, v = (as_framework(raw[n], n, dtype, "jax") for n in ("q", "k", "v"))

    def f(q, k, v):
        state.traced = {"q": q, "k": k, "v": v}
        return _o_of(fn(case))

    o, vjp = jax.vjp(f, q, k, v)
    dq, dk, dv = vjp(as_framework(raw["d_out"], "d_out", dtype, "jax").astype(o.dtype))
    return {"dq": dq, "dk": dk, "dv": dv}


def make_grad_fn(fn: Callable, grad: Any) -> Callable:
    """The gradient function of ``fn`` for the engine: case -> {"dq", "dk", "dv"}. ``grad`` may
    also be a function of the case returning them itself (no autograd: an explicit backward)."""
    if callable(grad):
        return lambda case: normalize_outputs(grad(case))
    if grad not in (True, "torch", "jax"):
        raise ValueError(f"grad={grad!r}: True, 'torch', 'jax' or a function of the case")

    def grad_fn(case):
        raw = case._inputs()
        dtype = case.params["dtype"]
        state = GradState()
        GRAD_STATE[id(case)] = state
        try:
            framework = grad if isinstance(grad, str) else None
            if framework in (None, "torch"):
                if framework == "torch":
                    return normalize_outputs(_torch_grads(fn, case, state, raw["d_out"], dtype))
                o = fn(case)  # finds the framework fn asks for
                if state.framework == "torch":
                    state.leaves = {}
                    return normalize_outputs(_torch_grads(fn, case, state, raw["d_out"], dtype))
                if state.framework != "jax":
                    raise ValueError("grad=True: fn never called case.inputs(framework='torch' "
                                     "or 'jax'), so no autograd can differentiate it")
                del o
            state.framework = "jax"
            return normalize_outputs(_jax_grads(fn, case, state, raw, dtype))
        finally:
            GRAD_STATE.pop(id(case), None)

    return grad_fn
