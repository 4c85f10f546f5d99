// The cpu.flash kernel (FlashAttention-2 forward), compiled once per SIMD target: each
// flash_<target>.cpp (built with that target's instruction-set flags by sdpa_cts_isa_sources)
// defines FLASH_TARGET (its IsaTarget) and FLASH_ENTRY (the exported function's name), then
// includes this file. The vector code is written against the SIMD layer
// (kernels/cpu/simd/simd.hpp: 16-lane f32 vectors, exp2, and on avx512bf16 the bf16 pair
// operations), which supplies the target's implementation. Everything but the entry point has
// internal linkage, so the linker never merges code compiled with one target's instruction
// set into another's.
//
// One work item is a tile of up to kRowTile (head, query) rows sharing one kv head. The
// tile is held transposed, rows along the vector lanes:
//   S^T[j][r] = sum_d K[j][d] Q^T[d][r]    (GEMM 1: broadcast K, vector of rows of Q^T)
//   online softmax per lane over each key block of kKeyBlock keys (running max m, sum l)
//   O^T[d][r] = alpha[r] O^T[d][r] + sum_j V[j][d] P^T[j][r]   (GEMM 2)
// Each lane (tile row) runs its own fixed sequence of operations: key blocks at fixed
// multiples of kKeyBlock, keys and head dims in increasing order. No row's arithmetic
// depends on the other rows of its tile or on the thread that runs it, which is what
// determinism and batch invariance rest on. A key block a row does not attend is an exact
// no-op for that row (rescale by exactly 1, add exact zeros), so skipping it or not gives
// the same bits.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/dtype.hpp"
#include "core/philox.hpp"
#include "kernels/attended_keys.hpp"
#include "kernels/cpu/flash_kernel.hpp"
#include "kernels/cpu/overflow_guard.hpp"
#include "kernels/cpu/simd/simd.hpp"

#if !defined(FLASH_ENTRY) || !defined(FLASH_TARGET)
#error "define FLASH_ENTRY and FLASH_TARGET before including flash_impl.hpp"
#endif

namespace sdpa::cpu::flash {
namespace {

using namespace sdpa::cpu::simd;
static_assert(kTarget == IsaTarget::FLASH_TARGET,
              "this unit's instruction-set flags do not select its SIMD target");

using i64 = std::int64_t;
constexpr float kNegInf = -__builtin_inff();
constexpr double kLog2eD = 1.44269504088896340736;
constexpr double kLn2 = 0.693147180559945309417232121458;
constexpr int W = kLanes;  // tile rows per vector
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
constexpr bool kBf16Pairs = true;  // the vdpbf16ps path can run
#else
constexpr bool kBf16Pairs = false;
#endif

inline i64 imin(i64 a, i64 b) { return a < b ? a : b; }
inline i64 imax(i64 a, i64 b) { return a > b ? a : b; }
inline i64 round_up(i64 a, i64 m) { return (a + m - 1) / m * m; }
// The element type of Q, K, V, O (the lowered problem's code is the DType's value).
inline DType elem_type(const Params& p) { return static_cast<DType>(p.dtype); }

// ================================================================== rows of elements

// Bytes of an element of t (f32, f16 or bf16), inline: it is needed for every row of K and V.
inline i64 elem_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

// dst[e] = float(src[off + e * stride]) for e < n (exact widening).
inline void load_row(DType t, const void* base, i64 off, i64 stride, i64 n, float* dst) {
  simd::load_row(t, static_cast<const unsigned char*>(base) + off * elem_bytes(t), stride, n, dst);
}

// dst[off + e * stride] = round_to_nearest_even(src[e]) for e < n.
inline void store_row(DType t, const float* src, i64 n, void* base, i64 off, i64 stride) {
  simd::store_row(t, src, n, static_cast<unsigned char*>(base) + off * elem_bytes(t), stride);
}

inline float load_one(DType t, const void* base, i64 off) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(base)[off];
    case DType::f16:
      return half_to_float(static_cast<const std::uint16_t*>(base)[off]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const std::uint16_t*>(base)[off]);
    default:
      return 0.0f;
  }
}

// ================================================================== f32 micro-kernels

// Keys (or head dims) x vectors of 16 rows per micro-kernel call. avx512: 6 x 4 zmm = 24
// accumulators over 64 rows; avx2: 6 x 1 (two ymm each: 12 registers); scalar: 4 x 1.
#if defined(SDPA_SIMD_AVX512)
constexpr int kMR = 6, kNV = 4;
#else
constexpr int kMR = kTarget == IsaTarget::avx2 ? 6 : 4, kNV = 1;
#endif
constexpr int kPanel = kNV * W;  // tile rows one micro-kernel call covers

