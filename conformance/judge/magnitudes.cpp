#include "conformance/judge/magnitudes.hpp"

#include <cmath>

namespace sdpa::conformance {

double output_magnitude(const reference::Result& r, std::size_t x, std::size_t row,
                        double expected) {
  // The magnitudes are stored times 2^-mag_exp (reference/sdpa_reference.hpp).
  return std::fabs(expected) +
         std::ldexp(r.mag_a[x] + r.mag_c[x] + r.mag_g[x], static_cast<int>(r.mag_exp[row]));
}

double lse_magnitude(const reference::Result& r, std::size_t row, double expected) {
  return std::fabs(expected) + r.lse_mag_c[row] + r.lse_mag_g[row] + 1;
}

std::vector<double> weight_magnitudes(const Problem& p, const InputPointers& in,
                                      const reference::Result& r,
                                      const std::vector<double>& expected) {
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv;
  std::vector<double> m(expected.size(), 0.0);
  // Logit magnitudes |s_j| and a_j from the stored inputs (plain f64 loops: they only
  // scale a bound).
  const double scale = effective_scale(p);
  const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
  const StridedView mv = p.mask != MaskKind::none ? mask_view(p) : StridedView{};
  const std::int64_t group = p.heads_kv > 0 ? H / p.heads_kv : 1;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        const auto row = static_cast<std::size_t>((b * H + h) * L + i);
        for (std::int64_t j = 0; j < S; ++j) {
          const auto x = row * static_cast<std::size_t>(S) + static_cast<std::size_t>(j);
          const double w = expected[x];
          if (w == 0 || !std::isfinite(w) || i >= seqlen_q(p, b) || j >= seqlen_kv(p, b)) continue;
          const std::int64_t qr = p.packed ? cuq[b] + i : i, kr = p.packed ? cuk[b] + j : j;
          double dot = 0, abs_dot = 0;
          for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
            const double qe =
                load_as_double(p.dtype, in.q, element_offset(p.q, p.packed, b, h, qr, e));
            const double ke =
                load_as_double(p.dtype, in.k, element_offset(p.k, p.packed, b, h / group, kr, e));
            dot += qe * ke;
            abs_dot += std::fabs(qe * ke);
          }
          double s = scale * dot;
          if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
          if (p.mask == MaskKind::additive) {
            s += load_as_double(
                p.dtype, in.mask,
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3]);
          }
          m[x] = std::fabs(w) * (2 + std::fabs(s) + std::fabs(scale) * abs_dot + r.lse_mag_c[row] +
                                 r.lse_mag_g[row]);
        }
      }
  return m;
}

}  // namespace sdpa::conformance
