"""The committed golden sets: `smoke` (tiny, regenerated in CI) and `ci` (the smoke cases
plus sweeps over every family of docs/TESTING.md that static data can express, and the edge
cases of known numeric pitfalls of attention kernels: overflow-prone and strongly negative
logits, V near the type's maximum, subnormals, fully masked rows, non-finite inputs).

Each case gets a distinct seed (BASE_SEED + running number), so no two cases share an ID.
"""

from __future__ import annotations

import math

import mha
from cases import Case, Flavor, Prob

BASE_SEED = {"smoke": 1000, "ci": 1000, "backward": 3000}

# ----------------------------------------------------------------------------- flavors

NORMAL = Flavor()
UNIFORM = Flavor("uniform", q=("uniform", 1.0), k=("uniform", 1.0), v=("uniform", 1.0))
INT = Flavor("int", q=("int", 1.0), k=("int", 1.0), v=("int", 1.0))
SPARSE = Flavor("sparse", q=("sparse", 1.0), k=("sparse", 1.0), v=("sparse", 1.0))
# |s| ~ 1e4 with Dqk = 8 (s = scale * q.k, scale = 1/sqrt(8))
LARGE_LOGITS = Flavor("large_logits", q=("normal", 60.0), k=("normal", 60.0))
# logits spread over ~ +-88 (exp overflows f32 without the max subtracted)
LOGITS_88 = Flavor("logits_88", q=("normal", 5.0), k=("normal", 5.0))
# every logit ~ -1e4 ... -1e5: LSE far below -88.7 (cudnn-frontend PR #628)
NEG_LOGITS = Flavor("negative_logits", q=("unit", 100.0), k=("unit", -100.0))
SOFTCAP_BIG = Flavor("softcap_large_logits", q=("normal", 8.0), k=("normal", 8.0))


def v_near_max(dtype):
    top = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
           "f64": 1.7976931348623157e308}[dtype]
    return Flavor(f"v_near_{dtype}_max", v=("sign", top / 2))


def denormal(dtype):
    tiny = {"f16": 2.0 ** -20, "bf16": 2.0 ** -130, "f32": 2.0 ** -140, "f64": 2.0 ** -1060}[dtype]
    return Flavor(f"{dtype}_denormals", q=("normal", 0.01), k=("normal", 0.01), v=("normal", tiny))


def plant(base: Flavor, name: str, *ops) -> Flavor:
    return Flavor(name, base.q, base.k, base.v, base.mask, base.mask_scale, tuple(ops))


class Builder:
    def __init__(self, seed):
        self.seed = seed
        self.cases = []

    def add(self, family, note, flavor=NORMAL, **kw):
        kw.setdefault("b", 1)
        kw.setdefault("hq", 2)
        kw.setdefault("hkv", kw["hq"])
        kw.setdefault("l", 5)
        kw.setdefault("s", 7)
        kw.setdefault("dqk", 8)
        kw.setdefault("dv", kw["dqk"])
        kw.setdefault("dtype", "f32")
        pr = Prob(seed=self.seed, **kw)
        self.seed += 1
        self.cases.append(Case(pr, flavor, family, note))


# ----------------------------------------------------------------------------- smoke


