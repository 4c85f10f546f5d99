// The vector kernels cpu.math and cpu.mem_efficient are built from, one table per SIMD
// target. Each target's table comes from the same source (vec_kernels_impl.hpp) compiled
// with that target's instruction-set flags, on the SIMD layer's 16-lane f32 vector
// (kernels/cpu/simd/simd.hpp):
//   scalar      portable C++ (no intrinsics, no fused multiply-add)
//   avx2        2 x __m256, FMA, F16C
//   avx512      __m512 (AVX-512 F/BW/VL/DQ), FMA, F16C; also used for avx512bf16
//
// Every kernel computes each output element with one fixed operation order that depends
// only on the kernel's arguments (never on thread count or on other rows), which is what
// the determinism and batch-invariance claims of the backends rest on.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "kernels/cpu/isa_target.hpp"

namespace sdpa::cpu::vk {

// Rows a caller will read next, prefetched into L2 by a decode kernel while it streams its
// own operand (spread evenly over its keys), so that one core keeps two streams in flight:
// row i at base + i * stride bytes, row_bytes each, for i < rows. base = nullptr: none.
struct Prefetch {
  const void* base = nullptr;
  std::int64_t stride = 0, row_bytes = 0, rows = 0;
};

struct Table {
  const char* name;  // "scalar", "avx2" or "avx512"
  int mr;            // rows of the GEMM micro-tile
  int nr;            // columns of a packed B panel

  // dst[e] = float(src[e * stride]) for e < n; t is f32, f16 or bf16 (exact widening).
  void (*load_row)(DType t, const void* src, std::int64_t stride, std::int64_t n, float* dst);
  // dst[e * stride] = round_to_nearest_even(src[e]) for e < n; t is f32, f16 or bf16.
  void (*store_row)(DType t, const float* src, std::int64_t n, void* dst, std::int64_t stride);

  // Packs B (kdim x n) for gemm: B[k][j] = src[k * k_stride + j * n_stride] (elements of t).
  // Panel p holds columns [p*nr, p*nr + nr) as kdim rows of nr floats at bp + p*kdim*nr;
  // columns beyond n are zero. `tmp` is scratch of at least kdim floats.
  void (*pack_b)(DType t, const void* src, std::int64_t k_stride, std::int64_t n_stride,
                 std::int64_t kdim, std::int64_t n, float* bp, float* tmp);
  // C[i][j] = sum_{k < kdim} A[i*lda + k] * B[k][j] for i < m and j < round_up(n, nr),
  // summed in increasing k with one accumulator per element (fused multiply-add where
  // the target has it). B is packed panels, `panel_stride` floats apart; ldc >= round_up(n, nr).
  void (*gemm)(std::int64_t m, std::int64_t n, std::int64_t kdim, const float* a, std::int64_t lda,
               const float* bp, std::int64_t panel_stride, float* c, std::int64_t ldc);

  // Largest element of s[0, n); NaN when any element is NaN; -inf when n == 0.
  float (*row_max)(const float* s, std::int64_t n);
  // s[j] = exp(s[j] - m) for j < n; returns the sum of the new values (f32, fixed order).
  float (*row_exp_sum)(float* s, std::int64_t n, float m);
  // s[j] *= f for j < n.
  void (*row_mul)(float* s, std::int64_t n, float f);
  // s[j] += b[j] for j < n.
  void (*row_add)(float* s, const float* b, std::int64_t n);

  // Decode-shaped dot products, reading keys in place: s[r*lds + j] = sum_e q[r*ldq + e] *
  // K[j*k_stride + e] for r < m (m <= 8), j < n, e < d; K rows contiguous (elements of t);
  // q rows zero-padded to ldq, a multiple of 16 >= d.
  // `next`: rows to prefetch into L2 meanwhile (the chunk's V, which acc_values reads next).
  void (*dot_keys)(DType t, const float* q, std::int64_t ldq, std::int64_t m, const void* k,
                   std::int64_t k_stride, std::int64_t n, std::int64_t d, float* s,
                   std::int64_t lds, const Prefetch& next);
  // acc[r*ldacc + e] += sum_j p[r*ldp + j] * V[j*v_stride + e], summed in increasing j, for
  // r < m (m <= 8), e < dv; V rows contiguous; ldacc a multiple of 16 >= dv.
  // `next`: rows to prefetch into L2 meanwhile (the K of the caller's next chunk, if known).
  void (*acc_values)(DType t, const float* p, std::int64_t ldp, std::int64_t m, const void* v,
                     std::int64_t v_stride, std::int64_t n, std::int64_t dv, float* acc,
                     std::int64_t ldacc, const Prefetch& next);
};

// The table of a target: the per-target units' table_<target>() (vec_kernels.cpp; a target
// without a unit of its own, avx512bf16, uses the avx512 table: these kernels compute in f32).
const Table& table(IsaTarget target);
// The type of each unit's table_<target>().
using TableFn = const Table&();

}  // namespace sdpa::cpu::vk
