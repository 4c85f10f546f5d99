// The thread-level operations the fused CUDA kernels are written in, so that one kernel body
// compiles three ways:
//   - nvcc, device pass (__CUDA_ARCH__): CUDA intrinsics and inline PTX (sm80+: mma.sync,
//     ldmatrix, cp.async);
//   - nvcc, host pass: parsed only, never run (kernel bodies are __device__ there);
//   - a plain host compiler: the host emulator of kernels/cuda/emulator/ (one std::thread per
//     CUDA thread, warps and blocks synchronised at every collective), which runs the same
//     kernel bodies on machines without a GPU so that the judge can check them
//     (tests/kernels/cuda_emulated_test.cpp).
// Arithmetic is IEEE single precision rounded to nearest, never contracted (the project's
// floating-point policy), on every path.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define SDPA_CTS_KERNEL_FN __device__ inline
#else
#include <cmath>
#include <cstring>

#include "kernels/cuda/emulator/emulator.hpp"
#define SDPA_CTS_KERNEL_FN inline
#endif

// Loop unrolling hints: nvcc's; a host compiler runs the loops as written.
#if defined(__CUDACC__)
#define SDPA_CTS_UNROLL _Pragma("unroll")
#define SDPA_CTS_NO_UNROLL _Pragma("unroll 1")
#else
#define SDPA_CTS_UNROLL
#define SDPA_CTS_NO_UNROLL
#endif

