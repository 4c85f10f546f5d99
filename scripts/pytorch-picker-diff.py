#!/usr/bin/env python3
"""Differential check of `sdpa-cts explain --policy pytorch` against the real PyTorch.

  scripts/pytorch-picker-diff.py sdpa --sample N [--seed S] [--device cpu|cuda]
      Draws N problems with the suite's sampler (`sdpa-cts explain --sample N --seed S
      --policy pytorch --json`), rebuilds each call PyTorch can express as real tensors (the
      same shapes, strides, storage offsets, mask and flags) and asks PyTorch for its choice:
      torch._fused_sdp_choice for dense calls, CausalBias's own order for a bottom-right
      causal mask with L != S, and the jagged picker for packed rows. Reports the agreement
      and every disagreement as a case ID.
  scripts/pytorch-picker-diff.py mha [--count N] [--seed S]
      Draws N nn.MultiheadAttention calls, runs each in PyTorch on the CPU, reads the fast-path
      decision (the why_not_fast_path local of MultiheadAttention.forward) and the kernels
      that ran (the profiler), and compares them with `sdpa-cts explain --mha SPEC --policy
      pytorch --json`.
  scripts/pytorch-picker-diff.py replay FILE...
      Compares recordings (--record FILE of the commands above) with this build's answers;
      needs no PyTorch (CTest runs it).

Common options: --sdpa-cts PATH (default build/release/cli/sdpa-cts), --record FILE (write
PyTorch's answers as JSON lines). Exit code: 0 full agreement, 1 a disagreement, 2 bad use.
Needs the pinned PyTorch (bench/requirements.txt, e.g. .venv-torch/bin/python) except replay.
"""
import argparse
import json
import os
import random
import subprocess
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHOICE_NAMES = {-1: "error", 0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def explain_lines(exe, args):
    out = subprocess.run([exe, "explain", "--policy", "pytorch", "--json", *args],
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"pytorch-picker-diff: sdpa-cts explain {' '.join(args)} failed: {out.stderr}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


# ---------------------------------------------------------------- SDPA
def torch_dtype(torch, name):
    return getattr(torch, name)


def dense(torch, t, dtype, device, requires_grad=False):
    shape, stride, offset = t["shape"], t["stride"], t["offset"]
    need = offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)
    if any(n == 0 for n in shape):
        need = offset + 1
    # A `bwd` case: the inputs require grad, as in a training step (the storage is the leaf).
    storage = torch.zeros(need, dtype=dtype, device=device, requires_grad=requires_grad)
    return torch.as_strided(storage, shape, stride, offset)


def mask_tensor(torch, m, dtype, device):
    shape = m["shape"]
    full = [1 if b else n for n, b in zip(shape, m["broadcast"])]
    mdtype = torch.bool if m["dtype"] == "bool" else torch_dtype(torch, m["dtype"])
    base = torch.ones(full, dtype=mdtype, device=device) if mdtype == torch.bool else \
        torch.zeros(full, dtype=mdtype, device=device)
    return base.expand(shape)


def jagged(torch, t, lengths, dtype, device, requires_grad=False):
    values = dense(torch, t, dtype, device, requires_grad)  # [total, H, D], the problem's strides
    offsets = torch.tensor([0] + list(__import__("itertools").accumulate(lengths)),
                           dtype=torch.int64, device=device)
    nt = torch.nested.nested_tensor_from_jagged(values, offsets)
    return nt.transpose(1, 2)  # [B, H, j, D]


def torch_sdpa_choice(torch, call, device):
    from torch.backends.cuda import SDPAParams, can_use_efficient_attention, can_use_flash_attention
    dtype = torch_dtype(torch, call["dtype"])
    p, causal, scale, gqa = call["dropout_p"], call["is_causal"], call["scale"], call["enable_gqa"]
    grad = call.get("requires_grad", False)
    if call["route"] == "nested":
        from torch.nested._internal.sdpa import _select_sdp_backend
        q = jagged(torch, call["q"], call["seqlens_q"], dtype, device, grad)
        k = jagged(torch, call["k"], call["seqlens_kv"], dtype, device, grad)
        v = jagged(torch, call["v"], call["seqlens_kv"], dtype, device, grad)
        try:
            backend = _select_sdp_backend(q, k, v, None, p, causal, gqa)
        except RuntimeError as e:
            # Only cuDNN is left to ask; a CUDA build without a driver raises there instead of
            # declining: no backend either way.
            if "CUDA" not in str(e):
                raise
            return "error"
        return {"FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "efficient", "MATH": "math",
                "CUDNN_ATTENTION": "cudnn", "ERROR": "error"}[backend.name]
    q, k, v = (dense(torch, call[n], dtype, device, grad) for n in ("q", "k", "v"))
    if call["route"] == "causal_bias":
        # CausalBias._dispatch (torch/nn/attention/bias.py), LOWER_RIGHT with L != S.
        params = SDPAParams(q, k, v, None, p, False, gqa)
        if can_use_flash_attention(params):
            return "flash"
        if can_use_efficient_attention(params):
            return "efficient"
        L, S = call["lower_right"]
        mask = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=S - L)
    else:
        mask = mask_tensor(torch, call["mask"], dtype, device) if call["mask"] else None
    try:
        choice = torch._fused_sdp_choice(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal,
                                         scale=scale, enable_gqa=gqa)
    except RuntimeError as e:
        if "No viable backend" in str(e) or "No available kernel" in str(e):
            return "error"
        raise
    return CHOICE_NAMES[int(choice)]


