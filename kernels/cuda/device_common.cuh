// Device-side pieces every CUDA kernel of this folder shares: error checks that name the
// backend and the call, device arrays and scratch, element-type conversions, the reference's
// Philox keep-mask word, and the structural masks of docs/SEMANTICS.md. Included by the .cu
// files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/keep_mask.hpp"
#include "kernels/cuda/plan.hpp"
#include "kernels/cuda/simt.hpp"
#include "kernels/cuda/tile_schedule.hpp"

namespace sdpa::cuda::detail {

// Throws std::runtime_error("<backend>: <what>: <error name> (<error text>)").
inline void check_cuda(const char* backend, const char* what, cudaError_t e) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(backend) + ": " + what + ": " + cudaGetErrorName(e) +
                             " (" + cudaGetErrorString(e) + ")");
  }
}

// Device memory for n elements, freed on scope exit.
template <class T>
class DeviceArray {
 public:
  DeviceArray(const char* backend, std::size_t n) : backend_(backend) {
    check_cuda(backend_, "cudaMalloc", cudaMalloc(&p_, (n ? n : 1) * sizeof(T)));
  }
  DeviceArray(const char* backend, const std::vector<T>& host) : DeviceArray(backend, host.size()) {
    if (!host.empty()) {
      check_cuda(backend_, "cudaMemcpy",
                 cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }

 private:
  const char* backend_;
  T* p_ = nullptr;
};

// Grow-only device memory kept for the life of the process, one buffer per slot: the fused
// kernels' per-call scratch (batch arrays, flags, split-KV partials) without a cudaMalloc on
// every call, which would dominate short decode calls. Not thread-safe: one run at a time per
// process, as the conformance workers and the bench call.
inline void* scratch(const char* backend, int slot, std::size_t bytes) {
  struct Buffer {
    void* p = nullptr;
    std::size_t bytes = 0;
  };
  static Buffer buffers[8];
  Buffer& b = buffers[slot];
  if (b.bytes < bytes) {
    if (b.p) cudaFree(b.p);
    b.p = nullptr;
    b.bytes = 0;
    check_cuda(backend, "cudaMalloc", cudaMalloc(&b.p, bytes));
    b.bytes = bytes;
  }
  return b.p;
}
enum ScratchSlot { kSlotBatch = 0, kSlotFlags = 1, kSlotPartialO = 2, kSlotPartialStats = 3 };

// Element type T and its accumulation type.
template <class T>
struct Io;
template <>
struct Io<float> {
  using Acc = float;
  static __device__ float in(float x) { return x; }
  static __device__ float out(float x) { return x; }
};
template <>
struct Io<__half> {
  using Acc = float;
  static __device__ float in(__half x) { return __half2float(x); }
  static __device__ __half out(float x) { return __float2half_rn(x); }
};
template <>
struct Io<__nv_bfloat16> {
  using Acc = float;
  static __device__ float in(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __nv_bfloat16 out(float x) { return __float2bfloat16_rn(x); }
};
template <>
struct Io<double> {
  using Acc = double;
  static __device__ double in(double x) { return x; }
  static __device__ double out(double x) { return x; }
};

// The overflow guard's per-row flags and their count, zeroed, in scratch.
inline OverflowFlags overflow_flags(const char* backend, i64 rows) {
  auto* base = static_cast<unsigned char*>(scratch(backend, kSlotFlags, rows + 16));
  check_cuda(backend, "cudaMemset", cudaMemset(base, 0, rows + 16));
  return {base + 16, reinterpret_cast<int*>(base)};
}
inline int read_count(const char* backend, const int* count) {
  int n = 0;
  check_cuda(backend, "cudaMemcpy", cudaMemcpy(&n, count, sizeof(int), cudaMemcpyDeviceToHost));
  return n;
}

// Launch a kernel grid of n blocks in x (at most 2^31 - 1).
inline unsigned grid_x(i64 n, const char* backend) {
  if (n > 0x7fffffffLL) throw std::runtime_error(std::string(backend) + ": too many thread blocks");
  return static_cast<unsigned>(n < 1 ? 1 : n);
}

}  // namespace sdpa::cuda::detail