def smoke_cases(bld: Builder):
    a = bld.add
    # dtype and data generators
    for dt in ("f64", "f32", "f16", "bf16"):
        a("dtype", f"{dt} inputs, output rounding", dtype=dt, attnw=True)
    a("generators", "uniform data", UNIFORM)
    a("generators", "small integers: exact in f32", INT, dtype="f32")
    a("generators", "sparse data (80% zeros)", SPARSE, dtype="bf16")
    # GQA and head dims
    a("gqa", "Hq/Hkv = 2: contiguous groups", hq=4, hkv=2)
    a("gqa", "one KV head for all query heads", hq=4, hkv=1, dtype="bf16")
    a("head_dims", "Dv < Dqk", dqk=8, dv=4)
    a("head_dims", "Dv > Dqk, odd dims", dqk=3, dv=5, dtype="f16")
    # causal alignments with L < S, L = S, L > S
    for al in ("tl", "br"):
        for l, s in ((3, 7), (6, 6), (7, 3)):
            a("masks", f"causal {al}, L={l}, S={s}" + (" (rows fully masked)" if al == "br" and l > s
                                                       else ""), causal=al, l=l, s=s, attnw=True)
    # windows at the edges
    S = 7
    for left, right, al in ((0, 0, "tl"), (1, 0, "br"), (S - 2, 0, "br"), (S - 1, 0, "br"),
                            (S, 0, "br"), (-1, 2, "tl"), (2, -1, "br"), (1, 1, "tl")):
        a("windows", f"window ({left}, {right}) aligned {al}", l=5, s=S, window=(left, right, al))
    a("windows", "window that misses every key of some rows (fully masked)", l=6, s=3,
      window=(0, 0, "tl"), dtype="bf16")
    # mask tensors
    a("masks", "bool mask (true = attend)", mask="bool")
    a("masks", "additive mask with -inf entries", mask="add")
    a("masks", "additive mask broadcast over batch and heads", mask="add", mbc="bh", b=2)
    a("masks", "bool mask broadcast over rows", mask="bool", mbc="l", dtype="f16")
    a("masks", "-inf blocks", plant(NORMAL, "neg_inf_block", "neg_inf_block"), mask="add",
      dtype="bf16")
    a("masks", "bool mask with a fully masked row", plant(NORMAL, "masked_row", ("masked_row", 2)),
      mask="bool", attnw=True)
    a("masks", "additive mask with a fully -inf row",
      plant(NORMAL, "masked_row", ("masked_row", 1)), mask="add", dtype="f16")
    # softcap (before the mask), scale
    a("softcap", "softcap saturating large logits", SOFTCAP_BIG, softcap=5.0)
    a("softcap", "-inf mask entries stay -inf after softcap", SOFTCAP_BIG, softcap=5.0, mask="add",
      dtype="bf16")
    a("scale", "negative scale", scale=-0.5)
    a("scale", "custom scale", scale=0.125, dtype="f16")
    # variable lengths
    a("varlen", "padded varlen with empty sequences, NaN beyond the lengths",
      plant(NORMAL, "nan_beyond", "nan_beyond"), b=3, l=4, s=6, qlen=[4, 0, 2], kvlen=[3, 6, 0])
    a("varlen", "padded varlen, causal br, additive mask, NaN beyond the lengths",
      plant(NORMAL, "nan_beyond", "nan_beyond"), b=2, l=5, s=6, qlen=[5, 2], kvlen=[2, 6],
      causal="br", mask="add", dtype="f16")
    a("varlen", "packed varlen with empty sequences", b=4, l=4, s=5, qlen=[2, 0, 4, 1],
      kvlen=[5, 3, 0, 1], packed=True)
    a("varlen", "packed varlen, causal br, GQA", b=3, hq=4, hkv=2, l=3, s=6, qlen=[3, 1, 2],
      kvlen=[6, 0, 1], packed=True, causal="br", dtype="bf16")
    # non-finite inputs
    a("nonfinite", "NaN in Q row 1: that row is NaN", plant(NORMAL, "nan_q", ("nan_q", 1)))
    # (Non-finite values only where every row attends: at a masked position a backend may
    # skip or include them, SEMANTICS.md.)
    a("nonfinite", "NaN in K row 2, attended by every row: every row NaN",
      plant(NORMAL, "nan_k", ("nan_k", 2)), l=7, s=7)
    a("nonfinite", "NaN in V[2][1], attended by every row: column 1 NaN",
      plant(NORMAL, "nan_v", ("nan_v", 2, 1)), l=7, s=7, dtype="f16")
    a("nonfinite", "NaN in the additive mask at an attended position",
      plant(NORMAL, "nan_bias", "all_attend", ("nan_bias", 1, 3)), mask="add")
    a("nonfinite", "+inf in Q: logits +-inf, rows NaN (inf - inf)",
      plant(NORMAL, "inf_q", ("inf_q", 0, math.inf)))
    a("nonfinite", "+inf in V: column +-inf or NaN",
      plant(NORMAL, "inf_v", ("inf_v", 1, 0, math.inf)), dtype="bf16")
    a("nonfinite", "+inf in K with softcap: logit becomes +-c",
      plant(NORMAL, "inf_k", ("inf_k", 1, math.inf)), softcap=3.0)
    # empty problems
    a("empty", "B = 0", b=0)
    a("empty", "L = 0", l=0)
    a("empty", "S = 0: O = 0, LSE = -inf", s=0)
    a("empty", "Dqk = 0: every logit 0", dqk=0, dv=4)
    a("empty", "Dv = 0", dqk=4, dv=0)
    a("empty", "Hq = Hkv = 0", hq=0, hkv=0)
    # dropout
    a("dropout", "p = 0.2 with weights", p=0.2, dseed=7, attnw=True)
    a("dropout", "p = 0.5, counter offset", p=0.5, dseed=3, doff=1000, dtype="bf16")
    a("dropout", "p near 1", p=0.9, dseed=11, attnw=True, l=4, s=9)
    a("dropout", "dropout with GQA and causal br", p=0.3, dseed=5, hq=4, hkv=2, causal="br", l=4,
      s=6, attnw=True, dtype="f16")
    # adversarial data (bug list)
    a("adversarial", "S = 64 (= 64 mod 128) with every logit ~ -1e5 (LSE << -88.7)", NEG_LOGITS,
      hq=1, l=2, s=64, dtype="bf16")
    a("adversarial", "logits ~ 1e4", LARGE_LOGITS, dtype="f32")
    a("adversarial", "logits spread over +-88", LOGITS_88, dtype="f16")
    a("adversarial", "V near the f16 maximum", v_near_max("f16"), dtype="f16", s=9)
    a("adversarial", "f16 subnormal V", denormal("f16"), dtype="f16")
    # layouts
    a("layouts", "[B, L, H*D] layout (bshd)", layout="bshd", b=2)
    a("layouts", "gapped rows and a base offset", gap=3, off=1, dtype="bf16")
    a("layouts", "K and V broadcast over heads (stride 0)", hq=2, hkv=2, l=3, s=4, dqk=4,
      strides={"q": (24, 12, 4, 1, 0), "k": (16, 0, 4, 1, 0), "v": (16, 0, 4, 1, 0),
               "o": (24, 12, 4, 1, 0)}, b=2)
    # degenerate lengths and decode
    a("lengths", "S = 1", s=1)
    a("lengths", "L = 1 decode, GQA", l=1, s=17, hq=4, hkv=1, dtype="bf16")
    a("lengths", "B = Hq = L = S = 1", hq=1, l=1, s=1, dtype="f16")
    a("lengths", "L > S with causal br and batch > 1", b=2, l=9, s=4, causal="br", dtype="f16")