def run_sdpa(a):
    import torch
    device = "cuda" if a.device.startswith("sm") or a.device == "cuda" else "cpu"
    rows = explain_lines(a.sdpa_cts, ["--sample", str(a.sample), "--seed", str(a.seed),
                                      "--device", a.device])
    skipped, agree, disagree, choices = Counter(), 0, [], Counter()
    record = [{"kind": "meta", "sample": a.sample, "seed": a.seed, "device": a.device,
               "torch": torch.__version__}]
    for r in rows:
        call = r["torch_call"]
        if call["route"] == "not_expressible":
            for why in call["not_expressible"]:
                skipped[why.split(":")[0]] += 1
            continue
        theirs = torch_sdpa_choice(torch, call, device)
        ours = r["pytorch_choice"]
        choices[theirs] += 1
        if call.get("requires_grad"):
            choices["(of them with inputs that require grad)"] += 1
        record.append({"kind": "sdpa", "case": r["case"], "device": a.device, "torch": theirs})
        if theirs == ours:
            agree += 1
        else:
            disagree.append((r["case"], call["route"], theirs, ours))
    compared = agree + len(disagree)
    print(f"PyTorch {torch.__version__}: {a.sample} problems drawn (seed {a.seed}, device "
          f"{a.device}), {compared} expressible and compared, "
          f"{sum(1 for r in rows if r['torch_call']['route'] == 'not_expressible')} not expressible")
    print("  not expressible (a problem may count under several): " +
          ", ".join(f"{k} {v}" for k, v in skipped.most_common()))
    print("  PyTorch's choices: " + ", ".join(f"{k} {v}" for k, v in choices.most_common()))
    for case, route, theirs, ours in disagree:
        print(f"DISAGREE {case} (route {route}): PyTorch {theirs}, explain --policy pytorch {ours}"
              f"\n  repro: sdpa-cts explain --policy pytorch --device {a.device} --case {case}")
    pct = 100.0 * agree / compared if compared else 0.0
    print(f"agreement: {agree}/{compared} ({pct:.2f} %)")
    return record, not disagree


# ---------------------------------------------------------------- MHA
def mha_specs(count, seed):
    rnd = random.Random(seed)
    for _ in range(count):
        h = rnd.choice([1, 2, 3, 4])
        e = h * rnd.choice([2, 4, 8, 16])
        l = rnd.choice([1, 3, 5, 8])
        same = rnd.random() < 0.8
        s = l if same else rnd.choice([2, 4, 7])
        f = {"e": e, "h": h, "b": rnd.choice([1, 2]), "l": l, "s": s}
        f["batch_first"] = rnd.choice([0, 1, 1])
        f["need_weights"] = rnd.choice([0, 1])
        f["mask"] = rnd.choice(["none", "none", "bool", "float"])
        f["kpm"] = rnd.choice(["none", "none", "bool", "float"])
        if f["kpm"] != "none" and f["mask"] != "none" and (f["kpm"] == "float") != (f["mask"] == "float"):
            f["kpm"] = f["mask"]  # PyTorch refuses mixed mask types
        f["training"] = rnd.choice([0, 0, 0, 1])
        f["bias"] = rnd.choice([1, 1, 1, 0])
        f["add_bias_kv"] = rnd.choice([0, 0, 0, 1])
        f["add_zero_attn"] = rnd.choice([0, 0, 0, 1])
        if rnd.random() < 0.15:
            f["kdim"] = e + 2
            f["vdim"] = e + 2
        f["self"] = 1 if (same and "kdim" not in f and rnd.random() < 0.85) else 0
        if f["mask"] != "none" and rnd.random() < 0.3:
            f["is_causal"] = 1
        if f["training"] and rnd.random() < 0.5:
            f["p"] = 0.25
        yield f


