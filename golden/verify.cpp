#include "golden/verify.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/guarded_buffer.hpp"

namespace sdpa::golden {
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

// c of one element; "" or a mismatch description in *kind.
double agreement(double ref, double gold, double magnitude, std::string* kind) {
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
  return excess / (kU * magnitude);  // infinity when M = 0
}

// Element offset of row r (packed or padded) of a Q-side / KV-side tensor.
std::int64_t offset(const TensorLayout& t, bool packed, std::int64_t b, std::int64_t h,
                    std::int64_t row, std::int64_t d) {
  return (packed ? 0 : b * t.stride[0]) + h * t.stride[1] + row * t.stride[2] + d * t.stride[3];
}

}  // namespace

double Agreement::worst() const {
  if (!mismatch.empty()) return INFINITY;
  return std::max({o, lse, weights});
}

std::string Agreement::worst_where() const {
  if (o >= lse && o >= weights) return o_where;
  return lse >= weights ? lse_where : weights_where;
}

Agreement compare_with_reference(const GoldenCase& g, reference::Precision precision, int threads) {
  const Problem& p = g.c.problem;
  const reference::Inputs in{g.q.data(), g.k.data(), g.v.data(), g.mask ? g.mask->data() : nullptr};
  const reference::Result r = reference::run_sdpa(p, in, precision, threads);
  Agreement a;
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dv = p.head_dim_v;
  std::string kind;
  auto note = [&](double c, double ref, double gold, const std::string& where, double* worst,
                  std::string* worst_where) {
    if (!kind.empty() && a.mismatch.empty()) {
      a.mismatch = kind + " at " + where + ": reference " + num(ref) + ", golden " + num(gold);
    }
    if (c > *worst) {
      *worst = c;
      *worst_where = where + ": reference " + num(ref) + ", golden " + num(gold);
    }
  };
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        const auto row = static_cast<std::size_t>((b * H + h) * L + i);
        for (std::int64_t d = 0; d < Dv; ++d) {
          const auto x = row * static_cast<std::size_t>(Dv) + static_cast<std::size_t>(d);
          const double m =
              std::fabs(g.o[x]) + std::ldexp(r.mag_a[x] + r.mag_c[x] + r.mag_g[x],
                                             static_cast<int>(r.mag_exp[row]));  // stored units
          const double c = agreement(r.o[x], g.o[x], m, &kind);
          note(c, r.o[x], g.o[x], index_text("o", {b, h, i, d}), &a.o, &a.o_where);
        }
        const double m = std::fabs(g.lse[row]) + r.lse_mag_c[row] + r.lse_mag_g[row] + 1;
        const double c = agreement(r.lse[row], g.lse[row], m, &kind);
        note(c, r.lse[row], g.lse[row], index_text("lse", {b, h, i}), &a.lse, &a.lse_where);
      }
  if (!g.has_weights) return a;

  // Logit magnitudes |s_j| and a_j from the stored inputs (plain f64 loops: they only
  // scale the bound).
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
          const double gold = g.weights[x], ref = r.weights[x];
          double m = 0;
          if (gold != 0 && std::isfinite(gold) && i < seqlen_q(p, b) && j < seqlen_kv(p, b)) {
            const std::int64_t qr = p.packed ? cuq[b] + i : i, kr = p.packed ? cuk[b] + j : j;
            double dot = 0, abs_dot = 0;
            for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
              const double qe =
                  load_as_double(p.dtype, g.q.data(), offset(p.q, p.packed, b, h, qr, e));
              const double ke =
                  load_as_double(p.dtype, g.k.data(), offset(p.k, p.packed, b, h / group, kr, e));
              dot += qe * ke;
              abs_dot += std::fabs(qe * ke);
            }
            double s = scale * dot;
            if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
            if (p.mask == MaskKind::additive) {
              s += load_as_double(
                  p.dtype, g.mask->data(),
                  b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3]);
            }
            m = std::fabs(gold) * (2 + std::fabs(s) + std::fabs(scale) * abs_dot +
                                   r.lse_mag_c[row] + r.lse_mag_g[row]);
          }
          const double c = agreement(ref, gold, m, &kind);
          note(c, ref, gold, index_text("weights", {b, h, i, j}), &a.weights, &a.weights_where);
        }
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
    if (!kind.empty() && a.mismatch.empty()) {
      a.mismatch = kind + " at " + where + ": reference " + num(ref) + ", golden " + num(gold);
    }
    if (c > *worst) {
      *worst = c;
      *worst_where = where + ": reference " + num(ref) + ", golden " + num(gold);
    }
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
        const double c = agreement(r.out[x], g.out[x], m, &kind);
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
                agreement(r.weights[x], g.weights[x], m + std::fabs(g.weights[x]), &kind);
            note(c, r.weights[x], g.weights[x], index_text("weights", {b, h, i, j}), &a.weights,
                 &a.weights_where);
          }
        }
      }
  }
  if (p.average_attn_weights) {
    for (std::size_t x = 0; x < g.weights.size(); ++x) {
      const double c =
          agreement(r.weights[x], g.weights[x], msum[x] + std::fabs(g.weights[x]), &kind);
      const auto sx = static_cast<std::int64_t>(x);
      note(c, r.weights[x], g.weights[x],
           index_text("weights", {sx / (L * Sp), sx / Sp % L, sx % Sp}), &a.weights,
           &a.weights_where);
    }
  }
  return a;
}