// S^T[k][v*W + l] = sum_d kb[k*ldk + d] * qt[d*ldq + v*W + l] for k < MR, v < NV.
template <int MR, int NV>
void gemm1_tile(const float* kb, i64 ldk, const float* qt, i64 ldq, i64 depth, float* st, i64 lds) {
  V acc[MR][NV];
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) acc[k][v] = vzero();
  for (i64 d = 0; d < depth; ++d) {
    V q[NV];
    for (int v = 0; v < NV; ++v) q[v] = vload(qt + d * ldq + v * W);
    for (int k = 0; k < MR; ++k) {
      const V kk = vset(kb[k * ldk + d]);
      for (int v = 0; v < NV; ++v) acc[k][v] = vfma(kk, q[v], acc[k][v]);
    }
  }
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) vstore(st + k * lds + v * W, acc[k][v]);
}

// O^T[k][r] = alpha[r] O^T[k][r] + sum_{j < nj} vb[j*ldv + k] * pt[j*ldp + r] for k < MR,
// r < NV*W; keys summed in increasing j.
template <int MR, int NV>
void gemm2_tile(const float* vb, i64 ldv, const float* pt, i64 ldp, i64 nj, const float* alpha,
                float* ot, i64 ldo) {
  V acc[MR][NV];
  V a[NV];
  for (int v = 0; v < NV; ++v) a[v] = vload(alpha + v * W);
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) acc[k][v] = vmul(vload(ot + k * ldo + v * W), a[v]);
  for (i64 j = 0; j < nj; ++j) {
    V pv[NV];
    for (int v = 0; v < NV; ++v) pv[v] = vload(pt + j * ldp + v * W);
    for (int k = 0; k < MR; ++k) {
      const V vv = vset(vb[j * ldv + k]);
      for (int v = 0; v < NV; ++v) acc[k][v] = vfma(vv, pv[v], acc[k][v]);
    }
  }
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) vstore(ot + k * ldo + v * W, acc[k][v]);
}

// Keys or head dims for the next micro-tile: full tiles of `mr`, except that a remainder of
// 1 or 2 is avoided by ending with two tiles of about 4 (a tile of 2 or 3 is latency bound,
// 4 runs near full speed).
inline i64 tile_rows(int mr, i64 left) {
  if (left <= mr) return left;
  if (left < mr + 4) return left - 4;
  return mr;
}

using Gemm1Fn = void (*)(const float*, i64, const float*, i64, i64, float*, i64);
using Gemm2Fn = void (*)(const float*, i64, const float*, i64, i64, const float*, float*, i64);

#define FLASH_MR_ROW(F, NV) \
  { nullptr, F<1, NV>, F<2, NV>, F<3, NV>, F<4, NV>, F<5, NV>, F<6, NV> }
#if !defined(SDPA_SIMD_AVX512)
static_assert(kNV == 1);
constexpr Gemm1Fn kGemm1[kNV + 1][7] = {{}, FLASH_MR_ROW(gemm1_tile, 1)};
constexpr Gemm2Fn kGemm2[kNV + 1][7] = {{}, FLASH_MR_ROW(gemm2_tile, 1)};
#else
constexpr Gemm1Fn kGemm1[kNV + 1][7] = {{},
                                        FLASH_MR_ROW(gemm1_tile, 1),
                                        FLASH_MR_ROW(gemm1_tile, 2),
                                        FLASH_MR_ROW(gemm1_tile, 3),
                                        FLASH_MR_ROW(gemm1_tile, 4)};
constexpr Gemm2Fn kGemm2[kNV + 1][7] = {{},
                                        FLASH_MR_ROW(gemm2_tile, 1),
                                        FLASH_MR_ROW(gemm2_tile, 2),
                                        FLASH_MR_ROW(gemm2_tile, 3),
                                        FLASH_MR_ROW(gemm2_tile, 4)};
#endif

// ================================================================== bf16 micro-kernels
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
// A 32-bit word that may alias 16-bit data and sit at any even address: a pair of bf16
// elements read in place from a row of K.
typedef std::uint32_t u32a __attribute__((may_alias, aligned(2)));
constexpr int kBMR = 6, kBNV = 4;  // 24 zmm accumulators; 16 rows per zmm
constexpr int kBPanel = kBNV * 16;

