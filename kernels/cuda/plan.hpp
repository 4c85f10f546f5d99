// One CUDA kernel launch's problem, flattened for the CUDA translation units
// (math_kernel.cu, mem_efficient_kernel.cu, flash_kernel.cu): plain data only, so that nvcc
// never parses the rest of the project. Built on the host from a Problem and the run's
// Buffers by make_plan() (plan.cpp); every CUDA backend's run() hands one to its kernel.
#pragma once

#include <cstdint>
#include <vector>

namespace sdpa::cuda::detail {

// One of Q, K, V, O in device memory: element (b, h, i, d) of batch element b's valid rows
// is at row0[b] + h * stride_h + i * stride_row + d * stride_d.
struct PlanTensor {
  const void* data = nullptr;      // element 0 (device memory); O is written through it
  std::int64_t stride_h = 0;       // between heads
  std::int64_t stride_row = 0;     // between rows (queries or keys)
  std::int64_t stride_d = 0;       // along the head dimension
  std::vector<std::int64_t> row0;  // per batch element: offset of its row 0, head 0
};

struct AttentionPlan {
  int dtype = 0;                        // 0 f32, 1 f16, 2 bf16, 3 f64
  std::int64_t batch = 0;               // B
  std::int64_t heads_q = 0;             // Hq
  std::int64_t heads_kv = 0;            // Hkv (Hq % Hkv == 0)
  std::int64_t len_q = 0;               // L (the maximum)
  std::int64_t len_kv = 0;              // S (the maximum)
  std::int64_t dqk = 0;                 // Dqk
  std::int64_t dv = 0;                  // Dv
  std::vector<std::int64_t> valid_q;    // L_b per batch element
  std::vector<std::int64_t> valid_kv;   // S_b per batch element
  PlanTensor q, k, v, o;                // the four tensors
  std::vector<std::int64_t> o_rows;     // rows of O per batch element: L_b packed, else L
  double scale = 1;                     // effective logit scale
  double softcap = 0;                   // c > 0: c * tanh(s / c); 0 = off
  int causal = 0;                       // 0 none, 1 top-left, 2 bottom-right
  bool window = false;                  // sliding window on
  std::int64_t window_left = -1;        // < 0: unbounded
  std::int64_t window_right = -1;       // < 0: unbounded
  bool window_bottom_right = false;     // window aligned to the bottom-right diagonal
  int mask = 0;                         // 0 none, 1 bool (uint8, 1 = attend), 2 additive (dtype)
  const void* mask_data = nullptr;      // element 0 of the [B, Hq, L, S] mask view
  std::int64_t mask_stride[4] = {};     // its strides (0 = broadcast)
  double dropout_p = 0;                 // dropout probability
  std::uint32_t dropout_threshold = 0;  // keep iff Philox word >= this (core/philox.hpp)
  std::uint64_t dropout_seed = 0;       // Philox key
  std::uint64_t dropout_offset = 0;     // Philox counter offset
  float* lse = nullptr;                 // [B, Hq, L] f32, or null
  void* weights = nullptr;              // [B, Hq, L, S] in dtype, or null
};

// The per-batch-element arrays of a plan as the kernels read them (where they run: device
// memory on a GPU): row offsets of Q, K, V and O, valid lengths, rows of O.
struct BatchArrays {
  const long long* q0;        // Q row 0 of each batch element
  const long long* k0;        // K row 0
  const long long* v0;        // V row 0
  const long long* o0;        // O row 0
  const long long* valid_q;   // L_b
  const long long* valid_kv;  // S_b
  const long long* o_rows;    // rows of O: L_b packed, else L
};

// The overflow guard's per-row flags ([B, Hq, L]) and their count (docs/KERNELS.md, "CUDA").
struct OverflowFlags {
  unsigned char* rows;  // 1 where a row's output overflowed
  int* count;           // how many rows are flagged
};

// The launch's device, as the fused kernels' tiling heuristics need it (core/device.hpp's
// CUDA fields, copied so that nvcc does not parse that header).
struct LaunchDevice {
  int sm = 0;        // compute capability, e.g. 90
  int sm_count = 0;  // streaming multiprocessors (0 = unknown: the kernel asks the runtime)
};

// Runs the plan on the current CUDA device and waits for it. Each throws std::runtime_error
// naming the failed call.
void run_math_plan(const AttentionPlan& plan);  // math_kernel.cu
void run_mem_efficient_plan(const AttentionPlan& plan,
                            const LaunchDevice& d);                     // mem_efficient_kernel.cu
void run_flash_plan(const AttentionPlan& plan, const LaunchDevice& d);  // flash_kernel.cu

}  // namespace sdpa::cuda::detail
