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
#include <limits>
#include <vector>

#include "reference/head_inputs.hpp"

namespace sdpa::reference {
namespace {

constexpr std::int64_t kBlock = 8;   // terms per compensated block
constexpr std::int64_t kKeyTile = 32;  // keys per register tile of the Q.K loop

#define SDPA_CLONES __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))

inline void two_sum_into(double& hi, double& lo, double x) {
  const double s = hi + x;
  const double bp = s - hi;
  const double err = (hi - (s - bp)) + (x - bp);
  hi = s;
  lo += err;
}

// dot[j] = sum_e q[e] * kt[e][j] (compensated) and mag[j] = sum_e |q[e] * kt[e][j]| for
// j in [0, sp); kt is [dq][sp] with sp a multiple of kKeyTile.
SDPA_CLONES
void logits_row(const double* q, const double* kt, const double* kta, std::int64_t dq,
                std::int64_t sp, double* dot, double* mag) {
  for (std::int64_t jc = 0; jc < sp; jc += kKeyTile) {
    double hi[kKeyTile] = {}, lo[kKeyTile] = {}, acc[kKeyTile] = {}, am[kKeyTile] = {};
    for (std::int64_t e = 0; e < dq; ++e) {
      const double qe = q[e], qa = std::fabs(q[e]);
      const double* kr = kt + e * sp + jc;
      const double* ka = kta + e * sp + jc;
#pragma omp simd
      for (std::int64_t t = 0; t < kKeyTile; ++t) {
        acc[t] = std::fma(qe, kr[t], acc[t]);
        am[t] = std::fma(qa, ka[t], am[t]);
      }
      if ((e + 1) % kBlock == 0 || e + 1 == dq) {
#pragma omp simd
        for (std::int64_t t = 0; t < kKeyTile; ++t) {
          const double s = hi[t] + acc[t];
          const double bp = s - hi[t];
          lo[t] += (hi[t] - (s - bp)) + (acc[t] - bp);
          hi[t] = s;
          acc[t] = 0;
        }
      }
    }
#pragma omp simd
    for (std::int64_t t = 0; t < kKeyTile; ++t) {
      dot[jc + t] = hi[t] + lo[t];
      mag[jc + t] = am[t];
    }
  }
}

// Accumulates w * v[d] and w * |v[d]| into (hi, lo, acc) and am over one key row.
SDPA_CLONES
void axpy_row(double w, const double* v, const double* va, std::int64_t dv, double* acc,
              double* am) {
#pragma omp simd
  for (std::int64_t d = 0; d < dv; ++d) {
    acc[d] = std::fma(w, v[d], acc[d]);
    am[d] = std::fma(w, va[d], am[d]);
  }
}

SDPA_CLONES
void flush_block(std::int64_t dv, double* hi, double* lo, double* acc) {
#pragma omp simd
  for (std::int64_t d = 0; d < dv; ++d) {
    const double s = hi[d] + acc[d];
    const double bp = s - hi[d];
    lo[d] += (hi[d] - (s - bp)) + (acc[d] - bp);
    hi[d] = s;
    acc[d] = 0;
  }
}

// c[d] += wc * |m * v[d] - o[d]|, g[d] += wg * |m * v[d] - o[d]|.
SDPA_CLONES
void deviation_row(double wc, double wg, double m, const double* v, const double* o,
                   std::int64_t dv, double* c, double* g) {
#pragma omp simd
  for (std::int64_t d = 0; d < dv; ++d) {
    const double dev = std::fabs(m * v[d] - o[d]);
    c[d] = std::fma(wc, dev, c[d]);
    g[d] = std::fma(wg, dev, g[d]);
  }
}

}  // namespace

void compute_head_f64(const HeadInputs& in, double dropout_p, const HeadOutputs& out) {
  const std::int64_t L = in.rows_q, S = in.rows_kv, Dq = in.dqk, Dv = in.dv;
  const std::int64_t Sp = (S + kKeyTile - 1) / kKeyTile * kKeyTile;
  const double scale = in.scale, abs_scale = std::fabs(in.scale);
  const bool has_bias = !in.bias.empty(), has_drop = !in.kept.empty();
  const double keep_scale = has_drop ? 1.0 / (1.0 - dropout_p) : 1.0;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  // K transposed to [Dq][Sp] (zero padded) and |K|, |V|.
  std::vector<double> kt(static_cast<std::size_t>(Dq * Sp), 0.0), kta(kt.size(), 0.0);
  for (std::int64_t j = 0; j < S; ++j)
    for (std::int64_t e = 0; e < Dq; ++e) {
      kt[e * Sp + j] = in.k[j * Dq + e];
      kta[e * Sp + j] = std::fabs(in.k[j * Dq + e]);
    }
  std::vector<double> va(in.v.size());
  for (std::size_t x = 0; x < va.size(); ++x) va[x] = std::fabs(in.v[x]);

  std::vector<double> dot(static_cast<std::size_t>(Sp)), mag(static_cast<std::size_t>(Sp));
  std::vector<double> s(static_cast<std::size_t>(S)), ex(static_cast<std::size_t>(S));
  std::vector<std::int64_t> keys;  // attended keys of the row
  keys.reserve(static_cast<std::size_t>(S));
  std::vector<double> hi(static_cast<std::size_t>(Dv)), lo(hi.size()), acc(hi.size()),
      am(hi.size()), c(hi.size()), g(hi.size());

  for (std::int64_t i = 0; i < L; ++i) {
    logits_row(in.q.data() + i * Dq, kt.data(), kta.data(), Dq, Sp, dot.data(), mag.data());
    keys.clear();
    double m = kNegInf;
    bool nan = false;
    for (std::int64_t j = 0; j < S; ++j) {
      if (!in.allowed[i * S + j]) continue;
      double x = scale * dot[j];
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
    if (keys.empty()) {  // fully masked row: O = 0, LSE = -inf (SEMANTICS.md)
      std::fill(orow, orow + Dv, 0.0);
      std::fill(arow, arow + Dv, 0.0);
      std::fill(crow, crow + Dv, 0.0);
      std::fill(grow, grow + Dv, 0.0);
      out.lse[i] = kNegInf;
      out.lse_mag_c[i] = out.lse_mag_g[i] = 0;
      if (out.weights) std::fill(out.weights + i * out.len_kv, out.weights + (i + 1) * out.len_kv, 0.0);
      continue;
    }
    if (nan) m = std::numeric_limits<double>::quiet_NaN();
    // Softmax numerators and their compensated sum.
    double zhi = 0, zlo = 0, lc = 0, lg = 0;
    for (std::int64_t j : keys) {
      ex[j] = std::exp(s[j] - m);
      two_sum_into(zhi, zlo, ex[j]);
      lc = std::fma(ex[j], std::fabs(s[j]), lc);
      lg = std::fma(ex[j], abs_scale * mag[j], lg);
    }
    const double z = zhi + zlo;
    out.lse[i] = m + std::log(z);
    out.lse_mag_c[i] = lc / z;
    out.lse_mag_g[i] = lg / z;
    // O = sum_j e_j kept_j V_j / (z (1 - p)), compensated per block of kBlock keys.
    std::fill(hi.begin(), hi.end(), 0.0);
    std::fill(lo.begin(), lo.end(), 0.0);
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(am.begin(), am.end(), 0.0);
    std::int64_t in_block = 0;
    for (std::int64_t j : keys) {
      const double w = has_drop && !in.kept[i * S + j] ? 0.0 : ex[j];
      axpy_row(w, in.v.data() + j * Dv, va.data() + j * Dv, Dv, acc.data(), am.data());
      if (++in_block == kBlock) {
        flush_block(Dv, hi.data(), lo.data(), acc.data());
        in_block = 0;
      }
    }
    flush_block(Dv, hi.data(), lo.data(), acc.data());
    for (std::int64_t d = 0; d < Dv; ++d) {
      double o = (hi[d] + lo[d]) / z;
      double a = am[d] / z;
      if (has_drop) {
        o /= (1.0 - dropout_p);
        a /= (1.0 - dropout_p);
      }
      orow[d] = o;
      arow[d] = a;
    }
    // Deviation magnitudes C and G need O first: a second pass over the keys.
    std::fill(c.begin(), c.end(), 0.0);
    std::fill(g.begin(), g.end(), 0.0);
    for (std::int64_t j : keys) {
      const double mult = has_drop ? (in.kept[i * S + j] ? keep_scale : 0.0) : 1.0;
      deviation_row(ex[j] * std::fabs(s[j]), ex[j] * abs_scale * mag[j], mult,
                    in.v.data() + j * Dv, orow, Dv, c.data(), g.data());
    }
    for (std::int64_t d = 0; d < Dv; ++d) {
      crow[d] = c[d] / z;
      grow[d] = g[d] / z;
    }
    if (out.weights) {
      double* wrow = out.weights + i * out.len_kv;
      std::fill(wrow, wrow + out.len_kv, 0.0);
      for (std::int64_t j : keys) {
        const double kept = has_drop ? (in.kept[i * S + j] ? keep_scale : 0.0) : 1.0;
        wrow[j] = ex[j] / z * kept;
      }
    }
  }
}

}  // namespace sdpa::reference