// S^T[k][r] = sum_e dot2(kb2[k*ldk + e], qt2[e*ldq + r]) for k < MR, r < NV*16 (bf16 pairs
// along the head dim, f32 accumulation).
template <int MR, int NV>
void bgemm1_tile(const u32a* kb2, i64 ldk, const std::uint32_t* qt2, i64 ldq, i64 pairs, float* st,
                 i64 lds) {
  V acc[MR][NV];
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) acc[k][v] = vzero();
  for (i64 e = 0; e < pairs; ++e) {
    VP q[NV];
    for (int v = 0; v < NV; ++v) q[v] = vp_load(qt2 + e * ldq + v * 16);
    for (int k = 0; k < MR; ++k) {
      const VP kk = vp_set(kb2[k * ldk + e]);
      for (int v = 0; v < NV; ++v) acc[k][v] = vdot_pairs(acc[k][v], kk, q[v]);
    }
  }
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) vstore(st + k * lds + v * 16, acc[k][v]);
}

// O^T[k][r] = alpha[r] O^T[k][r] + sum_{jp < np} dot2(vp2[jp*ldv + k], p2[jp*ldp + r]):
// key pairs, bf16 P and V, f32 accumulation.
template <int MR, int NV>
void bgemm2_tile(const std::uint32_t* vp2, i64 ldv, const std::uint32_t* p2, i64 ldp, i64 np,
                 const float* alpha, float* ot, i64 ldo) {
  V acc[MR][NV];
  V a[NV];
  for (int v = 0; v < NV; ++v) a[v] = vload(alpha + v * 16);
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) acc[k][v] = vmul(vload(ot + k * ldo + v * 16), a[v]);
  for (i64 jp = 0; jp < np; ++jp) {
    VP pv[NV];
    for (int v = 0; v < NV; ++v) pv[v] = vp_load(p2 + jp * ldp + v * 16);
    for (int k = 0; k < MR; ++k) {
      const VP vv = vp_set(vp2[jp * ldv + k]);
      for (int v = 0; v < NV; ++v) acc[k][v] = vdot_pairs(acc[k][v], vv, pv[v]);
    }
  }
  for (int k = 0; k < MR; ++k)
    for (int v = 0; v < NV; ++v) vstore(ot + k * ldo + v * 16, acc[k][v]);
}

using BGemm1Fn = void (*)(const u32a*, i64, const std::uint32_t*, i64, i64, float*, i64);
using BGemm2Fn = void (*)(const std::uint32_t*, i64, const std::uint32_t*, i64, i64, const float*,
                          float*, i64);
constexpr BGemm1Fn kBGemm1[kBNV + 1][7] = {{},
                                           FLASH_MR_ROW(bgemm1_tile, 1),
                                           FLASH_MR_ROW(bgemm1_tile, 2),
                                           FLASH_MR_ROW(bgemm1_tile, 3),
                                           FLASH_MR_ROW(bgemm1_tile, 4)};
constexpr BGemm2Fn kBGemm2[kBNV + 1][7] = {{},
                                           FLASH_MR_ROW(bgemm2_tile, 1),
                                           FLASH_MR_ROW(bgemm2_tile, 2),
                                           FLASH_MR_ROW(bgemm2_tile, 3),
                                           FLASH_MR_ROW(bgemm2_tile, 4)};

// Copies the raw 16-bit patterns of a row of n bf16 elements into dst (zero-padded to even).
inline void load_row_bits(const void* base, i64 off, i64 stride, i64 n, std::uint16_t* dst) {
  const std::uint16_t* s = static_cast<const std::uint16_t*>(base) + off;
  if (stride == 1) {
    std::memcpy(dst, s, static_cast<std::size_t>(n) * 2);
  } else {
    for (i64 e = 0; e < n; ++e) dst[e] = s[e * stride];
  }
  if (n & 1) dst[n] = 0;
}

// P2[jp][r] = (bf16(P[2jp][r]), bf16(P[2jp+1][r])) for rows [r0, r0 + nv*16).
inline void pack_p_pairs(const float* st, i64 lds, i64 jp0, i64 jp1, i64 r0, int nv,
                         std::uint32_t* p2) {
  for (i64 jp = jp0; jp < jp1; ++jp) {
    const float* even = st + 2 * jp * lds + r0;
    for (int v = 0; v < nv; ++v) {
      const V e = vload(even + v * 16), o = vload(even + lds + v * 16);
      vp_store(p2 + jp * lds + r0 + v * 16, vp_round(e, o));
    }
  }
}
#endif

