// The avx2 target of the SIMD layer (simd.hpp): AVX2, FMA, F16C. A V is two __m256 (lanes
// 0-7 and 8-15). Included by simd.hpp only, inside its namespace.

constexpr IsaTarget kTarget = IsaTarget::avx2;

struct V {
  __m256 lo, hi;
};
struct M {  // lane mask: all-ones or all-zeros lanes
  __m256 lo, hi;
};

inline V vzero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V vset(float a) {
  const __m256 b = _mm256_set1_ps(a);
  return {b, b};
}
inline V vload(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void vstore(float* p, V a) {
  _mm256_storeu_ps(p, a.lo);
  _mm256_storeu_ps(p + 8, a.hi);
}
inline V vload_n(const float* p, int n, float pad) {
  alignas(64) float t[16];
  for (int i = 0; i < 16; ++i) t[i] = i < n ? p[i] : pad;
  return vload(t);
}
inline void vstore_n(float* p, V a, int n) {
  alignas(64) float t[16];
  vstore(t, a);
  for (int i = 0; i < n; ++i) p[i] = t[i];
}

inline V vadd(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V vsub(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline V vmul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V vmax(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
inline V vmin(V a, V b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
inline V vfma(V a, V b, V c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
inline V vfnma(V a, V b, V c) {
  return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)};
}
inline V vround(V a) {
  constexpr int kMode = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  return {_mm256_round_ps(a.lo, kMode), _mm256_round_ps(a.hi, kMode)};
}
// a * 2^n, integral n in [-252, 254]: two exact power-of-two factors built in the exponent
// field (each normal), so a subnormal result is rounded once. A NaN n (lane of a NaN input)
// converts to the integer indefinite, a finite scale: a NaN a stays NaN.
inline __m256 ldexp8(__m256 a, __m256 n) {
  const __m256i ni = _mm256_cvttps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256i e1 = _mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23);
  const __m256i e2 = _mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23);
  return _mm256_mul_ps(_mm256_mul_ps(a, _mm256_castsi256_ps(e1)), _mm256_castsi256_ps(e2));
}
inline V vldexp(V a, V n) { return {ldexp8(a.lo, n.lo), ldexp8(a.hi, n.hi)}; }

inline M vle(V a, V b) {
  return {_mm256_cmp_ps(a.lo, b.lo, _CMP_LE_OQ), _mm256_cmp_ps(a.hi, b.hi, _CMP_LE_OQ)};
}
inline M vlt(V a, V b) {
  return {_mm256_cmp_ps(a.lo, b.lo, _CMP_LT_OQ), _mm256_cmp_ps(a.hi, b.hi, _CMP_LT_OQ)};
}
inline M veq(V a, V b) {
  return {_mm256_cmp_ps(a.lo, b.lo, _CMP_EQ_OQ), _mm256_cmp_ps(a.hi, b.hi, _CMP_EQ_OQ)};
}
inline M visnan(V a) {
  return {_mm256_cmp_ps(a.lo, a.lo, _CMP_UNORD_Q), _mm256_cmp_ps(a.hi, a.hi, _CMP_UNORD_Q)};
}
inline M vand(M a, M b) { return {_mm256_and_ps(a.lo, b.lo), _mm256_and_ps(a.hi, b.hi)}; }
inline bool vany(M m) { return _mm256_movemask_ps(_mm256_or_ps(m.lo, m.hi)) != 0; }
inline V vselect(M m, V a, V b) {
  return {_mm256_blendv_ps(b.lo, a.lo, m.lo), _mm256_blendv_ps(b.hi, a.hi, m.hi)};
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

inline V vload_f16(const std::uint16_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V vload_f16_n(const std::uint16_t* p, int n) {
  alignas(32) std::uint16_t t[16] = {};
  std::memcpy(t, p, static_cast<std::size_t>(n) * 2);
  return vload_f16(t);
}
inline __m256 bf16_widen8(__m128i b) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}
inline V vload_bf16(const std::uint16_t* p) {
  return {bf16_widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          bf16_widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V vload_bf16_n(const std::uint16_t* p, int n) {
  alignas(32) std::uint16_t t[16] = {};
  std::memcpy(t, p, static_cast<std::size_t>(n) * 2);
  return vload_bf16(t);
}
inline void vload_bf16x2(const std::uint16_t* p, V& a, V& b) {
  a = vload_bf16(p);
  b = vload_bf16(p + 16);
}
inline void vload_bf16_eo(const std::uint16_t* p, V& even, V& odd) {
  const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
  const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  even = {_mm256_castsi256_ps(_mm256_slli_epi32(x0, 16)),
          _mm256_castsi256_ps(_mm256_slli_epi32(x1, 16))};
  odd = {_mm256_castsi256_ps(_mm256_and_si256(x0, hi)),
         _mm256_castsi256_ps(_mm256_and_si256(x1, hi))};
}
inline void vstore_f16(std::uint16_t* p, V a) {
  constexpr int kMode = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(a.lo, kMode));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(a.hi, kMode));
}
inline void vstore_f16_n(std::uint16_t* p, V a, int n) {
  alignas(32) std::uint16_t t[16];
  vstore_f16(t, a);
  std::memcpy(p, t, static_cast<std::size_t>(n) * 2);
}
// Round to nearest even on the bit pattern; NaN becomes a quiet NaN, sign kept (as
// core/dtype float_to_bf16).
inline __m128i narrow_bf16_8(__m256 x) {
  const __m256i b = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  r = _mm256_srli_epi32(r, 16);
  const __m256i q = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(q), nan));
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}
inline void vstore_bf16(std::uint16_t* p, V a) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow_bf16_8(a.lo));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), narrow_bf16_8(a.hi));
}
inline void vstore_bf16_n(std::uint16_t* p, V a, int n) {
  alignas(32) std::uint16_t t[16];
  vstore_bf16(t, a);
  std::memcpy(p, t, static_cast<std::size_t>(n) * 2);
}

inline void prefetch_l1(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
inline void prefetch_l2(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
