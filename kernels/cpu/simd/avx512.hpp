// The avx512 and avx512bf16 targets of the SIMD layer (simd.hpp): AVX-512 F/BW/DQ/VL, FMA,
// F16C; with AVX512-BF16, also the bf16 pair operations (vdpbf16ps). A V is one __m512.
// Included by simd.hpp only, inside its namespace.

#if defined(__AVX512BF16__)
constexpr IsaTarget kTarget = IsaTarget::avx512bf16;
#else
constexpr IsaTarget kTarget = IsaTarget::avx512;
#endif

struct V {
  __m512 x;
};
struct M {  // lane mask
  __mmask16 x;
};

inline __mmask16 first_n(int n) { return static_cast<__mmask16>((1u << n) - 1u); }

inline V vzero() { return {_mm512_setzero_ps()}; }
inline V vset(float a) { return {_mm512_set1_ps(a)}; }
inline V vload(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void vstore(float* p, V a) { _mm512_storeu_ps(p, a.x); }
inline V vload_n(const float* p, int n, float pad) {
  return {_mm512_mask_loadu_ps(_mm512_set1_ps(pad), first_n(n), p)};
}
inline void vstore_n(float* p, V a, int n) { _mm512_mask_storeu_ps(p, first_n(n), a.x); }

inline V vadd(V a, V b) { return {_mm512_add_ps(a.x, b.x)}; }
inline V vsub(V a, V b) { return {_mm512_sub_ps(a.x, b.x)}; }
inline V vmul(V a, V b) { return {_mm512_mul_ps(a.x, b.x)}; }
inline V vmax(V a, V b) { return {_mm512_max_ps(a.x, b.x)}; }
inline V vmin(V a, V b) { return {_mm512_min_ps(a.x, b.x)}; }
inline V vfma(V a, V b, V c) { return {_mm512_fmadd_ps(a.x, b.x, c.x)}; }
inline V vfnma(V a, V b, V c) { return {_mm512_fnmadd_ps(a.x, b.x, c.x)}; }
inline V vround(V a) {
  return {_mm512_roundscale_ps(a.x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
// a * 2^n (vscalefps: exact, one rounding in the subnormal range; NaN stays NaN).
inline V vldexp(V a, V n) { return {_mm512_scalef_ps(a.x, n.x)}; }

inline M vle(V a, V b) { return {_mm512_cmp_ps_mask(a.x, b.x, _CMP_LE_OQ)}; }
inline M vlt(V a, V b) { return {_mm512_cmp_ps_mask(a.x, b.x, _CMP_LT_OQ)}; }
inline M veq(V a, V b) { return {_mm512_cmp_ps_mask(a.x, b.x, _CMP_EQ_OQ)}; }
inline M visnan(V a) { return {_mm512_cmp_ps_mask(a.x, a.x, _CMP_UNORD_Q)}; }
inline M vand(M a, M b) { return {static_cast<__mmask16>(a.x & b.x)}; }
inline bool vany(M m) { return m.x != 0; }
inline V vselect(M m, V a, V b) { return {_mm512_mask_blend_ps(m.x, b.x, a.x)}; }

inline float vhsum(V a) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a.x), _mm512_extractf32x8_ps(a.x, 1));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
// out[k] = vhsum(a[k]) for k < 8, bit for bit (the same pairs in the same order), by
// transposing the partial sums: 25 instructions instead of 8 x 8.
#define SDPA_SIMD_HAS_VHSUM8 1
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
inline float vhmax(V a) { return _mm512_reduce_max_ps(a.x); }

inline V vload_f16(const std::uint16_t* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline V vload_f16_n(const std::uint16_t* p, int n) {
  return {_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first_n(n), p))};
}
inline V bf16_widen(__m256i b) {
  return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16))};
}
inline V vload_bf16(const std::uint16_t* p) {
  return bf16_widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline V vload_bf16_n(const std::uint16_t* p, int n) {
  return bf16_widen(_mm256_maskz_loadu_epi16(first_n(n), p));
}
// Elements [0, 16) and [16, 32) of 32 bf16 at p, widened: one 64-byte load and one word
// permutation each (vpermw, zeroing the low halves) instead of vpmovzxwd and vpslld.
inline void vload_bf16x2(const std::uint16_t* p, V& a, V& b) {
  alignas(64) static constexpr std::uint16_t kLo[32] = {0, 0,  0, 1,  0, 2,  0, 3,  0, 4, 0,
                                                        5, 0,  6, 0,  7, 0,  8, 0,  9, 0, 10,
                                                        0, 11, 0, 12, 0, 13, 0, 14, 0, 15};
  alignas(64) static constexpr std::uint16_t kHi[32] = {0,  16, 0,  17, 0,  18, 0,  19, 0,  20, 0,
                                                        21, 0,  22, 0,  23, 0,  24, 0,  25, 0,  26,
                                                        0,  27, 0,  28, 0,  29, 0,  30, 0,  31};
  const __m512i x = _mm512_loadu_si512(p);
  constexpr __mmask32 kOdd = 0xAAAAAAAAu;
  a.x = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(kOdd, _mm512_load_si512(kLo), x));
  b.x = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(kOdd, _mm512_load_si512(kHi), x));
}
// The 32 bf16 at p widened as even = elements 0, 2, ..., 30 and odd = 1, 3, ..., 31: one
// load, one shift and one and.
inline void vload_bf16_eo(const std::uint16_t* p, V& even, V& odd) {
  const __m512i x = _mm512_loadu_si512(p);
  even.x = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  odd.x =
      _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
inline __m256i narrow_f16(V a) {
  return _mm512_cvtps_ph(a.x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// Round to nearest even; NaN stays a quiet NaN with its sign (as core/dtype float_to_bf16;
// not vcvtneps2bf16, which flushes subnormals).
inline __m256i narrow_bf16(V a) {
  const __m512i u = _mm512_castps_si512(a.x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i qnan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(a.x, a.x, _CMP_UNORD_Q), qnan);
  return _mm512_cvtepi32_epi16(r);
}
inline void vstore_f16(std::uint16_t* p, V a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow_f16(a));
}
inline void vstore_f16_n(std::uint16_t* p, V a, int n) {
  _mm256_mask_storeu_epi16(p, first_n(n), narrow_f16(a));
}
inline void vstore_bf16(std::uint16_t* p, V a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow_bf16(a));
}
inline void vstore_bf16_n(std::uint16_t* p, V a, int n) {
  _mm256_mask_storeu_epi16(p, first_n(n), narrow_bf16(a));
}

inline void prefetch_l1(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
inline void prefetch_l2(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }

#if defined(__AVX512BF16__)
// bf16 pairs (avx512bf16 only): a VP holds 16 lanes, each two bf16 (the even element in the
// low half). vdpbf16ps treats subnormal inputs as zero and flushes subnormal products.
#define SDPA_SIMD_HAS_BF16_PAIRS 1
struct VP {
  __m512bh x;
};
inline VP vp_load(const std::uint32_t* p) { return {(__m512bh)_mm512_loadu_si512(p)}; }
inline void vp_store(std::uint32_t* p, VP a) { _mm512_storeu_si512(p, (__m512i)a.x); }
inline VP vp_set(std::uint32_t pair) {
  return {(__m512bh)_mm512_set1_epi32(static_cast<int>(pair))};
}
// acc + a.lo * b.lo + a.hi * b.hi per lane (f32 accumulation).
inline V vdot_pairs(V acc, VP a, VP b) { return {_mm512_dpbf16_ps(acc.x, a.x, b.x)}; }
// Lane i = (bf16(even[i]), bf16(odd[i])), rounded to nearest even by vcvtne2ps2bf16 (which
// flushes subnormals).
inline VP vp_round(V even, V odd) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                       23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  // vcvtne2ps2bf16 puts its second operand in the low half: [even..., odd...], then the
  // permutation interleaves them.
  const __m512bh both = _mm512_cvtne2ps_pbh(odd.x, even.x);
  return {(__m512bh)_mm512_permutexvar_epi16(idx, (__m512i)both)};
}
// The 16 lanes rounded to bf16 by vcvtneps2bf16 (nearest even; flushes subnormals to zero).
inline void vstore_bf16_flush(std::uint16_t* p, V a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(a.x));
}
// dst[i] = a[i] | b[i] << 16 for i < 16: two rows of raw bf16 bits as pairs.
inline void vp_zip(const std::uint16_t* a, const std::uint16_t* b, std::uint32_t* dst) {
  const __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
  const __m512i y = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  _mm512_storeu_si512(dst, _mm512_or_si512(x, _mm512_slli_epi32(y, 16)));
}
#endif
