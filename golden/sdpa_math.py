"""Number formats, Philox4x32-10, the dropout keep-mask and SDPA / MHA in mpmath.

Everything here is written from docs/SEMANTICS.md and the published definitions it cites,
independently of the C++ reference: the golden data are a second implementation that the
reference is checked against.

Arithmetic: every value an input can hold (f64, f32, f16, bf16) is a dyadic rational and
converts to an mpmath number exactly. The attention is computed at PRECISION_DIGITS
significant decimal digits and each expected output is rounded once, to nearest even, to
binary64 by round_mpf_to_f64 (our own rounding, subnormals included: no double rounding).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from mpmath import mp, mpf

PRECISION_DIGITS = 50

# ----------------------------------------------------------------------------- formats

# (significand bits including the implicit one, minimum normal exponent, maximum exponent)
FORMATS = {
    "f64": (53, -1022, 1023),
    "f32": (24, -126, 127),
    "f16": (11, -14, 15),
    "bf16": (8, -126, 127),
}


def _round_parts(negative: bool, man: int, exp: int, fmt: str) -> float:
    """Rounds (-1)^negative * man * 2^exp (man > 0) to `fmt`, nearest even; returns the
    result as a Python float (every value of every format is a binary64 value)."""
    p, emin, emax = FORMATS[fmt]
    lead = exp + man.bit_length() - 1  # exponent of the leading bit
    quantum = max(lead, emin) - (p - 1)  # exponent of the last significand bit
    if exp < quantum:
        shift = quantum - exp
        n = man >> shift
        rem = man & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and (n & 1)):
            n += 1
        man, exp = n, quantum
    if man == 0:
        return -0.0 if negative else 0.0
    # Overflow: the rounded value needs an exponent above emax.
    if exp + man.bit_length() - 1 > emax:
        return -math.inf if negative else math.inf
    value = math.ldexp(man, exp)  # exact: man has at most p bits and exp >= emin - p + 1
    return -value if negative else value


def round_fraction(x: Fraction, fmt: str) -> float:
    """Nearest-even rounding of an exact rational to `fmt`."""
    if x == 0:
        return 0.0
    negative = x < 0
    x = abs(x)
    num, den = x.numerator, x.denominator
    # Scale to an integer with enough bits (p + 2 guard bits + sticky) and round.
    p = FORMATS[fmt][0]
    shift = p + 3 - (num.bit_length() - den.bit_length())
    if shift >= 0:
        q, r = divmod(num << shift, den)
    else:
        q, r = divmod(num, den << -shift)
    # A sticky bit below the quotient keeps the rounding of the remainder exact.
    q = (q << 1) | (1 if r else 0)
    return _round_parts(negative, q, -shift - 1, fmt)


def round_float(x: float, fmt: str) -> float:
    """Nearest-even rounding of a binary64 value to `fmt` (one rounding); NaN stays NaN."""
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or x == 0:
        return x
    return round_fraction(Fraction(x), fmt)


def round_mpf_to_f64(x) -> float:
    """The binary64 value nearest (ties to even) to an mpmath number."""
    if mp.isnan(x):
        return math.nan
    if mp.isinf(x):
        return math.inf if x > 0 else -math.inf
    sign, man, exp, _ = x._mpf_
    if not man:
        return 0.0
    return _round_parts(bool(sign), int(man), int(exp), "f64")


def representable(x: float, fmt: str) -> bool:
    return math.isnan(x) or round_float(x, fmt) == x


def to_storage(values: np.ndarray, fmt: str) -> np.ndarray:
    """Encodes binary64 values that are exactly representable in `fmt` as the array stored
    in a golden file: f64 / f32 as themselves, f16 / bf16 as raw uint16 bit patterns.
    NaN becomes the quiet NaN of the format."""
    flat = values.reshape(-1)
    for x in flat:
        if not representable(float(x), fmt):
            raise ValueError(f"{x!r} is not a {fmt} value")
    if fmt == "f64":
        return values.astype("<f8")
    if fmt == "f32":
        return values.astype("<f4")
    if fmt == "f16":
        return values.astype("<f2").view("<u2")
    # bf16: the high half of the binary32 pattern (exact: the value is representable).
    bits32 = values.astype("<f4").view("<u4")
    out = (bits32 >> 16).astype("<u2")
    out[np.isnan(values)] = 0x7FC0
    return out.reshape(values.shape)


# ----------------------------------------------------------------------------- Philox

_MASK32 = 0xFFFFFFFF
_PHILOX_M0, _PHILOX_M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers (Salmon et al. 2011)
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85  # key schedule: golden ratio, sqrt(3) - 1


def philox4x32_10(counter, key):
    """Philox4x32 with 10 rounds on one 128-bit counter (four 32-bit words) and a 64-bit
    key (two words). Each round: two 32x32->64 multiplications of words 0 and 2, the high
    halves xored with the other words and the round key, words permuted; the key is bumped
    by the Weyl constants between rounds."""
    x0, x1, x2, x3 = (int(w) & _MASK32 for w in counter)
    k0, k1 = (int(w) & _MASK32 for w in key)
    for rnd in range(10):
        if rnd:
            k0 = (k0 + _PHILOX_W0) & _MASK32
            k1 = (k1 + _PHILOX_W1) & _MASK32
        a = _PHILOX_M0 * x0
        b = _PHILOX_M1 * x2
        x0, x1, x2, x3 = ((b >> 32) ^ x1 ^ k0, b & _MASK32, (a >> 32) ^ x3 ^ k1, a & _MASK32)
    return (x0, x1, x2, x3)


def philox4x32_10_np(c0, c1, c2, c3, k0, k1):
    """The same on numpy arrays of words (uint64 arrays holding 32-bit values)."""
    m = np.uint64(_MASK32)
    x0, x1, x2, x3 = (np.asarray(c, dtype=np.uint64) & m for c in (c0, c1, c2, c3))
    k0 = np.uint64(int(k0) & _MASK32)
    k1 = np.uint64(int(k1) & _MASK32)
    for rnd in range(10):
        if rnd:
            k0 = np.uint64((int(k0) + _PHILOX_W0) & _MASK32)
            k1 = np.uint64((int(k1) + _PHILOX_W1) & _MASK32)
        a = np.uint64(_PHILOX_M0) * x0  # < 2^64: exact in uint64
        b = np.uint64(_PHILOX_M1) * x2
        x0, x1, x2, x3 = ((b >> np.uint64(32)) ^ x1 ^ k0, b & m, (a >> np.uint64(32)) ^ x3 ^ k1,
                          a & m)
    return x0, x1, x2, x3


# Known-answer vectors of Philox4x32-10 (Random123's kat_vectors).
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def dropout_threshold(p: float) -> int:
    """round(p * 2^32) to nearest even, saturated to 2^32 - 1 (SEMANTICS.md)."""
    if not p > 0:
        return 0
    t = round(Fraction(p) * (1 << 32))  # Fraction.__round__: ties to even
    return min(t, _MASK32)


def dropout_keep(seed, offset, threshold, b, h, i, j, heads_q, len_q, len_kv) -> bool:
    """keep(b, h, i, j): Philox4x32-10 with key = seed (low word first) and counter =
    offset + ((b * Hq + h) * L + i) * S + j (64-bit, low word first, words 2 and 3 zero);
    the first output word u keeps the element iff u >= threshold."""
    if threshold == 0:
        return True
    ctr = (offset + ((b * heads_q + h) * len_q + i) * len_kv + j) & ((1 << 64) - 1)
    u = philox4x32_10((ctr & _MASK32, ctr >> 32, 0, 0), (seed & _MASK32, seed >> 32))[0]
    return u >= threshold


# ----------------------------------------------------------------------------- IEEE helpers


def _ieee_sum_of_specials(values):
    """Sum of terms some of which are +-inf / NaN (finite terms cannot change the result)."""
    if any(math.isnan(v) for v in values):
        return math.nan
    pos = any(v == math.inf for v in values)
    neg = any(v == -math.inf for v in values)
    if pos and neg:
        return math.nan
    return math.inf if pos else -math.inf


def _ieee_product_sign(a, b: float):
    """The IEEE product of a finite weight `a` (mpf, exact) and a non-finite value `b`:
    NaN for NaN or 0 * inf, else an infinity with the product's sign."""
    if math.isnan(b) or a == 0:
        return math.nan
    return -math.inf if (a < 0) != (b < 0) else math.inf


