#!/usr/bin/env python3
"""Fills an sdpa-cts results file with the outputs of ONNX Runtime's `Attention` operator
(ai.onnx domain), so that `sdpa-cts cases judge --results` judges ONNX Runtime against
docs/SEMANTICS.md (docs/PLUGINS.md, "Results files"):

    python3 -m venv /tmp/ortvenv
    /tmp/ortvenv/bin/pip install -r golden/examples/requirements-onnxruntime.txt
    build/release/cli/sdpa-cts cases export --tier smoke --filter '\.f32\.' --out /tmp/ort/smoke.f32.h5
    /tmp/ortvenv/bin/python golden/examples/fill_from_onnxruntime.py /tmp/ort/smoke.f32.h5 \
        --o-only /tmp/ort/smoke.f32.o_only.h5
    build/release/cli/sdpa-cts cases judge --results /tmp/ort/smoke.f32.h5 --contract acc=f32,p=f32 \
        --name onnxruntime.attention --report /tmp/ort/report

One file per element type, because one judge run has one contract: f32 is acc=f32,p=f32;
f16 is acc=f16,p=f16 (ORT's f16 kernel accumulates in f32 but stores the logits scale*QK^T
[+ mask] in f16 before a f32 softmax, and P in f16 before an f32 P.V; the contract has no
"logits rounded to the input type" knob, acc=f16 is the narrowest one that covers it). See
golden/examples/README.md, "ONNX Runtime through a results file", for the measured results.

For every group /sdpa/<case ID> of the file, the script builds a one-node ONNX model
(the standard `Attention` op, 4-D [B, H, L, D] inputs), runs it with the CPU execution
provider and writes `o` (and `weights` for `attnw` cases, from qk_matmul_output_mode=3) as
f64 into the group, in place. A case ONNX's Attention cannot express (or ONNX Runtime
refuses) is left unfilled, so the judge reports it NOT_SUPPORTED; the script prints every
such case with the reason, and a count per reason at the end.

Two paths (--path):
- `kernel` (default): opset 24. ONNX Runtime registers a CPU kernel for Attention 23-24 in
  float and float16 only (onnxruntime/core/providers/cpu/llm/attention.cc); these run it.
  f64 and bf16 cases are left unfilled (f64 would run ONNX's function body, not the
  kernel; bf16 does not run at all). Sliding windows need opset 25: unfilled.
- `function`: opset 25. ONNX Runtime 1.32 has no CPU kernel for Attention-25, so it runs the
  op's ONNX function body (MatMul, Softmax, Where, ... with ORT's CPU kernels): this is what
  an opset-25 model gets. Windows (left/right_window_size) and f64 are expressible; bf16
  still fails (no bf16 Expand on CPU). The script checks at start-up which path each element
  type takes (a single fused Attention node or an expanded graph) and refuses a mismatch.

Mapping (ONNX Attention opsets 24/25 and onnx/reference/ops/op_attention.py, onnx 1.23.2;
docs/CASE_ID.md for the case ID):
- Q/K/V as the file holds them (the logical [B, H, rows, D] tensors: lay=/gap=/off=/qst=...
  are storage only); hkv < hq is GQA (ONNX repeats KV heads contiguously, as sdpa-cts).
- scale: the attribute (a float32) only when the ID has `scale=` (or Dqk = 0, where
  SEMANTICS.md's default is 1 and ONNX's would be 1/sqrt(0)); otherwise ONNX's default
  1/sqrt(Dqk). ONNX Runtime enforces scale > 0: `scale=<= 0` cases are unfilled.
- softcap: the attribute (a float32), applied before the mask in both.
- causal=tl without kvlen: is_causal=1 (ONNX's offset is 0 without a cache: top-left, also
  when L != S).
- causal=br: is_causal=1 with nonpad_kv_seqlen = kvlen (or S for every batch element
  without kvlen): ONNX's offset is then nonpad_kv_seqlen[b] - L = S_b - L, sdpa-cts's
  bottom-right. When L == S and no kvlen, is_causal alone (offset 0 = S - L).
- causal=tl with kvlen: ONNX's offset with nonpad_kv_seqlen is S_b - L, so only when every
  S_b == L; otherwise unfilled.
- kvlen=: nonpad_kv_seqlen (int64); keys beyond are masked in ONNX (P = 0, but still
  multiplied, so NaN stored there reaches O), absent in sdpa-cts.
- win=<l>_<r>_<al> (path `function` only): left_window_size / right_window_size with the
  same offset rule as is_causal, so the alignment must be the one the offset gives.
- mask=bool / mask=add: attn_mask, bool (True = attend) or of the element type (additive);
  the stored mask has size 1 in its broadcast dimensions (mbc=). Size-1 batch and head
  dimensions are passed as they are (numpy broadcasting, which ONNX specifies); the L and S
  dimensions are expanded, because ONNX Runtime's kernel requires the mask's last two
  dimensions to be exactly [L, S] (a materialisation, the values are the same).
- attnw: qk_matmul_output_mode=3 (the softmax probabilities, fully masked rows 0 by the
  spec) into `weights`.
`lse` cases get `o` but stay NOT_SUPPORTED (ONNX has no LSE output: see --o-only).
Left unfilled (reason printed): dropout (p:
ONNX Attention has no dropout), padded query lengths (qlen= other than L: ONNX has no
query lengths), packed (no cu_seqlens in ONNX), bf16 (no CPU implementation), f64 and windows
on path `kernel`, scale <= 0 or not finite in float32, and anything ONNX Runtime rejects at
session creation or run time (the error is printed).

--o-only OUT writes a second file holding every case of the first with the `lse` token
removed from its ID (same inputs, same filled outputs): the judge can then judge O (and
weights) of the many `lse` cases, which the first file can only report as NOT_SUPPORTED
("dataset 'lse' is missing"). An lse-less ID that is already a group of the input keeps
that group (the duplicate is listed).
"""

