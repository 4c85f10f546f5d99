#include "conformance/engine/golden_verify.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "conformance/judge/gradient_tolerance.hpp"
#include "conformance/judge/magnitudes.hpp"
#include "core/guarded_buffer.hpp"
#include "reference/sdpa_backward.hpp"

namespace sdpa::conformance {

using golden::GoldenCase;
using golden::MhaGoldenCase;

namespace {

constexpr double kU = 0x1p-53;        // unit roundoff of f64
constexpr double kFloor = 0x1p-1074;  // smallest subnormal: absolute rounding floor

std::string index_text(const char* name, std::initializer_list<std::int64_t> idx) {
  std::string s = std::string(name) + "[";
  bool first = true;
  for (auto i : idx) {
    s += (first ? "" : ",") + std::to_string(i);
    first = false;
  }
  return s + "]";
}

std::string num(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

// c of one element (`scale` = unit * M); "" or a mismatch description in *kind.
double agreement(double ref, double gold, double scale, std::string* kind) {
  kind->clear();
  if (std::isnan(gold) || std::isnan(ref)) {
    if (!(std::isnan(gold) && std::isnan(ref))) *kind = "NaN mismatch";
    return 0;
  }
  if (std::isinf(gold) || std::isinf(ref)) {
    if (gold != ref) *kind = "infinity mismatch";
    return 0;
  }
  const double excess = std::fabs(ref - gold) - kFloor;
  if (excess <= 0) return 0;
  return excess / scale;  // infinity when M = 0
}

// Records one compared element in `a`: the first NaN / inf mismatch (`kind`, set by
// agreement()) and, when its c is the worst so far, c and where it is.
void note_element(Agreement& a, const std::string& kind, double c, double ref, double gold,
                  const std::string& where, double* worst, std::string* worst_where) {
  if (!kind.empty() && a.mismatch.empty()) {
    a.mismatch = kind + " at " + where + ": reference " + num(ref) + ", golden " + num(gold);
  }
  if (c > *worst) {
    *worst = c;
    *worst_where = where + ": reference " + num(ref) + ", golden " + num(gold);
  }
}

}  // namespace

double Agreement::worst() const {
  if (!mismatch.empty()) return INFINITY;
  return std::max({o, lse, weights, gradients});
}

std::string Agreement::worst_where() const {
  if (gradients > std::max({o, lse, weights})) return gradients_where;
  if (o >= lse && o >= weights) return o_where;
  return lse >= weights ? lse_where : weights_where;
}

Agreement compare_with_reference(const GoldenCase& g, reference::Precision precision, int threads) {
  const Problem& p = g.c.problem;
  const InputPointers in = g.inputs.pointers();
  const reference::Result r = reference::run_sdpa(p, in, precision, threads);
  // The unit of c: the reference's rounding plus the file's own (a capture of limited
  // digits, conformance/judge/judge.hpp capture_unit).
  const double unit = kU + capture_unit(g.precision_digits);
  Agreement a;
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
  std::string kind;
  auto note = [&](double c, double ref, double gold, const std::string& where, double* worst,
                  std::string* worst_where) {
    note_element(a, kind, c, ref, gold, where, worst, worst_where);
  };
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        const auto row = static_cast<std::size_t>((b * H + h) * L + i);
        for (std::int64_t d = 0; d < Dv; ++d) {
          const auto x = row * static_cast<std::size_t>(Dv) + static_cast<std::size_t>(d);
          const double m = output_magnitude(r, x, row, g.o[x]);
          const double c = agreement(r.o[x], g.o[x], unit * m, &kind);
          note(c, r.o[x], g.o[x], index_text("o", {b, h, i, d}), &a.o, &a.o_where);
        }
        const double m = lse_magnitude(r, row, g.lse[row]);
        const double c = agreement(r.lse[row], g.lse[row], unit * m, &kind);
        note(c, r.lse[row], g.lse[row], index_text("lse", {b, h, i}), &a.lse, &a.lse_where);
      }
  if (g.has_gradients) {
    // The backward: the reference's gradients (same precision) against the file's.
    const std::vector<double> d_out = logical_d_out(p, *g.inputs.d_out);
    const reference::Gradients rg = reference::run_sdpa_backward(p, in, d_out, precision, threads);
    PrecisionContract f64;
    f64.accumulate = f64.p_type = f64.ds_type = DType::f64;
    const GradientTolerances m = gradient_tolerances(p, in, d_out, r, rg, f64, {}, DType::f64);
    const std::int64_t Hkv = p.heads_kv, S = p.len_kv, Dq = p.head_dim_qk;
    const struct {
      const char* name;
      const std::vector<double>& ref;
      const std::vector<double>& gold;
      const std::vector<double>& bound;
      std::int64_t heads, rows, cols;
    } tensors[] = {{"dq", rg.dq, g.dq, m.dq, H, L, Dq},
                   {"dk", rg.dk, g.dk, m.dk, Hkv, S, Dq},
                   {"dv", rg.dv, g.dv, m.dv, Hkv, S, Dv}};
    for (const auto& t : tensors)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < t.heads; ++h)
          for (std::int64_t i = 0; i < t.rows; ++i)
            for (std::int64_t e = 0; e < t.cols; ++e) {
              const auto x =
                  static_cast<std::size_t>(((b * t.heads + h) * t.rows + i) * t.cols + e);
              const double mag = t.bound[x] / kU;  // the f64 bound in units of 2^-53
              const double c = agreement(t.ref[x], t.gold[x], unit * mag, &kind);
              note(c, t.ref[x], t.gold[x], index_text(t.name, {b, h, i, e}), &a.gradients,
                   &a.gradients_where);
            }
    // d bias, one stored mask element each (named by its index in the stored mask).
    for (std::size_t x = 0; x < g.dbias.size() && x < rg.dbias.size(); ++x) {
      const double c = agreement(rg.dbias[x], g.dbias[x], unit * (m.dbias[x] / kU), &kind);
      note(c, rg.dbias[x], g.dbias[x], index_text("dbias", {static_cast<std::int64_t>(x)}),
           &a.gradients, &a.gradients_where);
    }
  }
  if (!g.has_weights) return a;
  const std::int64_t S = p.len_kv;
  const std::vector<double> mw = weight_magnitudes(p, in, r, g.weights);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < S; ++j) {
          const auto x = static_cast<std::size_t>(((b * H + h) * L + i) * S + j);
          const double c = agreement(r.weights[x], g.weights[x], unit * mw[x], &kind);
          note(c, r.weights[x], g.weights[x], index_text("weights", {b, h, i, j}), &a.weights,
               &a.weights_where);
        }
  return a;
}

