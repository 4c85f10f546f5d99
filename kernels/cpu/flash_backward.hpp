// cpu.flash's backward pass: the FlashAttention-2 algorithm (P recomputed from the forward's
// LSE, dS = P (dP - D), dK and dV per key block, dQ over the key blocks), made deterministic
// by giving each (batch element, kv head) task its own dQ accumulators instead of atomic adds
// (docs/KERNELS.md, "cpu.flash: backward").
#pragma once

#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cpu {

// Keys per block of the guarded path's dK / dV pass and query rows per block of its dQ pass.
inline constexpr std::int64_t kBackwardKeyBlock = 64;
inline constexpr std::int64_t kBackwardRowBlock = 64;

// dQ, dK, dV of a backward call `p` (f32, f16, bf16) from the inputs, the forward's O and
// LSE (params().o, .lse) and dO, on the SIMD target `device` selects. f32 products and sums; P and
// dS rounded to the input type for f16 and bf16 before the gradient products (as FlashAttention-2
// rounds them for its tensor-core GEMMs), kept in f32 for f32. Every output element belongs to one
// task with a fixed order: bitwise the same for any thread count.
void flash_backward(const LoweredProblem& p, const Device& device, const RunOptions& options);

}  // namespace sdpa::cpu
