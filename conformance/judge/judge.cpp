#include "conformance/judge/judge.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "conformance/judge/forward_properties.hpp"
#include "conformance/judge/gradient_judge.hpp"
#include "conformance/judge/magnitudes.hpp"
#include "conformance/judge/memory_space.hpp"
#include "conformance/judge/naive_baseline.hpp"
#include "conformance/judge/requested_outputs.hpp"
#include "kernels/lowered_problem.hpp"
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

std::optional<CaseOutcome> precheck(const Backend& backend, const Problem& asked,
                                    const Device& device) {
  if (auto r = validate(asked); !r.empty()) return verdict(Status::invalid, r);
  // The outputs the backend does not return are not asked of it (requested_outputs.hpp).
  const Problem p = without_unreturned_outputs(backend.capabilities(), asked).judged;
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

namespace {

// Step 4 (docs/CONFORMANCE.md, "One case"): the backend's forward on guarded outputs in its memory
// space, then the guards: a throw, a modified input, an unwritten output or a write outside a view
// is the verdict.
struct ForwardRun {
  OutputBuffers outputs;
  std::unique_ptr<PlacedBuffers> placed;  // the buffers run() got (the backward reads them)
  std::optional<CaseOutcome> verdict;     // set when the run or its guards failed
};
ForwardRun run_forward(const Backend& backend, const Problem& p, InputBuffers& in,
                       const Device& device, const RunOptions& options) {
  ForwardRun r{make_outputs(p), nullptr, std::nullopt};
  // The buffers in the backend's memory space: in place for host memory, else mirrors of every
  // guarded region, copied back after the run (conformance/judge/memory_space.hpp). Making them is
  // the harness's work: its std::bad_alloc goes to the caller (the runner's NOT_JUDGED), never
  // into the backend's verdict.
  try {
    r.placed = std::make_unique<PlacedBuffers>(backend.run_memory_space(device), p, in, r.outputs);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    r.verdict = verdict(Status::fail,
                        std::string("the backend's memory space cannot be used: ") + e.what());
    return r;
  }
  try {
    backend.run(LoweredProblem(p, r.placed->get()), device, options);
    r.placed->copy_back();
  } catch (const std::exception& e) {
    r.verdict = verdict(Status::fail,
                        std::string("the backend threw after supports() accepted: ") + e.what());
    return r;
  }
  if (auto v = in.check_unchanged()) {
    r.verdict = verdict(Status::fail, v.message);
  } else if (auto w = r.outputs.check(p)) {
    r.verdict = verdict(Status::fail, w.message);
  }
  return r;
}

// What the forward's outputs are compared with: the reference's values, or a file's.
struct Expected {
  const std::vector<double>& o;
  const std::vector<double>& lse;
  const std::vector<double>* weights;  // when the problem wants them
  double capture = 0;                  // the file's own rounding, in units of magnitude (0: exact)
};

// Step 5: O and the LSE, element by element against their bounds (tolerance.hpp); the worst
// ratio, its place, the largest error and the NMSE into `out`.
void compare_output_and_lse(const Problem& p, const OutputBuffers& outputs,
                            const reference::Result& ref, const Expected& want,
                            const PrecisionContract& contract, const ToleranceTable& table,
                            CaseOutcome& out) {
  Worst worst{out};
  double err_sq = 0, ref_sq = 0;  // NMSE sums
  const std::int64_t H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
  const auto cuq = cu_seqlens_q(p);
  for (std::int64_t b = 0; b < p.batch; ++b) {
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
          const double expected = want.o[x];
          double tol = 0;
          if (i < lb) {
            tol = output_tolerance(f, ref, row, d, Dv);
            if (want.capture > 0) tol += want.capture * output_magnitude(ref, x, urow, expected);
          }
          double err;
          const double q = ratio_of(got, expected, tol, &err);
          if (std::isfinite(got) && std::isfinite(expected)) {
            err_sq += (got - expected) * (got - expected);
            ref_sq += expected * expected;
          }
          if (q > out.worst_ratio || (std::isinf(q) && !std::isinf(out.worst_ratio)) ||
              err > out.max_abs_error) {
            worst.consider(q, err,
                           "o[" + std::to_string(b) + "," + std::to_string(h) + "," +
                               std::to_string(i) + "," + std::to_string(d) + "] = " + num(got) +
                               ", expected " + num(expected) + " (tolerance " + num(tol) + ")");
          }
        }
        if (p.want_lse) {
          const double got = static_cast<const float*>(outputs.lse.data())[row];
          const double expected = want.lse[urow];
          // The LSE output is f32: the expected value is compared after rounding to f32.
          const double expected32 = std::isfinite(expected) ? double(float(expected)) : expected;
          double tol = 0;
          if (i < lb) {
            tol = lse_tolerance(f, ref, row);
            if (want.capture > 0) tol += want.capture * lse_magnitude(ref, urow, expected);
          }
          double err;
          const double q = ratio_of(got, expected32, tol, &err);
          if (q > out.worst_ratio) {
            worst.consider(q, 0,
                           "lse[" + std::to_string(b) + "," + std::to_string(h) + "," +
                               std::to_string(i) + "] = " + num(got) + ", expected " +
                               num(expected));
          }
        }
      }
    }
  }
  out.nmse = ref_sq > 0 ? err_sq / ref_sq : err_sq;
}