Agreement compare_mha_with_reference(const MhaGoldenCase& g, int threads) {
  const reference::MhaProblem& p = g.problem;
  const reference::MhaInputs& in = g.inputs;
  const reference::MhaResult r = reference::run_mha(p, in, threads);
  const std::int64_t E = p.embed_dim, H = p.num_heads, D = reference::head_dim(p), B = p.batch,
                     L = p.len_q, S = p.len_kv, Sp = reference::attended_len_kv(p);
  Agreement a;
  std::string kind;
  auto note = [&](double c, double ref, double gold, const std::string& where, double* worst,
                  std::string* worst_where) {
    note_element(a, kind, c, ref, gold, where, worst, worst_where);
  };
  const auto at = [&](std::int64_t t, std::int64_t b, std::int64_t n, std::int64_t f) {
    return static_cast<std::size_t>(p.batch_first ? (b * n + t) * f : (t * B + b) * f);
  };
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t row = 0; row < E; ++row) {
        double m = p.bias ? std::fabs(in.out_proj_bias[static_cast<std::size_t>(row)]) : 0.0;
        for (std::int64_t e = 0; e < E; ++e) {
          const auto x = static_cast<std::size_t>(((b * H + e / D) * L + t) * D + e % D);
          m += std::fabs(in.out_proj_weight[static_cast<std::size_t>(row * E + e)]) *
               (std::fabs(r.sdpa.o[x]) +
                std::ldexp(r.sdpa.mag_a[x] + r.sdpa.mag_c[x] + r.sdpa.mag_g[x],
                           static_cast<int>(r.sdpa.mag_exp[x / static_cast<std::size_t>(D)])));
        }
        const std::size_t x = at(t, b, L, E) + static_cast<std::size_t>(row);
        m += std::fabs(g.out[x]);
        const double c = agreement(r.out[x], g.out[x], kU * m, &kind);
        note(c, r.out[x], g.out[x], index_text("out", {t, b, row}), &a.o, &a.o_where);
      }
  if (!p.need_weights) return a;

  // Projected Q and K per head in plain f64 (they only scale the bound): a_j.
  const bool sep = p.use_separate_proj_weight;
  const std::int64_t kd = reference::key_dim(p);
  const double* wq = sep ? in.q_proj_weight.data() : in.in_proj_weight.data();
  const double* wk = sep ? in.k_proj_weight.data() : in.in_proj_weight.data() + E * E;
  const double scale = D > 0 ? 1.0 / std::sqrt(static_cast<double>(D)) : 1.0;
  std::vector<double> wsum(static_cast<std::size_t>(B * L * Sp), 0.0), msum(wsum.size(), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<double> q(static_cast<std::size_t>(L * E)),
        k(static_cast<std::size_t>(Sp * E), 0.0);
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t f = 0; f < E; ++f) {
        double s = p.bias ? in.in_proj_bias[static_cast<std::size_t>(f)] : 0.0;
        for (std::int64_t e = 0; e < E; ++e) s += wq[f * E + e] * in.query[at(t, b, L, E) + e];
        q[static_cast<std::size_t>(t * E + f)] = s;
      }
    for (std::int64_t j = 0; j < Sp; ++j)
      for (std::int64_t f = 0; f < E; ++f) {
        double s = 0;
        if (j < S) {
          s = p.bias ? in.in_proj_bias[static_cast<std::size_t>(E + f)] : 0.0;
          for (std::int64_t e = 0; e < kd; ++e) s += wk[f * kd + e] * in.key[at(j, b, S, kd) + e];
        } else if (j == S && p.add_bias_kv) {
          s = in.bias_k[static_cast<std::size_t>(f)];
        }
        k[static_cast<std::size_t>(j * E + f)] = s;
      }
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        const auto row = static_cast<std::size_t>((b * H + h) * L + i);
        for (std::int64_t j = 0; j < Sp; ++j) {
          const double w = r.sdpa.weights[row * static_cast<std::size_t>(Sp) + j];
          double m = 0;
          if (w > 0 && std::isfinite(w)) {
            double aj = 0;
            for (std::int64_t d = 0; d < D; ++d) {
              aj += std::fabs(q[static_cast<std::size_t>(i * E + h * D + d)] *
                              k[static_cast<std::size_t>(j * E + h * D + d)]);
            }
            m = w * (2 + std::fabs(std::log(w * (1 - p.dropout_p))) + std::fabs(r.sdpa.lse[row]) +
                     scale * aj + r.sdpa.lse_mag_c[row] + r.sdpa.lse_mag_g[row]);
          }
          if (p.average_attn_weights) {
            const auto x = static_cast<std::size_t>((b * L + i) * Sp + j);
            msum[x] += m / static_cast<double>(H);
          } else {
            const std::size_t x = row * static_cast<std::size_t>(Sp) + static_cast<std::size_t>(j);
            const double c =
                agreement(r.weights[x], g.weights[x], kU * (m + std::fabs(g.weights[x])), &kind);
            note(c, r.weights[x], g.weights[x], index_text("weights", {b, h, i, j}), &a.weights,
                 &a.weights_where);
          }
        }
      }
  }
  if (p.average_attn_weights) {
    for (std::size_t x = 0; x < g.weights.size(); ++x) {
      const double c =
          agreement(r.weights[x], g.weights[x], kU * (msum[x] + std::fabs(g.weights[x])), &kind);
      const auto sx = static_cast<std::int64_t>(x);
      note(c, r.weights[x], g.weights[x],
           index_text("weights", {sx / (L * Sp), sx / Sp % L, sx % Sp}), &a.weights,
           &a.weights_where);
    }
  }
  return a;
}

CaseOutcome judge_backend(const Backend& backend, GoldenCase& g, const Device& device,
                          const RunOptions& options, const ToleranceTable& table) {
  ExpectedValues expected{&g.o, &g.lse, g.has_weights ? &g.weights : nullptr, g.precision_digits};
  if (g.has_gradients) {
    expected.dq = &g.dq;
    expected.dk = &g.dk;
    expected.dv = &g.dv;
    if (!g.dbias.empty()) expected.dbias = &g.dbias;
  }
  return judge(backend, g.c.problem, g.inputs, device, options, &expected, table);
}

}  // namespace sdpa::conformance