// ================================================================== the work item

struct Panel {
  i64 r0 = 0;         // first tile row
  int nv = 0;         // vectors of rows
  i64 ja = 0;         // first key of the union of its rows' ranges in the block
  i64 jb = 0;         // one past the last
  bool full = false;  // every row attends every key of [0, n): no masking needed
};

// Online softmax of rows [r, r + W) over keys [ja, jb) of the block. st holds x, the logits
// in units where the base-2 logit is x * c (c > 0): masks keys outside each row's
// [rlo, rhi) unless `full`, updates the running max m (of x) and sum l, leaves the rescale
// factor in alpha and P^T (times the dropout keep factor) in st. The exponent is
// (x - m) * c: subtracting the max first keeps its rounding relative to |x - m|, not |x|, so
// exact logits (integer data) stay as accurate as the naive computation's. P and l are both
// 2^Boost times their values (exactly; see run_item).
template <int Boost>
inline void softmax_rows(float* st, i64 lds, i64 r, i64 ja, i64 jb, bool full, float c,
                         const float* rlo, const float* rhi, float* m, float* l, float* alpha,
                         const float* keep) {
  float* col = st + r;
  const V vc = vset(c);
  const V ninf = vset(kNegInf);
  V mx = ninf;
  // Maxima over keys in two or four independent chains (max is exact, so the order does
  // not matter) to hide the latency of vmaxps.
  if (full) {
    V m1 = ninf, m2 = ninf, m3 = ninf;
    i64 j = ja;
    for (; j + 4 <= jb; j += 4) {
      mx = vmax(mx, vload(col + j * lds));
      m1 = vmax(m1, vload(col + (j + 1) * lds));
      m2 = vmax(m2, vload(col + (j + 2) * lds));
      m3 = vmax(m3, vload(col + (j + 3) * lds));
    }
    for (; j < jb; ++j) mx = vmax(mx, vload(col + j * lds));
    mx = vmax(vmax(mx, m1), vmax(m2, m3));
  } else {
    const V a = vload(rlo + r), z = vload(rhi + r);
    V m1 = ninf;
    for (i64 j = ja; j < jb; ++j) {
      const V jf = vset(static_cast<float>(j));
      const V t = vselect(vand(vle(a, jf), vlt(jf, z)), vload(col + j * lds), ninf);
      vstore(col + j * lds, t);
      if (j & 1) {
        m1 = vmax(m1, t);
      } else {
        mx = vmax(mx, t);
      }
    }
    mx = vmax(mx, m1);
  }
  const V mold = vload(m + r);
  const V mnew = vmax(mold, mx);
  const V muse = vselect(veq(mnew, ninf), vzero(), mnew);  // all masked so far: exps are 0
  const V al = vexp2(vmul(vsub(mold, muse), vc));
  V sum = vzero();
  if (keep) {
    for (i64 j = ja; j < jb; ++j) {
      const V e = vexp2<Boost>(vmul(vsub(vload(col + j * lds), muse), vc));
      sum = vadd(sum, e);
      vstore(col + j * lds, vmul(e, vload(keep + j * lds + r)));
    }
  } else {
    for (i64 j = ja; j < jb; ++j) {
      const V e = vexp2<Boost>(vmul(vsub(vload(col + j * lds), muse), vc));
      sum = vadd(sum, e);
      vstore(col + j * lds, e);
    }
  }
  vstore(l + r, vfma(vload(l + r), al, sum));
  vstore(m + r, mnew);
  vstore(alpha + r, al);
}

template <typename T>
T* at(unsigned char* base, std::size_t off) {
  return reinterpret_cast<T*>(base + off);
}

