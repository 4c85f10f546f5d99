// cpu.math's backward pass: the textbook gradients with P materialised per query row
// (docs/KERNELS.md, "Backward").
#pragma once

#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cpu {

// The most logits (B * Hq * L * S) whose dS math_backward keeps for d bias: 2^27 doubles, 1 GiB.
inline constexpr double kMaxBiasGradientScratch = 134217728.0;

// dQ, dK, dV of a backward call `p` (docs/SEMANTICS.md, "Backward") from the inputs, the
// forward's O (params().o) and dO. f64 problems compute in f64, the others in f32; P and dS are not
// rounded. One (b, key/value head) group per task, its query heads and rows in order:
// bitwise the same for any thread count. With d bias (bias_grad) every dS is kept and then
// summed over the mask's broadcast dimensions in (b, h, i, j) order, in f64.
void math_backward(const LoweredProblem& p, const RunOptions& options);

}  // namespace sdpa::cpu