// Step 5, the weights: each against weights_tolerance() (tolerance.hpp).
void compare_weights(const Problem& p, const InputBuffers& in, const OutputBuffers& outputs,
                     const reference::Result& ref, const Expected& want,
                     const PrecisionContract& contract, const ToleranceTable& table,
                     CaseOutcome& out) {
  Worst worst{out};
  const std::vector<double>& want_w = *want.weights;
  const std::vector<double> mag_w =
      want.capture > 0 ? weight_magnitudes(p, in.pointers(), ref, want_w) : std::vector<double>{};
  const ToleranceFactors wf = tolerance_factors(p, contract, p.len_kv, table);
  for (std::size_t x = 0; x < want_w.size(); ++x) {
    const double got =
        load_as_double(p.dtype, outputs.weights.data(), static_cast<std::int64_t>(x));
    const std::int64_t row = static_cast<std::int64_t>(x) / std::max<std::int64_t>(p.len_kv, 1);
    double tol = weights_tolerance(wf, ref, row, want_w[x], table);
    if (want.capture > 0) tol += want.capture * mag_w[x];
    double err;
    const double q = ratio_of(got, want_w[x], tol, &err);
    if (q > out.worst_ratio) {
      worst.consider(
          q, 0,
          "weights[" + std::to_string(x) + "] = " + num(got) + ", expected " + num(want_w[x]));
    }
  }
}

// Step 6: MISTRUSTED when rows that attend some key exist, yet the exact output is all zeros
// there (e.g. V sparse or zero): such a case cannot tell a right kernel from a wrong one.
bool cannot_discriminate(const reference::Result& ref, std::int64_t dv) {
  std::int64_t attended_rows = 0, nonzero = 0;
  for (std::size_t row = 0; row < ref.lse.size(); ++row) {
    if (ref.lse[row] == -INFINITY) continue;
    ++attended_rows;
    for (std::int64_t d = 0; d < dv; ++d) nonzero += ref.o[row * dv + d] != 0;
  }
  return attended_rows > 0 && dv > 0 && nonzero == 0;
}

// Step 7, the quality gate (the second gate): at most quality_naive_factor times the error of
// the naive algorithm in the same precision, plus some output roundings of the largest value,
// both against the exact result. QUALITY_WARNING when broken; skipped, and said so, for large
// problems where the scalar baseline would dominate.
void quality_gate(const Problem& p, const InputBuffers& in, const OutputBuffers& outputs,
                  const reference::Result& ref, bool expected_from_file,
                  const ToleranceTable& table, CaseOutcome& out) {
  if (!quality_gate_runs(p)) {
    out.message = "quality gate not run: problem larger than the naive-baseline limit";
    return;
  }
  const std::int64_t H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
  // The kernel's own error against the exact result (with a file's expected values, the
  // errors so far were measured against the file).
  double kernel_err = out.max_abs_error;
  if (expected_from_file) {
    const auto cuq = cu_seqlens_q(p);
    kernel_err = 0;
    for (std::int64_t b = 0; b < p.batch; ++b)
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
}

}  // namespace