void run_item(const Params& p, const Item& it, unsigned char* scr) {
  const ScratchLayout& sl = p.scratch;
  const i64 b = it.b;
  const i64 lb = p.seqlens_q[b], sb = p.seqlens_kv[b];
  const i64 R = it.ng * it.ni;
  const i64 Rp = round_up(R, kRowAlign);
  const i64 Dq = p.head_dim_qk, Dv = p.head_dim_v;
  const i64 cq = p.packed ? p.cu_seqlens_q[b] : 0, ck = p.packed ? p.cu_seqlens_kv[b] : 0;
  const i64 qbase = p.packed ? 0 : b * p.q_stride[0];
  const i64 kbase = (p.packed ? 0 : b * p.k_stride[0]) + it.hkv * p.k_stride[1];
  const i64 vbase = (p.packed ? 0 : b * p.v_stride[0]) + it.hkv * p.v_stride[1];
  const i64 obase = p.packed ? 0 : b * p.o_stride[0];
  const i64 h0 = it.hkv * p.group + it.g0;  // query head of tile row 0
  const bool bf16_dot = kBf16Pairs && p.bf16_dot;
  const bool prescale =
      p.mask_kind != SDPA_CTS_MASK_NONE || p.softcap_f32 > 0;  // elementwise logit pass
  const float scale_f = static_cast<float>(p.scale);
  // Logit units (softmax_rows): with an elementwise pass, x is the natural-log logit and
  // c = log2(e); without one, x = Q.K with the sign of the scale folded into Q (exactly) and
  // c = |scale| log2(e). lse_unit turns x into natural-log units for the LSE. c is kept
  // positive and nonzero (scale 0 gives 2^-126: every exponent rounds to 0, and -inf stays).
  const bool negate_q = !prescale && p.scale < 0;
  const double qscale = negate_q ? -1.0 : 1.0;
  const double lse_unit = prescale ? 1.0 : std::fabs(p.scale);
  const float c_base2 =
      std::fmax(static_cast<float>(lse_unit * kLog2eD), std::numeric_limits<float>::min());

  float* QT = at<float>(scr, sl.qt);
  float* KB = at<float>(scr, sl.kb);
  float* VB = at<float>(scr, sl.vb);
  float* ST = at<float>(scr, sl.st);
  float* OT = at<float>(scr, sl.ot);
  float* KEEP = at<float>(scr, sl.keep);
  float* mrow = at<float>(scr, sl.rowf);
  float* lrow = mrow + Rp;
  float* arow = lrow + Rp;
  float* rlo = arow + Rp;
  float* rhi = rlo + Rp;
  i64* lo = at<i64>(scr, sl.rowi);
  i64* hi = lo + Rp;
  float* tmp = at<float>(scr, sl.tmp);
  (void)QT;
  (void)KB;
  (void)VB;

  // Each row's attended key interval, and their union.
  const KeyStructure structure = key_structure(p);
  i64 jmin = sb, jmax = -1;
  for (i64 r = 0; r < Rp; ++r) {
    if (r < R) {
      const KeyInterval keys = attended_keys(structure, it.i0 + r % it.ni, lb, sb);
      lo[r] = keys.lo;
      hi[r] = keys.hi - 1;  // inclusive here
      if (lo[r] <= hi[r]) {
        jmin = imin(jmin, lo[r]);
        jmax = imax(jmax, hi[r]);
      }
    } else {
      lo[r] = 0;
      hi[r] = -1;
    }
  }

  // Q tile, transposed.
  auto q_offset = [&](i64 r) {
    return qbase + (h0 + r / it.ni) * p.q_stride[1] + (cq + it.i0 + r % it.ni) * p.q_stride[2];
  };
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
  std::uint32_t* QT2 = at<std::uint32_t>(scr, sl.qt2);
  std::uint32_t* KB2 = at<std::uint32_t>(scr, sl.kb2);
  std::uint32_t* VP2 = at<std::uint32_t>(scr, sl.vp2);
  std::uint32_t* P2 = at<std::uint32_t>(scr, sl.p2);
  const i64 Dq2 = (Dq + 1) / 2;
#endif
  auto load_qt_f32 = [&] {
    for (i64 r = 0; r < Rp; ++r) {
      if (r < R) {
        load_row(elem_type(p), p.q, q_offset(r), p.q_stride[3], Dq, tmp);
        for (i64 d = 0; d < Dq; ++d) {
          QT[d * Rp + r] = static_cast<float>(static_cast<double>(tmp[d]) * qscale);
        }
      } else {
        for (i64 d = 0; d < Dq; ++d) QT[d * Rp + r] = 0;
      }
    }
  };
  if (jmax >= jmin) {
    if (bf16_dot) {
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
      auto* row = reinterpret_cast<std::uint16_t*>(tmp);
      for (i64 r = 0; r < Rp; ++r) {
        if (r < R) {
          load_row_bits(p.q, q_offset(r), p.q_stride[3], Dq, row);
          for (i64 e = 0; e < Dq2; ++e)
            QT2[e * Rp + r] = (row[2 * e] | (std::uint32_t(row[2 * e + 1]) << 16)) ^
                              (negate_q ? 0x80008000u : 0u);
        } else {
          for (i64 e = 0; e < Dq2; ++e) QT2[e * Rp + r] = 0;
        }
      }
#endif
    } else {
      load_qt_f32();
    }
  }

  const bool direct_k = !bf16_dot && elem_type(p) == DType::f32 && p.k_stride[3] == 1;
  const bool direct_v = !bf16_dot && elem_type(p) == DType::f32 && p.v_stride[3] == 1;
  const i64 ldk = direct_k ? p.k_stride[2] : Dq, ldv = direct_v ? p.v_stride[2] : Dv;

  // Overflow guard (overflow_guard.hpp): pass 0 runs with P as is; rows whose O^T left the
  // f32 range are flagged in `redo` and computed again in pass 1 with P scaled by 2^-shift.
  // The bf16 dot path runs in pass 0 only, with P and l both 2^kPBoost times their values
  // (the boost cancels in O = O^T / l and is taken out of the LSE): vcvtne2ps2bf16 and
  // vdpbf16ps flush subnormal P and subnormal products P V to zero, and the boost moves
  // what is flushed from below 2^-126 to below 2^-126-kPBoost, under the f32 path's own
  // limit (2^-149). Powers of two are exact, so P above 2^-126 gives the unboosted bits.
  // Its redone rows take the f32 path, whose subnormals are gradual.
  constexpr int kPBoost = 32;
  bool redo[kRowTile] = {};
  int shift = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const bool dot = bf16_dot && pass == 0;  // this pass runs the bf16 dot path
    const i64 panel_rows = dot ? 64 : kPanel;
    const i64 rows_per_vec = dot ? 16 : W;
    if (bf16_dot && !dot && jmax >= jmin) load_qt_f32();
    const float pscale = std::ldexp(1.0f, -shift);
    for (i64 r = 0; r < Rp; ++r) {
      mrow[r] = kNegInf;
      lrow[r] = 0;
    }
    std::memset(OT, 0, static_cast<std::size_t>(Dv * Rp) * 4);

    for (i64 j0 = jmax >= jmin ? jmin / kKeyBlock * kKeyBlock : sb; j0 <= jmax; j0 += kKeyBlock) {
      const i64 n = imin(kKeyBlock, sb - j0);
      // Block-relative ranges; padding rows take every key (their lanes are never read).
      for (i64 r = 0; r < Rp; ++r) {
        i64 a = 0, z = n;
        if (r < R) {
          a = imin(imax(lo[r] - j0, 0), n);
          z = imin(imax(hi[r] - j0 + 1, 0), n);
          if (a >= z) a = z = 0;
        }
        rlo[r] = static_cast<float>(a);
        rhi[r] = static_cast<float>(z);
      }
      Panel panels[kRowTile / 8];
      int np = 0;
      for (i64 r0 = 0; r0 < Rp; r0 += panel_rows) {
        Panel pn;
        pn.r0 = r0;
        pn.nv = static_cast<int>(imin(panel_rows, Rp - r0) / rows_per_vec);
        i64 ja = n, jb = 0;
        bool full = true;
        for (i64 r = r0; r < imin(r0 + panel_rows, R); ++r) {
          if (rlo[r] < rhi[r]) {
            ja = imin(ja, static_cast<i64>(rlo[r]));
            jb = imax(jb, static_cast<i64>(rhi[r]));
          }
          if (rlo[r] != 0 || rhi[r] != n) full = false;
        }
        if (ja >= jb) continue;  // no row of the panel attends this block
        if (dot) {
          ja &= ~i64(1);
          jb = round_up(jb, 2);
          if (jb != n) full = false;
        }
        pn.ja = ja;
        pn.jb = jb;
        pn.full = full;
        panels[np++] = pn;
      }
      if (np == 0) continue;

      // K and V blocks.
      const i64 kvrow = ck + j0;
      const float* kblk = KB;
      const float* vblk = VB;
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
      const u32a* kb2blk = KB2;
      i64 ldk2 = Dq2;
#endif
      if (dot) {
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
        // K rows are used in place as bf16 pairs when whole pairs are contiguous and the block
        // needs no zero key to complete its last pair; else copied with zero padding.
        if (p.k_stride[3] == 1 && Dq % 2 == 0 && p.k_stride[2] % 2 == 0 && n % 2 == 0) {
          kb2blk = reinterpret_cast<const u32a*>(static_cast<const std::uint16_t*>(p.k) + kbase +
                                                 kvrow * p.k_stride[2]);
          ldk2 = p.k_stride[2] / 2;
        } else {
          for (i64 jj = 0; jj < n; ++jj) {
            load_row_bits(p.k, kbase + (kvrow + jj) * p.k_stride[2], p.k_stride[3], Dq,
                          reinterpret_cast<std::uint16_t*>(KB2 + jj * Dq2));
          }
          if (n & 1) std::memset(KB2 + n * Dq2, 0, static_cast<std::size_t>(Dq2) * 4);
        }
        auto* ta = reinterpret_cast<std::uint16_t*>(tmp);
        auto* tb = ta + round_up(Dv, 32);
        const auto* vsrc = static_cast<const std::uint16_t*>(p.v) + vbase;
        for (i64 jp = 0; 2 * jp < n; ++jp) {
          const std::uint16_t* ra = ta;
          const std::uint16_t* rb = tb;
          if (p.v_stride[3] == 1) {
            ra = vsrc + (kvrow + 2 * jp) * p.v_stride[2];
          } else {
            load_row_bits(p.v, vbase + (kvrow + 2 * jp) * p.v_stride[2], p.v_stride[3], Dv, ta);
          }
          if (2 * jp + 1 >= n) {
            std::memset(tb, 0, static_cast<std::size_t>(Dv) * 2);
          } else if (p.v_stride[3] == 1) {
            rb = vsrc + (kvrow + 2 * jp + 1) * p.v_stride[2];
          } else {
            load_row_bits(p.v, vbase + (kvrow + 2 * jp + 1) * p.v_stride[2], p.v_stride[3], Dv, tb);
          }
          std::uint32_t* dst = VP2 + jp * Dv;
          i64 d = 0;
          for (; d + 16 <= Dv; d += 16) vp_zip(ra + d, rb + d, dst + d);
          for (; d < Dv; ++d) dst[d] = ra[d] | (std::uint32_t(rb[d]) << 16);
        }
#endif
      } else {
        // f32 rows with unit head-dim stride are read in place; anything else is converted
        // into the contiguous block.
        if (direct_k) {
          kblk = static_cast<const float*>(p.k) + kbase + kvrow * p.k_stride[2];
        } else {
          for (i64 jj = 0; jj < n; ++jj) {
            load_row(elem_type(p), p.k, kbase + (kvrow + jj) * p.k_stride[2], p.k_stride[3], Dq,
                     KB + jj * Dq);
          }
        }
        if (direct_v) {
          vblk = static_cast<const float*>(p.v) + vbase + kvrow * p.v_stride[2];
        } else {
          for (i64 jj = 0; jj < n; ++jj) {
            load_row(elem_type(p), p.v, vbase + (kvrow + jj) * p.v_stride[2], p.v_stride[3], Dv,
                     VB + jj * Dv);
          }
        }
      }

      for (int pi = 0; pi < np; ++pi) {
        const Panel& pn = panels[pi];
        const i64 ja = pn.ja, jb = pn.jb;
        // GEMM 1: logits of the panel's keys.
        if (dot) {
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
          for (i64 j = ja, mr = 0; j < jb; j += mr) {
            mr = tile_rows(kBMR, jb - j);
            kBGemm1[pn.nv][mr](kb2blk + j * ldk2, ldk2, QT2 + pn.r0, Rp, Dq2, ST + j * Rp + pn.r0,
                               Rp);
          }
#endif
        } else {
          for (i64 j = ja, mr = 0; j < jb; j += mr) {
            mr = tile_rows(kMR, jb - j);
            kGemm1[pn.nv][mr](kblk + j * ldk, ldk, QT + pn.r0, Rp, Dq, ST + j * Rp + pn.r0, Rp);
          }
        }
        const i64 rend = imin(pn.r0 + pn.nv * rows_per_vec, R);
        const i64 jc = imin(jb, n);  // keys that exist (the bf16 pair padding does not)
        // Softcap, additive and boolean masks: elementwise, into base-2 logits.
        if (prescale) {
          for (i64 r = pn.r0; r < rend; ++r) {
            const i64 h = h0 + r / it.ni, i = it.i0 + r % it.ni;
            const i64 mo = b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] +
                           j0 * p.mask_stride[3];
            for (i64 j = ja; j < jc; ++j) {
              float s = ST[j * Rp + r] * scale_f;
              if (p.softcap_f32 > 0) s = p.softcap_f32 * __builtin_tanhf(s / p.softcap_f32);
              if (p.mask_kind == SDPA_CTS_MASK_ADDITIVE) {
                s += load_one(elem_type(p), p.mask, mo + j * p.mask_stride[3]);
              } else if (p.mask_kind == SDPA_CTS_MASK_BOOL) {
                if (static_cast<const std::uint8_t*>(p.mask)[mo + j * p.mask_stride[3]] == 0)
                  s = kNegInf;
              }
              ST[j * Rp + r] = s;
            }
          }
        }
        if (p.dropout_p > 0) {
          for (i64 r = pn.r0; r < rend; ++r) {
            const i64 h = h0 + r / it.ni, i = it.i0 + r % it.ni;
            for (i64 j = ja; j < jc; ++j) {
              KEEP[j * Rp + r] = dropout_keep(p.dropout_seed, p.dropout_offset, p.dropout_threshold,
                                              b, h, i, j0 + j, p.heads_q, p.len_q, p.len_kv)
                                     ? 1.0f
                                     : 0.0f;
            }
          }
        }
        // Online softmax, one vector of rows at a time.
        for (i64 r = pn.r0; r < pn.r0 + pn.nv * rows_per_vec; r += W) {
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
          if (dot) {
            softmax_rows<kPBoost>(ST, Rp, r, ja, jb, pn.full, c_base2, rlo, rhi, mrow, lrow, arow,
                                  (p.dropout_p > 0) ? KEEP : nullptr);
            continue;
          }
#endif
          softmax_rows<0>(ST, Rp, r, ja, jb, pn.full, c_base2, rlo, rhi, mrow, lrow, arow,
                          (p.dropout_p > 0) ? KEEP : nullptr);
        }
        if (shift != 0) {
          const V f = vset(pscale);
          for (i64 r = pn.r0; r < pn.r0 + pn.nv * rows_per_vec; r += W)
            for (i64 j = ja; j < jb; ++j) vstore(ST + j * Rp + r, vmul(vload(ST + j * Rp + r), f));
        }
        // GEMM 2: rescale the accumulators and add P V.
        if (dot) {
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
          pack_p_pairs(ST, Rp, ja / 2, jb / 2, pn.r0, pn.nv, P2);
          for (i64 d = 0, mr = 0; d < Dv; d += mr) {
            mr = tile_rows(kBMR, Dv - d);
            kBGemm2[pn.nv][mr](VP2 + (ja / 2) * Dv + d, Dv, P2 + (ja / 2) * Rp + pn.r0, Rp,
                               (jb - ja) / 2, arow + pn.r0, OT + d * Rp + pn.r0, Rp);
          }
#endif
        } else {
          for (i64 d = 0, mr = 0; d < Dv; d += mr) {
            mr = tile_rows(kMR, Dv - d);
            kGemm2[pn.nv][mr](vblk + ja * ldv + d, ldv, ST + ja * Rp + pn.r0, Rp, jb - ja,
                              arow + pn.r0, OT + d * Rp + pn.r0, Rp);
          }
        }
      }
    }

    // O = O^T / l (times 1 / (1 - p) with dropout); fully masked rows give O = 0, LSE = -inf.
    bool again = false;
    for (i64 r = 0; r < R; ++r) {
      if (pass == 1 && !redo[r]) continue;
      const i64 h = h0 + r / it.ni, i = it.i0 + r % it.ni;
      const float l = lrow[r];
      if (pass == 0 && std::isfinite(mrow[r]) && std::isfinite(l) && l > 0 &&
          any_nonfinite(OT + r, Dv, Rp)) {
        redo[r] = again = true;
        continue;
      }
      if (p.lse) {
        const double lse = double(mrow[r]) * lse_unit + std::log(static_cast<double>(l)) -
                           (dot ? kPBoost * kLn2 : 0.0);
        p.lse[(b * p.heads_q + h) * p.len_q + i] = l == 0 ? kNegInf : static_cast<float>(lse);
      }
      if (Dv == 0) continue;
      if (l == 0) {
        for (i64 d = 0; d < Dv; ++d) tmp[d] = 0.0f;
      } else {
        const double inv = std::ldexp(p.keep_scale / static_cast<double>(l), shift);
        for (i64 d = 0; d < Dv; ++d) tmp[d] = static_cast<float>(OT[d * Rp + r] * inv);
      }
      store_row(elem_type(p), tmp, Dv, p.o, obase + h * p.o_stride[1] + (cq + i) * p.o_stride[2],
                p.o_stride[3]);
    }
    if (!again) break;
    shift = overflow_shift(sb);
  }  // pass
}

}  // namespace

void FLASH_ENTRY(const Params& p, const Item& item, unsigned char* scratch) {
  run_item(p, item, scratch);
}

}  // namespace sdpa::cpu::flash
