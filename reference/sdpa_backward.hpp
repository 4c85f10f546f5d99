// The oracle's backward: the exact gradients of SDPA (docs/SEMANTICS.md, "Backward"), in f64
// with compensated sums or in binary128, from the inputs as stored and an upstream gradient
// dO. Like the forward, it reads the problem and its buffers and never a kernel's output:
// P, O and D are recomputed exactly here, not taken from a backend's forward.
#pragma once

#include <vector>

#include "core/problem.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::reference {

// Every array is logical and contiguous over the unpacked shape, whatever the problem's
// layout (as Result's): rows i >= L_b and keys j >= S_b hold zeros.
struct Gradients {
  std::vector<double> dq;  // [B, Hq, L, Dqk]
  std::vector<double> dk;  // [B, Hkv, S, Dqk]  summed over each key/value head's query group
  std::vector<double> dv;  // [B, Hkv, S, Dv]   summed over each key/value head's query group
  // dS, the gradient of each final logit: d bias before the sums over the mask's broadcast
  // dimensions. Only for a problem with an additive mask; 0 where the pair is not attended.
  std::vector<double> ds;  // [B, Hq, L, S]
  // d bias when the problem asks for it (bias_grad): dS summed over the mask's broadcast
  // dimensions, one element per stored mask element (mask_elements; mask_view's strides map
  // each (b, h, i, j) to its element), the sums in long double in (b, h, i, j) order.
  std::vector<double> dbias;
};

// The gradients for upstream gradient `d_out`, logical [B, Hq, L, Dv] (rows i >= L_b are not
// read). The problem must be valid; throws std::invalid_argument otherwise or when d_out has
// another size. Parallel over (b, key/value head) with OpenMP, each group's query heads in
// order: the result is bit-identical for any thread count.
Gradients run_sdpa_backward(const Problem& p, const Inputs& in, const std::vector<double>& d_out,
                            Precision precision = Precision::f64, int threads = 0);

}  // namespace sdpa::reference