import argparse
import collections
import os
import re
import sys
import tempfile

import h5py
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

# ---------------------------------------------------------------------------------------
# Case IDs (docs/CASE_ID.md)

NUMBER_FIELDS = ("b", "hq", "hkv", "l", "s", "dqk", "dv", "p", "dseed", "doff", "seed")
DTYPES = ("f64", "f32", "f16", "bf16")


def split_tokens(case_id):
    """Splits on '.', joining a segment that starts with a digit onto the token before it."""
    out = []
    for seg in case_id.split("."):
        if seg[:1].isdigit() and out:
            out[-1] += "." + seg
        else:
            out.append(seg)
    return out


def parse_case_id(case_id):
    c = {"flags": set()}
    for tok in split_tokens(case_id):
        if "=" in tok:
            k, v = tok.split("=", 1)
            c[k] = v
            continue
        if tok in DTYPES:
            c["dtype"] = tok
            continue
        if tok in ("packed", "lse", "attnw"):
            c["flags"].add(tok)
            continue
        m = re.fullmatch(r"([a-z]+)([0-9.e+-]+)", tok)
        if not m or m.group(1) not in NUMBER_FIELDS:
            raise ValueError(f"{case_id}: unknown token {tok!r}")
        c[m.group(1)] = float(m.group(2)) if m.group(1) == "p" else int(m.group(2))
    for k in ("qlen", "kvlen"):
        if k in c:
            c[k] = [int(n) for n in c[k].split("_")]
    for k in ("softcap", "scale"):
        if k in c:
            c[k] = float(c[k])
    if "win" in c:
        left, right, align = c["win"].split("_")
        c["win"] = (int(left), int(right), align)
    c.setdefault("hkv", c["hq"])
    c.setdefault("dv", c["dqk"])
    return c


def drop_lse(case_id):
    return ".".join(t for t in split_tokens(case_id) if t != "lse")


# ---------------------------------------------------------------------------------------
# Reading the stored inputs (golden/SCHEMA.md)

NP_TYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16,
            "bf16": ml_dtypes.bfloat16}