def spec_string(f):
    parts = [f"e{f['e']}", f"h{f['h']}", f"b{f['b']}", f"l{f['l']}", f"s{f['s']}"]
    for k in ("batch_first", "need_weights", "mask", "kpm", "training", "bias", "add_bias_kv",
              "add_zero_attn", "kdim", "vdim", "self", "is_causal", "p"):
        if k in f:
            parts.append(f"{k}={f[k]}")
    return ".".join(parts)


def torch_mha(torch, f):
    """Runs the call; returns (fast_path, why_not_fast_path, kernel) as PyTorch decided."""
    from torch.profiler import ProfilerActivity, profile
    e, h, b, l, s = f["e"], f["h"], f["b"], f["l"], f["s"]
    kdim = f.get("kdim", e)
    m = torch.nn.MultiheadAttention(e, h, dropout=f.get("p", 0.0), bias=bool(f["bias"]),
                                    add_bias_kv=bool(f["add_bias_kv"]),
                                    add_zero_attn=bool(f["add_zero_attn"]), kdim=kdim, vdim=kdim,
                                    batch_first=bool(f["batch_first"]))
    m.train(bool(f["training"]))
    shape = (lambda n, d: (b, n, d)) if f["batch_first"] else (lambda n, d: (n, b, d))
    q = torch.randn(shape(l, e))
    if f["self"]:
        k = v = q
    else:
        k = torch.randn(shape(s, kdim))
        v = torch.randn(shape(s, kdim))
    def mk(kind, sh):
        if kind == "none":
            return None
        if kind == "bool":
            return torch.zeros(sh, dtype=torch.bool)
        return torch.zeros(sh)
    am = mk(f["mask"], (l, s))
    if f.get("is_causal") and am is not None:
        am = torch.ones(l, s).triu(1).bool() if f["mask"] == "bool" else \
            torch.zeros(l, s).masked_fill(torch.ones(l, s).triu(1).bool(), float("-inf"))
    kpm = mk(f["kpm"], (b, s))
    seen = {}

    def tracer(frame, event, arg):
        if frame.f_code is torch.nn.MultiheadAttention.forward.__code__:
            def local(fr, ev, ar):
                if "why_not_fast_path" in fr.f_locals:
                    seen["why"] = fr.f_locals["why_not_fast_path"]
                return local
            return local
        return None

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        sys.settrace(tracer)
        try:
            m(q, k, v, key_padding_mask=kpm, need_weights=bool(f["need_weights"]), attn_mask=am,
              is_causal=bool(f.get("is_causal", 0)))
        finally:
            sys.settrace(None)
    names = {ev.name for ev in prof.events()}
    fast = "aten::_native_multi_head_attention" in names
    if "aten::_scaled_dot_product_flash_attention_for_cpu" in names:
        kernel = "flash"
    elif "aten::_scaled_dot_product_attention_math" in names or \
            "aten::_scaled_dot_product_attention_math_for_mps" in names:
        kernel = "math"
    else:
        kernel = "materialized"
    return fast, seen.get("why", ""), kernel


# The suite names one condition PyTorch leaves unnamed (docs/DISPATCH.md, rule 18): PyTorch's
# why_not_fast_path stays "" there.
OUR_OWN_REASON = "in_proj_bias is None (bias=False)"


def ours_mha(r):
    kernel = "materialized"
    if r.get("reaches_sdpa"):
        kernel = r["sdpa"].get("pytorch_choice") or "error"
    why = r["why_not_fast_path"]
    if why.startswith(OUR_OWN_REASON):
        why = ""
    return r["fast_path"], why, kernel


def same_mha(theirs, ours):
    norm = lambda text: " ".join(text.split()).replace("torch.", "")
    return theirs[0] == ours[0] and theirs[2] == ours[2] and norm(theirs[1]) == norm(ours[1])


