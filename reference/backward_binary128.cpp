// The backward's binary128 engine: every operation in __float128, libquadmath for exp, tanh
// and cosh. Plain sums: at 2^-113 their rounding is far below anything f64 can show. The
// readable statement of the backward contract; it validates the f64 engine.
#include <quadmath.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/backward_engines.hpp"

namespace sdpa::reference {

using Real = __float128;

void backward_group_binary128(const std::vector<BackwardHead>& heads, double dropout_p,
                              const BackwardGroup& out) {
  if (heads.empty()) return;
  const HeadInputs& first = *heads.front().in;
  const std::int64_t S = first.rows_kv, Dq = first.dqk, Dv = first.dv;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  std::vector<Real> acc_k(n(S * Dq), 0), acc_v(n(S * Dv), 0);
  std::vector<Real> s(n(S)), sech2(n(S)), w(n(S)), p(n(S)), dx(n(S)), o(n(Dv));
  std::vector<std::uint8_t> att(n(S));
  const Real keep_scale = dropout_p > 0 ? Real(1) / (Real(1) - Real(dropout_p)) : Real(1);
  const Real scale = first.scale;
  for (const BackwardHead& head : heads) {
    const HeadInputs& in = *head.in;
    const std::int64_t L = in.rows_q;
    const bool has_bias = !in.bias.empty(), has_drop = !in.kept.empty();
    for (std::int64_t i = 0; i < L; ++i) {
      const double* doi = head.d_out + i * Dv;
      double* dqi = head.dq + i * Dq;
      double* dsi = head.ds ? head.ds + i * head.ds_stride : nullptr;
      if (dsi)
        for (std::int64_t j = 0; j < S; ++j) dsi[j] = 0;
      bool any = false;
      for (std::int64_t j = 0; j < S; ++j) {
        att[j] = 0;
        if (!in.allowed[i * S + j]) continue;
        Real dot = 0;
        for (std::int64_t e = 0; e < Dq; ++e)
          dot += Real(in.q[i * Dq + e]) * Real(in.k[j * Dq + e]);
        Real x = scale * dot;
        sech2[j] = 1;
        if (in.softcap > 0) {
          const Real y = x / Real(in.softcap), c = coshq(y);
          x = Real(in.softcap) * tanhq(y);
          sech2[j] = 1 / (c * c);
        }
        if (has_bias) x += Real(in.bias[i * S + j]);
        if (isinfq(x) && x < 0) continue;
        s[j] = x;
        att[j] = 1;
        any = true;
      }
      if (!any) {
        for (std::int64_t e = 0; e < Dq; ++e) dqi[e] = 0;
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
        z += p[j];
      }
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        p[j] /= z;
        w[j] = has_drop ? (in.kept[i * S + j] ? p[j] * keep_scale : Real(0)) : p[j];
      }
      for (std::int64_t d = 0; d < Dv; ++d) {
        Real acc = 0;
        for (std::int64_t j = 0; j < S; ++j)
          if (att[j]) acc += w[j] * Real(in.v[j * Dv + d]);
        o[d] = acc;
      }
      Real big_d = 0;
      for (std::int64_t d = 0; d < Dv; ++d) big_d += Real(doi[d]) * o[d];
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        Real dp = 0;
        for (std::int64_t d = 0; d < Dv; ++d) dp += Real(doi[d]) * Real(in.v[j * Dv + d]);
        if (has_drop) dp *= in.kept[i * S + j] ? keep_scale : Real(0);
        const Real ds = p[j] * (dp - big_d);
        if (dsi) dsi[j] = static_cast<double>(ds);
        dx[j] = ds * sech2[j];
      }
      for (std::int64_t e = 0; e < Dq; ++e) {
        Real acc = 0;
        for (std::int64_t j = 0; j < S; ++j)
          if (att[j]) acc += dx[j] * Real(in.k[j * Dq + e]);
        dqi[e] = static_cast<double>(scale * acc);
      }
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        for (std::int64_t e = 0; e < Dq; ++e)
          acc_k[n(j * Dq + e)] += dx[j] * Real(in.q[i * Dq + e]);
        for (std::int64_t d = 0; d < Dv; ++d) acc_v[n(j * Dv + d)] += w[j] * Real(doi[d]);
      }
    }
  }
  for (std::int64_t x = 0; x < S * Dq; ++x) out.dk[x] = static_cast<double>(scale * acc_k[n(x)]);
  for (std::int64_t x = 0; x < S * Dv; ++x) out.dv[x] = static_cast<double>(acc_v[n(x)]);
}

}  // namespace sdpa::reference
