"""MHA golden cases: torch.nn.MultiheadAttention semantics (SEMANTICS.md, "Multi-head
attention front end"), computed end to end in mpmath and rounded once to f64.

Steps: input projections (y = W x + b), add_bias_kv appends bias_k / bias_v as one more
key / value row, heads are features [h*D, (h+1)*D), add_zero_attn appends a zero key and
value row, masks are made canonical (bool: true = IGNORE -> -inf, float: as is), padded
with 0 for the appended keys and added (attn_mask slice b*H + h when 3-D, plus the key
padding mask row b), SDPA with scale 1/sqrt(D) (the f64 value) and the SEMANTICS.md
dropout keep-mask over [B, H, L, S'], then out_proj on the concatenated heads. Weights are
P after dropout, averaged over heads or per head. A fully masked row gives 0 weights and a
zero attention output (so the output is out_proj's bias), not PyTorch's NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mpmath import mp, mpf

import sdpa_math as sm
from cases import distribution


@dataclass
class MhaCase:
    e: int = 8
    h: int = 2
    kdim: int | None = None
    vdim: int | None = None
    sep: bool = False  # use_separate_proj_weight
    b: int = 2
    l: int = 3  # noqa: E741
    s: int = 4
    batch_first: bool = False
    bias: bool = True
    add_bias_kv: bool = False
    add_zero_attn: bool = False
    kpm: str = "none"  # key_padding_mask: none | bool | float
    am: str = "none"  # attn_mask: none | bool | float
    am_rank: int = 2
    need_weights: bool = True
    average: bool = True
    is_causal: bool = False
    p: float = 0.0
    dseed: int = 0
    doff: int = 0
    seed: int = 0
    family: str = "mha"
    note: str = ""
    masked_batch: int = -1  # key padding mask: ignore every key of this batch element

    @property
    def name(self):
        t = [f"mha.e{self.e}.h{self.h}", f"b{self.b}.l{self.l}.s{self.s}"]
        if self.kdim is not None:
            t.append(f"kdim{self.kdim}")
        if self.vdim is not None:
            t.append(f"vdim{self.vdim}")
        for flag, txt in ((self.sep, "sep"), (self.batch_first, "bf"), (not self.bias, "nobias"),
                          (self.add_bias_kv, "biaskv"), (self.add_zero_attn, "zeroattn"),
                          (not self.need_weights, "noweights"),
                          (self.need_weights and not self.average, "perhead"),
                          (self.is_causal, "causal")):
            if flag:
                t.append(txt)
        if self.kpm != "none":
            t.append(f"kpm={self.kpm}")
        if self.am != "none":
            t.append(f"am={self.am}{self.am_rank}")
        if self.p:
            t.append(f"p{self.p}")
        t.append(f"seed{self.seed}")
        return ".".join(t)


def _arr(seed, tag, shape, scale=1.0):
    n = int(np.prod(shape))
    return scale * distribution("normal", seed, 100 + tag, n).reshape(shape)


def _mask(kind, seed, tag, shape):
    n = int(np.prod(shape))
    w = distribution("bits", seed, 100 + tag, n).reshape(shape)
    if kind == "bool":
        return (w % 4 == 0).astype(np.uint8)  # 1 = IGNORE, a quarter of the keys
    vals = 2.0 * distribution("normal", seed, 120 + tag, n).reshape(shape)
    return np.where(w == 0, -math.inf, vals)


def make_inputs(c: MhaCase):
    E, B, L, S, H = c.e, c.b, c.l, c.s, c.h
    kd = E if c.kdim is None else c.kdim
    vd = E if c.vdim is None else c.vdim
    x = {}
    seq = (lambda n, f: (B, n, f)) if c.batch_first else (lambda n, f: (n, B, f))
    x["query"] = _arr(c.seed, 1, seq(L, E))
    x["key"] = _arr(c.seed, 2, seq(S, kd))
    x["value"] = _arr(c.seed, 3, seq(S, vd))
    ws = 1.0 / math.sqrt(max(E, 1))
    if c.sep:
        x["q_proj_weight"] = _arr(c.seed, 4, (E, E), ws)
        x["k_proj_weight"] = _arr(c.seed, 5, (E, kd), ws)
        x["v_proj_weight"] = _arr(c.seed, 6, (E, vd), ws)
    else:
        x["in_proj_weight"] = _arr(c.seed, 7, (3 * E, E), ws)
    if c.bias:
        x["in_proj_bias"] = _arr(c.seed, 8, (3 * E,), 0.1)
    if c.add_bias_kv:
        x["bias_k"] = _arr(c.seed, 9, (E,))
        x["bias_v"] = _arr(c.seed, 10, (E,))
    x["out_proj_weight"] = _arr(c.seed, 11, (E, E), ws)
    if c.bias:
        x["out_proj_bias"] = _arr(c.seed, 12, (E,), 0.1)
    if c.kpm != "none":
        m = _mask(c.kpm, c.seed, 13, (B, S))
        if c.masked_batch >= 0:
            m[c.masked_batch, :] = 1 if c.kpm == "bool" else -math.inf
        x["key_padding_mask"] = m
    if c.am != "none":
        shape = (B * H, L, S) if c.am_rank == 3 else (L, S)
        if c.is_causal:
            causal = np.triu(np.ones((L, S), dtype=bool), 1)
            one = causal.astype(np.uint8) if c.am == "bool" else np.where(causal, -math.inf, 0.0)
            m = np.broadcast_to(one, shape).copy()
        else:
            m = _mask(c.am, c.seed, 14, shape)
        x["attn_mask"] = m
    return x


def _canonical(kind, v):
    if kind == "bool":
        return -math.inf if v else 0.0
    return float(v)


def compute(c: MhaCase, x):
    E, B, L, S, H = c.e, c.b, c.l, c.s, c.h
    D = E // H
    Sp = S + int(c.add_bias_kv) + int(c.add_zero_attn)
    kd = E if c.kdim is None else c.kdim
    vd = E if c.vdim is None else c.vdim

    def tok(name, t, b):
        a = x[name]
        return a[b, t] if c.batch_first else a[t, b]

    if c.sep:
        W = [x["q_proj_weight"], x["k_proj_weight"], x["v_proj_weight"]]
    else:
        W = [x["in_proj_weight"][i * E:(i + 1) * E] for i in range(3)]
    out = np.zeros((B, L, E) if c.batch_first else (L, B, E))
    w_shape = (B, L, Sp) if c.average else (B, H, L, Sp)
    weights = np.zeros(w_shape) if c.need_weights else None
    thr = sm.dropout_threshold(c.p)
    with mp.workdps(sm.PRECISION_DIGITS):
        to_mp = lambda a: [mpf(float(v)) for v in a]  # noqa: E731
        Wm = [[to_mp(row) for row in w] for w in W]
        bias = [to_mp(x["in_proj_bias"][i * E:(i + 1) * E]) if c.bias else [mpf(0)] * E
                for i in range(3)]
        Wo = [to_mp(row) for row in x["out_proj_weight"]]
        bo = to_mp(x["out_proj_bias"]) if c.bias else [mpf(0)] * E
        keep_scale = mpf(1) / (mpf(1) - mpf(c.p))
        scale = mpf(1.0 / math.sqrt(D)) if D > 0 else mpf(1)

        def proj(which, vec):
            v = to_mp(vec)
            return [bias[which][r] + (mp.fdot(Wm[which][r], v) if v else 0) for r in range(E)]

        for b in range(B):
            qp = [proj(0, tok("query", t, b)) for t in range(L)]
            kp = [proj(1, tok("key", t, b)) for t in range(S)]
            vp = [proj(2, tok("value", t, b)) for t in range(S)]
            if c.add_bias_kv:
                kp.append(to_mp(x["bias_k"]))
                vp.append(to_mp(x["bias_v"]))
            if c.add_zero_attn:
                kp.append([mpf(0)] * E)
                vp.append([mpf(0)] * E)
            heads_o = [[None] * L for _ in range(H)]
            for h in range(H):
                sl = slice(h * D, (h + 1) * D)
                for i in range(L):
                    att, logits = [], []
                    for j in range(Sp):
                        bias_ij = 0.0
                        if j < S:
                            if c.am != "none":
                                am = x["attn_mask"]
                                v = am[b * H + h, i, j] if c.am_rank == 3 else am[i, j]
                                bias_ij += _canonical(c.am, v)
                            if c.kpm != "none":
                                bias_ij += _canonical(c.kpm, x["key_padding_mask"][b, j])
                        if bias_ij == -math.inf:
                            continue
                        s = scale * mp.fdot(qp[i][sl], kp[j][sl]) + mpf(bias_ij)
                        att.append(j)
                        logits.append(s)
                    ds = None
                    if c.p:
                        ds = [keep_scale if sm.dropout_keep(c.dseed, c.doff, thr, b, h, i, j, H, L,
                                                            Sp) else mpf(0) for j in att]
                    o, _, pw = sm.attention_row(logits, [vp[j][sl] for j in att],
                                                [[0.0] * D for _ in att], ds, D)
                    heads_o[h][i] = (o, dict(zip(att, pw)))
                    if weights is not None and not c.average:
                        for j, wv in zip(att, pw):
                            weights[b, h, i, j] = sm.round_mpf_to_f64(wv)
            for i in range(L):
                concat = []
                for h in range(H):
                    concat += heads_o[h][i][0]
                row = [bo[r] + mp.fdot(Wo[r], concat) for r in range(E)]
                dst = out[b, i] if c.batch_first else out[i, b]
                dst[:] = [sm.round_mpf_to_f64(v) for v in row]
                if weights is not None and c.average:
                    for j in range(Sp):
                        tot = mp.fsum(heads_o[h][i][1].get(j, mpf(0)) for h in range(H))
                        weights[b, i, j] = sm.round_mpf_to_f64(tot / H)
    return out, weights


def generate(c: MhaCase):
    x = make_inputs(c)
    out, w = compute(c, x)
    datasets = []
    for name in ("query", "key", "value", "in_proj_weight", "q_proj_weight", "k_proj_weight",
                 "v_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj_weight",
                 "out_proj_bias", "key_padding_mask", "attn_mask"):
        if name in x:
            a = x[name]
            if a.dtype == np.uint8:
                datasets.append((name, a.astype("u1"), {"dtype": "bool"}))
            else:
                datasets.append((name, a.astype("<f8"), {}))
    datasets.append(("out", out.astype("<f8"), {}))
    if w is not None:
        datasets.append(("weights", w.astype("<f8"), {}))
    kd = c.e if c.kdim is None else c.kdim
    vd = c.e if c.vdim is None else c.vdim
    attrs = {
        "embed_dim": np.int64(c.e), "num_heads": np.int64(c.h), "kdim": np.int64(kd),
        "vdim": np.int64(vd), "use_separate_proj_weight": np.int64(c.sep),
        "batch": np.int64(c.b), "len_q": np.int64(c.l), "len_kv": np.int64(c.s),
        "batch_first": np.int64(c.batch_first), "bias": np.int64(c.bias),
        "add_bias_kv": np.int64(c.add_bias_kv), "add_zero_attn": np.int64(c.add_zero_attn),
        "key_padding_mask": c.kpm, "attn_mask": c.am, "attn_mask_rank": np.int64(c.am_rank),
        "need_weights": np.int64(c.need_weights),
        "average_attn_weights": np.int64(c.average), "is_causal": np.int64(c.is_causal),
        "dropout_p": float(c.p), "dropout_seed": np.uint64(c.dseed),
        "dropout_offset": np.uint64(c.doff), "seed": np.uint64(c.seed), "family": c.family,
        "note": c.note,
    }
    return datasets, attrs


def _cases(specs, seed0):
    out = []
    for n, kw in enumerate(specs):
        out.append(MhaCase(seed=seed0 + n, **kw))
    return out


def smoke_cases():
    return _cases([
        dict(note="packed in_proj, biases, averaged weights"),
        dict(sep=True, kdim=5, vdim=3, note="separate projections, kdim and vdim != E"),
        dict(kpm="bool", am="float", note="bool key padding mask + float attn_mask"),
        dict(add_bias_kv=True, add_zero_attn=True, kpm="bool", masked_batch=1,
             note="add_bias_kv, add_zero_attn, a batch element with every key padded"),
        dict(kpm="bool", masked_batch=0, bias=False, average=False,
             note="fully masked rows: weights 0, output = out_proj bias (0 without bias)"),
        dict(am="bool", am_rank=3, batch_first=True, average=False,
             note="3-D bool attn_mask (slice b*H + h), batch_first, per-head weights"),
        dict(am="bool", is_causal=True, l=4, s=4, note="is_causal hint with its causal mask"),
        dict(p=0.25, dseed=3, note="dropout on the weights, SEMANTICS.md keep-mask"),
        dict(need_weights=False, am="float", am_rank=3, note="need_weights=False"),
    ], 5000)


def ci_cases():
    specs = []
    for e, h in ((8, 2), (12, 3), (16, 4), (6, 1)):
        for kpm in ("none", "bool", "float"):
            for am in ("none", "bool", "float"):
                specs.append(dict(e=e, h=h, kpm=kpm, am=am, am_rank=2 if h % 2 else 3,
                                  note=f"E {e}, H {h}, key padding {kpm}, attn_mask {am}"))
    for bkv in (False, True):
        for za in (False, True):
            for bf in (False, True):
                specs.append(dict(add_bias_kv=bkv, add_zero_attn=za, batch_first=bf,
                                  kpm="float", note="appended keys and layouts"))
    specs += [
        dict(sep=True, kdim=3, vdim=9, b=3, l=2, s=5, average=False, note="kdim/vdim"),
        dict(b=1, l=1, s=1, note="one token"),
        dict(b=3, l=5, s=2, kpm="bool", masked_batch=2, add_zero_attn=True,
             note="add_zero_attn keeps a padded batch element attended"),
        dict(p=0.5, dseed=9, doff=77, add_bias_kv=True, average=False, note="dropout"),
        dict(p=0.1, dseed=1, need_weights=False, note="dropout without weights"),
        dict(am="float", is_causal=True, l=5, s=5, am_rank=3, note="is_causal with float mask"),
        dict(e=32, h=4, b=2, l=6, s=7, kpm="bool", am="bool", note="larger"),
    ]
    return smoke_cases() + _cases(specs, 6000)
