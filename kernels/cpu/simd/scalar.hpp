// The scalar target of the SIMD layer (simd.hpp): portable C++, no intrinsics, no fused
// multiply-add (vfma rounds twice). A V is 16 floats; every operation is a loop over them.
// Included by simd.hpp only, inside its namespace.

constexpr IsaTarget kTarget = IsaTarget::scalar;

struct V {
  float x[16];
};
struct M {  // lane mask
  bool x[16];
};

inline V vzero() { return V{}; }
inline V vset(float a) {
  V r;
  for (float& e : r.x) e = a;
  return r;
}
inline V vload(const float* p) {
  V r;
  std::memcpy(r.x, p, sizeof r.x);
  return r;
}
inline void vstore(float* p, V a) { std::memcpy(p, a.x, sizeof a.x); }
inline V vload_n(const float* p, int n, float pad) {
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = i < n ? p[i] : pad;
  return r;
}
inline void vstore_n(float* p, V a, int n) {
  for (int i = 0; i < n; ++i) p[i] = a.x[i];
}

#define SDPA_SIMD_LANEWISE(name, expr)            \
  inline V name(V a, V b) {                       \
    V r;                                          \
    for (int i = 0; i < 16; ++i) r.x[i] = (expr); \
    return r;                                     \
  }
SDPA_SIMD_LANEWISE(vadd, a.x[i] + b.x[i])
SDPA_SIMD_LANEWISE(vsub, a.x[i] - b.x[i])
SDPA_SIMD_LANEWISE(vmul, a.x[i] * b.x[i])
// As maxps / minps: the second operand when either is NaN (or both are zeros).
SDPA_SIMD_LANEWISE(vmax, a.x[i] > b.x[i] ? a.x[i] : b.x[i])
SDPA_SIMD_LANEWISE(vmin, a.x[i] < b.x[i] ? a.x[i] : b.x[i])
#undef SDPA_SIMD_LANEWISE
inline V vfma(V a, V b, V c) {  // a * b + c, two roundings (the portable target)
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] * b.x[i] + c.x[i];
  return r;
}
inline V vfnma(V a, V b, V c) {  // c - a * b, two roundings
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = c.x[i] - a.x[i] * b.x[i];
  return r;
}
// Nearest integer, ties to even (|x| < 2^22 by adding and subtracting 1.5 * 2^23; larger
// values are integers already); NaN stays NaN.
inline V vround(V a) {
  for (float& e : a.x)
    if (std::fabs(e) < 4194304.0f) e = (e + 12582912.0f) - 12582912.0f;
  return a;
}
// a * 2^n for integral n in [-252, 254] (NaN a stays NaN; a NaN n counts as 0): two exact
// power-of-two factors, each normal, so a result in the subnormal range is rounded once.
inline V vldexp(V a, V n) {
  for (int i = 0; i < 16; ++i) {
    const std::int32_t ni = n.x[i] == n.x[i] ? static_cast<std::int32_t>(n.x[i]) : 0;
    const std::int32_t n1 = ni >> 1, n2 = ni - n1;
    const std::uint32_t b1 = static_cast<std::uint32_t>(n1 + 127) << 23;
    const std::uint32_t b2 = static_cast<std::uint32_t>(n2 + 127) << 23;
    float s1, s2;
    std::memcpy(&s1, &b1, 4);
    std::memcpy(&s2, &b2, 4);
    a.x[i] = (a.x[i] * s1) * s2;
  }
  return a;
}

inline M vle(V a, V b) {
  M r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] <= b.x[i];
  return r;
}
inline M vlt(V a, V b) {
  M r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] < b.x[i];
  return r;
}
inline M veq(V a, V b) {
  M r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] == b.x[i];
  return r;
}
inline M visnan(V a) {
  M r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] != a.x[i];
  return r;
}
inline M vand(M a, M b) {
  M r;
  for (int i = 0; i < 16; ++i) r.x[i] = a.x[i] && b.x[i];
  return r;
}
inline bool vany(M m) {
  bool r = false;
  for (bool b : m.x) r |= b;
  return r;
}
inline V vselect(M m, V a, V b) {  // m ? a : b
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = m.x[i] ? a.x[i] : b.x[i];
  return r;
}

// Sum of the lanes by the layer's fixed tree: lanes i and i + 8, then i and i + 4, i and
// i + 2, i and i + 1 (the first operand the lower lane).
inline float vhsum(V a) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a.x[i] += a.x[i + w];
  return a.x[0];
}
inline float vhmax(V a) {  // largest lane (no NaN lanes)
  float m = a.x[0];
  for (float e : a.x) m = e > m ? e : m;
  return m;
}

// f16 and bf16: exact widening; narrowing rounds to nearest even (core/dtype).
inline V vload_f16(const std::uint16_t* p) {
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = half_to_float(p[i]);
  return r;
}
inline V vload_f16_n(const std::uint16_t* p, int n) {
  V r{};
  for (int i = 0; i < n; ++i) r.x[i] = half_to_float(p[i]);
  return r;
}
inline V vload_bf16(const std::uint16_t* p) {
  V r;
  for (int i = 0; i < 16; ++i) r.x[i] = bf16_to_float(p[i]);
  return r;
}
inline V vload_bf16_n(const std::uint16_t* p, int n) {
  V r{};
  for (int i = 0; i < n; ++i) r.x[i] = bf16_to_float(p[i]);
  return r;
}
inline void vload_bf16x2(const std::uint16_t* p, V& a, V& b) {
  a = vload_bf16(p);
  b = vload_bf16(p + 16);
}
inline void vload_bf16_eo(const std::uint16_t* p, V& even, V& odd) {
  for (int i = 0; i < 16; ++i) {
    even.x[i] = bf16_to_float(p[2 * i]);
    odd.x[i] = bf16_to_float(p[2 * i + 1]);
  }
}
inline void vstore_f16(std::uint16_t* p, V a) {
  for (int i = 0; i < 16; ++i) p[i] = float_to_half(a.x[i]);
}
inline void vstore_f16_n(std::uint16_t* p, V a, int n) {
  for (int i = 0; i < n; ++i) p[i] = float_to_half(a.x[i]);
}
inline void vstore_bf16(std::uint16_t* p, V a) {
  for (int i = 0; i < 16; ++i) p[i] = float_to_bf16(a.x[i]);
}
inline void vstore_bf16_n(std::uint16_t* p, V a, int n) {
  for (int i = 0; i < n; ++i) p[i] = float_to_bf16(a.x[i]);
}

inline void prefetch_l1(const void*) {}
inline void prefetch_l2(const void*) {}