def smoke():
    bld = Builder(BASE_SEED["smoke"])
    smoke_cases(bld)
    return bld.cases, mha.smoke_cases()


# ----------------------------------------------------------------------------- ci


def ci():
    bld = Builder(BASE_SEED["ci"])
    smoke_cases(bld)
    ci_cases(bld)
    return bld.cases, mha.ci_cases()


def ci_cases(bld: Builder):
    a = bld.add
    dtypes = ("f64", "f32", "f16", "bf16")
    low = ("f32", "f16", "bf16")
    # A. dtype x data generator x shape
    for dt in dtypes:
        for fl in (NORMAL, UNIFORM, INT, SPARSE):
            for shp in (dict(hq=1, l=1, s=1, dqk=4), dict(b=2, hq=2, l=5, s=7, dqk=8),
                        dict(hq=4, hkv=2, l=9, s=13, dqk=16, dv=8)):
                a("dtype", f"{dt}, {fl.name} data", fl, dtype=dt, **shp)
    # B. causal alignments x L/S relations
    for dt in low:
        for c in (None, "tl", "br"):
            for l, s in ((3, 8), (8, 8), (8, 3), (1, 9), (9, 1)):
                a("masks", f"causal {c}, L={l}, S={s}", causal=c, l=l, s=s, dtype=dt, dqk=4, b=2)
    # C. windows at the edges
    S = 9
    for l in (4, 9, 12):
        for left in (0, 1, S - 2, S - 1, S, -1):
            for right in (0, 1, -1):
                for al in ("tl", "br"):
                    a("windows", f"window ({left}, {right}) {al}, L={l}, S={S}", l=l, s=S,
                      window=(left, right, al), hq=1, dqk=4)
    # D. causal and window together
    for c in ("tl", "br"):
        for win in ((3, 0, "br"), (2, 2, "tl"), (0, -1, "tl"), (-1, 1, "br"), (S, 0, "br")):
            a("windows", f"causal {c} and window {win}", causal=c, window=win, l=6, s=S, hq=1,
              dtype="bf16")
    # E. mask tensors and broadcasting
    for dt in low:
        for kind in ("bool", "add"):
            for bc in ("", "b", "h", "l", "s", "bh", "bhl", "hs"):
                a("masks", f"{kind} mask broadcast '{bc}'", mask=kind, mbc=bc, b=2, hq=2, l=4,
                  s=6, dtype=dt)
        a("masks", "-inf blocks", plant(NORMAL, "neg_inf_block", "neg_inf_block"), mask="add",
          dtype=dt, l=8, s=8)
        a("masks", "bool mask row fully masked",
          plant(NORMAL, "masked_row", ("masked_row", 0)), mask="bool", dtype=dt, attnw=True)
        a("masks", "additive mask row fully -inf", plant(NORMAL, "masked_row", ("masked_row", 3)),
          mask="add", dtype=dt)
        a("masks", "bool mask and causal br", mask="bool", causal="br", l=4, s=8, dtype=dt)
        a("masks", "additive mask and window", mask="add", window=(2, 1, "tl"), l=6, s=8,
          dtype=dt)
    # F. softcap
    for dt in low:
        for cap in (5.0, 30.0, 0.5):
            a("softcap", f"softcap {cap}", SOFTCAP_BIG, softcap=cap, dtype=dt)
            a("softcap", f"softcap {cap} with -inf mask entries", SOFTCAP_BIG, softcap=cap,
              mask="add", dtype=dt)
            a("softcap", f"softcap {cap} with causal br, L > S", SOFTCAP_BIG, softcap=cap,
              causal="br", l=8, s=5, dtype=dt)
    # G. scale
    for dt in ("f32", "bf16"):
        for sc in (-0.5, 0.125, 1.0, 2.0, 0.001):
            a("scale", f"scale {sc}", scale=sc, dtype=dt)
    # H. GQA
    for dt in ("f32", "bf16"):
        for hq, hkv in ((4, 2), (4, 1), (6, 3), (6, 2), (8, 2), (8, 8)):
            for c in (None, "br"):
                a("gqa", f"Hq {hq} / Hkv {hkv}", hq=hq, hkv=hkv, causal=c, l=3, s=6, dqk=4,
                  dtype=dt)
    # I. Dv != Dqk
    for dt in ("f32", "f16"):
        for dqk, dv in ((8, 4), (4, 12), (1, 1), (3, 5), (16, 1), (192, 128)):
            a("head_dims", f"Dqk {dqk}, Dv {dv}", dqk=dqk, dv=dv, hq=1, l=3, s=5, dtype=dt)
    # J. head dims (non-multiples of 8 and tile edges)
    for dt in ("f32", "bf16"):
        for d in (1, 2, 3, 5, 7, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 127, 128, 129, 192,
                  255, 256):
            a("head_dims", f"D = {d}", dqk=d, hq=1, l=2, s=5, dtype=dt)
    # K. key lengths at tile edges (decode and short L), query lengths for query splitting
    for s in (1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 113, 127, 128, 129, 203, 255, 256, 257,
              513, 1023):
        for l in (1, 3):
            for c in (None, "br"):
                a("lengths", f"S = {s}, L = {l}", l=l, s=s, causal=c, hq=1, dtype="bf16")
    for l in (65, 129, 257):
        for s in (3, 9):
            a("lengths", f"long L = {l} (query split), S = {s}", l=l, s=s, hq=1, dqk=4)
    for n in (65, 129):
        a("lengths", f"L = S = {n}, causal tl", l=n, s=n, hq=1, dqk=4, causal="tl",
          dtype="f16")
    # L. s_kv = 64 mod 128 with strongly negative logits (LSE << -88.7)
    for dt in low:
        for s in (64, 192, 320, 448):
            for l in (1, 4):
                a("adversarial", f"S = {s} (64 mod 128), logits ~ -1e5", NEG_LOGITS, s=s, l=l,
                  hq=1, dtype=dt, lse=True)
    # M. large logits
    for dt in low:
        for fl in (LARGE_LOGITS, LOGITS_88, NEG_LOGITS):
            for s in (7, 33):
                a("adversarial", f"{fl.name}, S = {s}", fl, s=s, dtype=dt)
    # N. V near the type's maximum
    for dt in low:
        for s in (7, 64, 200):
            for c in (None, "br"):
                a("adversarial", f"V near the {dt} maximum, S = {s}", v_near_max(dt), s=s, l=3,
                  causal=c, hq=1, dtype=dt)
    # O. subnormals
    for dt in low + ("f64",):
        for s in (7, 33):
            a("adversarial", f"{dt} subnormal V", denormal(dt), s=s, dtype=dt)
    # P. padded varlen
    patterns = (([4, 0, 2], [3, 6, 0]), ([1, 1, 1], [6, 1, 3]), ([0, 0, 0], [6, 6, 6]),
                ([4, 4, 4], [0, 0, 0]), ([4, 2, 3], [6, 5, 1]))
    for ql, kl in patterns:
        for c in (None, "tl", "br"):
            for mk in (None, "add"):
                a("varlen", f"padded varlen q {ql} kv {kl}, NaN beyond",
                  plant(NORMAL, "nan_beyond", "nan_beyond"), b=3, l=4, s=6, qlen=ql, kvlen=kl,
                  causal=c, mask=mk, dtype="f32" if mk else "bf16")
    # Q. packed varlen
    for dt in ("f32", "bf16"):
        for ql, kl in (([2, 0, 4, 1], [5, 3, 0, 1]), ([1, 1, 1, 1], [9, 0, 4, 2]),
                       ([3, 3, 0, 5], [3, 1, 7, 5])):
            for c in (None, "br"):
                a("varlen", f"packed varlen q {ql} kv {kl}", b=4, l=5, s=9, qlen=ql, kvlen=kl,
                  packed=True, causal=c, dtype=dt, hq=2, hkv=1)
            a("varlen", "packed varlen with a window", b=4, l=5, s=9, qlen=ql, kvlen=kl,
              packed=True, window=(2, 0, "br"), dtype=dt)
    # R. fully masked rows from every source
    for dt in ("f32", "f16"):
        a("fully_masked", "causal br with L > S", causal="br", l=8, s=3, dtype=dt, attnw=True)
        a("fully_masked", "window misses every key", window=(0, 0, "tl"), l=7, s=3, dtype=dt)
        a("fully_masked", "window (0, 0) br with L > S: top rows see no key",
          window=(0, 0, "br"), l=7, s=4, dtype=dt)
        a("fully_masked", "S_b = 0", b=2, kvlen=[0, 4], dtype=dt)
        a("fully_masked", "bool mask row", plant(NORMAL, "masked_row", ("masked_row", 2)),
          mask="bool", dtype=dt)
        a("fully_masked", "-inf row with softcap", plant(SOFTCAP_BIG, "masked_row",
                                                          ("masked_row", 2)),
          mask="add", softcap=4.0, dtype=dt)
        a("fully_masked", "masked row with dropout", plant(NORMAL, "masked_row", ("masked_row", 1)),
          mask="add", p=0.25, dseed=9, dtype=dt, attnw=True)
        a("fully_masked", "large finite negative bias is not a mask",
          Flavor("bias_minus_1e4", mask="neg_finite", mask_scale=1e4), mask="add", dtype=dt)
    # S. non-finite inputs
    for dt in low:
        a("nonfinite", "NaN in Q", plant(NORMAL, "nan_q", ("nan_q", 0)), dtype=dt)
        a("nonfinite", "NaN in K", plant(NORMAL, "nan_k", ("nan_k", 3)), l=7, s=7, dtype=dt)
        a("nonfinite", "decode row (L = 1, causal br) attending a NaN key",
          plant(NORMAL, "nan_k", ("nan_k", 6)), causal="br", l=1, s=7, dtype=dt)
        a("nonfinite", "NaN in V", plant(NORMAL, "nan_v", ("nan_v", 0, 2)), dtype=dt)
        a("nonfinite", "NaN in the additive mask",
          plant(NORMAL, "nan_bias", "all_attend", ("nan_bias", 2, 2)), mask="add", dtype=dt)
        a("nonfinite", "-inf in Q", plant(NORMAL, "inf_q", ("inf_q", 2, -math.inf)), dtype=dt)
        a("nonfinite", "+inf in K with softcap", plant(NORMAL, "inf_k", ("inf_k", 0, math.inf)),
          softcap=2.0, dtype=dt)
        a("nonfinite", "-inf in V", plant(NORMAL, "inf_v", ("inf_v", 3, 1, -math.inf)), dtype=dt)
        a("nonfinite", "+inf and -inf in one V column",
          plant(NORMAL, "inf_v2", ("inf_v", 3, 1, -math.inf), ("inf_v", 4, 1, math.inf)),
          dtype=dt)
        a("nonfinite", "+inf in the additive mask",
          plant(NORMAL, "inf_bias", "all_attend", ("inf_bias", 1, 1, math.inf)), mask="add",
          dtype=dt)
        a("nonfinite", "NaN beyond the lengths with a bool mask",
          plant(NORMAL, "nan_beyond", "nan_beyond"), b=2, qlen=[3, 5], kvlen=[7, 2],
          mask="bool", dtype=dt)
    # T. empty problems
    for dt in ("f32", "bf16"):
        for kw in (dict(b=0), dict(l=0), dict(s=0), dict(s=0, causal="br"), dict(dqk=0, dv=3),
                   dict(dqk=3, dv=0), dict(hq=0, hkv=0), dict(b=0, l=0, s=0),
                   dict(s=0, qlen=[5], kvlen=[0])):
            a("empty", f"empty {kw}", dtype=dt, **kw)
    # U. dropout
    for p in (0.1, 0.2, 0.5, 0.9, 0.999):
        for c in (None, "br"):
            a("dropout", f"p = {p}", p=p, dseed=17, doff=3, causal=c, attnw=True, l=4, s=8)
    for dt in low:
        a("dropout", "dropout with GQA", p=0.3, dseed=(1 << 40) + 5, hq=4, hkv=2, dtype=dt,
          attnw=True)
        a("dropout", "dropout with a large counter offset", p=0.4, dseed=2, doff=(1 << 33) + 7,
          dtype=dt)
    a("dropout", "dropout with padded varlen (logical indices)", p=0.3, dseed=4, b=2, l=4, s=6,
      qlen=[2, 4], kvlen=[6, 3], attnw=True)
    a("dropout", "dropout with packed varlen (logical indices)", p=0.3, dseed=4, b=2, l=4, s=6,
      qlen=[2, 4], kvlen=[6, 3], packed=True, attnw=True)
    a("dropout", "dropout with a mask and softcap", p=0.2, dseed=8, mask="add", softcap=10.0,
      attnw=True)
    # V. layouts
    for dt in ("f32", "bf16"):
        a("layouts", "bshd", layout="bshd", b=2, hq=4, hkv=2, dtype=dt)
        a("layouts", "bshd with a gap", layout="bshd", gap=2, dtype=dt)
        a("layouts", "gap 1", gap=1, dtype=dt)
        a("layouts", "base offset 5", off=5, dtype=dt)
        a("layouts", "bshd, gap and offset", layout="bshd", gap=3, off=1, dtype=dt)
        a("layouts", "packed bshd", layout="bshd", b=2, qlen=[3, 1], kvlen=[2, 7], packed=True,
          dtype=dt)
        a("layouts", "head-dim stride 2 (non-unit last stride)", hq=1, l=3, s=4, dqk=4,
          strides={"q": (24, 24, 8, 2, 0), "k": (32, 32, 8, 2, 0), "v": (32, 32, 8, 2, 0),
                   "o": (24, 24, 8, 2, 0)}, dtype=dt)
        a("layouts", "K and V broadcast over batch (stride 0)", b=3, hq=2, l=2, s=3, dqk=4,
          strides={"q": (16, 8, 4, 1, 0), "k": (0, 12, 4, 1, 0), "v": (0, 12, 4, 1, 0),
                   "o": (16, 8, 4, 1, 0)}, dtype=dt)
        a("layouts", "permuted: rows outermost", b=2, hq=2, l=3, s=4, dqk=4,
          strides={"q": (4, 8, 16, 1, 0), "k": (4, 8, 16, 1, 0), "v": (4, 8, 16, 1, 0),
                   "o": (4, 8, 16, 1, 0)}, dtype=dt)
    # W. batch = 1 parallelization shapes
    for dt in ("f32", "bf16"):
        a("batch1", "B = H = 1, long L", hq=1, l=257, s=9, dqk=4, dtype=dt)
        a("batch1", "L = 1, long S (split-KV)", hq=1, l=1, s=1023, dqk=16, dtype=dt)
        a("batch1", "GQA decode", hq=8, hkv=2, l=1, s=300, dqk=16, dtype=dt)
        a("batch1", "batched decode", b=4, hq=2, l=1, s=33, kvlen=[33, 1, 17, 0], dtype=dt)
    # X. real-model-like shapes (short sequences)
    a("models", "Llama GQA 32/8, d128, causal br", hq=32, hkv=8, l=2, s=16, dqk=128,
      causal="br", dtype="bf16")
    a("models", "Mistral 32/8 d128 with a sliding window", hq=32, hkv=8, l=4, s=16, dqk=128,
      window=(4, 0, "br"), dtype="bf16")
    a("models", "DeepSeek Dqk 192 / Dv 128", hq=4, l=3, s=9, dqk=192, dv=128, causal="br",
      dtype="bf16")
    a("models", "Llama decode L = 1", hq=32, hkv=8, l=1, s=64, dqk=128, dtype="f16")
    a("models", "Gemma-like softcap 50, d256", hq=4, hkv=2, l=3, s=8, dqk=256, softcap=50.0,
      dtype="bf16", causal="br")
    # Y. attention weights with masks
    for dt in ("f32", "f16"):
        for kw in (dict(mask="bool"), dict(mask="add"), dict(causal="br", l=6, s=4),
                   dict(window=(1, 1, "tl")), dict(b=2, kvlen=[0, 5])):
            a("weights", f"weights with {kw}", attnw=True, dtype=dt, **kw)