ONNX_TYPES = {"f64": TensorProto.DOUBLE, "f32": TensorProto.FLOAT,
              "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}


def read_tensor(ds, dtype):
    a = ds[()]
    tag = ds.attrs.get("dtype")
    if isinstance(tag, bytes):
        tag = tag.decode()
    if tag in ("f16", "bf16"):
        return a.view(NP_TYPES[tag])
    return a.astype(NP_TYPES[dtype], copy=False)


class Unexpressible(Exception):
    pass


# ---------------------------------------------------------------------------------------
# Mapping one case to an Attention node


def plan(c, group, path):
    """(opset, attributes, feeds, wants weights) for the case, or raises Unexpressible."""
    dtype = c["dtype"]
    B, Hq, Hkv, L, S, Dqk = c["b"], c["hq"], c["hkv"], c["l"], c["s"], c["dqk"]
    if dtype == "bf16":
        raise Unexpressible("bf16: onnxruntime has no CPU Attention for bfloat16 (no kernel; "
                            "the function body fails: no bf16 Expand on CPU)")
    if dtype == "f64" and path == "kernel":
        raise Unexpressible("f64: no CPU Attention kernel for double (only the function "
                            "body, --path function)")
    if c.get("p", 0):
        raise Unexpressible("dropout: ONNX Attention has no dropout")
    if "packed" in c["flags"]:
        raise Unexpressible("packed: ONNX Attention has no cu_seqlens / packed layout")
    if any(n != L for n in c.get("qlen", [L] * B)):
        raise Unexpressible("qlen: ONNX Attention has no per-batch query lengths")
    if "win" in c and path == "kernel":
        raise Unexpressible("window: left/right_window_size need opset 25, for which "
                            "onnxruntime has no CPU kernel (--path function)")

    attrs = {}
    feeds = {}
    if "scale" in c or Dqk == 0:
        scale = c.get("scale", 1.0)
        s32 = np.float32(scale)
        if not (np.isfinite(s32) and s32 > 0):
            raise Unexpressible("scale <= 0: onnxruntime requires a positive float32 scale")
        attrs["scale"] = float(s32)
    if c.get("softcap"):
        attrs["softcap"] = float(np.float32(c["softcap"]))

    kvlen = c.get("kvlen")
    causal = c.get("causal")
    win = c.get("win")
    # ONNX's offset for is_causal and the window: nonpad_kv_seqlen[b] - L when given, else 0.
    need_br = causal == "br" or (win is not None and win[2] == "br")
    need_tl = causal == "tl" or (win is not None and win[2] == "tl")
    nonpad = None
    if kvlen is not None:
        nonpad = kvlen
    elif need_br and L != S:
        nonpad = [S] * B
    offsets = [n - L for n in nonpad] if nonpad is not None else [0] * B
    if need_tl and any(o != 0 for o in offsets):
        raise Unexpressible("top-left causal/window with kvlen != L: ONNX aligns is_causal "
                            "and windows at nonpad_kv_seqlen - L (bottom-right)")
    if need_br and any(o != S_b - L for o, S_b in zip(offsets, kvlen or [S] * B)):
        raise Unexpressible("bottom-right alignment not expressible")  # cannot happen
    if causal:
        attrs["is_causal"] = 1
    if win is not None:
        attrs["left_window_size"] = win[0]
        attrs["right_window_size"] = win[1]

    t = NP_TYPES[dtype]
    feeds["Q"] = read_tensor(group["q"], dtype)
    feeds["K"] = read_tensor(group["k"], dtype)
    feeds["V"] = read_tensor(group["v"], dtype)
    if "mask" in c:
        m = group["mask"]
        if c["mask"] == "bool":
            mask = m[()].astype(bool)
        else:
            mask = read_tensor(m, dtype)
        mb, mh = mask.shape[0], mask.shape[1]
        feeds["attn_mask"] = np.ascontiguousarray(np.broadcast_to(mask, (mb, mh, L, S)))
    if nonpad is not None:
        feeds["nonpad_kv_seqlen"] = np.asarray(nonpad, dtype=np.int64)
    for n in ("Q", "K", "V"):
        feeds[n] = np.ascontiguousarray(feeds[n], dtype=t)
    opset = 25 if path == "function" else 24
    return opset, attrs, feeds, "attnw" in c["flags"]


def build_model(dtype, opset, attrs, feeds, want_weights, shapes):
    T = ONNX_TYPES[dtype]
    order = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]
    last = max(i for i, n in enumerate(order) if n in feeds)
    names = [n if n in feeds else "" for n in order[:last + 1]]
    inputs = []
    for n in names:
        if not n:
            continue
        a = feeds[n]
        et = (TensorProto.BOOL if a.dtype == np.bool_ else
              TensorProto.INT64 if a.dtype == np.int64 else T)
        inputs.append(helper.make_tensor_value_info(n, et, list(a.shape)))
    outs = ["Y"]
    out_info = [helper.make_tensor_value_info("Y", T, list(shapes["Y"]))]
    if want_weights:
        attrs = dict(attrs, qk_matmul_output_mode=3)
        outs += ["", "", "W"]
        out_info.append(helper.make_tensor_value_info("W", T, list(shapes["W"])))
    node = helper.make_node("Attention", names, outs, **attrs)
    graph = helper.make_graph([node], "sdpa_case", inputs, out_info)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def session_options(threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 4  # ORT errors are reported per case
    return so


def check_paths(path, threads):
    """Which implementation each element type gets on this path: 'kernel' when the
    optimised graph is one Attention node, 'function' when ORT expanded the function body."""
    found = {}
    opset = 25 if path == "function" else 24
    for dtype in ("f32", "f16", "f64"):
        shapes = {"Y": (1, 1, 2, 4)}
        feeds = {n: np.zeros((1, 1, 2, 4), NP_TYPES[dtype]) for n in "QKV"}
        model = build_model(dtype, opset, {}, feeds, False, shapes)
        with tempfile.TemporaryDirectory() as d:
            so = session_options(threads)
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.optimized_model_filepath = os.path.join(d, "m.onnx")
            try:
                ort.InferenceSession(model.SerializeToString(), so,
                                     providers=["CPUExecutionProvider"])
            except Exception as e:  # noqa: BLE001
                found[dtype] = f"error ({str(e).splitlines()[0][:80]})"
                continue
            ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
        found[dtype] = "kernel" if ops == ["Attention"] else f"function ({len(ops)} nodes)"
    return found


# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="results file from `sdpa-cts cases export` (filled in place)")
    ap.add_argument("--path", choices=("kernel", "function"), default="kernel",
                    help="kernel: opset 24, ORT's CPU kernel (f32, f16); function: opset 25, "
                         "ORT running ONNX's function body (f32, f16, f64, windows)")
    ap.add_argument("--o-only", metavar="OUT",
                    help="also write OUT: every case with 'lse' dropped from its ID")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    ap.add_argument("--filter", help="only cases whose ID matches this regular expression")
    ap.add_argument("--quiet", action="store_true", help="do not list each unfilled case")
    args = ap.parse_args()

    ort.set_default_logger_severity(4)  # errors are reported per case below
    paths = check_paths(args.path, args.threads)
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}; "
          f"--path {args.path} (opset {25 if args.path == 'function' else 24}): "
          + ", ".join(f"{k} -> {v}" for k, v in paths.items()))
    for dtype, how in paths.items():
        if args.path == "kernel" and dtype in ("f32", "f16") and how != "kernel":
            sys.exit(f"expected ORT's Attention kernel for {dtype} at opset 24, got {how}")
        if args.path == "function" and how == "kernel":
            sys.exit(f"expected the function body for {dtype} at opset 25, got ORT's kernel")

    filled, unfilled = [], collections.OrderedDict()
    with h5py.File(args.results, "r+") as f:
        sdpa = f["sdpa"]
        for cid in sorted(sdpa.keys()):
            if args.filter and not re.search(args.filter, cid):
                continue
            g = sdpa[cid]
            for d in ("o", "weights"):  # a re-run replaces what an earlier one wrote
                if d in g:
                    del g[d]
            c = parse_case_id(cid)
            try:
                opset, attrs, feeds, want_w = plan(c, g, args.path)
                B, Hq, L, S, Dv = c["b"], c["hq"], c["l"], c["s"], c["dv"]
                shapes = {"Y": (B, Hq, L, Dv), "W": (B, Hq, L, S)}
                model = build_model(c["dtype"], opset, attrs, feeds, want_w, shapes)
                try:
                    sess = ort.InferenceSession(model.SerializeToString(),
                                                session_options(args.threads),
                                                providers=["CPUExecutionProvider"])
                    res = sess.run(None, feeds)
                except Exception as e:  # noqa: BLE001
                    msg = " ".join(str(e).split())
                    m = re.search(r"([^ ]+ [<>=!]+ [^ ]+) was false\. (.*)$", msg)
                    raise Unexpressible("onnxruntime error: " + (f"{m.group(2)} ({m.group(1)})"
                                                                 if m else msg[:200])) from None
                y = np.asarray(res[0])
                if y.shape != shapes["Y"]:
                    raise Unexpressible(f"onnxruntime returned Y of shape {y.shape}")
                if want_w and np.asarray(res[1]).shape != shapes["W"]:
                    raise Unexpressible("onnxruntime returned qk_matmul_output of shape "
                                        f"{np.asarray(res[1]).shape}")
                g.create_dataset("o", data=y.astype(np.float64))
                if want_w:
                    g.create_dataset("weights", data=np.asarray(res[1]).astype(np.float64))
                note = f"o{' and weights' if want_w else ''} from onnxruntime {ort.__version__} " \
                       f"Attention (opset {opset}, path {args.path}): " + \
                       ", ".join(f"{k}={v}" for k, v in attrs.items()) + \
                       (f", nonpad_kv_seqlen={feeds['nonpad_kv_seqlen'].tolist()}"
                        if "nonpad_kv_seqlen" in feeds else "")
                g.attrs["note"] = note
                filled.append(cid)
                if "lse" in c["flags"]:
                    unfilled.setdefault("lse: ONNX Attention has no LSE output (o is written; "
                                        "--o-only judges it)", []).append(cid)
            except Unexpressible as e:
                unfilled.setdefault(str(e), []).append(cid)
        f.attrs["generator"] = "golden/examples/fill_from_onnxruntime.py"
        f.attrs["generator_version"] = (f"onnxruntime {ort.__version__} (CPU, path {args.path}), "
                                        f"onnx {onnx.__version__}, numpy {np.__version__}")

        if args.o_only:
            with h5py.File(args.o_only, "w") as out:
                for k, v in f.attrs.items():
                    out.attrs[k] = v
                osdpa = out.create_group("sdpa")
                names = set(sdpa.keys())
                dups = []
                for cid in sorted(sdpa.keys()):
                    if args.filter and not re.search(args.filter, cid):
                        continue
                    new = drop_lse(cid)
                    if new != cid and new in names:
                        dups.append(cid)
                        continue
                    f.copy(sdpa[cid], osdpa, name=new)
                print(f"{args.o_only}: {len(osdpa)} cases ('lse' dropped from "
                      f"{sum(1 for k in sdpa if 'lse' in parse_case_id(k)['flags'])} IDs)"
                      + (f"; {len(dups)} skipped, their lse-less ID is already a case: "
                         + ", ".join(dups) if dups else ""))

    n_unfilled = sum(len(v) for k, v in unfilled.items() if not k.startswith("lse:"))
    print(f"{args.results}: {len(filled)} cases filled (o"
          f"{', weights' if any('attnw' in x for x in filled) else ''}), "
          f"{n_unfilled} left unfilled")
    for reason, ids in unfilled.items():
        print(f"  {len(ids):4d}  {reason}")
        if not args.quiet:
            for cid in ids:
                print(f"          {cid}")


if __name__ == "__main__":
    main()
