// The built-in CPU backends (each defined in its own file in this folder).
#pragma once

#include "kernels/backend.hpp"

namespace sdpa::cpu {

const Backend& math_backend();           // cpu.math: materialises S and P, BLAS-style GEMMs
const Backend& flash_backend();          // cpu.flash: FlashAttention-2 tiling, online softmax
const Backend& mem_efficient_backend();  // cpu.mem_efficient: split-KV with LSE-weighted combine

}  // namespace sdpa::cpu
