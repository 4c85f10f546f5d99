// The binary128 engine: every operation in __float128 (113-bit significand), libquadmath
// for exp, log and tanh. Products of inputs up to f64 carry 106 bits and are exact; the
// only rounding is at 2^-113, far below what any f64 result can show. Plain loops: this
// engine is the readable statement of the contract and validates the fast f64 engine.
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/head_inputs.hpp"

namespace sdpa::reference {

using Real = __float128;

void compute_head_binary128(const HeadInputs& in, double dropout_p, const HeadOutputs& out) {
  const std::int64_t L = in.rows_q, S = in.rows_kv, Dq = in.dqk, Dv = in.dv;
  const Real scale = in.scale;
  const Real abs_scale = fabsq(scale);
  const bool has_bias = !in.bias.empty();
  const bool has_drop = !in.kept.empty();
  const Real keep_scale = has_drop ? Real(1) / (Real(1) - Real(dropout_p)) : Real(1);
  // O magnitudes in units of 2^shift when V comes near the f64 maximum (head_inputs.hpp);
  // binary128's exponent range holds the true values, and dividing by a power of two is exact.
  const int shift = magnitude_shift(in, dropout_p);
  const Real unit = scalbnq(Real(1), -shift);
  const auto in_units = [unit](Real x) { return static_cast<double>(x * unit); };
  std::fill(out.mag_exp, out.mag_exp + L, static_cast<double>(shift));
  std::vector<Real> s(static_cast<std::size_t>(S)), a(static_cast<std::size_t>(S)),
      p(static_cast<std::size_t>(S)), mult(static_cast<std::size_t>(S));
  std::vector<Real> o(static_cast<std::size_t>(Dv));
  std::vector<std::uint8_t> att(static_cast<std::size_t>(S)), tiny(static_cast<std::size_t>(S));
  for (std::int64_t i = 0; i < L; ++i) {
    bool any = false;
    for (std::int64_t j = 0; j < S; ++j) {
      att[j] = 0;
      if (!in.allowed[i * S + j]) continue;
      Real dot = 0, mag = 0;
      for (std::int64_t e = 0; e < Dq; ++e) {
        const Real prod = Real(in.q[i * Dq + e]) * Real(in.k[j * Dq + e]);
        dot += prod;
        mag += fabsq(prod);
      }
      Real x = scale * dot;
      if (in.softcap > 0) x = Real(in.softcap) * tanhq(x / Real(in.softcap));
      if (has_bias) x += Real(in.bias[i * S + j]);
      if (isinfq(x) && x < 0) continue;  // a -inf logit masks the key
      s[j] = x;
      a[j] = abs_scale * mag;
      att[j] = 1;
      any = true;
    }
    double* orow = out.o + i * Dv;
    if (!any) {  // fully masked row: O = 0, LSE = -inf (SEMANTICS.md)
      for (std::int64_t d = 0; d < Dv; ++d) {
        orow[d] = 0;
        out.mag_a[i * Dv + d] = out.mag_c[i * Dv + d] = out.mag_g[i * Dv + d] = 0;
        out.mag_u[i * Dv + d] = 0;
      }
      out.lse[i] = -std::numeric_limits<double>::infinity();
      out.lse_mag_c[i] = out.lse_mag_g[i] = 0;
      if (out.weights) {
        for (std::int64_t j = 0; j < out.len_kv; ++j) out.weights[i * out.len_kv + j] = 0;
      }
      continue;
    }
    Real m = -INFINITY;
    bool nan = false;
    for (std::int64_t j = 0; j < S; ++j) {
      if (!att[j]) continue;
      if (isnanq(s[j])) nan = true;
      if (s[j] > m) m = s[j];
    }
    if (nan) m = nanq("");
    Real z = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      if (!att[j]) continue;
      p[j] = expq(s[j] - m);
      tiny[j] = p[j] < Real(kUnderflowWeight);
      z += p[j];
    }
    Real lse_c = 0, lse_g = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      if (!att[j]) continue;
      p[j] /= z;
      mult[j] = has_drop ? (in.kept[i * S + j] ? keep_scale : Real(0)) : Real(1);
      lse_c += p[j] * fabsq(s[j]);
      lse_g += p[j] * a[j];
    }
    out.lse[i] = static_cast<double>(m + logq(z));
    out.lse_mag_c[i] = static_cast<double>(lse_c);
    out.lse_mag_g[i] = static_cast<double>(lse_g);
    for (std::int64_t d = 0; d < Dv; ++d) {
      Real acc = 0, mag = 0;
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        const Real term = p[j] * mult[j] * Real(in.v[j * Dv + d]);
        acc += term;
        mag += fabsq(term);
      }
      o[d] = acc;
      orow[d] = static_cast<double>(acc);
      out.mag_a[i * Dv + d] = in_units(mag);
      Real u = 0;
      for (std::int64_t j = 0; j < S; ++j) {
        if (att[j] && tiny[j]) u += fabsq(mult[j] * Real(in.v[j * Dv + d]));
      }
      out.mag_u[i * Dv + d] = in_units(u / z);
    }
    for (std::int64_t d = 0; d < Dv; ++d) {
      Real c = 0, g = 0;
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        const Real dev = fabsq(mult[j] * Real(in.v[j * Dv + d]) - o[d]);
        c += p[j] * fabsq(s[j]) * dev;
        g += p[j] * a[j] * dev;
      }
      out.mag_c[i * Dv + d] = in_units(c);
      out.mag_g[i * Dv + d] = in_units(g);
    }
    if (out.weights) {
      for (std::int64_t j = 0; j < out.len_kv; ++j) {
        out.weights[i * out.len_kv + j] =
            (j < S && att[j]) ? static_cast<double>(p[j] * mult[j]) : 0.0;
      }
    }
  }
}

}  // namespace sdpa::reference
