#include "conformance/judge/gradient_tolerance.hpp"

#include <cmath>
#include <limits>

#include "reference/head_inputs.hpp"

namespace sdpa::conformance {

GradientTolerances gradient_tolerances(const Problem& p, const InputPointers& in,
                                       const std::vector<double>& d_out,
                                       const reference::Result& forward,
                                       const reference::Gradients& exact,
                                       const PrecisionContract& c, const ToleranceTable& table,
                                       std::optional<DType> output_type) {
  const std::int64_t B = p.batch, H = p.heads_q, Hkv = p.heads_kv, L = p.len_q, S = p.len_kv;
  const std::int64_t Dq = p.head_dim_qk, Dv = p.head_dim_v;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  GradientTolerances t;
  t.dq.assign(n(B * H * L * Dq), 0.0);
  t.dk.assign(n(B * Hkv * S * Dq), 0.0);
  t.dv.assign(n(B * Hkv * S * Dv), 0.0);
  if (p.bias_grad) t.dbias.assign(n(mask_elements(p)), 0.0);
  if (B * Hkv == 0 || H == 0) return t;
  const std::int64_t group = H / Hkv;
  // The forward's factors and the output rounding are those of the output type.
  Problem po = p;
  po.dtype = output_type.value_or(p.dtype);
  const double u_out = dtype_unit_roundoff(po.dtype), u_a = dtype_unit_roundoff(c.accumulate);
  const double u_p = c.ds_type == c.accumulate ? 0.0 : dtype_unit_roundoff(c.ds_type);
  // Rounding P and dS to a narrower type is absolute below its smallest normal: half a
  // subnormal spacing per operand (f16's is 2^-25), whatever the operand's size.
  const double sub_p = c.ds_type == c.accumulate ? 0.0 : 0.5 * subnormal_spacing(c.ds_type);
  // P itself, computed in the accumulation type, is off by up to half its subnormal spacing
  // where it underflows (one-hot rows of large logits), as in the forward's u_sub term.
  const double sub_acc = 0.5 * subnormal_spacing(c.accumulate);
  // dS's own roundings in the accumulation type are absolute too where dS underflows: half a
  // spacing each (table 2026-12-7; the fuzzer found cpu.math's f32 dK 3.5 spacings off with
  // one query row of large logits, where the relative terms give none).
  const double sub_ds = table.grad_ds_roundings * sub_acc;
  const double k_v = table.safety * std::sqrt(std::max<double>(double(Dv), 1.0));
  const double keep_scale = p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0;
  const double per_head = c.dkv_rounded_per_head ? u_out : 0.0;
  const double abs_scale = std::fabs(effective_scale(p));

  // The sums in long double: with V near the f64 maximum the terms' products leave the f64
  // range (an inf times a zero weight would make a NaN bound) while the bounds do not.
  using Real = long double;
  std::vector<Real> acc_dq(t.dq.size(), 0), acc_dk(t.dk.size(), 0), acc_dv(t.dv.size(), 0);
  // d bias: each stored element sums M = the product of the broadcast dimensions' sizes terms.
  const StridedView mv = mask_view(p);
  double terms = 1;
  for (int k = 0; k < 4; ++k)
    if (mv.stride[k] == 0) terms *= std::max<double>(double(mv.shape[k]), 1.0);
  const double k_m = table.safety * std::sqrt(terms);
  std::vector<Real> acc_db(t.dbias.size(), 0);
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
    const ToleranceFactors ff = tolerance_factors(po, c, sb, table);  // the forward's, and dQ's
    const double k_n = table.safety * std::sqrt(std::max<double>(double(lb * group), 1.0));
    for (std::int64_t h = 0; h < H; ++h) {
      const reference::HeadInputs hd = reference::gather_head(p, in, b, h);
      const std::int64_t hk = h / group;
      Real* tdk = acc_dk.data() + (b * Hkv + hk) * S * Dq;
      Real* tdv = acc_dv.data() + (b * Hkv + hk) * S * Dv;
      for (std::int64_t i = 0; i < lb; ++i) {
        const std::int64_t row = (b * H + h) * L + i;
        const double lse = forward.lse[n(row)];
        if (!std::isfinite(lse)) continue;  // no attended key (exact zeros) or a NaN row
        const double tol_lse = lse_tolerance(ff, forward, row, ff.u_lse_held);
        const double* qi = hd.q.data() + i * Dq;
        const double* doi = d_out.data() + row * Dv;
        const double* oi = forward.o.data() + row * Dv;
        Real big_d = 0, e_d = 0;
        for (std::int64_t d = 0; d < Dv; ++d) {
          big_d += Real(doi[d]) * oi[d];
          e_d += k_v * u_a * std::fabs(Real(doi[d]) * oi[d]) +
                 std::fabs(doi[d]) * output_tolerance(ff, forward, row, d, Dv);
        }
        Real* tdq = acc_dq.data() + row * Dq;
        for (std::int64_t j = 0; j < sb; ++j) {
          if (!hd.allowed[n(i * sb + j)]) continue;
          const double* kj = hd.k.data() + j * Dq;
          const double* vj = hd.v.data() + j * Dv;
          Real dot = 0, a = 0;
          for (std::int64_t e = 0; e < Dq; ++e) {
            dot += Real(qi[e]) * kj[e];
            a += std::fabs(Real(qi[e]) * kj[e]);
          }
          a *= abs_scale;
          Real x = hd.scale * dot, tp = 1, e_tp = 0;
          if (hd.softcap > 0) {
            const Real th = std::tanh(x / hd.softcap);
            // The argument's error (the dot product's and the logit's rounding) through
            // d(1 - tanh^2)/dy = -2 tanh (1 - tanh^2), and 1 - tanh^2's own rounding.
            const Real e_y = u_a * (ff.k_e * a + std::fabs(x)) / hd.softcap;
            x = hd.softcap * th;
            tp = 1 - th * th;
            e_tp = 2 * std::fabs(th) * tp * e_y + table.grad_softcap_roundings * u_a;
          }
          if (!hd.bias.empty()) x += hd.bias[n(i * sb + j)];
          if (x == -std::numeric_limits<Real>::infinity()) continue;
          const Real pr = std::exp(x - lse);
          const Real z = hd.kept.empty() ? 1.0 : (hd.kept[n(i * sb + j)] ? keep_scale : 0.0);
          const Real delta =
              u_a * (ff.k_x * (1 + std::fabs(x)) + ff.k_e * a) + table.weights_lse_factor * tol_lse;
          Real dp = 0, bmag = 0;
          for (std::int64_t d = 0; d < Dv; ++d) {
            dp += Real(doi[d]) * vj[d];
            bmag += std::fabs(Real(doi[d]) * vj[d]);
          }
          dp *= z;
          const Real ds = pr * (dp - big_d);
          const Real e_ds = tp * pr * (delta * std::fabs(dp - big_d) + z * k_v * u_a * bmag + e_d) +
                            tp * sub_acc * std::fabs(dp - big_d) +
                            std::fabs(ds) * ((u_p + table.grad_ds_roundings * u_a) * tp + e_tp) +
                            sub_ds + sub_p;
          const Real dx = std::fabs(ds * tp);
          if (p.bias_grad) {
            // dS without softcap's derivative (the bias is added after it), and its sum.
            const Real e_db = pr * (delta * std::fabs(dp - big_d) + z * k_v * u_a * bmag + e_d) +
                              sub_acc * std::fabs(dp - big_d) +
                              std::fabs(ds) * (u_p + table.grad_ds_roundings * u_a) + sub_ds +
                              sub_p;
            const std::int64_t m =
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
            acc_db[n(m)] += e_db + k_m * u_a * std::fabs(ds);
          }
          for (std::int64_t e = 0; e < Dq; ++e) {
            tdq[e] += abs_scale * std::fabs(kj[e]) * (e_ds + ff.k_s * u_a * dx);
            tdk[j * Dq + e] += abs_scale * std::fabs(qi[e]) * (e_ds + (k_n * u_a + per_head) * dx);
          }
          const Real w =
              pr * z * (delta + u_p + k_n * u_a + per_head) + (z > 0 ? sub_p + z * sub_acc : 0.0);
          for (std::int64_t d = 0; d < Dv; ++d) tdv[j * Dv + d] += w * std::fabs(doi[d]);
        }
      }
    }
  }
  for (std::size_t x = 0; x < t.dq.size(); ++x) t.dq[x] = static_cast<double>(acc_dq[x]);
  for (std::size_t x = 0; x < t.dk.size(); ++x) t.dk[x] = static_cast<double>(acc_dk[x]);
  for (std::size_t x = 0; x < t.dv.size(); ++x) t.dv[x] = static_cast<double>(acc_dv[x]);
  // d bias's output rounding and the floor of a sum over S keys.
  const double floor_db = tolerance_factors(po, c, S, table).floor;
  for (std::size_t x = 0; x < t.dbias.size(); ++x) {
    t.dbias[x] = static_cast<double>(acc_db[x]) + u_out * std::fabs(exact.dbias[x]) + floor_db;
  }
  // Output roundings and the floors.
  for (std::int64_t b = 0; b < B; ++b) {
    const double floor_q = tolerance_factors(po, c, seqlen_kv(p, b), table).floor;
    const double floor_kv = tolerance_factors(po, c, seqlen_q(p, b) * group, table).floor;
    for (std::size_t x = n(b * H * L * Dq); x < n((b + 1) * H * L * Dq); ++x)
      t.dq[x] += u_out * std::fabs(exact.dq[x]) + floor_q;
    for (std::size_t x = n(b * Hkv * S * Dq); x < n((b + 1) * Hkv * S * Dq); ++x)
      t.dk[x] += u_out * std::fabs(exact.dk[x]) + floor_kv;
    for (std::size_t x = n(b * Hkv * S * Dv); x < n((b + 1) * Hkv * S * Dv); ++x)
      t.dv[x] += u_out * std::fabs(exact.dv[x]) + floor_kv;
  }
  return t;
}

}  // namespace sdpa::conformance
