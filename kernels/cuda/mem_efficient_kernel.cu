// cuda.mem_efficient on the GPU: the kernel body of mem_efficient_body.hpp as a CUDA kernel,
// and the CUDA runtime its host side launches it with.
//
// UNVERIFIED ON HARDWARE until scripts/gpu-check.sh has run on a GPU (docs/KERNELS.md). The
// same body runs on the host emulator in the tests (tests/kernels/cuda_emulated_test.cpp).
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/mem_efficient_body.hpp"

namespace sdpa::cuda::detail {
namespace {

constexpr const char* kBackend = "cuda.mem_efficient";

template <class T>
__global__ void __launch_bounds__(mem_efficient::kThreads)
    mem_efficient_kernel(mem_efficient::MemEfficientParams p) {
  __shared__ mem_efficient::SharedTiles tiles;
  mem_efficient::mem_efficient_block<T>(p, tiles);
}

// mem_efficient::run's runtime on a CUDA device.
struct CudaRuntime {
  const DeviceBatchArrays* batch = nullptr;
  BatchArrays batch_arrays(const AttentionPlan&) { return batch->get(); }
  OverflowFlags overflow_flags(i64 rows) { return detail::overflow_flags(kBackend, rows); }
  int read_count(const int* count) { return detail::read_count(kBackend, count); }
  template <class T>
  void kernel(const mem_efficient::MemEfficientParams& p, i64 blocks) {
    mem_efficient_kernel<T><<<grid_x(blocks, kBackend), mem_efficient::kThreads>>>(p);
    check_cuda(kBackend, "mem_efficient_kernel launch", cudaGetLastError());
  }
  void finish() { check_cuda(kBackend, "cudaDeviceSynchronize", cudaDeviceSynchronize()); }
};

template <class T>
void run_typed(const AttentionPlan& pl) {
  const DeviceBatchArrays batch(kBackend, pl);
  CudaRuntime rt;
  rt.batch = &batch;
  mem_efficient::run<T>(pl, rt);
}

}  // namespace

void run_mem_efficient_plan(const AttentionPlan& plan, const LaunchDevice&) {
  switch (plan.dtype) {
    case 0:
      return run_typed<float>(plan);
    case 1:
      return run_typed<f16_t>(plan);
    case 2:
      return run_typed<bf16_t>(plan);
  }
  throw std::runtime_error("cuda.mem_efficient: element type not supported by this kernel");
}

}  // namespace sdpa::cuda::detail