def run_mha(a):
    import torch
    agree, disagree, record = 0, [], []
    for f in mha_specs(a.count, a.seed):
        spec = spec_string(f)
        rows = explain_lines(a.sdpa_cts, ["--mha", spec, "--device", "cpu"])
        if not rows:
            sys.exit(f"pytorch-picker-diff: no answer for --mha {spec}")
        theirs = torch_mha(torch, f)
        ours = ours_mha(rows[0])
        record.append({"kind": "mha", "spec": spec, "device": "cpu", "torch": list(theirs)})
        if same_mha(theirs, ours):
            agree += 1
        else:
            disagree.append((spec, theirs, ours))
    for spec, theirs, ours in disagree:
        print(f"DISAGREE --mha {spec}\n  PyTorch: fast={theirs[0]} kernel={theirs[2]} why={theirs[1]!r}"
              f"\n  ours:    fast={ours[0]} kernel={ours[2]} why={ours[1]!r}")
    total = agree + len(disagree)
    print(f"PyTorch {torch.__version__}: {total} nn.MultiheadAttention calls (seed {a.seed}, cpu); "
          f"agreement on fast path, why_not_fast_path and kernel: {agree}/{total} "
          f"({100.0 * agree / total:.2f} %)")
    return record, not disagree


# ---------------------------------------------------------------- replay
def run_replay(a):
    recorded = []
    for name in a.files:
        with open(name) as fh:
            recorded += [json.loads(line) for line in fh if line.strip()]
    if not recorded:
        sys.exit("pytorch-picker-diff: the recording is empty")
    bad, answers = 0, {}
    for rec in recorded:
        if rec["kind"] == "meta":
            # One explain run answers every sampled case of the recording.
            for row in explain_lines(a.sdpa_cts, ["--sample", str(rec["sample"]), "--seed",
                                                  str(rec["seed"]), "--device", rec["device"]]):
                answers[(row["case"], rec["device"])] = row["pytorch_choice"]
    recorded = [rec for rec in recorded if rec["kind"] != "meta"]
    # The rest in one explain run per device (repeated --case / --mha, answered in order).
    by_device = {}
    for rec in recorded:
        if rec["kind"] == "sdpa" and (rec["case"], rec["device"]) not in answers:
            by_device.setdefault(rec["device"], []).append(rec["case"])
    for device, ids in by_device.items():
        rows = explain_lines(a.sdpa_cts, [x for i in ids for x in ("--case", i)] +
                             ["--device", device])
        if len(rows) != len(ids):
            sys.exit(f"pytorch-picker-diff: {len(ids)} cases asked, {len(rows)} answers")
        for i, row in zip(ids, rows):
            answers[(i, device)] = row["pytorch_choice"]
    specs = [rec["spec"] for rec in recorded if rec["kind"] == "mha"]
    mha_rows = explain_lines(a.sdpa_cts, [x for sp in specs for x in ("--mha", sp)] +
                             ["--device", "cpu"]) if specs else []
    if len(mha_rows) != len(specs):
        sys.exit(f"pytorch-picker-diff: {len(specs)} MHA calls asked, {len(mha_rows)} answers")
    mha_answers = dict(zip(specs, mha_rows))
    for rec in recorded:
        if rec["kind"] == "sdpa":
            got = answers[(rec["case"], rec["device"])]
            if got != rec["torch"]:
                bad += 1
                print(f"DISAGREE {rec['case']}: PyTorch chose {rec['torch']}, explain --policy "
                      f"pytorch chooses {got}")
        else:
            ours = ours_mha(mha_answers[rec["spec"]])
            theirs = rec["torch"]
            if not same_mha(theirs, ours):
                bad += 1
                print(f"DISAGREE --mha {rec['spec']}: PyTorch {theirs}, ours {list(ours)}")
    print(f"replayed {len(recorded)} recorded PyTorch decisions: {len(recorded) - bad} agree, "
          f"{bad} disagree")
    return bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdpa-cts", default=os.path.join(ROOT, "build/release/cli/sdpa-cts"))
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sdpa")
    s.add_argument("--sample", type=int, required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--device", default="cpu")
    s.add_argument("--record")
    m = sub.add_parser("mha")
    m.add_argument("--count", type=int, default=300)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--record")
    r = sub.add_parser("replay")
    r.add_argument("files", nargs="+")
    a = ap.parse_args()
    if not os.access(a.sdpa_cts, os.X_OK):
        print(f"pytorch-picker-diff: no sdpa-cts at {a.sdpa_cts}", file=sys.stderr)
        return 2
    if a.what == "replay":
        return 0 if run_replay(a) else 1
    record, ok = run_sdpa(a) if a.what == "sdpa" else run_mha(a)
    if a.record:
        with open(a.record, "w") as fh:
            for rec in record:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
