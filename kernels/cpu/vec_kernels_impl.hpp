// The implementation of the vector kernels (vec_kernels.hpp), included once by each
// per-target translation unit with SDPA_VK_LEVEL = 0 (scalar), 1 (avx2) or 2 (avx512) and
// SDPA_VK_NS naming a namespace private to that unit (the same inline functions compiled
// with different instruction sets must not be merged by the linker).
//
// Everything is written against a 16-lane float vector V; only the V primitives differ per
// target. Reductions over the lanes use a fixed tree, so results depend only on inputs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/dtype.hpp"
#include "kernels/cpu/vec_kernels.hpp"

#if SDPA_VK_LEVEL >= 1
#include <immintrin.h>
#endif

namespace sdpa::cpu::vk::SDPA_VK_NS {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ------------------------------------------------------------------ the V primitives

#if SDPA_VK_LEVEL == 2
constexpr int kMR = 12, kNR = 32;
struct V {
  __m512 x;
};
inline V vzero() { return {_mm512_setzero_ps()}; }
inline V vset1(float a) { return {_mm512_set1_ps(a)}; }
inline V vloadu(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void vstoreu(float* p, V a) { _mm512_storeu_ps(p, a.x); }
inline __mmask16 first_n(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline V vload_n(const float* p, int n, float pad) {
  return {_mm512_mask_loadu_ps(_mm512_set1_ps(pad), first_n(n), p)};
}
inline void vstore_n(float* p, V a, int n) { _mm512_mask_storeu_ps(p, first_n(n), a.x); }
inline V vfma(V a, V b, V c) { return {_mm512_fmadd_ps(a.x, b.x, c.x)}; }
inline V vadd(V a, V b) { return {_mm512_add_ps(a.x, b.x)}; }
inline V vsub(V a, V b) { return {_mm512_sub_ps(a.x, b.x)}; }
inline V vmul(V a, V b) { return {_mm512_mul_ps(a.x, b.x)}; }
inline V vmax(V a, V b) { return {_mm512_max_ps(a.x, b.x)}; }
inline bool vany_nan(V a) { return _mm512_cmp_ps_mask(a.x, a.x, _CMP_UNORD_Q) != 0; }
inline float vhsum(V a) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a.x), _mm512_extractf32x8_ps(a.x, 1));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
inline float vhmax(V a) { return _mm512_reduce_max_ps(a.x); }
inline V vload_h(const std::uint16_t* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline V vload_h_n(const std::uint16_t* p, int n) {
  return {_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first_n(n), p))};
}
inline V bf16_widen(__m256i b) {
  return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16))};
}
inline V vload_b(const std::uint16_t* p) {
  return bf16_widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline V vload_b_n(const std::uint16_t* p, int n) {
  return bf16_widen(_mm256_maskz_loadu_epi16(first_n(n), p));
}
// Elements [0, 16) and [16, 32) of 32 bf16 at p, widened: one 64-byte load and one word
// permutation each (vpermw, zeroing the low halves), instead of vpmovzxwd and vpslld.
inline void vload_b2(const std::uint16_t* p, V& a, V& b) {
  alignas(64) static constexpr std::uint16_t kLo[32] = {0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0,
                                                         5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10,
                                                         0, 11, 0, 12, 0, 13, 0, 14, 0, 15};
  alignas(64) static constexpr std::uint16_t kHi[32] = {0, 16, 0, 17, 0, 18, 0, 19, 0, 20, 0,
                                                         21, 0, 22, 0, 23, 0, 24, 0, 25, 0, 26,
                                                         0, 27, 0, 28, 0, 29, 0, 30, 0, 31};
  const __m512i x = _mm512_loadu_si512(p);
  constexpr __mmask32 kOdd = 0xAAAAAAAAu;
  a.x = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(kOdd, _mm512_load_si512(kLo), x));
  b.x = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(kOdd, _mm512_load_si512(kHi), x));
}
// The 32 bf16 at p widened as even = elements 0, 2, ..., 30 and odd = 1, 3, ..., 31: one
// load, one shift and one and (for sums whose lanes are independent, like P V).
inline void vload_b_eo(const std::uint16_t* p, V& even, V& odd) {
  const __m512i x = _mm512_loadu_si512(p);
  even.x = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  odd.x =
      _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
// out[k] = vhsum(a[k]) for k < 8, bit for bit (the same pairs in the same order), by
// transposing partial sums: 25 instructions instead of 8 x 8.
inline void vhsum8(const V* a, float* out) {
  __m512 h[4];
  for (int k = 0; k < 4; ++k) {  // h[k] = [a[2k][i] + a[2k][i+8], a[2k+1][i] + a[2k+1][i+8]]
    const __m512 x = _mm512_shuffle_f32x4(a[2 * k].x, a[2 * k + 1].x, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 y = _mm512_shuffle_f32x4(a[2 * k].x, a[2 * k + 1].x, _MM_SHUFFLE(3, 2, 3, 2));
    h[k] = _mm512_add_ps(x, y);
  }
  __m512 q[2];
  for (int k = 0; k < 2; ++k) {  // 128-bit lane c of q[k]: key 4k + c, h[i] + h[i+4]
    const __m512 x = _mm512_shuffle_f32x4(h[2 * k], h[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 y = _mm512_shuffle_f32x4(h[2 * k], h[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1));
    q[k] = _mm512_add_ps(x, y);
  }
  // Lane c: [q0 + q2, q1 + q3] of key c, then of key 4 + c.
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(q[0], q[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(q[0], q[1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Lane c: [sum of key c, sum of key 4 + c, (copies)].
  const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(r, r, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(r, r, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 o =
      _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 13, 9, 5, 1, 12, 8, 4, 0), z);
  _mm256_storeu_ps(out, _mm512_castps512_ps256(o));
}
inline __m256i narrow_h(V a) {
  return _mm512_cvtps_ph(a.x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// Round to nearest even; NaN stays a quiet NaN with its sign (as core/dtype float_to_bf16).
inline __m256i narrow_b(V a) {
  const __m512i u = _mm512_castps_si512(a.x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i qnan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(a.x, a.x, _CMP_UNORD_Q), qnan);
  return _mm512_cvtepi32_epi16(r);
}
inline void vstore_h(std::uint16_t* p, V a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow_h(a));
}
inline void vstore_h_n(std::uint16_t* p, V a, int n) {
  _mm256_mask_storeu_epi16(p, first_n(n), narrow_h(a));
}
inline void vstore_b(std::uint16_t* p, V a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow_b(a));
}
inline void vstore_b_n(std::uint16_t* p, V a, int n) {
  _mm256_mask_storeu_epi16(p, first_n(n), narrow_b(a));
}
// exp: n = round(x / ln 2), r = x - n ln 2 (two-part constant), degree-7 Taylor polynomial
// on |r| <= ln(2)/2 (truncation < 0.1 ulp), scaled by 2^n with vscalefps (exact, handles
// the subnormal range). x is clamped to [-110, 100] first (results 0 and +inf); a NaN
// stays NaN (max/min return their second operand for NaN).
inline V vexp(V a) {
  __m512 x = _mm512_min_ps(_mm512_set1_ps(100.0f), _mm512_max_ps(_mm512_set1_ps(-110.0f), a.x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return {_mm512_scalef_ps(p, n)};
}

#elif SDPA_VK_LEVEL == 1
constexpr int kMR = 6, kNR = 16;
struct V {
  __m256 lo, hi;
};
inline V vzero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V vset1(float a) {
  const __m256 b = _mm256_set1_ps(a);
  return {b, b};
}
inline V vloadu(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void vstoreu(float* p, V a) {
  _mm256_storeu_ps(p, a.lo);
  _mm256_storeu_ps(p + 8, a.hi);
}
inline V vload_n(const float* p, int n, float pad) {
  alignas(64) float t[16];
  for (int i = 0; i < 16; ++i) t[i] = i < n ? p[i] : pad;
  return vloadu(t);
}
inline void vstore_n(float* p, V a, int n) {
  alignas(64) float t[16];
  vstoreu(t, a);
  for (int i = 0; i < n; ++i) p[i] = t[i];
}
inline V vfma(V a, V b, V c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
inline V vadd(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V vsub(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline V vmul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V vmax(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
inline bool vany_nan(V a) {
  return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(a.lo, a.lo, _CMP_UNORD_Q),
                                         _mm256_cmp_ps(a.hi, a.hi, _CMP_UNORD_Q))) != 0;
}
inline float vhsum(V a) {
  const __m256 h = _mm256_add_ps(a.lo, a.hi);
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
inline float vhmax(V a) {
  const __m256 h = _mm256_max_ps(a.lo, a.hi);
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  q = _mm_max_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
inline V vload_h(const std::uint16_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V vload_h_n(const std::uint16_t* p, int n) {
  alignas(32) std::uint16_t t[16] = {};
  std::memcpy(t, p, static_cast<std::size_t>(n) * 2);
  return vload_h(t);
}
inline __m256 bf16_widen8(__m128i b) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}
inline V vload_b(const std::uint16_t* p) {
  return {bf16_widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          bf16_widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V vload_b_n(const std::uint16_t* p, int n) {
  alignas(32) std::uint16_t t[16] = {};
  std::memcpy(t, p, static_cast<std::size_t>(n) * 2);
  return vload_b(t);
}
inline void vload_b2(const std::uint16_t* p, V& a, V& b) {
  a = vload_b(p);
  b = vload_b(p + 16);
}
inline void vload_b_eo(const std::uint16_t* p, V& even, V& odd) {
  const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
  const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  even = {_mm256_castsi256_ps(_mm256_slli_epi32(x0, 16)),
          _mm256_castsi256_ps(_mm256_slli_epi32(x1, 16))};
  odd = {_mm256_castsi256_ps(_mm256_and_si256(x0, hi)),
         _mm256_castsi256_ps(_mm256_and_si256(x1, hi))};
}
inline void vstore_h(std::uint16_t* p, V a) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_cvtps_ph(a.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8),
                   _mm256_cvtps_ph(a.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void vstore_h_n(std::uint16_t* p, V a, int n) {
  alignas(32) std::uint16_t t[16];
  vstore_h(t, a);
  std::memcpy(p, t, static_cast<std::size_t>(n) * 2);
}
inline void vstore_b(std::uint16_t* p, V a) {
  alignas(64) float t[16];
  vstoreu(t, a);
  for (int i = 0; i < 16; ++i) p[i] = float_to_bf16(t[i]);
}
inline void vstore_b_n(std::uint16_t* p, V a, int n) {
  alignas(64) float t[16];
  vstoreu(t, a);
  for (int i = 0; i < n; ++i) p[i] = float_to_bf16(t[i]);
}
// exp as in the AVX-512 version; 2^n is applied as two exact power-of-two factors
// (each normal for n in [-159, 145]) so subnormal results are rounded once.
inline __m256 exp8(__m256 a) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(100.0f), _mm256_max_ps(_mm256_set1_ps(-110.0f), a));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256 f1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 f2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  const __m256 res = _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
  // NaN in, NaN out (the integer path above would lose it).
  return _mm256_blendv_ps(res, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
inline V vexp(V a) { return {exp8(a.lo), exp8(a.hi)}; }

#else  // scalar
constexpr int kMR = 4, kNR = 16;
struct V {
  float x[16];
};
inline V vzero() { return V{}; }
inline V vset1(float a) {
  V r;
  for (float& e : r.x) e = a;
  return r;
}
inline V vloadu(const float* p) {
  V r;
  std::memcpy(r.x, p, sizeof r.x);
  return r;
}
inline void vstoreu(float* p, V a) { std::memcpy(p, a.x, sizeof a.x); }
inline V vload_n(const float* p, int n, float pad) {
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = i < n ? p[i] : pad;
  return r;
}
inline void vstore_n(float* p, V a, int n) {
  for (int i = 0; i < n; ++i) p[i] = a.x[i];
}
inline V vfma(V a, V b, V c) {  // unfused: the portable target has no fma instruction
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] * b.x[i] + c.x[i];
  return r;
}
inline V vadd(V a, V b) {
  for (int i = 0; i < 16; ++i) a.x[i] += b.x[i];
  return a;
}
inline V vsub(V a, V b) {
  for (int i = 0; i < 16; ++i) a.x[i] -= b.x[i];
  return a;
}
inline V vmul(V a, V b) {
  for (int i = 0; i < 16; ++i) a.x[i] *= b.x[i];
  return a;
}
inline V vmax(V a, V b) {  // as maxps: the second operand when either is NaN
  for (int i = 0; i < 16; ++i) a.x[i] = a.x[i] > b.x[i] ? a.x[i] : b.x[i];
  return a;
}
inline bool vany_nan(V a) {
  bool n = false;
  for (float e : a.x) n |= std::isnan(e);
  return n;
}
inline float vhsum(V a) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a.x[i] += a.x[i + w];
  return a.x[0];
}
inline float vhmax(V a) {
  float m = a.x[0];
  for (float e : a.x) m = e > m ? e : m;
  return m;
}
inline V vload_h(const std::uint16_t* p) {
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = half_to_float(p[i]);
  return r;
}
inline V vload_h_n(const std::uint16_t* p, int n) {
  V r{};
  for (int i = 0; i < n; ++i) r.x[i] = half_to_float(p[i]);
  return r;
}
inline V vload_b(const std::uint16_t* p) {
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = bf16_to_float(p[i]);
  return r;
}
inline V vload_b_n(const std::uint16_t* p, int n) {
  V r{};
  for (int i = 0; i < n; ++i) r.x[i] = bf16_to_float(p[i]);
  return r;
}
inline void vload_b2(const std::uint16_t* p, V& a, V& b) {
  a = vload_b(p);
  b = vload_b(p + 16);
}
inline void vload_b_eo(const std::uint16_t* p, V& even, V& odd) {
  for (int i = 0; i < 16; ++i) {
    even.x[i] = bf16_to_float(p[2 * i]);
    odd.x[i] = bf16_to_float(p[2 * i + 1]);
  }
}
inline void vstore_h(std::uint16_t* p, V a) {
  for (int i = 0; i < 16; ++i) p[i] = float_to_half(a.x[i]);
}
inline void vstore_h_n(std::uint16_t* p, V a, int n) {
  for (int i = 0; i < n; ++i) p[i] = float_to_half(a.x[i]);
}
inline void vstore_b(std::uint16_t* p, V a) {
  for (int i = 0; i < 16; ++i) p[i] = float_to_bf16(a.x[i]);
}
inline void vstore_b_n(std::uint16_t* p, V a, int n) {
  for (int i = 0; i < n; ++i) p[i] = float_to_bf16(a.x[i]);
}
inline V vexp(V a) {
  for (float& e : a.x) e = std::exp(e);
  return a;
}
#endif

#if SDPA_VK_LEVEL < 2
inline void vhsum8(const V* a, float* out) {
  for (int k = 0; k < 8; ++k) out[k] = vhsum(a[k]);
}
#endif

// ------------------------------------------------------------------ typed element access

struct F32 {
  using T = float;
  static V load(const T* p) { return vloadu(p); }
  static V load_n(const T* p, int n) { return vload_n(p, n, 0.0f); }
  static void load2(const T* p, V& a, V& b) { a = vloadu(p), b = vloadu(p + 16); }
  static void store(T* p, V a) { vstoreu(p, a); }
  static void store_n(T* p, V a, int n) { vstore_n(p, a, n); }
  static float get(const T* p) { return *p; }
  static void put(T* p, float x) { *p = x; }
};
struct F16 {
  using T = std::uint16_t;
  static V load(const T* p) { return vload_h(p); }
  static V load_n(const T* p, int n) { return vload_h_n(p, n); }
  static void load2(const T* p, V& a, V& b) { a = vload_h(p), b = vload_h(p + 16); }
  static void store(T* p, V a) { vstore_h(p, a); }
  static void store_n(T* p, V a, int n) { vstore_h_n(p, a, n); }
  static float get(const T* p) { return half_to_float(*p); }
  static void put(T* p, float x) { *p = float_to_half(x); }
};
struct BF16 {
  using T = std::uint16_t;
  static V load(const T* p) { return vload_b(p); }
  static V load_n(const T* p, int n) { return vload_b_n(p, n); }
  static void load2(const T* p, V& a, V& b) { vload_b2(p, a, b); }
  static void store(T* p, V a) { vstore_b(p, a); }
  static void store_n(T* p, V a, int n) { vstore_b_n(p, a, n); }
  static float get(const T* p) { return bf16_to_float(*p); }
  static void put(T* p, float x) { *p = float_to_bf16(x); }
};

// Calls f.template operator()<Elem>() with the element accessor of t.
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

// ------------------------------------------------------------------ conversions

void load_row(DType t, const void* src, std::int64_t stride, std::int64_t n, float* dst) {
  with_elem(t, [&]<typename E>() {
    const auto* s = static_cast<const typename E::T*>(src);
    if (stride == 1) {
      std::int64_t e = 0;
      for (; e + 16 <= n; e += 16) vstoreu(dst + e, E::load(s + e));
      if (e < n)
        vstore_n(dst + e, E::load_n(s + e, static_cast<int>(n - e)), static_cast<int>(n - e));
    } else {
      for (std::int64_t e = 0; e < n; ++e) dst[e] = E::get(s + e * stride);
    }
  });
}

void store_row(DType t, const float* src, std::int64_t n, void* dst, std::int64_t stride) {
  with_elem(t, [&]<typename E>() {
    auto* d = static_cast<typename E::T*>(dst);
    if (stride == 1) {
      std::int64_t e = 0;
      for (; e + 16 <= n; e += 16) E::store(d + e, vloadu(src + e));
      if (e < n) {
        const int r = static_cast<int>(n - e);
        E::store_n(d + e, vload_n(src + e, r, 0.0f), r);
      }
    } else {
      for (std::int64_t e = 0; e < n; ++e) E::put(d + e * stride, src[e]);
    }
  });
}

// ------------------------------------------------------------------ packing and GEMM

void pack_b(DType t, const void* src, std::int64_t k_stride, std::int64_t n_stride,
            std::int64_t kdim, std::int64_t n, float* bp, float* tmp) {
  const std::int64_t panels = (n + kNR - 1) / kNR;
  const std::size_t esz = dtype_size(t);
  const auto* base = static_cast<const unsigned char*>(src);
  if (n_stride == 1) {  // rows of B are contiguous: convert slices of each row into the panels
    for (std::int64_t k = 0; k < kdim; ++k) {
      for (std::int64_t p = 0; p < panels; ++p) {
        const std::int64_t j0 = p * kNR, w = std::min<std::int64_t>(kNR, n - j0);
        float* dst = bp + p * kdim * kNR + k * kNR;
        load_row(t, base + (k * k_stride + j0) * static_cast<std::int64_t>(esz), 1, w, dst);
        for (std::int64_t j = w; j < kNR; ++j) dst[j] = 0.0f;
      }
    }
    return;
  }
  // Columns of B are rows of the source (B = X^T): convert each, scatter into its lane.
  for (std::int64_t j = 0; j < panels * kNR; ++j) {
    float* dst = bp + (j / kNR) * kdim * kNR + (j % kNR);
    if (j >= n) {
      for (std::int64_t k = 0; k < kdim; ++k) dst[k * kNR] = 0.0f;
      continue;
    }
    load_row(t, base + j * n_stride * static_cast<std::int64_t>(esz), k_stride, kdim, tmp);
    for (std::int64_t k = 0; k < kdim; ++k) dst[k * kNR] = tmp[k];
  }
}

constexpr int kNV = kNR / 16;

template <int R>
inline void micro(std::int64_t kdim, const float* a, std::int64_t lda, const float* b, float* c,
                  std::int64_t ldc) {
  V acc[R][kNV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kNV; ++v) acc[r][v] = vzero();
  for (std::int64_t k = 0; k < kdim; ++k) {
    V bv[kNV];
    for (int v = 0; v < kNV; ++v) bv[v] = vloadu(b + k * kNR + 16 * v);
    for (int r = 0; r < R; ++r) {
      const V av = vset1(a[r * lda + k]);
      for (int v = 0; v < kNV; ++v) acc[r][v] = vfma(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kNV; ++v) vstoreu(c + r * ldc + 16 * v, acc[r][v]);
}

using MicroFn = void (*)(std::int64_t, const float*, std::int64_t, const float*, float*,
                         std::int64_t);

template <int... Rs>
constexpr auto make_micro_table(std::integer_sequence<int, Rs...>) {
  return std::array<MicroFn, sizeof...(Rs)>{&micro<Rs + 1>...};
}

void gemm(std::int64_t m, std::int64_t n, std::int64_t kdim, const float* a, std::int64_t lda,
          const float* bp, std::int64_t panel_stride, float* c, std::int64_t ldc) {
  static constexpr auto kMicro = make_micro_table(std::make_integer_sequence<int, kMR>{});
  const std::int64_t panels = (n + kNR - 1) / kNR;
  for (std::int64_t p = 0; p < panels; ++p) {
    for (std::int64_t i0 = 0; i0 < m; i0 += kMR) {
      const int rows = static_cast<int>(std::min<std::int64_t>(kMR, m - i0));
      kMicro[rows - 1](kdim, a + i0 * lda, lda, bp + p * panel_stride, c + i0 * ldc + p * kNR, ldc);
    }
  }
}

// ------------------------------------------------------------------ row operations

float row_max(const float* s, std::int64_t n) {
  if (n == 0) return -kInf;
  V m = vset1(-kInf);
  bool nan = false;
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const V x = vloadu(s + j);
    nan |= vany_nan(x);
    m = vmax(m, x);
  }
  if (j < n) {
    const V x = vload_n(s + j, static_cast<int>(n - j), -kInf);
    nan |= vany_nan(x);
    m = vmax(m, x);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : vhmax(m);
}

float row_exp_sum(float* s, std::int64_t n, float m) {
  const V mv = vset1(m);
  V acc = vzero();
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const V e = vexp(vsub(vloadu(s + j), mv));
    vstoreu(s + j, e);
    acc = vadd(acc, e);
  }
  if (j < n) {
    const int r = static_cast<int>(n - j);
    const V e = vexp(vsub(vload_n(s + j, r, -kInf), mv));  // padding lanes give exp(-inf) = 0
    vstore_n(s + j, e, r);
    acc = vadd(acc, e);
  }
  return vhsum(acc);
}

void row_mul(float* s, std::int64_t n, float f) {
  const V fv = vset1(f);
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) vstoreu(s + j, vmul(vloadu(s + j), fv));
  for (; j < n; ++j) s[j] *= f;
}

void row_add(float* s, const float* b, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) vstoreu(s + j, vadd(vloadu(s + j), vloadu(b + j)));
  for (; j < n; ++j) s[j] += b[j];
}

// ------------------------------------------------------------------ decode kernels

constexpr std::int64_t kPrefetchKeys = 16;  // keys ahead of the one being read

// Software prefetch of `bytes` bytes at p into L1 (the kernel's own operand, a few keys
// ahead) or L2 (the caller's next rows): decode is bound by how fast a core streams K and V.
inline void prefetch_l1(const void* p, std::int64_t bytes) {
#if SDPA_VK_LEVEL >= 1
  const char* c = static_cast<const char*>(p);
  for (std::int64_t b = 0; b < bytes; b += 64) _mm_prefetch(c + b, _MM_HINT_T0);
#else
  (void)p, (void)bytes;
#endif
}
inline void prefetch_l2(const void* p, std::int64_t bytes) {
#if SDPA_VK_LEVEL >= 1
  const char* c = static_cast<const char*>(p);
  for (std::int64_t b = 0; b < bytes; b += 64) _mm_prefetch(c + b, _MM_HINT_T1);
#else
  (void)p, (void)bytes;
#endif
}

// The caller's next rows (Prefetch), brought into L2 evenly over a kernel's `keys` keys:
// step() once per key.
class PrefetchStream {
 public:
  PrefetchStream(const Prefetch& p, std::int64_t keys)
      : p_(static_cast<const char*>(p.base)),
        stride_(p.stride),
        bytes_(p.row_bytes),
        left_(p.base ? p.rows : 0),
        num_(p.rows),
        den_(std::max<std::int64_t>(keys, 1)) {}
  void step() {
    if (left_ <= 0) return;
    acc_ += num_;
    for (; acc_ >= den_ && left_ > 0; acc_ -= den_, --left_, p_ += stride_) prefetch_l2(p_, bytes_);
  }

 private:
  const char* p_;
  std::int64_t stride_, bytes_, left_, num_, den_, acc_ = 0;
};

// s[r*lds + j] for rows r < R and keys [j, j + KB): acc[r][b] runs over the head dim in
// 16-element blocks, in increasing order, then vhsum: every logit has the same operation
// order as a lone key would (the KB keys only give the core independent chains).
template <typename E, int R, int KB>
inline void dot_keys_group(const float* q, std::int64_t ldq, const typename E::T* kj,
                           std::int64_t ks, std::int64_t d, V (&acc)[R * KB]) {
  const std::int64_t full32 = d / 32 * 32, full = d / 16 * 16;
  const int tail = static_cast<int>(d - full);
  for (int x = 0; x < R * KB; ++x) acc[x] = vzero();
  std::int64_t e = 0;
  for (; e < full32; e += 32) {
    for (int b = 0; b < KB; ++b) {
      V k0, k1;
      E::load2(kj + b * ks + e, k0, k1);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vloadu(q + r * ldq + e), k0, acc[r * KB + b]);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vloadu(q + r * ldq + e + 16), k1, acc[r * KB + b]);
    }
  }
  if (e < full) {
    for (int b = 0; b < KB; ++b) {
      const V kv = E::load(kj + b * ks + e);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vloadu(q + r * ldq + e), kv, acc[r * KB + b]);
    }
  }
  if (tail) {
    for (int b = 0; b < KB; ++b) {
      const V kv = E::load_n(kj + b * ks + full, tail);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vloadu(q + r * ldq + full), kv, acc[r * KB + b]);
    }
  }
}

template <typename E, int R>
void dot_keys_rows(const float* q, std::int64_t ldq, const typename E::T* k, std::int64_t ks,
                   std::int64_t n, std::int64_t d, float* s, std::int64_t lds,
                   PrefetchStream& next) {
  constexpr int KB = R == 3 ? 2 : 8 / R;  // keys at a time: R * KB independent sums
  const std::int64_t kbytes = d * static_cast<std::int64_t>(sizeof(typename E::T));
  std::int64_t j = 0;
  for (; j + KB <= n; j += KB) {
    const typename E::T* kj = k + j * ks;
    for (int b = 0; b < KB; ++b)
      if (j + b + kPrefetchKeys < n) prefetch_l1(kj + (b + kPrefetchKeys) * ks, kbytes);
    for (int b = 0; b < KB; ++b) next.step();
    V acc[R * KB];
    dot_keys_group<E, R, KB>(q, ldq, kj, ks, d, acc);
    if constexpr (R * KB == 8) {
      float out[8];
      vhsum8(acc, out);
      for (int r = 0; r < R; ++r)
        for (int b = 0; b < KB; ++b) s[r * lds + j + b] = out[r * KB + b];
    } else {
      for (int r = 0; r < R; ++r)
        for (int b = 0; b < KB; ++b) s[r * lds + j + b] = vhsum(acc[r * KB + b]);
    }
  }
  for (; j < n; ++j) {
    const typename E::T* kj = k + j * ks;
    if (j + kPrefetchKeys < n) prefetch_l1(kj + kPrefetchKeys * ks, kbytes);
    next.step();
    V acc[R];
    dot_keys_group<E, R, 1>(q, ldq, kj, ks, d, acc);
    for (int r = 0; r < R; ++r) s[r * lds + j] = vhsum(acc[r]);
  }
}

void dot_keys(DType t, const float* q, std::int64_t ldq, std::int64_t m, const void* k,
              std::int64_t k_stride, std::int64_t n, std::int64_t d, float* s, std::int64_t lds,
              const Prefetch& pf) {
  PrefetchStream next(pf, (m + 3) / 4 * n);
  with_elem(t, [&]<typename E>() {
    const auto* kp = static_cast<const typename E::T*>(k);
    std::int64_t r = 0;
    for (; r + 4 <= m; r += 4)
      dot_keys_rows<E, 4>(q + r * ldq, ldq, kp, k_stride, n, d, s + r * lds, lds, next);
    switch (m - r) {
      case 3:
        dot_keys_rows<E, 3>(q + r * ldq, ldq, kp, k_stride, n, d, s + r * lds, lds, next);
        break;
      case 2:
        dot_keys_rows<E, 2>(q + r * ldq, ldq, kp, k_stride, n, d, s + r * lds, lds, next);
        break;
      case 1:
        dot_keys_rows<E, 1>(q + r * ldq, ldq, kp, k_stride, n, d, s + r * lds, lds, next);
        break;
      default:
        break;
    }
  });
}

// Columns [e0, e0 + 16*NB) of rows r < R.
template <typename E, int R, int NB>
void acc_values_block(const float* p, std::int64_t ldp, const typename E::T* v, std::int64_t vs,
                      std::int64_t n, std::int64_t dv, std::int64_t e0, float* acc,
                      std::int64_t ldacc, PrefetchStream& next) {
  V a[R][NB];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NB; ++t) a[r][t] = vloadu(acc + r * ldacc + e0 + 16 * t);
  const std::int64_t rem = dv - e0;  // > 16 * (NB - 1)
  const int last = static_cast<int>(std::min<std::int64_t>(16, rem - 16 * (NB - 1)));
  for (std::int64_t j = 0; j < n; ++j) {
    const typename E::T* vj = v + j * vs + e0;
    if (j + kPrefetchKeys < n)
      prefetch_l1(vj + kPrefetchKeys * vs, 16 * NB * static_cast<int>(sizeof(typename E::T)));
    next.step();
    V x[NB];
    for (int t = 0; t < NB - 1; ++t) x[t] = E::load(vj + 16 * t);
    x[NB - 1] = last == 16 ? E::load(vj + 16 * (NB - 1)) : E::load_n(vj + 16 * (NB - 1), last);
    for (int r = 0; r < R; ++r) {
      const V pj = vset1(p[r * ldp + j]);
      for (int t = 0; t < NB; ++t) a[r][t] = vfma(pj, x[t], a[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NB; ++t) vstoreu(acc + r * ldacc + e0 + 16 * t, a[r][t]);
}

// bf16 V, columns [e0, e0 + 32*NP): the accumulators are held with even and odd columns in
// separate vectors, so that each 64 bytes of V is widened by one shift and one and. Every
// element still gets acc = p_j v_j + acc in increasing j: the same bits.
template <int R, int NP>
void acc_values_block_bf16(const float* p, std::int64_t ldp, const std::uint16_t* v,
                           std::int64_t vs, std::int64_t n, std::int64_t e0, float* acc,
                           std::int64_t ldacc, PrefetchStream& next) {
  V ev[R][NP], od[R][NP];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NP; ++t) {
      const float* src = acc + r * ldacc + e0 + 32 * t;
      alignas(64) float e[16], o[16];
      for (int i = 0; i < 16; ++i) e[i] = src[2 * i], o[i] = src[2 * i + 1];
      ev[r][t] = vloadu(e);
      od[r][t] = vloadu(o);
    }
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const std::uint16_t* vj = v + j * vs + e0;
    if (j + kPrefetchKeys < n) prefetch_l1(vj + kPrefetchKeys * vs, 64 * NP);
    next.step();
    V xe[NP], xo[NP];
    for (int t = 0; t < NP; ++t) vload_b_eo(vj + 32 * t, xe[t], xo[t]);
    for (int r = 0; r < R; ++r) {
      const V pj = vset1(p[r * ldp + j]);
      for (int t = 0; t < NP; ++t) {
        ev[r][t] = vfma(pj, xe[t], ev[r][t]);
        od[r][t] = vfma(pj, xo[t], od[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NP; ++t) {
      float* dst = acc + r * ldacc + e0 + 32 * t;
      alignas(64) float e[16], o[16];
      vstoreu(e, ev[r][t]);
      vstoreu(o, od[r][t]);
      for (int i = 0; i < 16; ++i) dst[2 * i] = e[i], dst[2 * i + 1] = o[i];
    }
  }
}

template <typename E, int R>
void acc_values_rows(const float* p, std::int64_t ldp, const typename E::T* v, std::int64_t vs,
                     std::int64_t n, std::int64_t dv, float* acc, std::int64_t ldacc,
                     PrefetchStream& next) {
  std::int64_t e0 = 0;
  if constexpr (std::is_same_v<E, BF16>) {
    // Whole 32-column groups, up to 4 (R = 1), 2 (R = 2) or 1 at a time (16 accumulators).
    constexpr int kPairs = R == 1 ? 4 : R == 2 ? 2 : 1;
    for (; e0 + 32 * kPairs <= dv; e0 += 32 * kPairs)
      acc_values_block_bf16<R, kPairs>(p, ldp, v, vs, n, e0, acc, ldacc, next);
    for (; e0 + 32 <= dv; e0 += 32)
      acc_values_block_bf16<R, 1>(p, ldp, v, vs, n, e0, acc, ldacc, next);
  }
  constexpr int kBlock = R <= 2 ? 4 : 2;  // vectors per block: keeps R*kBlock accumulators small
  for (; e0 < dv; e0 += 16 * kBlock) {
    const std::int64_t nb = std::min<std::int64_t>(kBlock, (dv - e0 + 15) / 16);
    switch (nb) {
      case 4:
        if constexpr (kBlock >= 4)
          acc_values_block<E, R, 4>(p, ldp, v, vs, n, dv, e0, acc, ldacc, next);
        break;
      case 3:
        if constexpr (kBlock >= 3)
          acc_values_block<E, R, 3>(p, ldp, v, vs, n, dv, e0, acc, ldacc, next);
        break;
      case 2:
        acc_values_block<E, R, 2>(p, ldp, v, vs, n, dv, e0, acc, ldacc, next);
        break;
      default:
        acc_values_block<E, R, 1>(p, ldp, v, vs, n, dv, e0, acc, ldacc, next);
        break;
    }
  }
}

void acc_values(DType t, const float* p, std::int64_t ldp, std::int64_t m, const void* v,
                std::int64_t v_stride, std::int64_t n, std::int64_t dv, float* acc,
                std::int64_t ldacc, const Prefetch& pf) {
  PrefetchStream next(pf, n);
  with_elem(t, [&]<typename E>() {
    const auto* vp = static_cast<const typename E::T*>(v);
    std::int64_t r = 0;
    for (; r + 4 <= m; r += 4)
      acc_values_rows<E, 4>(p + r * ldp, ldp, vp, v_stride, n, dv, acc + r * ldacc, ldacc,
                              next);
    switch (m - r) {
      case 3:
        acc_values_rows<E, 3>(p + r * ldp, ldp, vp, v_stride, n, dv, acc + r * ldacc, ldacc,
                              next);
        break;
      case 2:
        acc_values_rows<E, 2>(p + r * ldp, ldp, vp, v_stride, n, dv, acc + r * ldacc, ldacc,
                              next);
        break;
      case 1:
        acc_values_rows<E, 1>(p + r * ldp, ldp, vp, v_stride, n, dv, acc + r * ldacc, ldacc,
                              next);
        break;
      default:
        break;
    }
  });
}

}  // namespace

const Table& get_table() {
  static const Table t = {SDPA_VK_NAME, kMR,       kNR,        &load_row,    &store_row,
                          &pack_b,      &gemm,     &row_max,   &row_exp_sum, &row_mul,
                          &row_add,     &dot_keys, &acc_values};
  return t;
}

}  // namespace sdpa::cpu::vk::SDPA_VK_NS
