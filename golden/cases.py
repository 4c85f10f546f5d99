"""SDPA cases of the golden generator: the problem, its canonical case ID, tensor layouts,
the input data (our own seeded Philox stream) and the expected outputs.

The case-ID grammar is docs/CASE_ID.md's (core/case_id.cpp prints the same strings; the
C++ tests check that every group name in a golden file is canonical).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from dataclasses import dataclass, field

import numpy as np
from mpmath import mp, mpf

import sdpa_math as sm

# ----------------------------------------------------------------------------- the problem


@dataclass
class Prob:
    b: int
    hq: int
    hkv: int
    l: int  # noqa: E741  (the grammar's name)
    s: int
    dqk: int
    dv: int
    dtype: str
    causal: str | None = None  # 'tl' | 'br'
    window: tuple | None = None  # (left, right, 'tl' | 'br'); -1 = unbounded
    mask: str | None = None  # 'bool' | 'add'
    mbc: str = ""  # broadcast dimensions of the mask, letters of 'bhls'
    qlen: list | None = None
    kvlen: list | None = None
    packed: bool = False
    softcap: float = 0.0
    scale: float | None = None
    p: float = 0.0
    dseed: int = 0
    doff: int = 0
    layout: str = "bhsd"  # 'bhsd' | 'bshd'
    gap: int = 0
    off: int = 0
    strides: dict | None = None  # explicit {'q': (s0, s1, s2, s3, base), 'k', 'v', 'o'}
    lse: bool = True
    attnw: bool = False
    bwd: bool = False  # also dO and the expected gradients (schema version 2)
    dbias: bool = False  # also d bias, the additive mask's gradient (with bwd and mask='add')
    seed: int = 0
    gen: str = "golden"

    # --- derived sizes
    def seqlen_q(self, b):
        return self.l if self.qlen is None else self.qlen[b]

    def seqlen_kv(self, b):
        return self.s if self.kvlen is None else self.kvlen[b]

    def cu(self, q_side):
        out = [0]
        for b in range(self.b):
            out.append(out[-1] + (self.seqlen_q(b) if q_side else self.seqlen_kv(b)))
        return out

    def rows_q(self):
        return self.cu(True)[-1] if self.packed else self.l

    def rows_kv(self):
        return self.cu(False)[-1] if self.packed else self.s

    def effective_scale(self):
        if self.scale is not None:
            return float(self.scale)
        return 1.0 / math.sqrt(self.dqk) if self.dqk > 0 else 1.0

    def view_shape(self, name):
        heads = self.hq if name in ("q", "o") else self.hkv
        rows = self.rows_q() if name in ("q", "o") else self.rows_kv()
        dim = self.dqk if name in ("q", "k") else self.dv
        return (1 if self.packed else self.b, heads, rows, dim)

    def named_layouts(self, kind, gap, off):
        """Strides and base offset of q, k, v, o for a named layout (as core's apply_layout)."""
        out = {}
        for name in ("q", "k", "v", "o"):
            _, heads, rows, dim = self.view_shape(name)
            if kind == "bhsd":
                row = dim + gap
                st = [heads * rows * row, rows * row, row, 1]
            else:
                row = heads * dim + gap
                st = [rows * row, dim, row, 1]
            if self.packed:
                st[0] = 0
            out[name] = (tuple(st), off)
        return out

    def layouts(self):
        if self.strides is not None:
            return {n: (tuple(v[:4]), v[4]) for n, v in self.strides.items()}
        return self.named_layouts(self.layout, self.gap, self.off)

    def mask_shape(self):
        """Shape of the stored mask: 1 in broadcast dimensions."""
        full = (self.b, self.hq, self.l, self.s)
        return tuple(1 if c in self.mbc else n for c, n in zip("bhls", full))

    def case_id(self) -> str:
        t = [f"b{self.b}", f"hq{self.hq}", f"hkv{self.hkv}", f"l{self.l}", f"s{self.s}",
             f"dqk{self.dqk}", f"dv{self.dv}", self.dtype]
        if self.causal:
            t.append(f"causal={self.causal}")
        if self.window is not None:
            left, right, align = self.window
            t.append(f"win={left}_{right}_{align}")
        if self.mask:
            t.append(f"mask={self.mask}")
        if self.mbc:
            t.append("mbc=" + "".join(c for c in "bhls" if c in self.mbc))
        if self.qlen is not None:
            t.append("qlen=" + "_".join(map(str, self.qlen)))
        if self.kvlen is not None:
            t.append("kvlen=" + "_".join(map(str, self.kvlen)))
        if self.packed:
            t.append("packed")
        if self.softcap:
            t.append("softcap=" + format_real(self.softcap))
        if self.scale is not None:
            t.append("scale=" + format_real(self.scale))
        if self.p:
            t.append("p" + format_real(self.p))
        if self.dseed:
            t.append(f"dseed{self.dseed}")
        if self.doff:
            t.append(f"doff{self.doff}")
        t += self._layout_tokens()
        if self.lse:
            t.append("lse")
        if self.attnw:
            t.append("attnw")
        if self.bwd:
            t.append("bwd")
        if self.dbias:
            t.append("dbias")
        t.append(f"seed{self.seed}")
        t.append(f"gen={self.gen}")
        return ".".join(t)

    def _layout_tokens(self):
        lay = self.layouts()
        for kind in ("bhsd", "bshd"):
            _, heads, rows, dim = self.view_shape("q")
            width = dim if kind == "bhsd" else heads * dim
            gap = lay["q"][0][2] - width
            if gap < 0:
                continue
            if self.named_layouts(kind, gap, lay["q"][1]) == lay:
                t = [] if kind == "bhsd" else ["lay=bshd"]
                if gap:
                    t.append(f"gap={gap}")
                if lay["q"][1]:
                    t.append(f"off={lay['q'][1]}")
                return t
        return [f"{n}st=" + "_".join(map(str, list(lay[n][0]) + [lay[n][1]]))
                for n in ("q", "k", "v", "o")]


def format_real(x: float) -> str:
    """Shortest round-trip decimal form, fixed or scientific, whichever is shorter (fixed on
    a tie), exponent with a sign and at least two digits: the form C++'s std::to_chars gives."""
    x = float(x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digit_tuple, exp = decimal.Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digit_tuple))
    while len(digits) > 1 and digits.endswith("0"):
        digits, exp = digits[:-1], exp + 1
    n = len(digits)
    if exp >= 0:
        fixed = digits + "0" * exp
    elif n > -exp:
        fixed = digits[: n + exp] + "." + digits[n + exp:]
    else:
        fixed = "0." + "0" * (-exp - n) + digits
    e10 = exp + n - 1
    mant = digits[0] + ("." + digits[1:] if n > 1 else "")
    sci = f"{mant}e{'-' if e10 < 0 else '+'}{abs(e10):02d}"
    return sign + (fixed if len(fixed) <= len(sci) else sci)


