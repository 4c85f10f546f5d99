// cpu.flash's backward pass: the FlashAttention-2 algorithm (P recomputed from the forward's
// LSE, dS = P (dP - D), dK and dV per key block, dQ over the key blocks), made deterministic
// by a separate dQ pass instead of atomic adds (docs/KERNELS.md, "cpu.flash: backward").
#pragma once

#include "kernels/backend.hpp"

namespace sdpa::cpu {

// Keys per block of the dK / dV pass and query rows per block of the dQ pass.
inline constexpr std::int64_t kBackwardKeyBlock = 64;
inline constexpr std::int64_t kBackwardRowBlock = 64;

// dQ, dK, dV of `p` (f32, f16, bf16) from the inputs, the forward's O and LSE in `forward`
// and dO. f32 products; P and dS rounded to the input type for f16 and bf16 before the
// gradient products (as FlashAttention-2 rounds them for its tensor-core GEMMs), kept in f32
// for f32; sums in f64. Every output element belongs to one task with a fixed order: bitwise
// the same for any thread count.
void flash_backward(const Problem& p, const Buffers& forward, const GradientPointers& grads,
                    const RunOptions& options);

}  // namespace sdpa::cpu