namespace {

// judge() on the outputs the backend returns.
CaseOutcome judge_returned(const Backend& backend, const Problem& p, InputBuffers& in,
                           const Device& device, const RunOptions& options,
                           const ExpectedValues* expected, const ToleranceTable& table) {
  ForwardRun run = run_forward(backend, p, in, device, options);
  if (run.verdict) return *run.verdict;

  const reference::Result ref = reference::run_sdpa(p, in.pointers());
  const Expected want{expected ? *expected->o : ref.o, expected ? *expected->lse : ref.lse,
                      p.want_weights ? (expected ? expected->weights : &ref.weights) : nullptr,
                      expected ? kCaptureUlps * capture_unit(expected->precision_digits) : 0.0};
  const PrecisionContract contract = backend.precision(p.dtype);
  CaseOutcome out;
  out.output_digest = output_digest(run.outputs);
  compare_output_and_lse(p, run.outputs, ref, want, contract, table, out);
  if (p.want_weights) compare_weights(p, in, run.outputs, ref, want, contract, table, out);
  out.judged = {"o"};
  if (p.want_lse) out.judged.push_back("lse");
  if (p.want_weights) out.judged.push_back("weights");
  if (p.backward) out.tensor_ratios["forward"] = out.worst_ratio;
  if (out.worst_ratio > 1) {
    out.status = Status::fail;
    out.message = "error/tolerance " + num(out.worst_ratio) + " at " + out.worst_where;
    return out;
  }

  const ForwardPropertyOutcome props =
      check_forward_properties(backend, p, in, run.outputs, device, options);
  if (props.failure) {
    out.status = Status::fail;
    out.message = *props.failure;
    return out;
  }
  if (!props.note.empty()) out.message = props.note;

  if (p.backward) {
    if (!in.d_out) throw std::invalid_argument("a backward case's inputs have no dO");
    const GradientOutcome g = judge_gradients(backend, p, in, run.outputs, run.placed->get(), ref,
                                              device, options, table, expected);
    out.tensor_ratios.insert(g.ratios.begin(), g.ratios.end());
    for (const char* t : {"dq", "dk", "dv", "dbias"})
      if (g.ratios.count(t)) out.judged.push_back(t);
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

  if (cannot_discriminate(ref, p.head_dim_v)) {
    return verdict(Status::mistrusted,
                   "the exact output is zero on every attended row: the case cannot discriminate");
  }
  quality_gate(p, in, run.outputs, ref, expected != nullptr, table, out);
  return out;
}

}  // namespace

// The steps of docs/CONFORMANCE.md, "One case", in order: the guards before anything runs
// (precheck: steps 1 and 2), the forward and its guards (run_forward: 4), the reference, the
// bounds and the comparison (compare_output_and_lse, compare_weights: 5), the declared forward
// properties (check_forward_properties: 5b), the backward (judge_gradients: "The gradients'
// bound"), MISTRUSTED (6) and the quality gate (7). The first step that reaches a verdict other
// than PASS ends the case (a QUALITY_WARNING only comes last).
// The outputs the backend does not return are taken out of the case first
// (requested_outputs.hpp).
CaseOutcome judge(const Backend& backend, const Problem& asked, InputBuffers& in,
                  const Device& device, const RunOptions& options, const ExpectedValues* expected,
                  const ToleranceTable& table) {
  if (auto early = precheck(backend, asked, device)) return *early;
  // The case as judged: without the outputs the backend does not return (the inputs are the
  // same), which the outcome lists (requested_outputs.hpp).
  const RequestedOutputs requested = without_unreturned_outputs(backend.capabilities(), asked);
  const Problem& p = requested.judged;
  CaseOutcome out = judge_returned(backend, p, in, device, options, expected, table);
  out.not_returned = requested.not_returned;
  if (!out.not_returned.empty() && out.status != Status::fail) {
    std::string names;
    for (const auto& n : out.not_returned) names += (names.empty() ? "" : ", ") + n;
    out.message += std::string(out.message.empty() ? "" : "; ") +
                   "not returned by the backend, so " + "not judged: " + names;
  }
  return out;
}

}  // namespace sdpa::conformance
