// Running a kernel on inputs a property built itself (permuted, repeated, rescaled, ...)
// and comparing two kernel runs: what the metamorphic, dropout and bitwise properties
// judge with, where check_case (inputs from the case ID only) cannot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"
#include "kernels/backend.hpp"
#include "reference/sdpa_reference.hpp"
#include "tests/kernels/target_run.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;

using test_support::TargetRun;

// Inputs as logical arrays of doubles (exact copies of the elements): q [B, Hq, L, Dqk],
// k [B, Hkv, S, Dqk], v [B, Hkv, S, Dv], mask [B, Hq, L, S] (empty without a mask).
// Padded layouts only (not packed).
struct Tensors {
  std::vector<double> q, k, v, mask;
};

// Reads the inputs of a problem.
Tensors read_inputs(const Problem& p, const InputBuffers& in);
// Fresh guarded buffers in p's layout holding `t` (values must be representable in
// p.dtype; each is stored with one rounding, exact for representable values).
InputBuffers write_inputs(const Problem& p, const Tensors& t);

// A kernel's outputs: logical arrays (o [B, Hq, L, Dv], lse [B, Hq, L], weights
// [B, Hq, L, S] when asked) and the bytes of O and LSE in logical order for bitwise tests.
struct Outputs {
  std::vector<double> o, lse, weights;
  std::vector<unsigned char> o_bytes, lse_bytes;
};

// Runs `b` on p with guarded outputs (LSE always asked). Returns "" or why the run is wrong
// by itself: an exception, an unwritten output element, a write outside a view, a
// modified input.
std::string run_kernel(const Backend& b, const Problem& p, const InputBuffers& in,
                       const TargetRun& opt, Outputs* out);

// Per-element bounds of a backend on a problem (check_case's tolerance model, from the
// reference's magnitudes): o [B, Hq, L, Dv] and lse [B, Hq, L]; 0 on padding rows.
struct Bounds {
  std::vector<double> o, lse;
  reference::Result ref;  // the reference result they came from
};
Bounds bounds(const Backend& b, const Problem& p, const InputBuffers& in);

// Compares a with b element by element: NaN must meet NaN, infinities must be equal, finite
// values within tol[x] (0 = bitwise equal values). Returns "" or the first offending
// element, named `what`[index].
std::string compare(const std::vector<double>& a, const std::vector<double>& b,
                    const std::vector<double>& tol, const std::string& what);

// Index of logical element (b, h, i, d) of an array [B, H, L, D].
inline std::size_t at(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d,
                      std::int64_t H, std::int64_t L, std::int64_t D) {
  return static_cast<std::size_t>(((b * H + h) * L + i) * D + d);
}

}  // namespace sdpa::props
