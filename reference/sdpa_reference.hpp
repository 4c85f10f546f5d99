// The oracle: SDPA exactly as SEMANTICS.md defines it, in f64 with compensated
// accumulation or in binary128, with the error magnitudes the tolerance model needs.
//
// Data flows one way: the reference reads the problem and its input buffers and returns
// values; it never sees a kernel's output.
#pragma once

#include <vector>

#include "core/case_buffers.hpp"
#include "core/problem.hpp"

namespace sdpa::reference {

// Arithmetic the reference computes in.
enum class Precision {
  f64,        // binary64, compensated (cascaded) dot products, softmax sums and P.V sums
  binary128,  // __float128 throughout (libquadmath exp/log/tanh); slow, validates f64 mode
};

// Input buffers laid out as the problem's views describe; each pointer is element 0.
using Inputs = InputPointers;

// Every array is logical and contiguous over the unpacked shape, whatever the problem's
// layout; query rows i >= L_b (padding) hold O = 0, LSE = -inf and zero magnitudes.
struct Result {
  std::vector<double> o;        // [B, Hq, L, Dv]   the exact output, rounded once to f64
  std::vector<double> lse;      // [B, Hq, L]       natural-log LSE before dropout; -inf if no key
  std::vector<double> weights;  // [B, Hq, L, S]    P after dropout (only if want_weights)
  // Error magnitudes, with P the softmax before dropout, d_j = keep_j / (1 - p) (1 without
  // dropout), s_j the final logit and a_j = |scale| * sum_e |Q_ie K_je|:
  std::vector<double> mag_a;  // [B, Hq, L, Dv]   sum_j P_j |d_j V_jd|
  std::vector<double> mag_c;  // [B, Hq, L, Dv]   sum_j P_j |s_j| |d_j V_jd - O_d|
  std::vector<double> mag_g;  // [B, Hq, L, Dv]   sum_j P_j a_j |d_j V_jd - O_d|
  // Keys whose weight may underflow (e_j = exp(s_j - max s) < kUnderflowWeight, head_inputs.hpp),
  // z = sum_j e_j: a kernel's P_j there carries an absolute error of up to half the P
  // type's subnormal spacing, relative to the row's largest weight 1.
  std::vector<double> mag_u;  // [B, Hq, L, Dv]   sum_{j: e_j < 2^-14} |d_j V_jd| / z
  // The four O magnitudes above of a row are stored times 2^-mag_exp[row]: 0, or
  // kMagnitudeShift (head_inputs.hpp) in a (b, h) whose V comes near the f64 maximum, where
  // the true ones can leave the f64 range (O itself never does). Use them as
  // ldexp(factor * m, mag_exp), the factor applied first (conformance/judge/tolerance.cpp).
  std::vector<double> mag_exp;    // [B, Hq, L]
  std::vector<double> lse_mag_c;  // [B, Hq, L]     sum_j P_j |s_j|
  std::vector<double> lse_mag_g;  // [B, Hq, L]     sum_j P_j a_j
};

// Runs the reference. The problem must be valid (validate(p) == ""); throws
// std::invalid_argument otherwise. Parallel over (b, h) with OpenMP; `threads` <= 0 uses
// the OpenMP default. The result is bit-identical for any thread count.
Result run_sdpa(const Problem& p, const Inputs& in, Precision precision = Precision::f64,
                int threads = 0);

}  // namespace sdpa::reference
