#include "conformance/judge/judge.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "conformance/judge/forward_properties.hpp"
#include "conformance/judge/gradient_judge.hpp"
#include "conformance/judge/magnitudes.hpp"
#include "conformance/judge/memory_space.hpp"
#include "conformance/judge/naive_baseline.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {
namespace {

CaseOutcome verdict(Status status, std::string message) {
  CaseOutcome out;
  out.status = status;
  out.message = std::move(message);
  return out;
}

// FNV-1a over the output regions' bytes (CaseOutcome::output_digest).
std::string output_digest(const OutputBuffers& outputs) {
  std::uint64_t h = 1469598103934665603ull;
  for (const GuardedBuffer* b : {&outputs.o, &outputs.lse, &outputs.weights}) {
    const unsigned char* bytes = b->region();
    for (std::size_t i = 0; i < b->region_size(); ++i) {
      h ^= bytes[i];
      h *= 1099511628211ull;
    }
  }
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string num(double x) {
  std::ostringstream s;
  s.precision(9);
  s << x;
  return s.str();
}

// Compares a kernel value with the expected one: NaN must match NaN, infinities must
// match exactly, finite values within tol. Returns err / tol (inf for a mismatch of kind).
double ratio_of(double got, double want, double tol, double* abs_err) {
  *abs_err = 0;
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : INFINITY;
  *abs_err = std::fabs(got - want);
  if (*abs_err == 0) return 0;
  return tol > 0 ? *abs_err / tol : INFINITY;
}

// Running worst element of a case.
struct Worst {
  CaseOutcome& out;
  void consider(double ratio, double err, const std::string& where) {
    out.max_abs_error = std::max(out.max_abs_error, err);
    if (ratio > out.worst_ratio || (std::isinf(ratio) && !std::isinf(out.worst_ratio))) {
      out.worst_ratio = ratio;
      out.worst_where = where;
    }
  }
};

}  // namespace

bool quality_gate_runs(const Problem& p) {
  const double work = double(p.batch) * double(p.heads_q) * double(p.len_q) * double(p.len_kv) *
                      double(p.head_dim_qk + p.head_dim_v);
  return work <= kNaiveBaselineMaxWork;
}

double capture_unit(std::int64_t digits) {
  if (digits > 16) return 0;
  return 0.5 * std::pow(10.0, static_cast<double>(1 - digits));
}

std::optional<CaseOutcome> precheck(const Backend& backend, const Problem& p,
                                    const Device& device) {
  if (auto r = validate(p); !r.empty()) return verdict(Status::invalid, r);
  if (backend.capabilities().traits.model_only) {
    return verdict(Status::not_supported,
                   std::string(backend.name()) +
                       " only models PyTorch's choice of a kernel this suite does not have: "
                       "there is nothing to run");
  }
  if (Support s = backend.supports(p, device); !s.ok()) {
    std::string why;
    for (const auto& reason : s.all_reasons()) why += (why.empty() ? "" : "; ") + reason;
    return verdict(Status::not_supported, why);
  }
  if (p.backward && backend.run_memory_space(device) != MemorySpace::host) {
    return verdict(Status::not_supported,
                   "the judge runs a backward pass in host memory only, and this backend takes " +
                       std::string(memory_space_name(backend.run_memory_space(device))) +
                       " memory");
  }
  return std::nullopt;
}

CaseOutcome judge(const Backend& backend, const Problem& p, InputBuffers& in, const Device& device,
                  const RunOptions& options, const ExpectedValues* expected,
                  const ToleranceTable& table) {
  if (auto early = precheck(backend, p, device)) return *early;
  OutputBuffers outputs = make_outputs(p);
  // The buffers in the backend's memory space: in place for host memory, else mirrors of every
  // guarded region, copied back after the run (conformance/judge/memory_space.hpp). Making them is
  // the harness's work: its std::bad_alloc goes to the caller (the runner's NOT_JUDGED), never
  // into the backend's verdict.
  std::unique_ptr<PlacedBuffers> placed;
  try {
    placed = std::make_unique<PlacedBuffers>(backend.run_memory_space(device), p, in, outputs);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return verdict(Status::fail,
                   std::string("the backend's memory space cannot be used: ") + e.what());
  }
  try {
    backend.run(p, placed->get(), device, options);
    placed->copy_back();
  } catch (const std::exception& e) {
    return verdict(Status::fail,
                   std::string("the backend threw after supports() accepted: ") + e.what());
  }
  if (auto v = in.check_unchanged()) return verdict(Status::fail, v.message);
  if (auto v = outputs.check(p)) return verdict(Status::fail, v.message);
  const std::string digest = output_digest(outputs);

  const reference::Result ref = reference::run_sdpa(p, in.pointers());
  const std::vector<double>& want_o = expected ? *expected->o : ref.o;
  const std::vector<double>& want_lse = expected ? *expected->lse : ref.lse;
  const double cap = expected ? kCaptureUlps * capture_unit(expected->precision_digits) : 0.0;
  const PrecisionContract contract = backend.precision(p.dtype);
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dv = p.head_dim_v;

  CaseOutcome out;
  out.output_digest = digest;
  Worst worst{out};
  double err_sq = 0, ref_sq = 0;  // NMSE sums
  const auto cuq = cu_seqlens_q(p);
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t lb = seqlen_q(p, b);
    const ToleranceFactors f = tolerance_factors(p, contract, seqlen_kv(p, b), table);
    for (std::int64_t h = 0; h < H; ++h) {
      // Padded rows beyond L_b exist only in the unpacked layout; packed rows do not exist.
      const std::int64_t rows = p.packed ? lb : L;
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t row = (b * H + h) * L + i;
        const auto urow = static_cast<std::size_t>(row);
        const std::int64_t r = p.packed ? cuq[b] + i : i;
        for (std::int64_t d = 0; d < Dv; ++d) {
          const auto x = static_cast<std::size_t>(row * Dv + d);
          const double got =
              load_as_double(p.dtype, outputs.o.data(), element_offset(p.o, p.packed, b, h, r, d));
          const double want = want_o[x];
          double tol = 0;
          if (i < lb) {
            tol = output_tolerance(f, ref, row, d, Dv);
            if (cap > 0) tol += cap * output_magnitude(ref, x, urow, want);
          }
          double err;
          const double q = ratio_of(got, want, tol, &err);
          if (std::isfinite(got) && std::isfinite(want)) {
            err_sq += (got - want) * (got - want);
            ref_sq += want * want;
          }
          if (q > out.worst_ratio || (std::isinf(q) && !std::isinf(out.worst_ratio)) ||
              err > out.max_abs_error) {
            worst.consider(q, err,
                           "o[" + std::to_string(b) + "," + std::to_string(h) + "," +
                               std::to_string(i) + "," + std::to_string(d) + "] = " + num(got) +
                               ", expected " + num(want) + " (tolerance " + num(tol) + ")");
          }
        }
        if (p.want_lse) {
          const double got = static_cast<const float*>(outputs.lse.data())[row];
          const double want = want_lse[urow];
          // The LSE output is f32: the expected value is compared after rounding to f32.
          const double want32 = std::isfinite(want) ? double(float(want)) : want;
          double tol = 0;
          if (i < lb) {
            tol = lse_tolerance(f, ref, row);
            if (cap > 0) tol += cap * lse_magnitude(ref, urow, want);
          }
          double err;
          const double q = ratio_of(got, want32, tol, &err);
          if (q > out.worst_ratio) {
            worst.consider(q, 0,
                           "lse[" + std::to_string(b) + "," + std::to_string(h) + "," +
                               std::to_string(i) + "] = " + num(got) + ", expected " + num(want));
          }
        }
      }
    }
  }
  out.nmse = ref_sq > 0 ? err_sq / ref_sq : err_sq;
  if (p.want_weights) {
    const std::vector<double>& want_w = expected ? *expected->weights : ref.weights;
    const std::vector<double> mag_w =
        cap > 0 ? weight_magnitudes(p, in.pointers(), ref, want_w) : std::vector<double>{};
    const ToleranceFactors wf = tolerance_factors(p, contract, S, table);
    for (std::size_t x = 0; x < want_w.size(); ++x) {
      const double got =
          load_as_double(p.dtype, outputs.weights.data(), static_cast<std::int64_t>(x));
      const double want = want_w[x];
      // P_j = exp(s_j - LSE): besides the rounding of P itself, its relative error is the
      // error of s_j - LSE. The LSE bound (dot-product and logit-magnitude terms, P-weighted
      // over the row) stands for both, twice (table 2026-12-2; before it the logit term was
      // missing and correct weights failed at large logits, Dqk or scale).
      const std::int64_t row = static_cast<std::int64_t>(x) / std::max<std::int64_t>(S, 1);
      const double logit_rel =
          table.weights_lse_factor * lse_tolerance(wf, ref, row, wf.u_lse_held);
      double tol =
          dtype_unit_roundoff(p.dtype) * (table.weights_p_growth + std::fabs(want)) *
              std::fabs(want) +
          table.weights_acc_roundings * dtype_unit_roundoff(contract.accumulate) * std::fabs(want) +
          logit_rel * std::fabs(want) + wf.floor;
      if (cap > 0) tol += cap * mag_w[x];
      double err;
      const double q = ratio_of(got, want, tol, &err);
      if (q > out.worst_ratio) {
        worst.consider(
            q, 0, "weights[" + std::to_string(x) + "] = " + num(got) + ", expected " + num(want));
      }
    }
  }
  if (p.backward) out.tensor_ratios["forward"] = out.worst_ratio;
  if (out.worst_ratio > 1) {
    out.status = Status::fail;
    out.message = "error/tolerance " + num(out.worst_ratio) + " at " + out.worst_where;
    return out;
  }
  // The declared forward properties (deterministic, batch_invariant), verified by running again.
  const ForwardPropertyOutcome props =
      check_forward_properties(backend, p, in, outputs, device, options);
  if (props.failure) {
    out.status = Status::fail;
    out.message = *props.failure;
    return out;
  }
  if (!props.note.empty()) out.message = props.note;
  if (p.backward) {
    if (!in.d_out) throw std::invalid_argument("a backward case's inputs have no dO");
    const GradientOutcome g = judge_gradients(backend, p, in, outputs, placed->get(), ref, device,
                                              options, table, expected);
    out.tensor_ratios.insert(g.ratios.begin(), g.ratios.end());
    if (g.worst_ratio > out.worst_ratio) {
      out.worst_ratio = g.worst_ratio;
      out.worst_where = g.worst_where;
    }
    if (g.status == Status::fail) {
      out.status = Status::fail;
      out.message = g.message;
      return out;
    }
    out.nondeterministic_backward = g.nondeterministic;
    if (g.nondeterministic) out.message = g.message;
  }
  // MISTRUSTED: rows that attend some key exist, yet the exact output is all zeros there
  // (e.g. V sparse or zero): such a case cannot tell a right kernel from a wrong one.
  std::int64_t attended_rows = 0, nonzero = 0;
  for (std::size_t row = 0; row < ref.lse.size(); ++row) {
    if (ref.lse[row] == -INFINITY) continue;
    ++attended_rows;
    for (std::int64_t d = 0; d < Dv; ++d) nonzero += ref.o[row * Dv + d] != 0;
  }
  if (attended_rows > 0 && Dv > 0 && nonzero == 0) {
    return verdict(Status::mistrusted,
                   "the exact output is zero on every attended row: the case cannot discriminate");
  }
  // Second gate: at most 2x the error of the naive algorithm in the same precision (plus
  // eight output roundings of the largest value), both measured against the exact result.
  // Skipped, and said so, for large problems where the scalar baseline would dominate.
  if (!quality_gate_runs(p)) {
    out.message = "quality gate not run: problem larger than the naive-baseline limit";
    return out;
  }
  // The kernel's own error against the exact result (with golden expected values, the
  // errors above were measured against the file).
  double kernel_err = out.max_abs_error;
  if (expected) {
    kernel_err = 0;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < (p.packed ? seqlen_q(p, b) : L); ++i)
          for (std::int64_t d = 0; d < Dv; ++d) {
            const double got =
                load_as_double(p.dtype, outputs.o.data(),
                               element_offset(p.o, p.packed, b, h, p.packed ? cuq[b] + i : i, d));
            const double want = ref.o[static_cast<std::size_t>(((b * H + h) * L + i) * Dv + d)];
            if (std::isfinite(got) && std::isfinite(want))
              kernel_err = std::max(kernel_err, std::fabs(got - want));
          }
  }
  // The naive error: the larger of the two summation orders' (naive_baseline.hpp).
  double naive_err = 0, max_abs = 0;
  for (SumOrder order : {SumOrder::forward, SumOrder::reverse}) {
    const std::vector<double> naive = naive_low_precision(p, in.pointers(), order);
    for (std::size_t x = 0; x < naive.size(); ++x) {
      if (std::isfinite(naive[x]) && std::isfinite(ref.o[x])) {
        naive_err = std::max(naive_err, std::fabs(naive[x] - ref.o[x]));
        max_abs = std::max(max_abs, std::fabs(ref.o[x]));
      }
    }
  }
  // Slack of some output roundings of the largest value: on small, accurate problems the
  // naive error is itself a few roundings, and a kernel with a polynomial exp (about 1e-7
  // relative) is not worse in any way that matters (ToleranceTable).
  const double allowed = table.quality_naive_factor * naive_err +
                         table.quality_output_roundings * dtype_unit_roundoff(p.dtype) * max_abs;
  if (kernel_err > allowed) {
    out.status = Status::quality_warning;
    std::ostringstream m;
    m << "within tolerance, but max error " << kernel_err << " exceeds "
      << table.quality_naive_factor << "x the naive same-precision error " << naive_err
      << " (the worse of two summation orders; + " << table.quality_output_roundings
      << " output roundings)";
    out.message = m.str();
  }
  return out;
}

void set_outcome(CaseRecord& r, const CaseOutcome& o) {
  r.status = o.status;
  r.message = o.message;
  r.max_abs_error = o.max_abs_error;
  r.nmse = o.nmse;
  r.worst_ratio = o.worst_ratio;
  r.worst_where = o.worst_where;
  r.tensor_ratios = o.tensor_ratios;
  r.nondeterministic_backward = o.nondeterministic_backward;
  r.output_digest = o.output_digest;
}

}  // namespace sdpa::conformance
