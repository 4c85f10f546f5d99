// Registers the CUDA backend family in PyTorch's default order (flash, efficient, math,
// cudnn); cuDNN first on sm9x / sm10x is a dispatcher rule (PyTorch kind cudnn); and the family's
// memory space, cuda_device.
#include "kernels/cuda/cuda_backends.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/registry.hpp"

void sdpa_cts_register_cuda_backends(sdpa::BackendRegistry& registry) {
  sdpa::cuda::register_cuda_memory();
  registry.add(sdpa::cuda::flash_backend());
  registry.add(sdpa::cuda::mem_efficient_backend());
  registry.add(sdpa::cuda::math_backend());
  registry.add(sdpa::cuda::cudnn_backend());
}
