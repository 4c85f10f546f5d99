// A backend for pinning the judge's bounds at their edges: the reference's outputs and
// gradients rounded once to the output type, with one element of one tensor replaced by a
// planted value, under a precision contract the test chooses. The tests derive the planted
// error from the contract (docs/CONFORMANCE.md), never from the judge's own code, and
// plant it at a stated fraction of the contract's term (planted_near).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/problem.hpp"
#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"
#include "reference/sdpa_backward.hpp"
#include "tests/conformance/fake_backends.hpp"

namespace sdpa::testing {

// One planted element: `tensor` is "o", "lse", "weights", "dq", "dk", "dv" or "dbias"; `index`
// its flat logical index ([B, H, rows, D] order, the LSE's [B, H, L], the weights' [B, H, L, S],
// d bias's mask storage); `value` what is written there instead of the rounded reference.
// Nothing is planted when `tensor` is empty.
struct Plant {
  std::string tensor;
  std::size_t index = 0;
  double value = 0;
};

// x rounded to nearest in type t (the LSE's f32 for t == f32).
inline double rounded_to(DType t, double x) {
  std::uint64_t storage = 0;
  store_from_double(t, &storage, 0, x);
  return load_as_double(t, &storage, 0);
}

// The spacing of type t's values at x (its unit in the last place; the subnormal spacing
// below the smallest normal).
inline double grid_step(DType t, double x) {
  const int bits = t == DType::f64 ? 52 : t == DType::f32 ? 23 : t == DType::f16 ? 10 : 7;
  const int min_exp = t == DType::f64 ? -1022 : t == DType::f16 ? -14 : -126;
  return std::ldexp(1.0, std::max(x == 0 ? min_exp : std::ilogb(x), min_exp) - bits);
}

// A value of type `t` whose error against `exact` is as close as the type's grid allows to
// `fraction` * `term`: the values of the grid near exact +- fraction * term. Returns the value
// and the fraction of `term` its error actually is.
inline std::pair<double, double> planted_near(DType t, double exact, double term, double fraction) {
  double best = exact, best_fraction = 0;
  for (double sign : {1.0, -1.0}) {
    const double center = exact + sign * fraction * term;
    const double step = grid_step(t, center);
    for (int k = -3; k <= 3; ++k) {
      const double v = rounded_to(t, center + k * step);
      const double f = std::fabs(v - exact) / term;
      if (std::fabs(f - fraction) < std::fabs(best_fraction - fraction)) {
        best = v;
        best_fraction = f;
      }
    }
  }
  return {best, best_fraction};
}

// The reference's forward and gradients, rounded once to the output type, under `contract`,
// with `plant` written instead of the rounded value of its element. Dense problems (no packed
// layout); the gradients for problems without per-batch lengths.
class PlantedBackend final : public Backend {
 public:
  PlantedBackend(PrecisionContract contract, Plant plant)
      : contract_(contract), plant_(std::move(plant)) {
    forward_.with_weights();
    caps_ = forward_.capabilities();
    caps_.backward = true;
    caps_.bias_gradient = true;
  }
  std::string_view name() const override { return "planted"; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType) const override { return contract_; }
  Support supports(const LoweredProblem& p, const Device& d) const override {
    Support s;
    check_capabilities(caps_, p, d, s);
    return s;
  }
  void run(const LoweredProblem& lowered, const Device& d, const RunOptions& o) const override {
    forward_.run(LoweredProblem(lowered.source(), lowered.buffers()), d, o);
    const Problem& p = lowered.source();
    const Buffers b = lowered.buffers();
    const auto i = static_cast<std::int64_t>(plant_.index);
    if (plant_.tensor == "o") {
      const std::int64_t dv = p.head_dim_v, row = i / dv;
      store_from_double(p.dtype, b.o,
                        element_offset(p.o, false, row / (p.heads_q * p.len_q),
                                       row / p.len_q % p.heads_q, row % p.len_q, i % dv),
                        plant_.value);
    } else if (plant_.tensor == "lse") {
      b.lse[plant_.index] = static_cast<float>(plant_.value);
    } else if (plant_.tensor == "weights") {
      store_from_double(p.dtype, b.weights, i, plant_.value);
    }
  }
  void run_backward(const LoweredProblem& lowered, const Device&,
                    const RunOptions&) const override {
    const Problem& p = lowered.source();
    const sdpa_cts_params& c = lowered.params();
    const std::int64_t B = p.batch, H = p.heads_q, Hkv = p.heads_kv, L = p.len_q, S = p.len_kv;
    std::vector<double> d_out(static_cast<std::size_t>(B * H * L * p.head_dim_v));
    for (std::size_t x = 0; x < d_out.size(); ++x) {
      const auto i = static_cast<std::int64_t>(x);
      const std::int64_t d = i % p.head_dim_v, row = i / p.head_dim_v;
      d_out[x] = load_as_double(p.dtype, c.d_o,
                                element_offset(p.o, false, row / (H * L), row / L % H, row % L, d));
    }
    const reference::Gradients r = reference::run_sdpa_backward(p, {c.q, c.k, c.v, c.mask}, d_out);
    write(p, c.d_q, p.q, r.dq, H, L, p.head_dim_qk, "dq");
    write(p, c.d_k, p.k, r.dk, Hkv, S, p.head_dim_qk, "dk");
    write(p, c.d_v, p.v, r.dv, Hkv, S, p.head_dim_v, "dv");
    if (p.bias_grad) {
      for (std::size_t m = 0; m < r.dbias.size(); ++m) {
        const bool planted = plant_.tensor == "dbias" && plant_.index == m;
        store_from_double(p.dtype, c.d_bias, static_cast<std::int64_t>(m),
                          planted ? plant_.value : r.dbias[m]);
      }
    }
  }

 private:
  void write(const Problem& p, void* dst, const TensorLayout& t, const std::vector<double>& src,
             std::int64_t heads, std::int64_t rows, std::int64_t cols, const char* name) const {
    for (std::size_t x = 0; x < src.size(); ++x) {
      const auto i = static_cast<std::int64_t>(x);
      const std::int64_t e = i % cols, row = i / cols;
      const std::int64_t off =
          element_offset(t, false, row / (heads * rows), row / rows % heads, row % rows, e);
      const bool planted = plant_.tensor == name && plant_.index == x;
      store_from_double(p.dtype, dst, off, planted ? plant_.value : src[x]);
    }
  }

  FakeBackend forward_{"fake", Fault::none};
  Capabilities caps_;
  PrecisionContract contract_;
  Plant plant_;
};

}  // namespace sdpa::testing
