#include "conformance/judge/tolerance.hpp"

#include <algorithm>
#include <cmath>

namespace sdpa::conformance {

double subnormal_spacing(DType t) {
  switch (t) {
    case DType::f64:
      return std::ldexp(1.0, -1074);
    case DType::f32:
      return std::ldexp(1.0, -149);
    case DType::f16:
      return std::ldexp(1.0, -24);
    case DType::bf16:
      return std::ldexp(1.0, -133);
  }
  return 0;
}

double tensor_core_growth(const PrecisionContract& c, std::int64_t n) {
  if (c.mma_block <= 0) return 0;
  const double blocks = std::ceil(double(std::max<std::int64_t>(n, 1)) / c.mma_block);
  return blocks * (2.0 + (c.mma_block + 1) * std::ldexp(1.0, 1 - c.mma_extra_bits));
}

ToleranceFactors tolerance_factors(const Problem& p, const PrecisionContract& c, std::int64_t s_b,
                                   const ToleranceTable& table) {
  ToleranceFactors f;
  f.u_out = dtype_unit_roundoff(p.dtype);
  f.u_p = c.p_type == c.accumulate ? 0.0 : dtype_unit_roundoff(c.p_type);
  f.u_acc = dtype_unit_roundoff(c.accumulate);
  const double rescales =
      c.online_softmax && c.key_block > 0 ? std::ceil(double(s_b) / double(c.key_block)) : 0.0;
  f.k_l = table.safety * std::sqrt(std::max<double>(double(s_b), 1.0));
  // Sums rounded to nearest grow like sqrt(n) (probabilistically, times the safety factor).
  // Tensor cores truncate: their errors lean one way and grow like n; the bound takes the
  // worst case of the declared block FMAs (docs/CONFORMANCE.md, "Tensor-core accumulation";
  // table 2026-12-8).
  f.k_s = std::max(f.k_l, tensor_core_growth(c, s_b));
  f.k_e = std::max(table.safety * std::sqrt(std::max<double>(double(p.head_dim_qk), 1.0)),
                   tensor_core_growth(c, p.head_dim_qk));
  f.k_x = table.safety * (2.0 + rescales);
  // One subnormal spacing of the output, plus one of the accumulator per key: each product
  // P_j V_j that lands below the smallest normal is rounded to that spacing (table 2026-12-2;
  // the single-spacing floor of 2026-12-1 failed correct kernels summing subnormal products).
  // Dropout scales the sum by 1 / (1 - p), and with it those absolute errors (table
  // 2026-12-4; found with p = 0.999 on subnormal data, where cpu.math missed the bound by 2x).
  const double keep_scale = p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0;
  f.floor = subnormal_spacing(p.dtype) + double(std::max<std::int64_t>(s_b, 1) + 1) *
                                             subnormal_spacing(c.accumulate) * keep_scale;
  // P itself underflows: a weight below the smallest normal of the type P is computed in
  // (and of the one it is rounded to, when rounded) is off by up to half its subnormal
  // spacing in absolute terms, which a V near the maximum turns into a visible output error
  // (table 2026-12-3; found with P < 2^-126 times |V| ~ 2^127, where every f32 kernel has
  // only a few significant bits of P).
  f.u_lse_held = lse_held_rounding(p, c);
  f.u_sub = 0.5 * (subnormal_spacing(c.accumulate) +
                   (c.p_type == c.accumulate ? 0.0 : subnormal_spacing(c.p_type)));
  return f;
}

double output_tolerance(const ToleranceFactors& f, const reference::Result& r, std::int64_t row,
                        std::int64_t d, std::int64_t dv) {
  const auto x = static_cast<std::size_t>(row * dv + d);
  // The magnitudes are stored times 2^-mag_exp (sdpa_reference.hpp): factor first, then scale.
  const double scaled = (f.u_p + f.k_s * f.u_acc) * r.mag_a[x] + f.k_e * f.u_acc * r.mag_g[x] +
                        f.k_x * f.u_acc * r.mag_c[x] + f.u_sub * r.mag_u[x];
  const int e = r.mag_exp.empty() ? 0 : static_cast<int>(r.mag_exp[static_cast<std::size_t>(row)]);
  return f.u_out * std::fabs(r.o[x]) + std::ldexp(scaled, e) + f.floor;
}

double lse_held_rounding(const Problem& p, const PrecisionContract& c) {
  return p.want_lse ? kLseOutputRounding : dtype_unit_roundoff(c.accumulate);
}

double lse_tolerance(const ToleranceFactors& f, const reference::Result& r, std::int64_t row,
                     double u_held) {
  const auto x = static_cast<std::size_t>(row);
  return u_held * std::fabs(r.lse[x]) + f.k_l * f.u_acc + f.k_x * f.u_acc * r.lse_mag_c[x] +
         f.k_e * f.u_acc * r.lse_mag_g[x];
}

double weights_tolerance(const ToleranceFactors& f, const reference::Result& r, std::int64_t row,
                         double p_exact, const ToleranceTable& table) {
  const double logit_rel = table.weights_lse_factor * lse_tolerance(f, r, row, f.u_lse_held);
  const double a = std::fabs(p_exact);
  return f.u_out * (table.weights_p_growth + a) * a + table.weights_acc_roundings * f.u_acc * a +
         logit_rel * a + f.floor;
}

}  // namespace sdpa::conformance