def backward_cases(bld: Builder):
    """The backward's golden cases (schema version 2): dO and the exact dQ, dK, dV over every
    feature the gradients pass through."""
    f = "backward"
    bld.add(f, "plain f64", dtype="f64", l=6, s=9, dqk=8, dv=4)
    bld.add(f, "plain f32, GQA group sums", dtype="f32", hq=4, hkv=2, l=9, s=13, dqk=16, dv=8)
    bld.add(f, "MQA, causal bottom-right, L < S", dtype="bf16", hq=4, hkv=1, l=7, s=19, dqk=16,
            causal="br")
    bld.add(f, "causal top-left, L > S", dtype="f16", l=17, s=9, dqk=8, causal="tl")
    bld.add(f, "window", dtype="f32", l=12, s=12, dqk=8, window=(3, 1, "br"))
    bld.add(f, "additive mask broadcast over heads, softcap", dtype="f32", hq=2, l=9, s=11,
            dqk=8, mask="add", mbc="h", softcap=2.0)
    bld.add(f, "bool mask, a fully masked row", plant(NORMAL, "masked_row", ("masked_row", 2)),
            dtype="bf16", l=6, s=10, dqk=8, mask="bool")
    bld.add(f, "dropout past the first key block", dtype="f32", l=5, s=150, dqk=8, p=0.3,
            dseed=5, doff=3)
    bld.add(f, "padded varlen with an empty sequence", dtype="f32", b=3, l=9, s=11, dqk=8,
            qlen=[9, 0, 4], kvlen=[11, 5, 0])
    bld.add(f, "packed varlen", dtype="f16", b=2, l=9, s=11, dqk=8, qlen=[9, 3], kvlen=[4, 11],
            packed=True)
    bld.add(f, "bshd with a gap and an offset, Dqk != Dv, scale", dtype="f32", hq=2, l=7, s=9,
            dqk=12, dv=6, layout="bshd", gap=2, off=1, scale=-0.7)
    bld.add(f, "large logits", LOGITS_88, dtype="f32", l=6, s=8, dqk=8)
    bld.add(f, "d bias of a mask broadcast over batch and keys", dtype="f32", b=2, hq=2, l=5,
            s=7, dqk=8, mask="add", mbc="bs", dbias=True)
    bld.add(f, "d bias over heads: GQA, causal bottom-right, softcap", dtype="f16", hq=4, hkv=2,
            l=6, s=9, dqk=8, mask="add", mbc="h", causal="br", softcap=3.0, dbias=True)


def backward():
    bld = Builder(BASE_SEED["backward"])
    backward_cases(bld)
    return [c.replace(bwd=True) for c in bld.cases], []


SETS = {"smoke": smoke, "ci": ci, "backward": backward}