# ----------------------------------------------------------------------------- data


TAGS = {"q": 1, "k": 2, "v": 3, "mask": 4, "d_out": 5}
_SQRT3 = math.sqrt(3.0)


def _words(seed, tag, n, stream):
    idx = np.arange(n, dtype=np.uint64)
    return sm.philox4x32_10_np(idx & np.uint64(0xFFFFFFFF), idx >> np.uint64(32),
                               np.full(n, tag, np.uint64), np.full(n, stream, np.uint64),
                               seed & 0xFFFFFFFF, seed >> 32)


def distribution(kind, seed, tag, n):
    """n binary64 values of a named distribution, exact arithmetic on Philox words plus at
    most one rounding (no libm call, so the same bits on every machine)."""
    w = _words(seed, tag, n, 0)
    two32 = 4294967296.0
    u53 = ((w[0] >> np.uint64(5)).astype(np.float64) * 67108864.0 +
           (w[1] >> np.uint64(6)).astype(np.float64)) / 9007199254740992.0  # [0, 1), exact
    if kind == "normal":  # Irwin-Hall of four uniforms, unit variance, |x| < 3.47
        s = (w[0].astype(np.float64) + w[1] + w[2] + w[3]) / two32
        return (s - 2.0) * _SQRT3
    if kind == "uniform":  # [-1, 1)
        return 2.0 * u53 - 1.0
    if kind == "unit":  # [1, 2)
        return 1.0 + u53
    if kind == "int":  # {-2, ..., 2}: every product and sum is exact
        return (w[0] % np.uint64(5)).astype(np.float64) - 2.0
    if kind == "sparse":  # 80% zeros
        s = (w[0].astype(np.float64) + w[1] + w[2] + w[3]) / two32
        keep = (_words(seed, tag, n, 1)[0] % np.uint64(5)) == 0
        return np.where(keep, (s - 2.0) * _SQRT3, 0.0)
    if kind == "sign":  # +-1 with a [1, 2) magnitude
        return np.where((w[2] & np.uint64(1)) == 1, -1.0, 1.0) * (1.0 + u53)
    if kind == "bits":  # raw 0 / 1 / 2 / 3 (masks)
        return (w[3] & np.uint64(7)).astype(np.float64)
    raise ValueError(f"unknown distribution {kind}")


