#!/usr/bin/env python3
"""Converts ONNX's own Attention node tests (onnx/backend/test/case/node/attention.py) into
golden files (golden/SCHEMA.md), so that sdpa-cts judges ONNX's reference results:

    python3 -m venv .venv-onnx
    .venv-onnx/bin/pip install -r golden/examples/requirements-onnx.txt
    .venv-onnx/bin/python golden/examples/from_onnx_node_tests.py OUTDIR
    build/release/cli/sdpa-cts golden verify OUTDIR/onnx_f32.h5 OUTDIR/onnx_f16.h5

ONNX does not ship the binary test data in its wheel, so the cases are collected by importing
the test module with `expect` replaced by a collector and calling every `export_*` method
(np.random is seeded with the case's number first; functions that seed themselves keep their
own seed). Each case that the sdpa-cts contract can express becomes one group
`/sdpa/<case ID>` with `gen=onnx` and `seed<n>`, n = the 1-based position of the export
function in the class. One file per element type, since a file carries one
`precision_digits`: onnx_f32.h5 (7), onnx_f16.h5 (3), onnx_bf16.h5 (3).

Mapping (docs/SEMANTICS.md against the ONNX Attention spec, opsets 23-25, and
onnx/reference/ops/op_attention.py):
- 4-D Q/K/V [B, H, L, D] as they are; 3-D [B, L, H*D] with q_num_heads / kv_num_heads is
  the reshape [B, L, H, D] transposed, i.e. exactly `lay=bshd` (the file stores the logical
  [B, H, L, D] tensors; Y [B, L, H*Dv] becomes o [B, H, L, Dv]).
- GQA: ONNX repeats each KV head contiguously (np.repeat), as sdpa-cts (hk = hq / (Hq/Hkv)).
- scale: the node's attribute (a float32), widened to f64. ONNX multiplies Q and K by
  sqrt(scale) rounded to the input type: a rounding of the capture, not a semantic change.
- softcap c > 0: c * tanh(s / c) before the mask, as in SEMANTICS.md.
- is_causal: ONNX's mask is "j <= i + offset", offset = past length (past_key), nonpad_kv_seqlen[b]
  - L (external cache), else 0. So without a cache it is TOP-LEFT even when L != S
  (causal=tl); with nonpad_kv_seqlen it is bottom-right on the valid length
  (causal=br + kvlen=); with past_key it is bottom-right iff the new K has L rows, else the
  band j <= i + offset is written as a window (win=-1_<offset>_tl).
- left/right_window_size (opset 25): the same offset, so win=<l>_<r>_tl / _br.
- past_key / past_value: ONNX concatenates them in front of K / V (present = concat);
  attention then runs on the concatenation, so the case is the one with the longer K / V
  (the present_key / present_value outputs are that concatenation and are not judged).
- nonpad_kv_seqlen: keys j >= nonpad[b] are masked with -inf in ONNX; in sdpa-cts they do
  not exist (kvlen=). Same output for the finite data of these tests.
- attn_mask: bool (True = attend) -> mask=bool (uint8), float -> mask=add (element type).
  A mask shorter than S in its last dimension is padded (False / -inf), as ONNX does.
  ONNX broadcasting is numpy's, right-aligned (a rank-3 mask is [H, L, S]); every
  missing dimension and every dimension of size 1 against a larger one is a broadcast
  flag (mbc=).
- qk_matmul_output_mode 3 (softmax probabilities, fully masked rows 0) is sdpa-cts's
  attention weights: `attnw` and dataset `weights`. Modes 0-2 (logits before softmax) have
  no counterpart: that output is dropped and Y alone is judged.
- softmax_precision only changes the precision ONNX computes in: ignored.
- lse: the schema requires it and ONNX does not output it, so it is COMPUTED HERE in float64
  from the stored inputs with docs/SEMANTICS.md's function (not captured from ONNX). The
  IDs do not ask for it (no `lse`), so a backend is never asked to produce it; only
  `golden verify` (the reference) compares it.

Every ONNX test is listed at the end with what became of it. A sanity check recomputes O in
float64 and prints the largest deviation of ONNX's Y from it (relative to sum_j P_j |V_j|).
"""

