// cuda.mem_efficient on a GPU: the body of mem_efficient_body.hpp launched by the generic
// CUDA runtime. Judged on an H200 (docs/KERNELS.md, "CUDA"); the same body runs on the host
// emulator.
#include "kernels/cuda/cuda_runtime.cuh"
#include "kernels/cuda/mem_efficient_body.hpp"

namespace sdpa::cuda::detail {

void run_mem_efficient(const sdpa_cts_params& p, const LaunchDevice&) {
  CudaRuntime rt("cuda.mem_efficient");
  mem_efficient::run_lowered(p, rt);
}

}  // namespace sdpa::cuda::detail
