// The SIMD layer of the CPU kernels (docs/KERNELS.md, "SIMD layer"): one vector type V of 16
// f32 lanes with its lane mask M, and one set of operations on them, implemented once per
// ISA target. The implementation is the one the including translation unit is compiled for,
// read from its instruction-set flags (sdpa_cts_isa_sources gives them, cmake/BackendFamily.cmake):
//
//   no AVX2 flags                          scalar.hpp   16 floats, portable C++, no FMA
//   -mavx2 -mfma -mf16c                    avx2.hpp     2 x __m256
//   + -mavx512f -mavx512bw/dq/vl           avx512.hpp   __m512
//   + -mavx512bf16                         avx512.hpp   __m512, and bf16 pairs (vdpbf16ps)
//
// Everything is in an anonymous namespace: each translation unit has its own copy, compiled
// with its own flags, so the linker can never hand code built for one target to another.
// A file that includes this header runs only on CPUs that have its target
// (core/device.hpp available_isa_targets; kernels/cpu/isa_target.hpp).
//
// Lane semantics shared by every target (tests/kernels/simd_test.cpp checks them):
// - vfma(a, b, c) = a * b + c: fused (one rounding) on avx2 and avx512, two roundings on
//   scalar; vfnma(a, b, c) = c - a * b likewise.
// - vmax/vmin return the second operand when either is NaN (x86 maxps/minps).
// - vhsum adds the lanes by one fixed tree (i + 8, then i + 4, i + 2, i + 1): the same bits
//   on every target given the same lanes and the same fma rounding; vhsum8 is eight vhsum.
// - vexp (base e) and vexp2 (base 2) are one algorithm each (below), written once on the
//   target primitives vround and vldexp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/device.hpp"
#include "core/dtype.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
#define SDPA_SIMD_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SDPA_SIMD_AVX2 1
#include <immintrin.h>
#endif

