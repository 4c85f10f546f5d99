// The backward's f64 engine: binary64 with compensated sums. Every sum (dot products, the
// softmax normaliser, O, D, dQ, and dK/dV over the rows and query heads of a group) is a
// Sum2 (TwoSum, with each product's rounding error recovered by a fused multiply-add):
// about twice the working precision, so a gradient's error is a few units of 2^-53 of the
// sum of its terms' magnitudes whatever the sum's length (Ogita, Rump and Oishi, "Accurate
// sum and dot product", 2005). Plain loops: the reference's backward is judged on the
// tiers' sizes, where clarity beats speed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/backward_engines.hpp"

namespace sdpa::reference {
namespace {

struct Sum2 {
  double hi = 0, lo = 0;
  void add(double x) {
    const double s = hi + x, z = s - hi;
    lo += (hi - (s - z)) + (x - z);
    hi = s;
  }
  void add_product(double a, double b) {
    const double prod = a * b;
    add(prod);
    lo += std::fma(a, b, -prod);
  }
  // A non-finite running sum is the result as IEEE arithmetic gives it (lo is meaningless).
  double value() const { return std::isfinite(hi) ? hi + lo : hi; }
};

double dot2(const double* a, const double* b, std::int64_t n) {
  Sum2 s;
  for (std::int64_t e = 0; e < n; ++e) s.add_product(a[e], b[e]);
  return s.value();
}

}  // namespace

void backward_group_f64(const std::vector<BackwardHead>& heads, double dropout_p,
                        const BackwardGroup& out) {
  if (heads.empty()) return;
  const HeadInputs& first = *heads.front().in;
  const std::int64_t S = first.rows_kv, Dq = first.dqk, Dv = first.dv;
  std::vector<Sum2> acc_k(static_cast<std::size_t>(S * Dq)),
      acc_v(static_cast<std::size_t>(S * Dv));
  std::vector<double> s(static_cast<std::size_t>(S)), sech2(static_cast<std::size_t>(S)),
      w(static_cast<std::size_t>(S)), p(static_cast<std::size_t>(S)),
      dx(static_cast<std::size_t>(S));
  std::vector<std::uint8_t> att(static_cast<std::size_t>(S));
  std::vector<double> o(static_cast<std::size_t>(Dv));
  const double keep_scale = dropout_p > 0 ? 1.0 / (1.0 - dropout_p) : 1.0;
  for (const BackwardHead& head : heads) {
    const HeadInputs& in = *head.in;
    const std::int64_t L = in.rows_q;
    const bool has_bias = !in.bias.empty(), has_drop = !in.kept.empty();
    for (std::int64_t i = 0; i < L; ++i) {
      const double* qi = in.q.data() + i * Dq;
      const double* doi = head.d_out + i * Dv;
      double* dqi = head.dq + i * Dq;
      double* dsi = head.ds ? head.ds + i * head.ds_stride : nullptr;
      if (dsi) std::fill(dsi, dsi + S, 0.0);
      bool any = false;
      for (std::int64_t j = 0; j < S; ++j) {
        att[j] = 0;
        if (!in.allowed[i * S + j]) continue;
        double x = in.scale * dot2(qi, in.k.data() + j * Dq, Dq);
        sech2[j] = 1;
        if (in.softcap > 0) {
          const double y = x / in.softcap, c = std::cosh(y);
          x = in.softcap * std::tanh(y);
          sech2[j] = 1 / (c * c);  // d(c tanh(y)) / dy, exact where 1 - tanh^2 would cancel
        }
        if (has_bias) x += in.bias[i * S + j];
        if (x == -std::numeric_limits<double>::infinity()) continue;  // a -inf logit masks
        s[j] = x;
        att[j] = 1;
        any = true;
      }
      if (!any) {  // fully masked row: no term, dQ_i = 0 (SEMANTICS.md, "Backward")
        std::fill(dqi, dqi + Dq, 0.0);
        continue;
      }
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        if (std::isnan(s[j])) nan = true;
        m = std::max(m, s[j]);
      }
      if (nan) m = std::numeric_limits<double>::quiet_NaN();
      Sum2 z;
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        p[j] = std::exp(s[j] - m);
        z.add(p[j]);
      }
      const double zv = z.value();
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        p[j] /= zv;
        w[j] = has_drop ? (in.kept[i * S + j] ? p[j] * keep_scale : 0.0) : p[j];
      }
      for (std::int64_t d = 0; d < Dv; ++d) {
        Sum2 acc;
        for (std::int64_t j = 0; j < S; ++j)
          if (att[j]) acc.add_product(w[j], in.v[j * Dv + d]);
        o[d] = acc.value();
      }
      const double big_d = dot2(doi, o.data(), Dv);
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        const double mult = has_drop ? (in.kept[i * S + j] ? keep_scale : 0.0) : 1.0;
        const double dp = mult * dot2(doi, in.v.data() + j * Dv, Dv);
        const double ds = p[j] * (dp - big_d);
        if (dsi) dsi[j] = ds;
        dx[j] = ds * sech2[j];
      }
      for (std::int64_t e = 0; e < Dq; ++e) {
        Sum2 acc;
        for (std::int64_t j = 0; j < S; ++j)
          if (att[j]) acc.add_product(dx[j], in.k[j * Dq + e]);
        dqi[e] = in.scale * acc.value();
      }
      for (std::int64_t j = 0; j < S; ++j) {
        if (!att[j]) continue;
        for (std::int64_t e = 0; e < Dq; ++e) acc_k[j * Dq + e].add_product(dx[j], qi[e]);
        for (std::int64_t d = 0; d < Dv; ++d) acc_v[j * Dv + d].add_product(w[j], doi[d]);
      }
    }
  }
  for (std::int64_t x = 0; x < S * Dq; ++x) out.dk[x] = first.scale * acc_k[x].value();
  for (std::int64_t x = 0; x < S * Dv; ++x) out.dv[x] = acc_v[x].value();
}

}  // namespace sdpa::reference
