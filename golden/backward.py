"""The exact gradients of SDPA (docs/SEMANTICS.md, "Backward") with mpmath, independent of the
C++ reference: dQ, dK, dV for an upstream gradient dO, each computed at
sdpa_math.PRECISION_DIGITS significant digits and rounded once to binary64.

Golden backward cases take finite inputs only (a NaN's reach is the C++ tests' subject)."""

from __future__ import annotations


import numpy as np
from mpmath import mp, mpf

import sdpa_math as sm
from cases import Prob, row_logits


def compute_backward(pr: Prob, t):
    """dq [B, Hq, L, Dqk], dk [B, Hkv, S, Dqk], dv [B, Hkv, S, Dv] (logical, binary64; zeros
    for padding rows and absent keys) for the inputs and dO of make_inputs(), and d bias in
    the mask's stored shape (1 in its broadcast dimensions: dS summed over them) when the case
    asks for it (dbias), else None."""
    B, H, Hkv, L, S = pr.b, pr.hq, pr.hkv, pr.l, pr.s
    Dq, Dv = pr.dqk, pr.dv
    for name in ("q", "k", "v", "d_out", "mask"):
        if name in t and name != "mask" and not np.all(np.isfinite(t[name])):
            raise ValueError(f"{pr.case_id()}: golden backward cases take finite {name}")
    dq = np.zeros((B, H, L, Dq))
    dk = np.zeros((B, Hkv, S, Dq))
    dv = np.zeros((B, Hkv, S, Dv))
    shape = pr.mask_shape() if pr.dbias else None
    acc_bias = {} if pr.dbias else None  # stored index -> mpf sum of dS

    def finish_bias():
        if not pr.dbias:
            return None
        out = np.zeros(shape)
        for idx, total in acc_bias.items():
            out[idx] = sm.round_mpf_to_f64(total)
        return out
    if B * H * L == 0 or Hkv == 0:
        return dq, dk, dv, finish_bias()
    group = H // Hkv
    cuq, cuk = pr.cu(True), pr.cu(False)
    thr = sm.dropout_threshold(pr.p)
    q, k, v, m, d_o = t["q"], t["k"], t["v"], t.get("mask"), t["d_out"]
    with mp.workdps(sm.PRECISION_DIGITS):
        scale = mpf(pr.effective_scale())
        cap = mpf(pr.softcap)
        keep_scale = mpf(1) / (mpf(1) - mpf(pr.p))
        for b in range(B):
            lb, sb = pr.seqlen_q(b), pr.seqlen_kv(b)
            qb = 0 if pr.packed else b
            q0 = cuq[b] if pr.packed else 0
            k0 = cuk[b] if pr.packed else 0
            for hk in range(Hkv):
                krows_f = [list(map(float, k[qb, hk, k0 + j])) for j in range(sb)]
                krows = [[mpf(x) for x in r] for r in krows_f]
                vrows = [[mpf(float(x)) for x in v[qb, hk, k0 + j]] for j in range(sb)]
                acc_k = [[mpf(0)] * Dq for _ in range(sb)]
                acc_v = [[mpf(0)] * Dv for _ in range(sb)]
                for h in range(hk * group, (hk + 1) * group):
                    for i in range(lb):
                        qf = list(map(float, q[qb, h, q0 + i]))
                        qi = [mpf(x) for x in qf]
                        doi = [mpf(float(x)) for x in d_o[qb, h, q0 + i]]
                        att, logits, tprime = row_logits(pr, m, b, h, i, qi, qf, krows,
                                                         krows_f, scale, cap)
                        if not att:  # no attended key: dQ_i = 0, nothing to dK, dV
                            continue
                        mx = max(logits)
                        e = [mp.exp(s - mx) for s in logits]
                        z = mp.fsum(e)
                        p = [x / z for x in e]
                        if pr.p:  # the forward's keep-mask, never a new draw
                            mult = [keep_scale if sm.dropout_keep(pr.dseed, pr.doff, thr, b, h, i,
                                                                  j, H, L, S) else mpf(0)
                                    for j in att]
                        else:
                            mult = [mpf(1)] * len(att)
                        w = [pj * dj for pj, dj in zip(p, mult)]
                        o = [mp.fsum(w[n] * vrows[j][d] for n, j in enumerate(att))
                             for d in range(Dv)]
                        big_d = mp.fdot(doi, o) if Dv else mpf(0)
                        dqi = [mpf(0)] * Dq
                        for n, j in enumerate(att):
                            dp = mult[n] * (mp.fdot(doi, vrows[j]) if Dv else mpf(0))
                            ds = p[n] * (dp - big_d)  # the final logit's gradient
                            dx = ds * tprime[n]
                            if pr.dbias:
                                idx = tuple(0 if c in pr.mbc else x
                                            for c, x in zip("bhls", (b, h, i, j)))
                                acc_bias[idx] = acc_bias.get(idx, mpf(0)) + ds
                            for e_ in range(Dq):
                                dqi[e_] += dx * krows[j][e_]
                                acc_k[j][e_] += dx * qi[e_]
                            for d in range(Dv):
                                acc_v[j][d] += w[n] * doi[d]
                        dq[b, h, i] = [sm.round_mpf_to_f64(scale * x) for x in dqi]
                for j in range(sb):
                    dk[b, hk, j] = [sm.round_mpf_to_f64(scale * x) for x in acc_k[j]]
                    dv[b, hk, j] = [sm.round_mpf_to_f64(x) for x in acc_v[j]]
    return dq, dk, dv, finish_bias()