namespace sdpa::cuda::detail {

// 16-bit element types: CUDA's on the device, the emulator's bit-exact stand-ins on the host.
#if defined(__CUDACC__)
using bf16_t = __nv_bfloat16;
using f16_t = __half;
#else
using bf16_t = emu::Bf16;
using f16_t = emu::Half;
#endif

// ---------------------------------------------------------------- thread coordinates

SDPA_CTS_KERNEL_FN int thread_x() {
#if defined(__CUDACC__)
  return static_cast<int>(threadIdx.x);
#else
  return emu::ops::thread_x();
#endif
}
SDPA_CTS_KERNEL_FN long long block_x() {
#if defined(__CUDACC__)
  return static_cast<long long>(blockIdx.x);
#else
  return emu::ops::block_x();
#endif
}
SDPA_CTS_KERNEL_FN long long grid_dim_x() {
#if defined(__CUDACC__)
  return static_cast<long long>(gridDim.x);
#else
  return emu::ops::grid_dim_x();
#endif
}

// ---------------------------------------------------------------- arithmetic (RN, no FMA)

SDPA_CTS_KERNEL_FN float fmul_rn(float a, float b) {
#if defined(__CUDACC__)
  return __fmul_rn(a, b);
#else
  return emu::ops::round_f32(static_cast<double>(a) * b);
#endif
}
SDPA_CTS_KERNEL_FN float fadd_rn(float a, float b) {
#if defined(__CUDACC__)
  return __fadd_rn(a, b);
#else
  return emu::ops::round_f32(static_cast<double>(a) + b);
#endif
}
SDPA_CTS_KERNEL_FN float fsub_rn(float a, float b) {
#if defined(__CUDACC__)
  return __fsub_rn(a, b);
#else
  return emu::ops::round_f32(static_cast<double>(a) - b);
#endif
}
SDPA_CTS_KERNEL_FN float fdiv_rn(float a, float b) {
#if defined(__CUDACC__)
  return __fdiv_rn(a, b);
#else
  return emu::ops::round_f32(static_cast<double>(a) / b);
#endif
}
SDPA_CTS_KERNEL_FN float exp2_f(float x) {
#if defined(__CUDACC__)
  return exp2f(x);
#else
  return std::exp2(x);
#endif
}
SDPA_CTS_KERNEL_FN float tanh_f(float x) {
#if defined(__CUDACC__)
  return tanhf(x);
#else
  return std::tanh(x);
#endif
}
SDPA_CTS_KERNEL_FN float log_f(float x) {
#if defined(__CUDACC__)
  return logf(x);
#else
  return std::log(x);
#endif
}
SDPA_CTS_KERNEL_FN bool is_finite(float x) {
#if defined(__CUDACC__)
  return isfinite(x);
#else
  return std::isfinite(x);
#endif
}
SDPA_CTS_KERNEL_FN float ldexp_f(float x, int e) {
#if defined(__CUDACC__)
  return ldexpf(x, e);
#else
  return std::ldexp(x, e);
#endif
}

// NaN-propagating max: a NaN logit must make its row NaN (no NaN hiding), where fmaxf
// would drop it.
SDPA_CTS_KERNEL_FN float nan_max(float a, float b) { return (a > b || a != a) ? a : b; }

inline constexpr float kLog2e = 1.4426950408889634f;  // log2(e), rounded to f32
inline constexpr float kLn2 = 0.6931471805599453f;    // ln(2), rounded to f32
inline constexpr float kInf = __builtin_huge_valf();  // +inf

// The bits of an f32 (the fragment probe compares registers bit for bit).
SDPA_CTS_KERNEL_FN unsigned float_bits(float x) {
#if defined(__CUDACC__)
  return __float_as_uint(x);
#else
  unsigned u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

// ---------------------------------------------------------------- element conversions

SDPA_CTS_KERNEL_FN float to_float(float x) { return x; }
SDPA_CTS_KERNEL_FN float to_float(bf16_t x) {
#if defined(__CUDACC__)
  return __bfloat162float(x);
#else
  return emu::ops::to_float(x);
#endif
}
SDPA_CTS_KERNEL_FN float to_float(f16_t x) {
#if defined(__CUDACC__)
  return __half2float(x);
#else
  return emu::ops::to_float(x);
#endif
}

// float -> T, round to nearest even.
template <class T>
SDPA_CTS_KERNEL_FN T from_float(float x);
template <>
SDPA_CTS_KERNEL_FN float from_float<float>(float x) {
  return x;
}
template <>
SDPA_CTS_KERNEL_FN bf16_t from_float<bf16_t>(float x) {
#if defined(__CUDACC__)
  return __float2bfloat16_rn(x);
#else
  return emu::ops::to_bf16(x);
#endif
}
template <>
SDPA_CTS_KERNEL_FN f16_t from_float<f16_t>(float x) {
#if defined(__CUDACC__)
  return __float2half_rn(x);
#else
  return emu::ops::to_half(x);
#endif
}

// Two floats rounded to T in one 32-bit register, lo in the low half (the lower column of a
// fragment pair).
template <class T>
SDPA_CTS_KERNEL_FN unsigned pack2(float lo, float hi) {
  static_assert(sizeof(T) == 2, "16-bit types only");
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<T, bf16_t>) {
    return static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(lo))) |
           (static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(hi))) << 16);
  } else {
    return static_cast<unsigned>(__half_as_ushort(__float2half_rn(lo))) |
           (static_cast<unsigned>(__half_as_ushort(__float2half_rn(hi))) << 16);
  }
#else
  return static_cast<unsigned>(from_float<T>(lo).bits) |
         (static_cast<unsigned>(from_float<T>(hi).bits) << 16);
#endif
}

// ---------------------------------------------------------------- synchronisation

