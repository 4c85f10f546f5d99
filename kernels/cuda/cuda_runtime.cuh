// The runtime every fused CUDA kernel's host side (flash::run, mem_efficient::run) runs on a
// GPU: per-batch arrays and overflow flags in device scratch, the SM count, and one generic
// launch of a kernel body. Its twin on the host is the emulator's runtime
// (emulator/emulated_kernels.cpp): the same interface, so a fused kernel is written once
// (docs/KERNELS.md, "Adding a CUDA fused kernel"). Included by the .cu files only.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/cuda/device_common.cuh"

namespace sdpa::cuda::detail {

// The one CUDA kernel of every fused body: thread block = one body call per thread, with the
// block's dynamic shared memory. A Body gives kThreads, kMinBlocks (its launch bounds) and
// kSmemBytes.
template <class Body>
__global__ void __launch_bounds__(Body::kThreads, Body::kMinBlocks) run_body(const Body body) {
  extern __shared__ __align__(16) unsigned char body_smem[];
  body(body_smem);
}

class CudaRuntime {
 public:
  explicit CudaRuntime(const char* backend) : backend_(backend) {}

  // The batch arrays (batch_arrays_host's layout) in device scratch.
  BatchArrays batch_arrays(const std::vector<long long>& host, long long batch) {
    auto* base = static_cast<long long*>(
        detail::scratch(backend_, kSlotBatch, host.size() * sizeof(long long) + 8));
    if (!host.empty()) {
      check_cuda(
          backend_, "cudaMemcpy",
          cudaMemcpy(base, host.data(), host.size() * sizeof(long long), cudaMemcpyHostToDevice));
    }
    return batch_arrays_at(base, batch);
  }
  OverflowFlags overflow_flags(long long rows) { return detail::overflow_flags(backend_, rows); }
  int read_count(const int* count) { return detail::read_count(backend_, count); }
  void* scratch(int slot, std::size_t bytes) { return detail::scratch(backend_, slot, bytes); }
  int sm_count(const LaunchDevice& dev) {
    if (dev.sm_count > 0) return dev.sm_count;
    int device = 0, n = 0;
    check_cuda(backend_, "cudaGetDevice", cudaGetDevice(&device));
    check_cuda(backend_, "cudaDeviceGetAttribute",
               cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
  }
  // `blocks` thread blocks of Body::kThreads threads, each thread calling body(smem).
  template <class Body>
  void launch(const Body& body, long long blocks) {
    // Above 48 KiB, dynamic shared memory must be asked for, once per kernel.
    static const cudaError_t attribute =
        Body::kSmemBytes > 48 * 1024
            ? cudaFuncSetAttribute(run_body<Body>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(Body::kSmemBytes))
            : cudaSuccess;
    check_cuda(backend_, "cudaFuncSetAttribute (dynamic shared memory)", attribute);
    run_body<Body><<<grid_x(blocks, backend_), Body::kThreads, Body::kSmemBytes>>>(body);
    check_cuda(backend_, "kernel launch", cudaGetLastError());
  }
  void finish() { check_cuda(backend_, "cudaDeviceSynchronize", cudaDeviceSynchronize()); }

 private:
  const char* backend_;  // names the backend in every error
};

}  // namespace sdpa::cuda::detail