namespace sdpa::cpu::simd {
namespace {

#if defined(SDPA_SIMD_AVX512)
#include "kernels/cpu/simd/avx512.hpp"
#elif defined(SDPA_SIMD_AVX2)
#include "kernels/cpu/simd/avx2.hpp"
#else
#include "kernels/cpu/simd/scalar.hpp"
#endif

constexpr int kLanes = 16;

#if !defined(SDPA_SIMD_HAS_VHSUM8)
inline void vhsum8(const V* a, float* out) {
  for (int k = 0; k < 8; ++k) out[k] = vhsum(a[k]);
}
#endif

// ------------------------------------------------------------------ exponentials

// e^x: n = round(x log2 e), r = x - n ln 2 with ln 2 in two parts (Cody-Waite: n times the
// first part, 0.693359375, is exact), the degree-7 Taylor polynomial of e^r on
// |r| <= ln(2)/2 (truncation < 0.1 ulp), times 2^n (vldexp: exact, a subnormal result is
// rounded once). x is clamped to [-110, 100] first (results 0 and +inf); NaN stays NaN.
// About 1 ulp with fused multiply-adds, 2 without (scalar).
inline V vexp(V a) {
  const V x = vmin(vset(100.0f), vmax(vset(-110.0f), a));
  const V n = vround(vmul(x, vset(1.44269504088896341f)));
  V r = vfnma(n, vset(0.693359375f), x);
  r = vfnma(n, vset(-2.12194440e-4f), r);
  V p = vset(1.0f / 5040);
  p = vfma(p, r, vset(1.0f / 720));
  p = vfma(p, r, vset(1.0f / 120));
  p = vfma(p, r, vset(1.0f / 24));
  p = vfma(p, r, vset(1.0f / 6));
  p = vfma(p, r, vset(0.5f));
  p = vfma(p, r, vset(1.0f));
  p = vfma(p, r, vset(1.0f));
  return vldexp(p, n);
}

// 2^(x + Boost), Boost an exact power-of-two factor applied in the scaling (cpu.flash's bf16
// dot path boosts P by 2^32): n = round(x), f = x - n in [-0.5, 0.5] (exact), Cephes'
// degree-6 polynomial of 2^f (relative error 7.9e-8 with fused multiply-adds, about 1.3 units
// of f32 roundoff), times 2^(n + Boost). x is clamped at -160 - Boost, so the result is
// exactly 0 for x + Boost <= -150 and for -inf, and a subnormal in (-150, -126); NaN stays
// NaN. Written for x <= 0 (softmax exponents); exact-integer rounding holds to |x| < 2^22.
template <int Boost = 0>
inline V vexp2(V a) {
  constexpr float kP0 = 1.535336188319500e-4f, kP1 = 1.339887440266574e-3f,
                  kP2 = 9.618437357674640e-3f, kP3 = 5.550332471162809e-2f,
                  kP4 = 2.402264791363012e-1f, kP5 = 6.931472028550421e-1f;
  const V x = vmax(vset(-160.0f - Boost), a);
  const V n = vround(x);
  const V f = vsub(x, n);
  V r = vfma(vset(kP0), f, vset(kP1));
  r = vfma(r, f, vset(kP2));
  r = vfma(r, f, vset(kP3));
  r = vfma(r, f, vset(kP4));
  r = vfma(r, f, vset(kP5));
  r = vfma(r, f, vset(1.0f));
  return vldexp(r, Boost == 0 ? n : vadd(n, vset(static_cast<float>(Boost))));
}

// ------------------------------------------------------------------ typed element access

// One element, widened exactly, inline (core/dtype's functions are calls): bf16 by a shift;
// f16 by vcvtph2ps where the target has F16C.
inline float bf16_bits_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float f16_bits_to_float(std::uint16_t h) {
#if defined(SDPA_SIMD_AVX512) || defined(SDPA_SIMD_AVX2)
  return _cvtsh_ss(h);
#else
  return half_to_float(h);
#endif
}

// The element types of a tensor, as accessors of 16-element vectors: load / load_n (exact
// widening; lanes past n are 0), load2 (32 elements as two vectors), store / store_n
// (rounding to nearest even), get / put (one element).
struct F32 {
  using T = float;
  static V load(const T* p) { return vload(p); }
  static V load_n(const T* p, int n) { return vload_n(p, n, 0.0f); }
  static void load2(const T* p, V& a, V& b) { a = vload(p), b = vload(p + 16); }
  static void store(T* p, V a) { vstore(p, a); }
  static void store_n(T* p, V a, int n) { vstore_n(p, a, n); }
  static float get(const T* p) { return *p; }
  static void put(T* p, float x) { *p = x; }
};
struct F16 {
  using T = std::uint16_t;
  static V load(const T* p) { return vload_f16(p); }
  static V load_n(const T* p, int n) { return vload_f16_n(p, n); }
  static void load2(const T* p, V& a, V& b) { a = vload_f16(p), b = vload_f16(p + 16); }
  static void store(T* p, V a) { vstore_f16(p, a); }
  static void store_n(T* p, V a, int n) { vstore_f16_n(p, a, n); }
  static float get(const T* p) { return f16_bits_to_float(*p); }
  static void put(T* p, float x) { *p = float_to_half(x); }
};
struct BF16 {
  using T = std::uint16_t;
  static V load(const T* p) { return vload_bf16(p); }
  static V load_n(const T* p, int n) { return vload_bf16_n(p, n); }
  static void load2(const T* p, V& a, V& b) { vload_bf16x2(p, a, b); }
  static void store(T* p, V a) { vstore_bf16(p, a); }
  static void store_n(T* p, V a, int n) { vstore_bf16_n(p, a, n); }
  static float get(const T* p) { return bf16_bits_to_float(*p); }
  static void put(T* p, float x) { *p = float_to_bf16(x); }
};

// Calls f.template operator()<Elem>() with the accessor of t (f32 for anything but f16 and
// bf16).
template <typename F>
void with_elem(DType t, F&& f) {
  switch (t) {
    case DType::f16:
      f.template operator()<F16>();
      return;
    case DType::bf16:
      f.template operator()<BF16>();
      return;
    default:
      f.template operator()<F32>();
      return;
  }
}

// dst[e] = float(src[e * stride]) for e < n; t is f32, f16 or bf16 (exact widening).
inline void load_row(DType t, const void* src, std::int64_t stride, std::int64_t n, float* dst) {
  with_elem(t, [&]<typename E>() {
    const auto* s = static_cast<const typename E::T*>(src);
    if (stride == 1) {
      std::int64_t e = 0;
      for (; e + 16 <= n; e += 16) vstore(dst + e, E::load(s + e));
      if (e < n)
        vstore_n(dst + e, E::load_n(s + e, static_cast<int>(n - e)), static_cast<int>(n - e));
    } else {
      for (std::int64_t e = 0; e < n; ++e) dst[e] = E::get(s + e * stride);
    }
  });
}

// dst[e * stride] = round_to_nearest_even(src[e]) for e < n; t is f32, f16 or bf16.
inline void store_row(DType t, const float* src, std::int64_t n, void* dst, std::int64_t stride) {
  with_elem(t, [&]<typename E>() {
    auto* d = static_cast<typename E::T*>(dst);
    if (stride == 1) {
      std::int64_t e = 0;
      for (; e + 16 <= n; e += 16) E::store(d + e, vload(src + e));
      if (e < n) {
        const int r = static_cast<int>(n - e);
        E::store_n(d + e, vload_n(src + e, r, 0.0f), r);
      }
    } else {
      for (std::int64_t e = 0; e < n; ++e) E::put(d + e * stride, src[e]);
    }
  });
}

// Prefetches [p, p + bytes) into L1 or into L2, one cache line at a time (no-ops on scalar).
inline void prefetch_l1(const void* p, std::int64_t bytes) {
  for (std::int64_t b = 0; b < bytes; b += 64) prefetch_l1(static_cast<const char*>(p) + b);
}
inline void prefetch_l2(const void* p, std::int64_t bytes) {
  for (std::int64_t b = 0; b < bytes; b += 64) prefetch_l2(static_cast<const char*>(p) + b);
}

}  // namespace
}  // namespace sdpa::cpu::simd