namespace {

CaseOutcome outcome(Status s, std::string message) {
  CaseOutcome o;
  o.status = s;
  o.message = std::move(message);
  return o;
}

// err / tol for one element: NaN must meet NaN and infinities must be equal.
double ratio(double got, double want, double tol, double* err) {
  *err = 0;
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : INFINITY;
  *err = std::fabs(got - want);
  if (*err == 0) return 0;
  return tol > 0 ? *err / tol : INFINITY;
}

}  // namespace

CaseOutcome judge_backend(const Backend& backend, const GoldenCase& g, const Device& device,
                          const RunOptions& options, const ToleranceTable& table) {
  const Problem& p = g.c.problem;
  if (auto r = validate(p); !r.empty()) return outcome(Status::invalid, r);
  if (Support s = backend.supports(p, device); !s.ok()) {
    std::string why;
    for (const auto& reason : s.reasons) why += (why.empty() ? "" : "; ") + reason;
    return outcome(Status::not_supported, why);
  }
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dv = p.head_dim_v;
  GuardedBuffer o("o", dtype_size(p.dtype), o_view(p), p.o.base_offset);
  GuardedBuffer lse("lse", 4, StridedView{{B, H, L, 1}, {H * L, L, 1, 1}});
  GuardedBuffer weights(
      "weights", dtype_size(p.dtype),
      p.want_weights ? StridedView{{B, H, L, S}, {H * L * S, L * S, S, 1}} : StridedView{});
  const Buffers buf{g.q.data(),
                    g.k.data(),
                    g.v.data(),
                    g.mask ? g.mask->data() : nullptr,
                    o.data(),
                    p.want_lse ? static_cast<float*>(lse.data()) : nullptr,
                    p.want_weights ? weights.data() : nullptr};
  try {
    backend.run(p, buf, options);
  } catch (const std::exception& e) {
    return outcome(Status::fail,
                   std::string("the backend threw after supports() accepted: ") + e.what());
  }
  std::vector<const GuardedBuffer*> inputs = {&g.q, &g.k, &g.v};
  if (g.mask) inputs.push_back(&*g.mask);
  for (const GuardedBuffer* in : inputs) {
    if (auto v = in->check_unchanged()) return outcome(Status::fail, v.message);
  }
  if (auto v = o.check()) return outcome(Status::fail, v.message);
  if (p.want_lse) {
    if (auto v = lse.check()) return outcome(Status::fail, v.message);
  }
  if (p.want_weights) {
    if (auto v = weights.check()) return outcome(Status::fail, v.message);
  }

  // The reference supplies the error magnitudes; the golden file the expected values.
  const reference::Inputs in{g.q.data(), g.k.data(), g.v.data(), g.mask ? g.mask->data() : nullptr};
  const reference::Result ref = reference::run_sdpa(p, in);
  const PrecisionContract contract = backend.precision(p.dtype);
  CaseOutcome out;
  const auto cuq = cu_seqlens_q(p);
  auto consider = [&](double r, double err, const std::string& where) {
    out.max_abs_error = std::max(out.max_abs_error, err);
    if (r > out.worst_ratio || (std::isinf(r) && !std::isinf(out.worst_ratio))) {
      out.worst_ratio = r;
      out.worst_where = where;
    }
  };
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t lb = seqlen_q(p, b);
    const ToleranceFactors f = tolerance_factors(p, contract, seqlen_kv(p, b), table);
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t rows = p.packed ? lb : L;  // packed padding rows do not exist
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t row = (b * H + h) * L + i;
        const std::int64_t r = p.packed ? cuq[b] + i : i;
        for (std::int64_t d = 0; d < Dv; ++d) {
          const double got = load_as_double(p.dtype, o.data(), offset(p.o, p.packed, b, h, r, d));
          const double want = g.o[static_cast<std::size_t>(row * Dv + d)];
          const double tol = i < lb ? output_tolerance(f, ref, row, d, Dv) : 0.0;
          double err;
          const double q = ratio(got, want, tol, &err);
          consider(q, err,
                   index_text("o", {b, h, i, d}) + " = " + num(got) + ", golden " + num(want) +
                       " (tolerance " + num(tol) + ")");
        }
        if (p.want_lse) {
          const double got = static_cast<const float*>(lse.data())[row];
          const double want = g.lse[static_cast<std::size_t>(row)];
          const double want32 = std::isfinite(want) ? double(float(want)) : want;  // f32 output
          double err;
          const double q = ratio(got, want32, i < lb ? lse_tolerance(f, ref, row) : 0.0, &err);
          consider(q, 0, index_text("lse", {b, h, i}) + " = " + num(got) + ", golden " + num(want));
        }
      }
    }
  }
  if (p.want_weights) {
    const ToleranceFactors f = tolerance_factors(p, contract, S, table);
    for (std::size_t x = 0; x < g.weights.size(); ++x) {
      const double got = load_as_double(p.dtype, weights.data(), static_cast<std::int64_t>(x));
      const double want = g.weights[x];
      const double tol = dtype_unit_roundoff(p.dtype) * (4 + std::fabs(want)) * std::fabs(want) +
                         64 * dtype_unit_roundoff(contract.accumulate) * std::fabs(want) + f.floor;
      double err;
      const double q = ratio(got, want, tol, &err);
      consider(q, 0, "weights[" + std::to_string(x) + "] = " + num(got) + ", golden " + num(want));
    }
  }
  if (out.worst_ratio > 1) {
    out.status = Status::fail;
    out.message = "error/tolerance " + num(out.worst_ratio) + " at " + out.worst_where;
  }
  return out;
}

}  // namespace sdpa::golden
