// The CUDA backends: capabilities and supports() follow PyTorch's SDPA picker
// (docs/DISPATCH.md lists every rule and its reason text), so the dispatcher and the
// conformance matrix can decide for any simulated GPU. Kernels (docs/KERNELS.md, "CUDA", says
// what has been judged on a GPU): in a build with CUDA (SDPA_CTS_CUDA), cuda.math runs
// math_kernel.cu (cuBLAS and a softmax kernel), cuda.flash flash_kernel.cu and
// cuda.mem_efficient mem_efficient_kernel.cu; on an emulated GPU (device option emulate=1,
// any build) cuda.flash and cuda.mem_efficient run the same kernel bodies on the host
// emulator, and cuda.math declines. Without CUDA and off the emulator their run() throws
// std::runtime_error("<name>: this build has no CUDA kernels (...)"). cuda.cudnn models
// PyTorch's choice only: its run() always throws (no cuDNN kernel in this suite).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.hpp"

namespace sdpa::cuda {

const Backend& flash_backend();          // cuda.flash: FlashAttention-2 (PyTorch's FLASH_ATTENTION)
const Backend& mem_efficient_backend();  // cuda.mem_efficient: CUTLASS kernel (EFFICIENT_ATTENTION)
const Backend& math_backend();           // cuda.math: the composite math path (MATH), no checks
const Backend& cudnn_backend();          // cuda.cudnn: cuDNN frontend SDPA graph (CUDNN_ATTENTION)

// One architecture cut-off of cuda.mem_efficient's head-dim alignment rule (PyTorch's
// minimum_gemm_alignment): from compute capability `from_sm`, head dims of this precision
// must be multiples of `elements`. The rule and its boundary tests read the same data.
struct AlignmentCut {
  int from_sm;          // first architecture (major * 10 + minor) the cut applies to
  bool half_precision;  // f16 / bf16 (true) or f32 (false)
  int elements;         // the multiple; below every cut of its precision: 1
};
// The cuts, the latest first for each precision (the first that applies wins).
const std::vector<AlignmentCut>& mem_efficient_alignment_cuts();

// The compute capabilities a CUDA descriptor runs on, [from_sm, to_sm] (PyTorch's
// check_sm_version / check_runtime_arch for each kernel). Each descriptor's supports() reads
// its row; the boundary tests generate sm(from - 1), sm(from), sm(to), sm(to + 1) from it.
struct ArchRange {
  const char* backend;  // "cuda.flash", ...
  int from_sm;
  int to_sm;
};
const std::vector<ArchRange>& cuda_arch_ranges();
// The row of `backend`; throws std::logic_error for a backend without one.
const ArchRange& cuda_arch_range(std::string_view backend);

// One architecture cut-off of a dtype: `backend` takes `dtype` from compute capability
// `from_sm` (cuda.mem_efficient: bf16 from sm80, PyTorch's check_bf16_supported).
struct DtypeArchCut {
  const char* backend;
  DType dtype;
  int from_sm;
};
const std::vector<DtypeArchCut>& cuda_dtype_arch_cuts();

// cuda.mem_efficient checks the base pointers' 16-byte alignment from this architecture on
// (PyTorch's check for sm80 and newer in can_use_mem_efficient_attention).
inline constexpr int kMemEfficientPointerAlignmentFromSm = 80;

// cuda.cudnn's head-dim limits and version gates: kernels/cuda/cudnn_rules.hpp (header-only,
// so that the PyTorch policy's training rules read them without linking the CUDA family).

}  // namespace sdpa::cuda
