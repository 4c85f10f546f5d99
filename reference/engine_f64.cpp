// The f64 engine: binary64 with compensated (cascaded) accumulation.
//
// Every long sum is cut into blocks of kBlock terms; a block is accumulated with fused
// multiply-adds and then added into a (hi, lo) pair with TwoSum (Knuth), so the error of
// a sum stays within about kBlock ulps of the sum of |terms|, whatever its length. For
// inputs up to f32 every product q*k is exact in f64, so a logit's only error comes from
// the at most kBlock - 1 roundings inside a block. The loops are written for the compiler
// to vectorise (over keys for Q.K, over d for P.V); results do not depend on the
// instruction set chosen because every fused multiply-add is explicit (std::fma) and
// -ffp-contract=off forbids the compiler from adding its own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/head_inputs.hpp"

namespace sdpa::reference {
namespace {

constexpr std::int64_t kBlock = 8;     // terms per compensated block
constexpr std::int64_t kKeyTile = 16;  // keys per register tile of the Q.K loop
constexpr std::int64_t kRowTile = 4;   // query rows per register tile of the Q.K loop
constexpr std::int64_t kDimTile = 32;  // output columns per register tile of the P.V loops

// Hot loops are compiled for AVX-512, AVX2+FMA and baseline x86-64 and picked at load
// time; all three compute the same bits (explicit fma, no contraction).
#if defined(__clang__)
// Clang refuses 512-bit vector values in the baseline clone ("changes the ABI"), so a Clang
// build (the fuzzing build, fuzz/) uses eight doubles in a struct, one code path, the same
// operations lane by lane: the same bits, slower.
#define SDPA_CLONES
struct v8 {
  double x[8];
  double& operator[](int i) { return x[i]; }
  double operator[](int i) const { return x[i]; }
};
#define SDPA_V8_OP(op)                                     \
  inline v8 operator op(const v8& a, const v8& b) {        \
    v8 r;                                                  \
    for (int t = 0; t < 8; ++t) r.x[t] = a.x[t] op b.x[t]; \
    return r;                                              \
  }
SDPA_V8_OP(+)
SDPA_V8_OP(-)
SDPA_V8_OP(*)
#undef SDPA_V8_OP
inline v8& operator+=(v8& a, const v8& b) { return a = a + b; }
inline v8 splat(double x) {
  v8 r;
  for (double& e : r.x) e = x;
  return r;
}
inline v8 vabs(const v8& a) {
  v8 r;
  for (int t = 0; t < 8; ++t) r.x[t] = std::fabs(a.x[t]);  // clears the sign, as below
  return r;
}
#else
#define SDPA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

typedef double v8 __attribute__((vector_size(64)));
inline __attribute__((always_inline)) v8 splat(double x) { return v8{} + x; }
typedef long long v8i __attribute__((vector_size(64)));
inline __attribute__((always_inline)) v8 vabs(v8 a) {
  return reinterpret_cast<v8>(reinterpret_cast<v8i>(a) & 0x7fffffffffffffffLL);  // clear sign
}
#endif

inline __attribute__((always_inline)) v8 load8(const double* p) {
  v8 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline __attribute__((always_inline)) void store8(double* p, v8 x) { std::memcpy(p, &x, sizeof x); }
inline __attribute__((always_inline)) v8 vfma(v8 a, v8 b, v8 c) {
  v8 r;
#pragma GCC unroll 16
  for (int t = 0; t < 8; ++t) r[t] = std::fma(a[t], b[t], c[t]);
  return r;
}
// (hi, lo) += x with TwoSum, lane by lane.
inline __attribute__((always_inline)) void two_sum8(v8& hi, v8& lo, v8 x) {
  const v8 s = hi + x;
  const v8 bp = s - hi;
  lo += (hi - (s - bp)) + (x - bp);
  hi = s;
}

// The compensated total hi + lo, lane by lane; hi itself where hi is not finite: once a
// sum meets an infinity, TwoSum's error term is inf - inf = NaN, while IEEE summation (and
// SEMANTICS.md) gives the infinity.
inline __attribute__((always_inline)) v8 finish8(v8 hi, v8 lo) {
  v8 r;
#pragma GCC unroll 16
  for (int t = 0; t < 8; ++t) r[t] = std::isfinite(hi[t]) ? hi[t] + lo[t] : hi[t];
  return r;
}

inline double mult_or_one(bool has_drop, double mult) { return has_drop ? mult : 1.0; }

inline void two_sum_into(double& hi, double& lo, double x) {
  const double s = hi + x;
  const double bp = s - hi;
  const double err = (hi - (s - bp)) + (x - bp);
  hi = s;
  lo += err;
}

// For kRowTile query rows q (row stride dq, |q| in qa) and the keys [0, jend) of kt
// ([dq][sp], sp and jend multiples of kKeyTile): dot[r][j] = sum_e q[r][e] * kt[e][j]
// (compensated) and mag[r][j] = sum_e |q[r][e]| |kt[e][j]|.
SDPA_CLONES
void logits_tile(const double* q, const double* qa, const double* kt, const double* kta,
                 std::int64_t dq, std::int64_t sp, std::int64_t jend, double* dot, double* mag) {
  for (std::int64_t jc = 0; jc < jend; jc += kKeyTile) {
    v8 acc[kRowTile][2] = {}, am[kRowTile][2] = {}, hi[kRowTile][2] = {}, lo[kRowTile][2] = {};
    for (std::int64_t e0 = 0; e0 < dq; e0 += kBlock) {
      const std::int64_t e1 = std::min(e0 + kBlock, dq);
      for (std::int64_t e = e0; e < e1; ++e) {
        const v8 k0 = load8(kt + e * sp + jc), k1 = load8(kt + e * sp + jc + 8);
        const v8 a0 = load8(kta + e * sp + jc), a1 = load8(kta + e * sp + jc + 8);
#pragma GCC unroll 16
        for (int r = 0; r < kRowTile; ++r) {
          const v8 qb = splat(q[r * dq + e]), qab = splat(qa[r * dq + e]);
          acc[r][0] = vfma(qb, k0, acc[r][0]);
          acc[r][1] = vfma(qb, k1, acc[r][1]);
          am[r][0] = vfma(qab, a0, am[r][0]);
          am[r][1] = vfma(qab, a1, am[r][1]);
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < kRowTile; ++r) {
#pragma GCC unroll 16
        for (int h = 0; h < 2; ++h) {
          two_sum8(hi[r][h], lo[r][h], acc[r][h]);
          acc[r][h] = v8{};
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRowTile; ++r) {
#pragma GCC unroll 16
      for (int h = 0; h < 2; ++h) {
        store8(dot + r * sp + jc + 8 * h, finish8(hi[r][h], lo[r][h]));
        store8(mag + r * sp + jc + 8 * h, am[r][h]);
      }
    }
  }
}

// For output columns [dc, dc + kDimTile) of one row: sum over the listed keys of
// w[j] * v[j][d] (compensated per block of kBlock keys) into out, and of w[j] * |v[j][d]|
// into mag. v and va are [S][dvp], dvp a multiple of kDimTile.
SDPA_CLONES
void weighted_sum_tile(const std::int64_t* keys, std::int64_t nkeys, const double* w,
                       const double* v, const double* va, std::int64_t dvp, std::int64_t dc,
                       double* out, double* mag) {
  constexpr int kV = kDimTile / 8;
  v8 acc[kV] = {}, am[kV] = {}, hi[kV] = {}, lo[kV] = {};
  std::int64_t in_block = 0;
  for (std::int64_t n = 0; n < nkeys; ++n) {
    const std::int64_t j = keys[n];
    const v8 wb = splat(w[j]);
#pragma GCC unroll 16
    for (int t = 0; t < kV; ++t) {
      acc[t] = vfma(wb, load8(v + j * dvp + dc + 8 * t), acc[t]);
      am[t] = vfma(wb, load8(va + j * dvp + dc + 8 * t), am[t]);
    }
    if (++in_block == kBlock) {
#pragma GCC unroll 16
      for (int t = 0; t < kV; ++t) {
        two_sum8(hi[t], lo[t], acc[t]);
        acc[t] = v8{};
      }
      in_block = 0;
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kV; ++t) {
    two_sum8(hi[t], lo[t], acc[t]);
    store8(out + dc + 8 * t, finish8(hi[t], lo[t]));
    store8(mag + dc + 8 * t, am[t]);
  }
}

// For columns [dc, dc + kDimTile): c[d] = sum_j wc[j] |m_j v[j][d] - o[d]| and
// g[d] = sum_j wg[j] |m_j v[j][d] - o[d]| over the listed keys (m_j = mult[j], or 1 when
// mult is null).
SDPA_CLONES
void deviation_tile(const std::int64_t* keys, std::int64_t nkeys, const double* wc,
                    const double* wg, const double* mult, const double* v, std::int64_t dvp,
                    std::int64_t dc, const double* o, double* c, double* g) {
  constexpr int kV = kDimTile / 8;
  v8 ov[kV], cv[kV] = {}, gv[kV] = {};
#pragma GCC unroll 16
  for (int t = 0; t < kV; ++t) ov[t] = load8(o + dc + 8 * t);
  for (std::int64_t n = 0; n < nkeys; ++n) {
    const std::int64_t j = keys[n];
    const v8 cb = splat(wc[j]), gb = splat(wg[j]);
    const v8 mb = splat(mult ? mult[j] : 1.0);
#pragma GCC unroll 16
    for (int t = 0; t < kV; ++t) {
      v8 x = load8(v + j * dvp + dc + 8 * t);
      if (mult) x = x * mb;
      const v8 dev = vabs(x - ov[t]);
      cv[t] = vfma(cb, dev, cv[t]);
      gv[t] = vfma(gb, dev, gv[t]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kV; ++t) {
    store8(c + dc + 8 * t, cv[t]);
    store8(g + dc + 8 * t, gv[t]);
  }
}

}  // namespace

void compute_head_f64(const HeadInputs& in, double dropout_p, const HeadOutputs& out) {
  const std::int64_t L = in.rows_q, S = in.rows_kv, Dq = in.dqk, Dv = in.dv;
  const std::int64_t Sp = (S + kKeyTile - 1) / kKeyTile * kKeyTile;
  const std::int64_t Lp = (L + kRowTile - 1) / kRowTile * kRowTile;
  const std::int64_t Dvp = (Dv + kDimTile - 1) / kDimTile * kDimTile;
  const double scale = in.scale, abs_scale = std::fabs(in.scale);
  const bool has_bias = !in.bias.empty(), has_drop = !in.kept.empty();
  const double keep_scale = has_drop ? 1.0 / (1.0 - dropout_p) : 1.0;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  // Zero-padded working copies: Q and |Q| [Lp][Dq], K^T and |K^T| [Dq][Sp], V and |V| [S][Dvp].
  std::vector<double> q(static_cast<std::size_t>(Lp * Dq), 0.0), qa(q.size(), 0.0);
  for (std::int64_t x = 0; x < L * Dq; ++x) {
    q[x] = in.q[x];
    qa[x] = std::fabs(in.q[x]);
  }
  std::vector<double> kt(static_cast<std::size_t>(Dq * Sp), 0.0), kta(kt.size(), 0.0);
  for (std::int64_t j = 0; j < S; ++j)
    for (std::int64_t e = 0; e < Dq; ++e) {
      kt[e * Sp + j] = in.k[j * Dq + e];
      kta[e * Sp + j] = std::fabs(in.k[j * Dq + e]);
    }
  std::vector<double> v(static_cast<std::size_t>(S * Dvp), 0.0), va(v.size(), 0.0);
  for (std::int64_t j = 0; j < S; ++j)
    for (std::int64_t d = 0; d < Dv; ++d) {
      v[j * Dvp + d] = in.v[j * Dv + d];
      va[j * Dvp + d] = std::fabs(in.v[j * Dv + d]);
    }
  // V near the f64 maximum: computed in units of 2^vshift (head_inputs.hpp).
  const int vshift = magnitude_shift(in, dropout_p);
  if (vshift != 0) {
    for (double& x : v) x = std::ldexp(x, -vshift);
    for (double& x : va) x = std::ldexp(x, -vshift);
  }
  std::fill(out.mag_exp, out.mag_exp + L, static_cast<double>(vshift));

  std::vector<double> dot(static_cast<std::size_t>(kRowTile * Sp)), mag(dot.size());
  std::vector<double> s(static_cast<std::size_t>(S)), w(s.size()), wc(s.size()), wg(s.size()),
      mult(s.size());
  std::vector<std::int64_t> keys;  // attended keys of the row
  std::vector<std::int64_t> tiny;  // those with e_j < kUnderflowWeight
  keys.reserve(static_cast<std::size_t>(S));
  std::vector<double> o(static_cast<std::size_t>(Dvp)), am(o.size()), c(o.size()), g(o.size());

  for (std::int64_t i0 = 0; i0 < L; i0 += kRowTile) {
    // Keys past the last one any row of the tile may attend (causal, windows, masks) are
    // never needed: compute logits only up to it.
    std::int64_t jend = 0;
    for (std::int64_t i = i0; i < std::min(i0 + kRowTile, L); ++i) {
      for (std::int64_t j = S - 1; j >= jend; --j) {
        if (in.allowed[i * S + j]) {
          jend = j + 1;
          break;
        }
      }
    }
    logits_tile(q.data() + i0 * Dq, qa.data() + i0 * Dq, kt.data(), kta.data(), Dq, Sp,
                (jend + kKeyTile - 1) / kKeyTile * kKeyTile, dot.data(), mag.data());
    for (std::int64_t i = i0; i < std::min(i0 + kRowTile, L); ++i) {
      const double* drow = dot.data() + (i - i0) * Sp;
      const double* mrow = mag.data() + (i - i0) * Sp;
      keys.clear();
      tiny.clear();
      double m = kNegInf;
      bool nan = false;
      for (std::int64_t j = 0; j < S; ++j) {
        if (!in.allowed[i * S + j]) continue;
        double x = scale * drow[j];
        if (in.softcap > 0) x = in.softcap * std::tanh(x / in.softcap);
        if (has_bias) x += in.bias[i * S + j];
        if (x == kNegInf) continue;  // a -inf logit masks the key
        s[j] = x;
        keys.push_back(j);
        if (std::isnan(x)) nan = true;
        if (x > m) m = x;
      }
      double* orow = out.o + i * Dv;
      double* arow = out.mag_a + i * Dv;
      double* crow = out.mag_c + i * Dv;
      double* grow = out.mag_g + i * Dv;
      double* urow = out.mag_u + i * Dv;
      if (keys.empty()) {  // fully masked row: O = 0, LSE = -inf (SEMANTICS.md)
        std::fill(orow, orow + Dv, 0.0);
        std::fill(arow, arow + Dv, 0.0);
        std::fill(crow, crow + Dv, 0.0);
        std::fill(grow, grow + Dv, 0.0);
        std::fill(urow, urow + Dv, 0.0);
        out.lse[i] = kNegInf;
        out.lse_mag_c[i] = out.lse_mag_g[i] = 0;
        if (out.weights) {
          std::fill(out.weights + i * out.len_kv, out.weights + (i + 1) * out.len_kv, 0.0);
        }
        continue;
      }
      if (nan) m = std::numeric_limits<double>::quiet_NaN();
      // Softmax numerators e_j = exp(s_j - m) and their compensated sum z.
      double zhi = 0, zlo = 0, lc = 0, lg = 0;
      for (std::int64_t j : keys) {
        const double e = std::exp(s[j] - m);
        two_sum_into(zhi, zlo, e);
        lc = std::fma(e, std::fabs(s[j]), lc);
        lg = std::fma(e, abs_scale * mrow[j], lg);
        const bool kept = !has_drop || in.kept[i * S + j];
        if (e < kUnderflowWeight) tiny.push_back(j);
        w[j] = kept ? e : 0.0;
        mult[j] = kept ? keep_scale : 0.0;
        wc[j] = e * std::fabs(s[j]);
        wg[j] = e * (abs_scale * mrow[j]);
      }
      const double z = zhi + zlo;
      out.lse[i] = m + std::log(z);
      out.lse_mag_c[i] = lc / z;
      out.lse_mag_g[i] = lg / z;
      // O = sum_j e_j kept_j V_j / (z (1 - p)).
      const auto nk = static_cast<std::int64_t>(keys.size());
      for (std::int64_t dc = 0; dc < Dvp; dc += kDimTile) {
        weighted_sum_tile(keys.data(), nk, w.data(), v.data(), va.data(), Dvp, dc, o.data(),
                          am.data());
      }
      for (std::int64_t d = 0; d < Dv; ++d) {
        double od = o[d] / z, ad = am[d] / z;
        if (has_drop) {
          od /= (1.0 - dropout_p);
          ad /= (1.0 - dropout_p);
        }
        o[d] = od;
        orow[d] = std::ldexp(od, vshift);
        arow[d] = ad;
      }
      // Deviation magnitudes C and G need O first: a second pass over the keys.
      for (std::int64_t dc = 0; dc < Dvp; dc += kDimTile) {
        deviation_tile(keys.data(), nk, wc.data(), wg.data(), has_drop ? mult.data() : nullptr,
                       v.data(), Dvp, dc, o.data(), c.data(), g.data());
      }
      for (std::int64_t d = 0; d < Dv; ++d) {
        crow[d] = c[d] / z;
        double u = 0;
        for (std::int64_t j : tiny) u += mult_or_one(has_drop, mult[j]) * va[j * Dvp + d];
        urow[d] = u / z;
        grow[d] = g[d] / z;
      }
      if (out.weights) {
        double* wrow = out.weights + i * out.len_kv;
        std::fill(wrow, wrow + out.len_kv, 0.0);
        for (std::int64_t j : keys)
          wrow[j] = std::exp(s[j] - m) / z * mult_or_one(has_drop, mult[j]);
      }
    }
  }
}

}  // namespace sdpa::reference
