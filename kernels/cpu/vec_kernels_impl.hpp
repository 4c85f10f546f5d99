// The implementation of the vector kernels (vec_kernels.hpp), included once by each
// per-target translation unit (vec_kernels_<target>.cpp, compiled with that target's
// instruction-set flags by sdpa_cts_isa_sources) with SDPA_VK_NS naming a namespace private
// to that unit and SDPA_VK_TARGET the IsaTarget it is built for.
//
// Everything is written against the SIMD layer (kernels/cpu/simd/simd.hpp: a 16-lane f32
// vector V, its operations, exp and the typed loads and stores), which supplies the
// target's implementation. Reductions over the lanes use the layer's fixed tree, so results
// depend only on inputs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/dtype.hpp"
#include "kernels/cpu/simd/simd.hpp"
#include "kernels/cpu/vec_kernels.hpp"

namespace sdpa::cpu::vk::SDPA_VK_NS {
namespace {

using namespace sdpa::cpu::simd;
static_assert(kTarget == IsaTarget::SDPA_VK_TARGET,
              "this unit's instruction-set flags do not select its SIMD target");

constexpr float kInf = std::numeric_limits<float>::infinity();

// GEMM micro-tile: kMR rows x kNR columns (a packed B panel); AVX-512: 12 x 32 = 24 zmm
// accumulators, AVX2: 6 x 16 (12 ymm), scalar: 4 x 16.
constexpr bool kWide = kTarget == IsaTarget::avx512 || kTarget == IsaTarget::avx512bf16;
constexpr int kMR = kWide ? 12 : kTarget == IsaTarget::avx2 ? 6 : 4;
constexpr int kNR = kWide ? 32 : 16;

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
    for (int v = 0; v < kNV; ++v) bv[v] = vload(b + k * kNR + 16 * v);
    for (int r = 0; r < R; ++r) {
      const V av = vset(a[r * lda + k]);
      for (int v = 0; v < kNV; ++v) acc[r][v] = vfma(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kNV; ++v) vstore(c + r * ldc + 16 * v, acc[r][v]);
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
  V m = vset(-kInf);
  bool nan = false;
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const V x = vload(s + j);
    nan |= vany(visnan(x));
    m = vmax(m, x);
  }
  if (j < n) {
    const V x = vload_n(s + j, static_cast<int>(n - j), -kInf);
    nan |= vany(visnan(x));
    m = vmax(m, x);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : vhmax(m);
}

float row_exp_sum(float* s, std::int64_t n, float m) {
  const V mv = vset(m);
  V acc = vzero();
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const V e = vexp(vsub(vload(s + j), mv));
    vstore(s + j, e);
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
  const V fv = vset(f);
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) vstore(s + j, vmul(vload(s + j), fv));
  for (; j < n; ++j) s[j] *= f;
}

void row_add(float* s, const float* b, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) vstore(s + j, vadd(vload(s + j), vload(b + j)));
  for (; j < n; ++j) s[j] += b[j];
}

// ------------------------------------------------------------------ decode kernels

constexpr std::int64_t kPrefetchKeys = 16;  // keys ahead of the one being read

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
        acc[r * KB + b] = vfma(vload(q + r * ldq + e), k0, acc[r * KB + b]);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vload(q + r * ldq + e + 16), k1, acc[r * KB + b]);
    }
  }
  if (e < full) {
    for (int b = 0; b < KB; ++b) {
      const V kv = E::load(kj + b * ks + e);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vload(q + r * ldq + e), kv, acc[r * KB + b]);
    }
  }
  if (tail) {
    for (int b = 0; b < KB; ++b) {
      const V kv = E::load_n(kj + b * ks + full, tail);
      for (int r = 0; r < R; ++r)
        acc[r * KB + b] = vfma(vload(q + r * ldq + full), kv, acc[r * KB + b]);
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
    for (int t = 0; t < NB; ++t) a[r][t] = vload(acc + r * ldacc + e0 + 16 * t);
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
      const V pj = vset(p[r * ldp + j]);
      for (int t = 0; t < NB; ++t) a[r][t] = vfma(pj, x[t], a[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NB; ++t) vstore(acc + r * ldacc + e0 + 16 * t, a[r][t]);
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
      ev[r][t] = vload(e);
      od[r][t] = vload(o);
    }
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const std::uint16_t* vj = v + j * vs + e0;
    if (j + kPrefetchKeys < n) prefetch_l1(vj + kPrefetchKeys * vs, 64 * NP);
    next.step();
    V xe[NP], xo[NP];
    for (int t = 0; t < NP; ++t) vload_bf16_eo(vj + 32 * t, xe[t], xo[t]);
    for (int r = 0; r < R; ++r) {
      const V pj = vset(p[r * ldp + j]);
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
      vstore(e, ev[r][t]);
      vstore(o, od[r][t]);
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
