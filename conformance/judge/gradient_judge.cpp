#include "conformance/judge/gradient_judge.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "conformance/judge/forward_properties.hpp"
#include "conformance/judge/gradient_tolerance.hpp"
#include "kernels/lowered_problem.hpp"
#include "reference/sdpa_backward.hpp"

namespace sdpa::conformance {
namespace {

std::string num(double x) {
  std::ostringstream s;
  s.precision(9);
  s << x;
  return s.str();
}

GradientOutcome failed(std::string message) {
  GradientOutcome g;
  g.status = Status::fail;
  g.message = std::move(message);
  g.worst_ratio = INFINITY;
  return g;
}

// One gradient tensor and its exact values and bounds (logical [B, heads, rows, cols]).
struct TensorCheck {
  const char* name;
  const TensorLayout& layout;
  const void* data;
  std::int64_t heads, rows, cols;
  const std::vector<double>& want;
  const std::vector<double>& tol;
};

}  // namespace

GradientOutcome judge_gradients(const Backend& backend, const Problem& p, InputBuffers& in,
                                OutputBuffers& outputs, const Buffers& forward,
                                const reference::Result& ref, const Device& device,
                                const RunOptions& options, const ToleranceTable& table,
                                const ExpectedValues* expected) {
  // The forward's O and LSE are the backward's inputs: nothing may write them.
  outputs.o.snapshot();
  outputs.lse.snapshot();
  GradientBuffers grads = make_gradient_outputs(p);
  GradientBuffers again = make_gradient_outputs(p);
  RunOptions other = options;
  other.threads = other_thread_count(options);
  try {
    for (auto [g, o] :
         {std::pair{&grads, &options}, std::pair{&again, static_cast<const RunOptions*>(&other)}}) {
      backend.run_backward(
          LoweredProblem(p, forward,
                         GradientPointers{in.d_out->data(), g->dq.data(), g->dk.data(),
                                          g->dv.data(), g->dbias ? g->dbias->data() : nullptr}),
          device, *o);
    }
  } catch (const std::exception& e) {
    return failed(std::string("the backward threw after supports() accepted: ") + e.what());
  }
  if (auto v = in.check_unchanged()) return failed(v.message);
  if (auto v = outputs.o.check_unchanged())
    return failed("the backward wrote its input O: " + v.message);
  if (auto v = outputs.lse.check_unchanged()) {
    return failed("the backward wrote its input LSE: " + v.message);
  }
  if (auto v = grads.check()) return failed(v.message);
  std::string differs;
  for (auto [a, b] : {std::pair{&grads.dq, &again.dq}, std::pair{&grads.dk, &again.dk},
                      std::pair{&grads.dv, &again.dv}}) {
    if (differs.empty() && !std::equal(a->region(), a->region() + a->region_size(), b->region()))
      differs = a == &grads.dq ? "dq" : a == &grads.dk ? "dk" : "dv";
  }
  if (differs.empty() && grads.dbias &&
      !std::equal(grads.dbias->region(), grads.dbias->region() + grads.dbias->region_size(),
                  again.dbias->region()))
    differs = "dbias";
  if (!differs.empty() && backend.capabilities().deterministic) {
    return failed("the backward is not bitwise deterministic although the backend declares it: " +
                  differs + " differs between " + threads_text(options.threads) + " and " +
                  threads_text(other.threads));
  }

  const std::vector<double> d_out = logical_d_out(p, *in.d_out);
  const reference::Gradients exact = reference::run_sdpa_backward(p, in.pointers(), d_out);
  GradientTolerances tol =
      gradient_tolerances(p, in.pointers(), d_out, ref, exact, backend.precision(p.dtype), table);
  const bool from_file = expected && expected->dq && expected->dk && expected->dv;
  if (from_file) {
    if (const double cap = kCaptureUlps * capture_unit(expected->precision_digits); cap > 0) {
      PrecisionContract f64;
      f64.accumulate = f64.p_type = f64.ds_type = DType::f64;
      const GradientTolerances m =
          gradient_tolerances(p, in.pointers(), d_out, ref, exact, f64, table, DType::f64);
      for (auto [t, mt] : {std::pair{&tol.dq, &m.dq}, std::pair{&tol.dk, &m.dk},
                           std::pair{&tol.dv, &m.dv}, std::pair{&tol.dbias, &m.dbias}}) {
        for (std::size_t x = 0; x < t->size(); ++x) (*t)[x] += cap * (*mt)[x] / 0x1p-53;
      }
    }
  }
  const std::vector<double>& want_dq = from_file ? *expected->dq : exact.dq;
  const std::vector<double>& want_dk = from_file ? *expected->dk : exact.dk;
  const std::vector<double>& want_dv = from_file ? *expected->dv : exact.dv;
  GradientOutcome out;
  out.nondeterministic = !differs.empty();
  const TensorCheck checks[] = {
      {"dq", p.q, grads.dq.data(), p.heads_q, p.len_q, p.head_dim_qk, want_dq, tol.dq},
      {"dk", p.k, grads.dk.data(), p.heads_kv, p.len_kv, p.head_dim_qk, want_dk, tol.dk},
      {"dv", p.v, grads.dv.data(), p.heads_kv, p.len_kv, p.head_dim_v, want_dv, tol.dv}};
  const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
  // The smallest magnitude that rounds to infinity in the dtype: its maximum plus half a unit
  // in its last place.
  const double top = dtype_max(p.dtype);
  const double overflow = top + std::ldexp(dtype_unit_roundoff(p.dtype), std::ilogb(top));
  // error / bound of one element, and the worst so far with where it is.
  auto judge_element = [&](double got, double want, double bound, const std::string& where) {
    if (std::isnan(bound)) bound = 0;  // a NaN bound never hides an error
    double ratio = 0, err = 0;
    if (std::isnan(want) || std::isnan(got)) {
      ratio = std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
    } else if (std::isinf(got) && !std::isinf(want) && (got > 0) == (want > 0)) {
      // Unlike O, a gradient may exceed the type's range: its correct rounding is then
      // +-inf. The error is the distance to the values that round to inf.
      err = std::max(0.0, overflow - std::fabs(want));
      ratio = err == 0 ? 0 : (bound > 0 ? err / bound : INFINITY);
    } else if (std::isinf(want) || std::isinf(got)) {
      ratio = got == want ? 0 : INFINITY;
    } else {
      err = std::fabs(got - want);
      ratio = err == 0 ? 0 : (bound > 0 ? err / bound : INFINITY);
    }
    out.max_abs_error = std::max(out.max_abs_error, err);
    if (ratio > out.worst_ratio || (std::isinf(ratio) && !std::isinf(out.worst_ratio))) {
      out.worst_ratio = ratio;
      out.worst_where =
          where + " = " + num(got) + ", expected " + num(want) + " (tolerance " + num(bound) + ")";
    }
    return ratio;
  };
  for (const TensorCheck& t : checks) {
    const bool q_side = &t.layout == &p.q;
    double worst = 0;
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t valid = q_side ? seqlen_q(p, b) : seqlen_kv(p, b);
      const std::int64_t first = q_side ? (p.packed ? cuq[b] : 0) : (p.packed ? cuk[b] : 0);
      // Rows beyond the valid length exist only in the padded layout (and are exact zeros).
      const std::int64_t rows = p.packed ? valid : t.rows;
      for (std::int64_t h = 0; h < t.heads; ++h)
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t e = 0; e < t.cols; ++e) {
            const auto x = static_cast<std::size_t>(((b * t.heads + h) * t.rows + r) * t.cols + e);
            const double got = load_as_double(
                p.dtype, t.data, element_offset(t.layout, p.packed, b, h, first + r, e));
            const std::string where = std::string(t.name) + "[" + std::to_string(b) + "," +
                                      std::to_string(h) + "," + std::to_string(r) + "," +
                                      std::to_string(e) + "]";
            worst = std::max(worst, judge_element(got, t.want[x], t.tol[x], where));
          }
    }
    out.ratios[t.name] = worst;
  }
  if (grads.dbias) {
    // d bias, one stored mask element each, named by its coordinates (0 along the broadcast
    // dimensions).
    const StridedView mv = mask_view(p);
    double worst = 0;
    for (std::int64_t b = 0; b < (mv.stride[0] ? p.batch : std::min<std::int64_t>(p.batch, 1)); ++b)
      for (std::int64_t h = 0;
           h < (mv.stride[1] ? p.heads_q : std::min<std::int64_t>(p.heads_q, 1)); ++h)
        for (std::int64_t i = 0; i < (mv.stride[2] ? p.len_q : std::min<std::int64_t>(p.len_q, 1));
             ++i)
          for (std::int64_t j = 0;
               j < (mv.stride[3] ? p.len_kv : std::min<std::int64_t>(p.len_kv, 1)); ++j) {
            const std::int64_t m =
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
            const auto x = static_cast<std::size_t>(m);
            const double got = load_as_double(p.dtype, grads.dbias->data(), m);
            const std::string where = "dbias[" + std::to_string(b) + "," + std::to_string(h) + "," +
                                      std::to_string(i) + "," + std::to_string(j) + "]";
            const double want =
                from_file && expected->dbias ? (*expected->dbias)[x] : exact.dbias[x];
            worst = std::max(worst, judge_element(got, want, tol.dbias[x], where));
          }
    out.ratios["dbias"] = worst;
  }
  if (out.worst_ratio > 1) {
    out.status = Status::fail;
    out.message = "gradient error/tolerance " + num(out.worst_ratio) + " at " + out.worst_where;
  } else if (out.nondeterministic) {
    out.message = "the backward is not bitwise deterministic: " + differs + " differs between " +
                  threads_text(options.threads) + " and " + threads_text(other.threads);
  }
  return out;
}

}  // namespace sdpa::conformance
