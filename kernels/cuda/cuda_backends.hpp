// The CUDA backends as descriptors: capabilities and supports() follow PyTorch's SDPA
// picker (docs/DISPATCH.md lists every rule and its reason text), so the dispatcher and
// the conformance matrix can decide for any simulated GPU. This build has no CUDA kernels
// yet: run() throws std::runtime_error("cuda.flash: this build has no CUDA kernels").
#pragma once

#include <string>

#include "kernels/backend.hpp"

namespace sdpa::cuda {

const Backend& flash_backend();          // cuda.flash: FlashAttention-2 (PyTorch's FLASH_ATTENTION)
const Backend& mem_efficient_backend();  // cuda.mem_efficient: CUTLASS kernel (EFFICIENT_ATTENTION)
const Backend& math_backend();           // cuda.math: the composite math path (MATH), no checks
const Backend& cudnn_backend();          // cuda.cudnn: cuDNN frontend SDPA graph (CUDNN_ATTENTION)

// "sm80", "sm121": the name of a compute capability (major * 10 + minor).
std::string sm_name(int sm);
// "9.16.0" from the encoding major * 10000 + minor * 100 + patch; "none" for 0.
std::string cudnn_version_name(int version);

}  // namespace sdpa::cuda