def dot(xs, ys, xs_float, ys_float):
    """Exact-then-rounded dot product of two rows; IEEE semantics when a term is not finite."""
    if all(map(math.isfinite, xs_float)) and all(map(math.isfinite, ys_float)):
        return mp.fdot(xs, ys) if xs else mpf(0)
    specials = []
    for a, b, fa, fb in zip(xs, ys, xs_float, ys_float):
        if not (math.isfinite(fa) and math.isfinite(fb)):
            if math.isnan(fa) or math.isnan(fb):
                specials.append(math.nan)
            elif (math.isinf(fa) and fb == 0) or (math.isinf(fb) and fa == 0):
                specials.append(math.nan)
            else:
                specials.append(-math.inf if (fa < 0) != (fb < 0) else math.inf)
    return mpf(_ieee_sum_of_specials(specials))


def is_finite_mpf(x) -> bool:
    return not (mp.isnan(x) or mp.isinf(x))


# ----------------------------------------------------------------------------- one row


def attention_row(logits, values, values_float, dropout_scale, dv):
    """Softmax and the weighted sum of one query row.

    logits: mpf logits s_j of the attended keys (each possibly +-inf or NaN);
    values: for each attended key, its V row (mpf), values_float the same as floats;
    dropout_scale: per attended key, 1/(1-p) if kept, 0 if dropped (mpf), or None;
    dv: the value head dimension.
    Returns (o as a list of mpf/float, lse, weights after dropout as a list)."""
    n = len(logits)
    if n == 0:  # no attended key: O = 0, LSE = -inf (SEMANTICS.md, fully masked rows)
        return [mpf(0)] * dv, mpf("-inf"), []
    if any(mp.isnan(s) for s in logits):
        nan = mpf("nan")
        return [nan] * dv, nan, [nan] * n
    m = max(logits)
    if mp.isinf(m):  # +inf - +inf: NaN (IEEE); -inf logits were dropped by the caller
        nan = mpf("nan")
        return [nan] * dv, nan, [nan] * n
    e = [mp.exp(s - m) for s in logits]  # exp(-inf) = 0 for a -inf logit that is not a mask
    z = mp.fsum(e)
    lse = m + mp.log(z)
    p = [x / z for x in e]
    if dropout_scale is not None:
        p = [x * d for x, d in zip(p, dropout_scale)]
    o = []
    for d in range(dv):
        col = [values[j][d] for j in range(n)]
        colf = [values_float[j][d] for j in range(n)]
        if all(map(math.isfinite, colf)):
            o.append(mp.fdot(p, col))
        else:
            specials = [_ieee_product_sign(p[j], colf[j]) for j in range(n)
                        if not math.isfinite(colf[j])]
            o.append(mpf(_ieee_sum_of_specials(specials)))
    return o, lse, p
