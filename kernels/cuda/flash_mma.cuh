// The tensor-core and asynchronous-copy instructions cuda.flash is built on (sm80+), as thin
// inline-PTX wrappers, and the swizzled shared-memory tile layout their addresses use.
// Fragment layouts are PTX's (ISA, "Matrix Fragments for mma.m16n8k16"): with g = lane / 4
// and t = lane % 4,
//   A (16 x 16, row-major): reg 0 = (row g, cols 2t, 2t+1), reg 1 = (row g+8, same cols),
//                           reg 2 = (row g, cols 2t+8, 2t+9), reg 3 = (row g+8, those cols);
//   B (16 x 8, k x n):      reg 0 = (k 2t, 2t+1; n g), reg 1 = (k 2t+8, 2t+9; n g);
//   C (16 x 8, f32):        c0, c1 = (row g, cols 2t, 2t+1), c2, c3 = (row g+8, same cols).
// ldmatrix .x4 loads four 8 x 8 matrices whose row addresses lanes 8m .. 8m+7 give; lane l
// receives (row l / 4, cols 2 (l % 4), +1) of each (transposed with .trans).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace sdpa::cuda::detail {

// Element (r, c) of a tile of 16-bit elements with kD columns per row, stored with its
// 16-byte chunks XOR-swizzled by the row (chunk c / 8 goes to (c / 8) ^ (r % 8)): the eight
// rows one ldmatrix matrix reads then lie in eight different bank groups.
template <int kD>
__device__ inline int swizzled(int r, int c) {
  return r * kD + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7);
}

__device__ inline unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ inline void ldmatrix_x4(unsigned (&r)[4], const void* p) {
#if __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(p)));
#else
  __trap();
#endif
}

__device__ inline void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
#if __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(p)));
#else
  __trap();
#endif
}

// D = A B + D, 16 x 8 x 16, f32 accumulators; T is __half or __nv_bfloat16.
template <class T>
__device__ inline void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);

template <>
__device__ inline void mma_16816<__nv_bfloat16>(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                                unsigned b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

template <>
__device__ inline void mma_16816<__half>(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

// Two f32 values rounded to nearest even into one register, lo in the low half (the lower
// column index of a fragment pair).
template <class T>
__device__ inline unsigned pack2(float lo, float hi);
template <>
__device__ inline unsigned pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}
template <>
__device__ inline unsigned pack2<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

// 16 bytes global -> shared, asynchronously; src_bytes = 0 writes 16 zero bytes and reads
// nothing.
__device__ inline void cp_async_16(void* smem, const void* gmem, int src_bytes) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem)),
               "l"(gmem), "r"(src_bytes));
#else
  __trap();
#endif
}
__device__ inline void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most n of this thread's committed groups are still in flight.
template <int n>
__device__ inline void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
#endif
}

}  // namespace sdpa::cuda::detail