import inspect
import os
import sys
from collections import OrderedDict

import h5py
import ml_dtypes
import numpy as np
import onnx
import onnx.backend.test.case.node.attention as onnx_attention
from onnx import helper

# numpy dtype -> (sdpa-cts name, precision_digits of ONNX's arithmetic in it). The digits d
# are such that capture_unit(d) = 0.5 * 10^(1 - d) (conformance/judge/judge.hpp) covers one rounding
# to the type (f32 half ulp <= 6.0e-8 <= 5e-7, f16 <= 4.9e-4 <= 5e-3, bf16 <= 3.9e-3 <= 5e-3).
# bf16 gets 3, not floor(2.4) = 2: with 2 the bound (16 * 0.05 * M) is so loose that a
# top-left/bottom-right causal mix-up still passes (c about 8 to 13, measured).
DTYPES = {
    np.dtype(np.float32): ("f32", 7),
    np.dtype(np.float16): ("f16", 3),
    np.dtype(ml_dtypes.bfloat16): ("bf16", 3),
}


def fmt_real(x):
    """A real as sdpa-cts prints it (std::to_chars shortest round trip)."""
    x = float(x)
    if x == int(x) and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def case_id(c):
    t = [f"b{c['B']}", f"hq{c['Hq']}", f"hkv{c['Hkv']}", f"l{c['L']}", f"s{c['S']}",
         f"dqk{c['Dqk']}", f"dv{c['Dv']}", c["dtype"]]
    if c.get("causal"):
        t.append(f"causal={c['causal']}")
    if c.get("win"):
        t.append("win=%d_%d_%s" % c["win"])
    if c.get("mask"):
        t.append(f"mask={c['mask']}")
        if c["mbc"]:
            t.append(f"mbc={c['mbc']}")
    if c.get("kvlen") is not None:
        t.append("kvlen=" + "_".join(str(n) for n in c["kvlen"]))
    if c.get("softcap"):
        t.append(f"softcap={fmt_real(c['softcap'])}")
    if c.get("scale") is not None:
        t.append(f"scale={fmt_real(c['scale'])}")
    if c.get("bshd"):
        t.append("lay=bshd")
    if c.get("attnw"):
        t.append("attnw")
    t.append(f"seed{c['seed']}")
    t.append("gen=onnx")
    return ".".join(t)


# ---------------------------------------------------------------------------------------
# Collecting ONNX's cases


def collect():
    """[(number, export name, test name, node, {input name: array}, {output name: array},
    opset)] in the order of the class, every export_* called once."""
    calls = []
    current = {}

    def collector(node, inputs, outputs, name, **kw):
        ins = [n for n in node.input if n]
        outs = [n for n in node.output if n]
        if len(ins) != len(inputs) or len(outs) != len(outputs):
            raise RuntimeError(f"{name}: inputs/outputs do not match the node")
        opset = [o.version for o in kw.get("opset_imports", []) if o.domain == ""]
        calls.append((current["n"], current["export"], name, node,
                      OrderedDict(zip(ins, inputs)), OrderedDict(zip(outs, outputs)),
                      opset[0] if opset else None))

    onnx_attention.expect = collector  # the module imported `expect` by name
    exports = [(n, f) for n, f in vars(onnx_attention.Attention).items()
               if n.startswith("export")]
    for number, (name, f) in enumerate(exports, start=1):
        current.update(n=number, export=name)
        np.random.seed(number)  # functions that seed themselves override this
        before = len(calls)
        f.__func__() if isinstance(f, staticmethod) else f()
        if len(calls) == before:
            raise RuntimeError(f"{name} called no expect()")
    return calls


# ---------------------------------------------------------------------------------------
# Mapping one ONNX case to the sdpa-cts contract


class Skip(Exception):
    pass


