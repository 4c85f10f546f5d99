// The range of a bf16 tensor's values, for the kernels that multiply bf16 pairs by vdpbf16ps
// (cpu.flash's forward and backward), which takes subnormal operands as zero and flushes
// subnormal products: a tensor whose values could lose magnitude that way keeps f32 GEMMs.
#pragma once

#include "core/problem.hpp"

namespace sdpa::cpu {

// The smallest biased exponent (0 for a subnormal, 1 to 255 otherwise) among the nonzero
// elements of the bf16 tensor `v` at `base` (element 0); 256 when every element is zero.
int smallest_bf16_exponent(const void* base, const StridedView& v);

}  // namespace sdpa::cpu
