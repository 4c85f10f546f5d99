// cuda.flash on the GPU: the kernel body of flash_body.hpp as CUDA kernels, and the CUDA
// runtime its host side launches them with (device scratch, dynamic shared memory).
//
// UNVERIFIED ON HARDWARE until scripts/gpu-check.sh has run on a GPU (docs/KERNELS.md). The
// same body runs on the host emulator in the tests (tests/kernels/cuda_emulated_test.cpp).
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/flash_body.hpp"

namespace sdpa::cuda::detail {
namespace {

constexpr const char* kBackend = "cuda.flash";

template <class T, int kD>
__global__ void __launch_bounds__(flash::kThreads, 1) flash_kernel(flash::FlashParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  flash::flash_block<T, kD>(p, smem);
}

template <class T>
__global__ void __launch_bounds__(flash::kCombineThreads)
    combine_kernel(flash::FlashParams p, i64 rows_total) {
  __shared__ float weight[flash::kMaxSplits];
  flash::combine_row<T>(p, rows_total, weight, flash::kCombineThreads);
}

// flash::run's runtime on a CUDA device.
struct CudaRuntime {
  DeviceBatchArrays* batch = nullptr;
  BatchArrays batch_arrays(const AttentionPlan& pl) {
    static_cast<void>(pl);
    return batch->get();
  }
  OverflowFlags overflow_flags(i64 rows) { return detail::overflow_flags(kBackend, rows); }
  int read_count(const int* count) { return detail::read_count(kBackend, count); }
  void* scratch(int slot, std::size_t bytes) { return detail::scratch(kBackend, slot, bytes); }
  int sm_count(const LaunchDevice& dev) {
    if (dev.sm_count > 0) return dev.sm_count;
    int device = 0, n = 0;
    check_cuda(kBackend, "cudaGetDevice", cudaGetDevice(&device));
    check_cuda(kBackend, "cudaDeviceGetAttribute",
               cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
  }
  template <class T, int kD>
  void flash(const flash::FlashParams& p, i64 blocks) {
    constexpr std::size_t smem = flash::smem_bytes<T, kD>();
    static const cudaError_t attribute = cudaFuncSetAttribute(
        flash_kernel<T, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    check_cuda(kBackend, "cudaFuncSetAttribute (dynamic shared memory)", attribute);
    flash_kernel<T, kD><<<grid_x(blocks, kBackend), flash::kThreads, smem>>>(p);
    check_cuda(kBackend, "flash_kernel launch", cudaGetLastError());
  }
  template <class T>
  void combine(const flash::FlashParams& p, i64 rows_total) {
    combine_kernel<T><<<grid_x(rows_total, kBackend), flash::kCombineThreads>>>(p, rows_total);
    check_cuda(kBackend, "combine_kernel launch", cudaGetLastError());
  }
  void finish() { check_cuda(kBackend, "cudaDeviceSynchronize", cudaDeviceSynchronize()); }
};

template <class T>
void run_typed(const AttentionPlan& pl, const LaunchDevice& dev) {
  DeviceBatchArrays batch(kBackend, pl);
  CudaRuntime rt;
  rt.batch = &batch;
  flash::run<T>(pl, dev, rt);
}

}  // namespace

void run_flash_plan(const AttentionPlan& plan, const LaunchDevice& device) {
  switch (plan.dtype) {
    case 1:
      return run_typed<f16_t>(plan, device);
    case 2:
      return run_typed<bf16_t>(plan, device);
  }
  throw std::runtime_error("cuda.flash: element type not supported by this kernel");
}

}  // namespace sdpa::cuda::detail