@dataclass
class Flavor:
    """How a case's data look: a distribution and scale per tensor, the mask pattern, and
    planted values (NaN, inf, -inf blocks, fully masked rows)."""
    name: str = "normal"
    q: tuple = ("normal", 1.0)
    k: tuple = ("normal", 1.0)
    v: tuple = ("normal", 1.0)
    mask: str = "random"  # additive: random (scale*normal, 1/8 -inf), finite, neg_finite
    mask_scale: float = 2.0
    plant: tuple = ()


def _offsets(shape, strides, base):
    idx = np.indices(shape, dtype=np.int64) if all(shape) else None
    if idx is None:
        return np.zeros(shape, dtype=np.int64)
    return base + sum(idx[a] * strides[a] for a in range(4))


def _round_array(x, fmt):
    if fmt == "f64":
        return x.astype(np.float64)
    return np.array([sm.round_float(float(v), fmt) for v in x.reshape(-1)],
                    dtype=np.float64).reshape(x.shape)


def make_inputs(pr: Prob, fl: Flavor):
    """The logical inputs (binary64 arrays holding values of the element type, in view
    shapes; the mask in its stored shape). Values are drawn per memory offset, so tensors
    whose strides alias memory (stride 0) hold the same value at aliased elements."""
    lay = pr.layouts()
    out = {}
    for name in ("q", "k", "v"):
        shape = pr.view_shape(name)
        st, base = lay[name]
        offs = _offsets(shape, st, base)
        extent = int(offs.max()) + 1 if offs.size else 0
        kind, scale = getattr(fl, name)[:2]
        shift = getattr(fl, name)[2] if len(getattr(fl, name)) > 2 else 0.0
        mem = shift + scale * distribution(kind, pr.seed, TAGS[name], extent)
        mem = _round_array(mem, pr.dtype)
        out[name] = mem[offs] if offs.size else np.zeros(shape)
    if pr.mask:
        shape = pr.mask_shape()
        n = int(np.prod(shape))
        w = distribution("bits", pr.seed, TAGS["mask"], n).reshape(shape)
        if pr.mask == "bool":
            m = (w % 4 != 0).astype(np.float64)  # 3/4 attend
        else:
            vals = fl.mask_scale * distribution("normal", pr.seed, TAGS["mask"] + 16,
                                                n).reshape(shape)
            if fl.mask == "random":  # 1/8 of the entries -inf
                m = np.where(w == 0, -math.inf, vals)
            elif fl.mask == "neg_finite":  # every entry in [-2c, -c): large, finite, no mask
                m = -fl.mask_scale * distribution("unit", pr.seed, TAGS["mask"] + 32,
                                                  n).reshape(shape)
            else:
                m = vals
            m = _round_array(m, pr.dtype)
        out["mask"] = m
    for op in fl.plant:
        _plant(pr, out, op)
    if pr.bwd:  # dO in O's layout: N(0, 1) stand-ins, per memory offset like the inputs
        shape = pr.view_shape("o")
        st, base = lay["o"]
        offs = _offsets(shape, st, base)
        extent = int(offs.max()) + 1 if offs.size else 0
        mem = _round_array(distribution("normal", pr.seed, TAGS["d_out"], extent), pr.dtype)
        out["d_out"] = mem[offs] if offs.size else np.zeros(shape)
    return out