def to_bhsd(x, heads):
    """3-D [B, L, H*D] -> logical [B, H, L, D] (ONNX's reshape + transpose)."""
    B, L, HD = x.shape
    if HD % heads:
        raise Skip(f"hidden size {HD} is not a multiple of {heads} heads")
    return np.ascontiguousarray(x.reshape(B, L, heads, HD // heads).transpose(0, 2, 1, 3))


def window_for(offset, L, S, causal, left, right):
    """(causal token, win tuple) for ONNX's band: with offset o, attend iff
    o + i - left <= j (left >= 0), j <= o + i + right (right >= 0), j <= o + i (causal)."""
    hi = None if right < 0 else right  # upper bound relative to o + i; None = unbounded
    if causal:
        hi = 0 if hi is None else min(hi, 0)
    lo = None if left < 0 else left
    for align, a in (("tl", 0), ("br", S - L)):
        if offset == a:
            if lo is None and right < 0:
                return (align if causal else None), None
            # keep ONNX's two attributes as two tokens when the offset is an alignment
            return (align if causal else None), (-1 if lo is None else lo, right, align)
    for align, a in (("tl", 0), ("br", S - L)):
        d = offset - a  # bounds relative to a + i
        nl = -1 if lo is None else lo - d
        nr = -1 if hi is None else hi + d
        if (lo is None or nl >= 0) and (hi is None or nr >= 0):
            return None, (nl, nr, align)
    raise Skip(f"causal/window band with offset {offset} fits no tl/br window")


def convert(number, test, node, ins, outs):
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    notes = []
    known = {"scale", "is_causal", "q_num_heads", "kv_num_heads", "softcap",
             "softmax_precision", "qk_matmul_output_mode", "left_window_size",
             "right_window_size"}
    if set(attrs) - known:
        raise Skip(f"unknown attributes {sorted(set(attrs) - known)}")
    Q, K, V = ins["Q"], ins["K"], ins["V"]
    if Q.dtype not in DTYPES:
        raise Skip(f"element type {Q.dtype}")
    if not (Q.dtype == K.dtype == V.dtype):
        raise Skip("Q, K, V of different types")
    dtype, digits = DTYPES[Q.dtype]
    bshd = Q.ndim == 3
    if bshd:
        Q = to_bhsd(Q, attrs["q_num_heads"])
        K = to_bhsd(K, attrs["kv_num_heads"])
        V = to_bhsd(V, attrs["kv_num_heads"])
    B, Hq, L, Dqk = Q.shape
    Hkv = K.shape[1]
    Dv = V.shape[3]
    past = 0
    if "past_key" in ins:
        past = ins["past_key"].shape[2]
        K = np.concatenate((ins["past_key"], K), axis=2)
        V = np.concatenate((ins["past_value"], V), axis=2)
        notes.append(f"past_key/past_value ({past} rows) concatenated in front of K/V")
    S = K.shape[2]
    if Hq % Hkv:
        raise Skip("hq is not a multiple of hkv")
    c = dict(B=B, Hq=Hq, Hkv=Hkv, L=L, S=S, Dqk=Dqk, Dv=Dv, dtype=dtype, seed=number,
             bshd=bshd)

    causal = bool(attrs.get("is_causal", 0))
    left = attrs.get("left_window_size", -1)
    right = attrs.get("right_window_size", -1)
    nonpad = ins.get("nonpad_kv_seqlen")
    if nonpad is not None:
        kvlen = [int(n) for n in np.asarray(nonpad).reshape(-1)]
        if any(n < 0 or n > S for n in kvlen):
            raise Skip(f"nonpad_kv_seqlen {kvlen} outside [0, {S}]")
        c["kvlen"] = kvlen
        # ONNX: offset[b] = nonpad[b] - L = S_b - L_b, sdpa-cts's bottom-right alignment
        if causal:
            c["causal"] = "br"
        if left >= 0 or right >= 0:
            c["win"] = (left, right, "br")
    else:
        offset = past
        if causal or left >= 0 or right >= 0:
            c["causal"], c["win"] = window_for(offset, L, S, causal, left, right)
            if past and causal:
                notes.append(f"causal offset = past length {past}"
                             + (" = S - L: bottom-right" if offset == S - L and L != S else ""))

    if "scale" in attrs:
        c["scale"] = float(np.float32(attrs["scale"]))
    softcap = float(attrs.get("softcap", 0.0))
    if softcap < 0:
        raise Skip("negative softcap")
    if softcap > 0:
        c["softcap"] = softcap

    mask = ins.get("attn_mask")
    if mask is not None:
        if mask.dtype == np.bool_:
            c["mask"] = "bool"
        elif mask.dtype == Q.dtype:
            c["mask"] = "add"
        else:
            raise Skip(f"float mask of type {mask.dtype} with {Q.dtype} inputs")
        if mask.ndim > 4:
            raise Skip("mask of rank > 4")
        pad = S - mask.shape[-1]
        if pad < 0:
            raise Skip("mask longer than S")
        if pad > 0:
            width = [(0, 0)] * (mask.ndim - 1) + [(0, pad)]
            fill = False if mask.dtype == np.bool_ else -np.inf
            mask = np.pad(mask, width, mode="constant", constant_values=fill)
            notes.append(f"mask padded from {S - pad} to {S} keys ({fill}), as ONNX does")
        full = (B, Hq, L, S)
        shape4 = (1,) * (4 - mask.ndim) + mask.shape
        mbc = ""
        for d, letter in enumerate("bhls"):
            missing = d < 4 - mask.ndim
            if shape4[d] == 1 and (missing or full[d] > 1):
                mbc += letter
            elif shape4[d] != full[d]:
                raise Skip(f"mask shape {mask.shape} does not broadcast to {full}")
        c["mbc"] = mbc
        c["mask_array"] = mask.reshape(shape4)

    mode = attrs.get("qk_matmul_output_mode", 0)
    if "qk_matmul_output" in outs:
        if mode == 3:
            c["attnw"] = True
            c["weights"] = outs["qk_matmul_output"].astype(np.float64)
        else:
            notes.append(f"qk_matmul_output (mode {mode}: logits before softmax) not judged")
    if "present_key" in outs:
        notes.append("present_key/present_value (the concatenation) not judged")
    if "softmax_precision" in attrs:
        notes.append(f"softmax_precision={attrs['softmax_precision']} (precision only)")
    Y = outs["Y"]
    if bshd:
        Y = to_bhsd(Y, Hq)
    c.update(q=Q, k=K, v=V, o=Y.astype(np.float64), notes=notes, digits=digits)
    return c


# ---------------------------------------------------------------------------------------
# docs/SEMANTICS.md in float64: LSE (the schema requires it) and a sanity check of Y


def semantics_f64(c):
    q, k, v = (c[n].astype(np.float64) for n in ("q", "k", "v"))
    B, Hq, L, S = c["B"], c["Hq"], c["L"], c["S"]
    g = Hq // c["Hkv"]
    k = np.repeat(k, g, axis=1)
    v = np.repeat(v, g, axis=1)
    scale = c["scale"] if c.get("scale") is not None else 1.0 / np.sqrt(np.float64(c["Dqk"]))
    s = scale * np.einsum("bhld,bhsd->bhls", q, k)
    if c.get("softcap"):
        s = c["softcap"] * np.tanh(s / c["softcap"])
    allowed = np.ones((B, Hq, L, S), dtype=bool)
    if c.get("mask") == "add":
        s = s + np.broadcast_to(c["mask_array"].astype(np.float64), s.shape)
    elif c.get("mask") == "bool":
        allowed &= np.broadcast_to(c["mask_array"], s.shape)
    kvlen = c.get("kvlen") or [S] * B
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    for b in range(B):
        off_br = kvlen[b] - L
        a = j < kvlen[b]
        if c.get("causal"):
            a = a & (j <= i + (off_br if c["causal"] == "br" else 0))
        if c.get("win"):
            lft, rgt, al = c["win"]
            off = off_br if al == "br" else 0
            if lft >= 0:
                a = a & (j >= i + off - lft)
            if rgt >= 0:
                a = a & (j <= i + off + rgt)
        allowed[b] &= a
    s = np.where(allowed, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    z = e.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(z > 0, e / z, 0.0)
        lse = np.where(z[..., 0] > 0, m[..., 0] + np.log(z[..., 0]), -np.inf)
    o = np.einsum("bhls,bhsd->bhld", p, v)
    mag = np.einsum("bhls,bhsd->bhld", p, np.abs(v))
    return o, lse, p, mag


# ---------------------------------------------------------------------------------------
# Writing


def raw(x):
    """(array as stored, dtype attribute or None): f16 / bf16 as raw uint16 bits."""
    name = DTYPES[x.dtype][0] if x.dtype in DTYPES else None
    if name in ("f16", "bf16"):
        return np.ascontiguousarray(x).view(np.uint16), name
    return np.ascontiguousarray(x), name


def write(path, dtype, digits, cases):
    with h5py.File(path, "w") as f:
        f.attrs["schema"] = "sdpa-cts-golden"
        f.attrs["schema_version"] = 1
        f.attrs["semantics_version"] = "1"
        f.attrs["generator"] = "golden/examples/from_onnx_node_tests.py (ONNX reference, node tests)"
        f.attrs["generator_version"] = f"onnx {onnx.__version__}, numpy {np.__version__}"
        f.attrs["precision_digits"] = digits
        f.attrs["set"] = f"onnx_node_tests_{dtype}"
        sdpa = f.create_group("sdpa")
        for c in cases:
            g = sdpa.create_group(c["id"])
            for name in ("q", "k", "v"):
                data, dt = raw(c[name])
                d = g.create_dataset(name, data=data)
                d.attrs["dtype"] = dt
            if c.get("mask") == "bool":
                g.create_dataset("mask", data=c["mask_array"].astype(np.uint8))
            elif c.get("mask") == "add":
                data, dt = raw(c["mask_array"])
                d = g.create_dataset("mask", data=data)
                d.attrs["dtype"] = dt
            g.create_dataset("o", data=c["o"])
            g.create_dataset("lse", data=c["lse"])
            if c.get("attnw"):
                g.create_dataset("weights", data=c["weights"])
            g.attrs["seed"] = c["seed"]
            g.attrs["family"] = "onnx_node_tests"
            note = f"ONNX {c['test']} ({c['export']}, opset {c['opset']}); lse computed in f64"
            if c["notes"]:
                note += "; " + "; ".join(c["notes"])
            g.attrs["note"] = note


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    by_type = OrderedDict((v[0], []) for v in DTYPES.values())
    skipped = []
    for number, export, test, node, ins, outs, opset in collect():
        try:
            c = convert(number, test, node, ins, outs)
        except Skip as e:
            skipped.append((test, str(e)))
            print(f"SKIP  {test}: {e}")
            continue
        c.update(test=test, export=export, opset=opset, id=case_id(c))
        o, lse, p, mag = semantics_f64(c)
        c["lse"] = lse
        dev = np.max(np.abs(c["o"] - o) / np.maximum(mag, np.finfo(np.float64).tiny),
                     initial=0.0)
        if c.get("attnw"):
            dev = max(dev, np.max(np.abs(c["weights"] - p), initial=0.0))
        by_type[c["dtype"]].append(c)
        extra = ("  [" + "; ".join(c["notes"]) + "]") if c["notes"] else ""
        print(f"OK    {test} -> {c['id']}  (|Y - O_f64| / M <= {dev:.2g}){extra}")
    for dtype, cases in by_type.items():
        if not cases:
            continue
        path = os.path.join(outdir, f"onnx_{dtype}.h5")
        write(path, dtype, cases[0]["digits"], cases)
        print(f"{path}: {len(cases)} cases, precision_digits {cases[0]['digits']}")
    print(f"{sum(len(v) for v in by_type.values())} converted, {len(skipped)} skipped")
    for test, why in skipped:
        print(f"  skipped {test}: {why}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "onnx_golden")