SDPA_CTS_KERNEL_FN void sync_threads() {
#if defined(__CUDACC__)
  __syncthreads();
#else
  emu::ops::sync_threads();
#endif
}
// __syncthreads_or: every thread learns whether any thread of the block passed true.
SDPA_CTS_KERNEL_FN bool sync_threads_or(bool x) {
#if defined(__CUDACC__)
  return __syncthreads_or(x) != 0;
#else
  return emu::ops::sync_threads_or(x);
#endif
}
SDPA_CTS_KERNEL_FN void sync_warp() {
#if defined(__CUDACC__)
  __syncwarp();
#else
  emu::ops::sync_warp();
#endif
}
SDPA_CTS_KERNEL_FN float shfl_xor(float x, int mask) {
#if defined(__CUDACC__)
  return __shfl_xor_sync(0xffffffffu, x, mask);
#else
  return emu::ops::shfl_xor(x, mask);
#endif
}
SDPA_CTS_KERNEL_FN bool any_in_warp(bool x) {
#if defined(__CUDACC__)
  return __any_sync(0xffffffffu, x) != 0;
#else
  return emu::ops::any_in_warp(x);
#endif
}
SDPA_CTS_KERNEL_FN void atomic_add(int* p, int v) {
#if defined(__CUDACC__)
  atomicAdd(p, v);
#else
  emu::ops::atomic_add(p, v);
#endif
}

// ---------------------------------------------------------------- sm80 instructions
// Fragment layouts are PTX's ("Matrix Fragments for mma.m16n8k16"): with g = lane / 4 and
// t = lane % 4,
//   A (16 x 16, row-major): reg 0 = (row g, cols 2t, 2t+1), reg 1 = (row g+8, same cols),
//                           reg 2 = (row g, cols 2t+8, 2t+9), reg 3 = (row g+8, those cols);
//   B (16 x 8, k x n):      reg 0 = (k 2t, 2t+1; n g), reg 1 = (k 2t+8, 2t+9; n g);
//   C (16 x 8, f32):        c0, c1 = (row g, cols 2t, 2t+1), c2, c3 = (row g+8, same cols).
// ldmatrix .x4 loads four 8 x 8 matrices of 16-bit elements whose row addresses lanes
// 8m .. 8m+7 give; lane l receives (row l / 4, cols 2 (l % 4), +1) of each, and with .trans
// (rows 2 (l % 4), +1; col l / 4).

SDPA_CTS_KERNEL_FN void ldmatrix_x4(unsigned (&r)[4], const void* smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))));
#elif defined(__CUDACC__)
  (void)r;
  (void)smem;
  __trap();
#else
  emu::ops::ldmatrix_x4(r, smem, false);
#endif
}

SDPA_CTS_KERNEL_FN void ldmatrix_x4_trans(unsigned (&r)[4], const void* smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))));
#elif defined(__CUDACC__)
  (void)r;
  (void)smem;
  __trap();
#else
  emu::ops::ldmatrix_x4(r, smem, true);
#endif
}

// D = A B + D, 16 x 8 x 16, f32 accumulators; T is bf16_t or f16_t.
template <class T>
SDPA_CTS_KERNEL_FN void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (sizeof(T) == 2 && std::is_same_v<T, bf16_t>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, "
        "%7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#elif defined(__CUDACC__)
  (void)c;
  (void)a;
  (void)b0;
  (void)b1;
  __trap();
#else
  emu::ops::mma_16816(c, a, b0, b1, std::is_same_v<T, bf16_t>);
#endif
}

// 16 bytes global -> shared, asynchronously; src_bytes = 0 writes 16 zero bytes and reads
// nothing. Visible after cp_async_wait and a barrier.
SDPA_CTS_KERNEL_FN void cp_async_16(void* smem, const void* gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(smem))),
               "l"(gmem), "r"(src_bytes));
#elif defined(__CUDACC__)
  (void)smem;
  (void)gmem;
  (void)src_bytes;
  __trap();
#else
  emu::ops::cp_async_16(smem, gmem, src_bytes);
#endif
}
SDPA_CTS_KERNEL_FN void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#elif !defined(__CUDACC__)
  emu::ops::cp_async_commit();
#endif
}
// Waits until at most n of this thread's committed groups are still in flight.
template <int n>
SDPA_CTS_KERNEL_FN void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
#elif !defined(__CUDACC__)
  emu::ops::cp_async_wait(n);
#endif
}

}  // namespace sdpa::cuda::detail
