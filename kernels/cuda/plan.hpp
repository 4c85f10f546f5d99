// What the CUDA translation units (math_kernel.cu, mem_efficient_kernel.cu, flash_kernel.cu)
// and the host emulator take of a call: the lowered problem (include/sdpa_cts/params.h, made
// by kernels/lowered_problem.hpp), plain C, so that nvcc never parses the rest of the
// project; the per-batch arrays derived from it; the launch device. Every CUDA backend's
// run() hands its kernel the params of a LoweredProblem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sdpa_cts/params.h"

namespace sdpa::cuda::detail {

// The per-batch-element arrays as the kernels read them (where they run: device memory on a
// GPU): row offsets of Q, K, V and O (element offset of row 0, head 0 of batch element b),
// valid lengths, rows of O.
struct BatchArrays {
  const long long* q0;        // Q row 0 of each batch element
  const long long* k0;        // K row 0
  const long long* v0;        // V row 0
  const long long* o0;        // O row 0
  const long long* valid_q;   // L_b
  const long long* valid_kv;  // S_b
  const long long* o_rows;    // rows of O: L_b packed, else L
};

// The seven arrays of BatchArrays, B entries each, one after another, on the host: what a
// runtime copies to where the kernels run.
inline std::vector<long long> batch_arrays_host(const sdpa_cts_params& p) {
  const long long n = p.batch;
  std::vector<long long> all(static_cast<std::size_t>(7 * n));
  auto row0 = [&](const std::int64_t* stride, const std::int64_t* cu, long long b) {
    return p.packed ? cu[b] * stride[2] : b * stride[0];
  };
  for (long long b = 0; b < n; ++b) {
    all[static_cast<std::size_t>(b)] = row0(p.q_stride, p.cu_seqlens_q, b);
    all[static_cast<std::size_t>(n + b)] = row0(p.k_stride, p.cu_seqlens_kv, b);
    all[static_cast<std::size_t>(2 * n + b)] = row0(p.v_stride, p.cu_seqlens_kv, b);
    all[static_cast<std::size_t>(3 * n + b)] = row0(p.o_stride, p.cu_seqlens_q, b);
    all[static_cast<std::size_t>(4 * n + b)] = p.seqlens_q[b];
    all[static_cast<std::size_t>(5 * n + b)] = p.seqlens_kv[b];
    all[static_cast<std::size_t>(6 * n + b)] = p.packed ? p.seqlens_q[b] : p.len_q;
  }
  return all;
}

// The BatchArrays view of `all` (batch_arrays_host's layout) for `batch` elements.
inline BatchArrays batch_arrays_at(const long long* all, long long batch) {
  const long long n = batch;
  return {all, all + n, all + 2 * n, all + 3 * n, all + 4 * n, all + 5 * n, all + 6 * n};
}

// The overflow guard's per-row flags ([B, Hq, L]) and their count (docs/KERNELS.md, "CUDA").
struct OverflowFlags {
  unsigned char* rows;  // 1 where a row's output overflowed
  int* count;           // how many rows are flagged
};

// The launch's device, as the fused kernels' tiling heuristics need it (core/device.hpp's
// CUDA fields, copied so that nvcc does not parse that header).
struct LaunchDevice {
  int sm = 0;                      // compute capability, e.g. 90
  int sm_count = 0;                // streaming multiprocessors (0 = unknown: the kernel asks
                                   // the runtime)
  std::size_t smem_per_block = 0;  // bytes of shared memory a block may use (0 = unknown)
};

// What one block of a kernel configuration takes of a multiprocessor, for the device-limit
// rules of supports() (cuda_rules.hpp): the same constants the launch uses.
struct LaunchNeeds {
  const char* config;       // the configuration, e.g. "head dims up to 256"
  std::size_t smem_bytes;   // dynamic shared memory per block
  int threads;              // threads per block
  int max_regs_per_thread;  // registers per thread it may take (255: the ISA's limit)
};

// Runs the lowered problem on the current CUDA device and waits for it. Each throws
// std::runtime_error naming the failed call.
void run_math(const sdpa_cts_params& p);                                  // math_kernel.cu
void run_mem_efficient(const sdpa_cts_params& p, const LaunchDevice& d);  // mem_efficient_kernel.cu
void run_flash(const sdpa_cts_params& p, const LaunchDevice& d);          // flash_kernel.cu

}  // namespace sdpa::cuda::detail
