// cuda.flash on a GPU: the body of flash_body.hpp launched by the generic CUDA runtime.
// Judged on an H200 (docs/KERNELS.md, "CUDA"); the same body runs on the host emulator.
#include "kernels/cuda/cuda_runtime.cuh"
#include "kernels/cuda/flash_body.hpp"

namespace sdpa::cuda::detail {

void run_flash(const sdpa_cts_params& p, const LaunchDevice& device) {
  CudaRuntime rt("cuda.flash");
  flash::run_lowered(p, device, rt);
}

}  // namespace sdpa::cuda::detail