def _plant(pr: Prob, t, op):
    """Planted special values; each is a named SEMANTICS.md rule."""
    name = op if isinstance(op, str) else op[0]
    q, k, v, m = t["q"], t["k"], t["v"], t.get("mask")
    if name == "nan_beyond":  # storage beyond the valid lengths: must change nothing
        assert not pr.packed
        for b in range(pr.b):
            q[b, :, pr.seqlen_q(b):, :] = math.nan
            k[b, :, pr.seqlen_kv(b):, :] = math.nan
            v[b, :, pr.seqlen_kv(b):, :] = math.nan
            if m is not None and pr.mask == "add":
                mb = 0 if "b" in pr.mbc else b
                if "s" not in pr.mbc:
                    m[mb, :, :, pr.seqlen_kv(b):] = math.nan
                if "l" not in pr.mbc:
                    m[mb, :, pr.seqlen_q(b):, :] = math.nan
    elif name == "nan_q":  # NaN in Q_i: row i is NaN
        q[0, 0, op[1], 0] = math.nan
    elif name == "nan_k":  # NaN in an attended K_j: every row attending j is NaN
        k[0, 0, op[1], 0] = math.nan
    elif name == "nan_v":  # NaN in V_jd: column d of the rows attending j
        v[0, 0, op[1], op[2]] = math.nan
    elif name == "inf_q":  # +-inf in Q: logits +-inf or NaN (IEEE)
        q[0, 0, op[1], 0] = op[2]
    elif name == "inf_k":
        k[0, 0, op[1], 0] = op[2]
    elif name == "inf_v":
        v[0, 0, op[1], op[2]] = op[3]
    elif name == "nan_bias":
        m[0, 0, op[1], op[2]] = math.nan
    elif name == "inf_bias":
        m[0, 0, op[1], op[2]] = op[3]
    elif name == "masked_row":  # a row with every key masked by the mask tensor
        i = op[1]
        if pr.mask == "bool":
            m[:, :, i, :] = 0
        else:
            m[:, :, i, :] = -math.inf
    elif name == "neg_inf_block":  # -inf blocks: keys [S/2, S) of rows [0, L/2)
        m[:, :, : max(1, m.shape[2] // 2), m.shape[3] // 2:] = -math.inf
    elif name == "all_attend":  # a bool mask that attends every key (no random holes)
        m[...] = 1
    else:
        raise ValueError(f"unknown planted value {op}")


# ----------------------------------------------------------------------------- compute


def _allowed(pr: Prob, i, j, lb, sb):
    if pr.causal == "tl" and j > i:
        return False
    if pr.causal == "br" and j > i + sb - lb:
        return False
    if pr.window is not None:
        left, right, align = pr.window
        off = 0 if align == "tl" else sb - lb
        if left >= 0 and j < i + off - left:
            return False
        if right >= 0 and j > i + off + right:
            return False
    return True


def row_logits(pr: Prob, m, b, h, i, qr, qf, krows, krows_f, scale, cap):
    """The attended keys of query row i of head h, batch element b, with their final logits
    (mpf, after softcap and bias) and softcap's derivative 1 - tanh^2 at each (1 without
    softcap): (att, logits, tprime). Masks and the structural rules decide the keys."""
    lb, sb = pr.seqlen_q(b), pr.seqlen_kv(b)
    att, logits, tprime = [], [], []
    for j in range(sb):
        if not _allowed(pr, i, j, lb, sb):
            continue
        bias = None
        if m is not None:
            mi = tuple(0 if c in pr.mbc else x for c, x in zip("bhls", (b, h, i, j)))
            mv = float(m[mi])
            if pr.mask == "bool":
                if mv == 0:
                    continue
            elif mv == -math.inf:
                continue
            else:
                bias = mv
        s = scale * sm.dot(qr, krows[j], qf, krows_f[j])
        tp = mpf(1)
        if pr.softcap:
            th = mp.tanh(s / cap)
            s = cap * th
            tp = 1 - th * th
        if bias is not None:
            s = s + mpf(bias)
        if mp.isinf(s) and s < 0:
            # A final logit of -inf, whatever made it, takes no part: a row whose logits are
            # all -inf is fully masked (O = 0, LSE = -inf), as PyTorch's _safe_softmax decides
            # on the logits themselves.
            continue
        att.append(j)
        logits.append(s)
        tprime.append(tp)
    return att, logits, tprime


def compute(pr: Prob, t):
    """Expected O [B, Hq, L, Dv], LSE [B, Hq, L] and, when asked, weights [B, Hq, L, S]
    (after dropout) as binary64 arrays, each element the exact value rounded once."""
    B, H, L, S, Dv = pr.b, pr.hq, pr.l, pr.s, pr.dv
    o = np.zeros((B, H, L, Dv))
    lse = np.full((B, H, L), -math.inf)
    w = np.zeros((B, H, L, S)) if pr.attnw else None
    if B * H * L == 0:
        return o, lse, w
    group = H // pr.hkv
    cuq, cuk = pr.cu(True), pr.cu(False)
    thr = sm.dropout_threshold(pr.p)
    q, k, v, m = t["q"], t["k"], t["v"], t.get("mask")
    with mp.workdps(sm.PRECISION_DIGITS):
        scale = mpf(pr.effective_scale())
        cap = mpf(pr.softcap)
        keep_scale = mpf(1) / (mpf(1) - mpf(pr.p))
        for b in range(B):
            lb, sb = pr.seqlen_q(b), pr.seqlen_kv(b)
            qb = 0 if pr.packed else b
            q0 = cuq[b] if pr.packed else 0
            k0 = cuk[b] if pr.packed else 0
            for h in range(H):
                hk = h // group
                krows_f = [list(map(float, k[qb, hk, k0 + j])) for j in range(sb)]
                vrows_f = [list(map(float, v[qb, hk, k0 + j])) for j in range(sb)]
                krows = [[mpf(x) for x in r] for r in krows_f]
                vrows = [[mpf(x) for x in r] for r in vrows_f]
                for i in range(lb):
                    qf = list(map(float, q[qb, h, q0 + i]))
                    qr = [mpf(x) for x in qf]
                    att, logits, _ = row_logits(pr, m, b, h, i, qr, qf, krows, krows_f, scale,
                                                cap)
                    ds = None
                    if pr.p:
                        ds = [keep_scale if sm.dropout_keep(pr.dseed, pr.doff, thr, b, h, i, j, H,
                                                            L, S) else mpf(0) for j in att]
                    ro, rl, rw = sm.attention_row(logits, [vrows[j] for j in att],
                                                  [vrows_f[j] for j in att], ds, Dv)
                    o[b, h, i] = [sm.round_mpf_to_f64(x) for x in ro]
                    lse[b, h, i] = sm.round_mpf_to_f64(rl)
                    if w is not None:
                        for j, x in zip(att, rw):
                            w[b, h, i, j] = sm.round_mpf_to_f64(x)
    return o, lse, w


@dataclass
class Case:
    prob: Prob
    flavor: Flavor = field(default_factory=Flavor)
    family: str = ""
    note: str = ""

    @property
    def case_id(self):
        return self.prob.case_id()

    def replace(self, **kw):
        return dataclasses.replace(self, prob=dataclasses.replace(self.prob, **kw))
