// The CUDA backends: capabilities and supports() follow PyTorch's SDPA picker
// (docs/DISPATCH.md lists every rule and its reason text), so the dispatcher and the
// conformance matrix can decide for any simulated GPU. Kernels: cuda.math, in a build with
// CUDA (SDPA_CTS_CUDA, docs/KERNELS.md "CUDA"), unverified on hardware until a GPU check
// has run; the others' run() throws std::runtime_error("cuda.flash: this build has no CUDA
// kernels").
#pragma once

#include <string>

#include "kernels/backend.hpp"

namespace sdpa::cuda {

const Backend& flash_backend();          // cuda.flash: FlashAttention-2 (PyTorch's FLASH_ATTENTION)
const Backend& mem_efficient_backend();  // cuda.mem_efficient: CUTLASS kernel (EFFICIENT_ATTENTION)
const Backend& math_backend();           // cuda.math: the composite math path (MATH), no checks
const Backend& cudnn_backend();          // cuda.cudnn: cuDNN frontend SDPA graph (CUDNN_ATTENTION)

}  // namespace sdpa::cuda
