// cuda.flash's kernel body: a FlashAttention-2 style forward pass on tensor cores (sm80+),
// f16 and bf16, head dims up to 256 (compiled for 64, 128 and 256; smaller dims are
// zero-padded in shared memory), causal top-left and bottom-right, sliding windows, softcap,
// GQA / MQA, padded and packed variable lengths, dropout with the reference's Philox
// keep-mask, LSE, and split-KV for decode shapes. Written in simt.hpp's operations, so that
// flash_kernel.cu runs it on a GPU and the host emulator (kernels/cuda/emulator/) runs the
// same code on a CPU for the tests.
//
// Tiling: one thread block of 8 warps takes 128 query rows of one (b, h); each warp owns 16
// rows. Keys come in blocks of 64. Q (once), K and V tiles are copied to shared memory with
// cp.async (16-byte chunks, XOR-swizzled rows; an element-wise path when rows are not 16-byte
// aligned), K of the next block in flight while P V runs and V while Q K^T runs.
//   S = Q K^T: mma.sync m16n8k16 (f32 accumulators), A from ldmatrix on Q, B from ldmatrix
//   on K rows (K row-major is B column-major).
//   Online softmax in f32 on the accumulator fragments: x = scale * s, softcap, masks (-inf),
//   row max across the four lanes of a row (NaN-propagating), p = exp2((x - m) log2 e),
//   running sums per lane, rescale of O by exp2((m_old - m_new) log2 e).
//   P rounded to the input type (the precision contract) is the A operand of O += P V
//   directly from the S fragments; V's B operand comes from ldmatrix.trans.
// The row sum l uses P before rounding and before dropout; O = acc / l, times 1 / (1 - p)
// under dropout. Key blocks wholly outside every row's allowed range are skipped; blocks
// wholly inside skip the per-element mask (tile_schedule.hpp).
//
// Split-KV: when the (b, h, row-block) tiles fill less than the device twice, the key
// blocks are split among blocks that write unnormalised partials (acc, m, l); a combine
// kernel merges them in split order. The split count depends on the shape and the device's
// SM count only: same bits on every run on one device.
//
// Overflow guard: a row whose output is not finite while its max and sum are is flagged and
// computed again with every p scaled by 2^-shift (docs/KERNELS.md, "CUDA").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/fused_params.hpp"
#include "kernels/cuda/keep_mask.hpp"
#include "kernels/cuda/plan.hpp"
#include "kernels/cuda/simt.hpp"
#include "kernels/cuda/swizzle.hpp"
#include "kernels/cuda/tile_schedule.hpp"

namespace sdpa::cuda::detail {
namespace flash {

// A block is kWarps warps of 16 query rows each: 8 (128 rows), or 4 (64 rows) where the
// device's shared memory per block cannot hold the 8-warp tiles of a head dim (head dim 256
// on sm86, sm89 and sm12x: 128 KiB against 99 KiB), as FlashAttention-2 takes smaller tiles
// there. launch_needs() says which a problem takes.
constexpr int kMaxWarps = 8;
constexpr int kBlockN = 64;  // keys per key block

struct FlashParams : FusedParams {
  bool vec;       // every row is 16-byte aligned: cp.async loads
  i64 m_blocks;   // row blocks per (b, h)
  int splits;     // key splits per row block (1: no split)
  float* part_o;  // splits > 1: [splits][B Hq L][dv] unnormalised acc
  float* part_m;  // [splits][B Hq L] row max
  float* part_l;  // [splits][B Hq L] row sum
};

// Whether any of the four lanes of this lane's row (a quad) passed true.
SDPA_CTS_KERNEL_FN bool quad_any(bool x) {
  float v = x ? 1.f : 0.f;
  v = fadd_rn(v, shfl_xor(v, 1));
  v = fadd_rn(v, shfl_xor(v, 2));
  return v != 0.f;
}

// Copies rows [row0, row0 + R) x head dims [0, kD) of a tensor into a swizzled tile;
// rows >= valid and dims >= dim are zero.
template <class T, int kD, int R, int kThreads>
SDPA_CTS_KERNEL_FN void load_tile(T* tile, const T* src, i64 row0, i64 valid, i64 dim, i64 sr,
                                  i64 sd, bool vec) {
  if (vec) {
    constexpr int kChunks = kD / 8;
    for (int e = thread_x(); e < R * kChunks; e += kThreads) {
      const int r = e / kChunks, c = e % kChunks;
      const i64 row = row0 + r;
      const bool ok = row < valid && c * 8 < dim;
      const T* g = ok ? src + row * sr + c * 8 : src;
      cp_async_16(tile + swizzled<kD>(r, c * 8), g, ok ? 16 : 0);
    }
  } else {
    for (int e = thread_x(); e < R * kD; e += kThreads) {
      const int r = e / kD, d = e % kD;
      const i64 row = row0 + r;
      tile[swizzled<kD>(r, d)] =
          (row < valid && d < dim) ? src[row * sr + d * sd] : from_float<T>(0.f);
    }
  }
}

// One thread of a flash block (kWarps * 32 threads per block, (kBlockM + 2 kBlockN) kD
// elements of shared memory).
template <class T, int kD, int kWarps>
SDPA_CTS_KERNEL_FN void flash_block(const FlashParams& p, unsigned char* smem) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kBlockM = kWarps * 16;  // query rows per thread block
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = q_s + kBlockM * kD;
  T* v_s = k_s + kBlockN * kD;

  i64 idx = block_x();
  const int split = static_cast<int>(idx % p.splits);
  idx /= p.splits;
  const i64 mb = idx % p.m_blocks;
  const i64 bh = idx / p.m_blocks;
  const i64 h = bh % p.heads, b = bh / p.heads;
  const i64 lq = p.rows.valid_q[b], skv = p.rows.valid_kv[b];
  const i64 i0 = mb * kBlockM;
  const i64 row_base = bh * p.len_q;  // LSE / flag index of row 0
  const int warp = thread_x() / 32, lane = thread_x() % 32;
  const int g = lane / 4, t = lane % 4;

  if (!block_has_work(p, row_base, i0, kBlockM)) return;
  const HeadInputs<T> in = head_inputs<T>(p, b, h);
  const T* q = in.q;
  const T* k = in.k;
  const T* v = in.v;

  // Key blocks: those any valid row of this block may attend, then this split's share.
  KeyBlocks kb = key_blocks(p.structure, i0, kBlockM, lq, skv, kBlockN);
  split_key_blocks(kb, p.splits, split);
  const i64 nb_begin = kb.begin, nb_end = kb.end;

  const i64 warp_row0 = i0 + warp * 16;
  const bool warp_active = warp_row0 < lq;  // a warp whose rows are all padding skips the math
  const int ksteps = static_cast<int>((p.dqk + 15) / 16);
  const int vtiles = static_cast<int>((p.dv + 15) / 16);

  float acc[kD / 8][4];
  SDPA_CTS_UNROLL
  for (int n = 0; n < kD / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0;
  float m_run[2] = {-kInf, -kInf}, l_run[2] = {0, 0};

  if (nb_begin < nb_end) {
    load_tile<T, kD, kBlockM, kThreads>(q_s, q, i0, lq, p.dqk, p.qsr, p.qsd, p.vec);
    load_tile<T, kD, kBlockN, kThreads>(k_s, k, nb_begin * kBlockN, skv, p.dqk, p.ksr, p.ksd,
                                        p.vec);
    cp_async_commit();
  }
  for (i64 nb = nb_begin; nb < nb_end; ++nb) {
    const i64 j0 = nb * kBlockN;
    cp_async_wait<0>();
    sync_threads();
    load_tile<T, kD, kBlockN, kThreads>(v_s, v, j0, skv, p.dv, p.vsr, p.vsd, p.vec);
    cp_async_commit();

    // S = Q K^T for the warp's 16 rows and the block's 64 keys.
    float s[kBlockN / 8][4];
    SDPA_CTS_UNROLL
    for (int n = 0; n < kBlockN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0;
    if (warp_active) {
      SDPA_CTS_UNROLL
      for (int ks = 0; ks < kD / 16; ++ks) {
        if (ks >= ksteps) break;
        unsigned a[4];
        ldmatrix_x4(a, q_s + swizzled<kD>(warp * 16 + (lane % 8) + ((lane / 8) & 1) * 8,
                                          ks * 16 + (lane / 16) * 8));
        SDPA_CTS_UNROLL
        for (int np = 0; np < kBlockN / 16; ++np) {
          unsigned bb[4];
          ldmatrix_x4(bb, k_s + swizzled<kD>(np * 16 + (lane % 8) + (lane / 16) * 8,
                                             ks * 16 + ((lane / 8) & 1) * 8));
          mma_16816<T>(s[2 * np], a, bb[0], bb[1]);
          mma_16816<T>(s[2 * np + 1], a, bb[2], bb[3]);
        }
      }
    }
    sync_threads();  // every warp is done with K: the next block's K may land
    if (nb + 1 < nb_end) {
      load_tile<T, kD, kBlockN, kThreads>(k_s, k, j0 + kBlockN, skv, p.dqk, p.ksr, p.ksd, p.vec);
    }
    cp_async_commit();

    unsigned pa[kBlockN / 16][4];  // P as the A operand of P V
    if (warp_active) {
      const bool need_mask = block_needs_mask(kb, j0, kBlockN, skv);
      float mx[2] = {-kInf, -kInf};
      SDPA_CTS_UNROLL
      for (int n = 0; n < kBlockN / 8; ++n) {
        SDPA_CTS_UNROLL
        for (int e = 0; e < 4; ++e) {
          float x = fmul_rn(p.scale, s[n][e]);
          if (p.softcap > 0) x = fmul_rn(p.softcap, tanh_f(fdiv_rn(x, p.softcap)));
          if (need_mask) {
            const i64 i = warp_row0 + g + (e / 2) * 8;
            const i64 j = j0 + n * 8 + t * 2 + (e % 2);
            if (!(i < lq && j < skv && attends(p.structure, i, j, lq, skv))) x = -kInf;
          }
          s[n][e] = x;
          mx[e / 2] = nan_max(mx[e / 2], x);
        }
      }
      float alpha[2], m_use[2];
      SDPA_CTS_UNROLL
      for (int r = 0; r < 2; ++r) {
        mx[r] = nan_max(mx[r], shfl_xor(mx[r], 1));
        mx[r] = nan_max(mx[r], shfl_xor(mx[r], 2));
        const float m_new = nan_max(m_run[r], mx[r]);
        m_use[r] = m_new == -kInf ? 0.f : m_new;
        alpha[r] = exp2_f(fmul_rn(fsub_rn(m_run[r], m_use[r]), kLog2e));
        m_run[r] = m_new;
        l_run[r] = fmul_rn(alpha[r], l_run[r]);
      }
      // Dropout keep bits of this lane's 32 elements (bit 4n + e), in a loop that is not
      // unrolled: one Philox call each.
      static_assert(kBlockN / 8 * 4 == 32, "one keep bit per accumulator element");
      unsigned keep = 0xffffffffu;
      if (p.threshold) {
        keep = 0;
        SDPA_CTS_NO_UNROLL
        for (int q = 0; q < 32; ++q) {
          const i64 i = warp_row0 + g + ((q % 4) / 2) * 8;
          const i64 j = j0 + (q / 4) * 8 + t * 2 + (q % 2);
          if (j >= skv || philox_word0(keep_counter(p.offset, bh, p.len_q, p.len_kv, i, j),
                                       p.seed) >= p.threshold)
            keep |= 1u << q;
        }
      }
      SDPA_CTS_UNROLL
      for (int n = 0; n < kBlockN / 8; ++n) {
        float pe[4];
        SDPA_CTS_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int r = e / 2;
          pe[e] = fmul_rn(exp2_f(fmul_rn(fsub_rn(s[n][e], m_use[r]), kLog2e)), p.p_scale);
          l_run[r] = fadd_rn(l_run[r], pe[e]);
          if (!((keep >> (n * 4 + e)) & 1u)) pe[e] = 0;
        }
        // S fragment n holds keys 8n .. 8n+7: the low or high half of A's k-step n / 2.
        pa[n / 2][(n % 2) * 2 + 0] = pack2<T>(pe[0], pe[1]);
        pa[n / 2][(n % 2) * 2 + 1] = pack2<T>(pe[2], pe[3]);
      }
      SDPA_CTS_UNROLL
      for (int n = 0; n < kD / 8; ++n) {
        acc[n][0] = fmul_rn(alpha[0], acc[n][0]);
        acc[n][1] = fmul_rn(alpha[0], acc[n][1]);
        acc[n][2] = fmul_rn(alpha[1], acc[n][2]);
        acc[n][3] = fmul_rn(alpha[1], acc[n][3]);
      }
    }
    cp_async_wait<1>();  // V of this block has landed (the next K may still be in flight)
    sync_threads();
    if (warp_active) {
      SDPA_CTS_UNROLL
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        SDPA_CTS_UNROLL
        for (int dp = 0; dp < kD / 16; ++dp) {
          if (dp >= vtiles) break;
          unsigned bb[4];
          ldmatrix_x4_trans(bb, v_s + swizzled<kD>(kk * 16 + (lane % 8) + ((lane / 8) & 1) * 8,
                                                   dp * 16 + (lane / 16) * 8));
          mma_16816<T>(acc[2 * dp], pa[kk], bb[0], bb[1]);
          mma_16816<T>(acc[2 * dp + 1], pa[kk], bb[2], bb[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // Epilogue. Row sums are partial per lane: add the row's four lanes.
  SDPA_CTS_UNROLL
  for (int r = 0; r < 2; ++r) {
    l_run[r] = fadd_rn(l_run[r], shfl_xor(l_run[r], 1));
    l_run[r] = fadd_rn(l_run[r], shfl_xor(l_run[r], 2));
  }
  if (p.splits > 1) {  // unnormalised partials for the combine kernel
    const i64 rows_total = static_cast<i64>(grid_dim_x() / p.splits / p.m_blocks) * p.len_q;
    SDPA_CTS_UNROLL
    for (int r = 0; r < 2; ++r) {
      const i64 i = warp_row0 + g + r * 8;
      if (i >= p.len_q) continue;
      const i64 row = split * rows_total + row_base + i;
      float* po = p.part_o + row * p.dv;
      SDPA_CTS_UNROLL
      for (int n = 0; n < kD / 8; ++n) {
        for (int e = 0; e < 2; ++e) {
          const int col = n * 8 + t * 2 + e;
          if (col < p.dv) po[col] = acc[n][r * 2 + e];
        }
      }
      if (t == 0) {
        p.part_m[row] = i < lq ? m_run[r] : -kInf;
        p.part_l[row] = l_run[r];
      }
    }
    return;
  }
  T* o = static_cast<T*>(p.o) + p.rows.o0[b] + h * p.osh;
  const i64 o_rows = p.rows.o_rows[b];
  SDPA_CTS_UNROLL
  for (int r = 0; r < 2; ++r) {
    const i64 i = warp_row0 + g + r * 8;
    const bool row_in = i < p.len_q && !(p.redo && !p.redo[row_base + i]);
    const bool attended = m_run[r] != -kInf && i < lq;
    const float inv = attended ? fdiv_rn(p.keep_scale, l_run[r]) : 0.f;
    bool bad = false;
    SDPA_CTS_UNROLL
    for (int n = 0; n < kD / 8; ++n) {
      for (int e = 0; e < 2; ++e) {
        const i64 col = n * 8 + t * 2 + e;
        const float out = attended ? fmul_rn(acc[n][r * 2 + e], inv) : 0.f;
        if (col < p.dv) {
          bad |= !is_finite(out);
          if (row_in && i < o_rows) o[i * p.osr + col * p.osd] = from_float<T>(out);
        }
      }
    }
    bad = quad_any(bad);
    if (t == 0 && row_in) {
      if (bad && !p.redo && is_finite(m_run[r]) && is_finite(l_run[r])) {
        p.overflowed[row_base + i] = 1;
        atomic_add(p.overflow_count, 1);
      }
      if (p.lse) {
        p.lse[row_base + i] =
            attended ? fadd_rn(m_run[r], fadd_rn(log_f(l_run[r]), p.shift * kLn2)) : -kInf;
      }
    }
  }
}

// One thread of a combine block: merges the split partials of row block_x() in split order.
// `weight` is shared memory for kMaxSplits floats; `threads` the block's size.
template <class T>
SDPA_CTS_KERNEL_FN void combine_row(const FlashParams& p, i64 rows_total, float* weight,
                                    int threads) {
  const i64 row = block_x();  // (b h) L + i
  const i64 i = row % p.len_q, bh = row / p.len_q;
  const i64 h = bh % p.heads, b = bh / p.heads;
  float m = -kInf;
  for (int s = 0; s < p.splits; ++s) m = nan_max(m, p.part_m[s * rows_total + row]);
  const bool attended = m != -kInf;
  float l = 0;
  for (int s = 0; s < p.splits; ++s) {
    const float ms = p.part_m[s * rows_total + row];
    // A split without an attended key weighs 0; NaN statistics propagate through exp2.
    const float w = ms == -kInf ? 0.f : exp2_f(fmul_rn(fsub_rn(ms, m), kLog2e));
    if (thread_x() == 0) weight[s] = w;
    l = fadd_rn(l, fmul_rn(w, p.part_l[s * rows_total + row]));
  }
  sync_threads();
  const float inv = attended ? fdiv_rn(p.keep_scale, l) : 0.f;
  T* o = static_cast<T*>(p.o) + p.rows.o0[b] + h * p.osh;
  const bool write = i < p.rows.o_rows[b];
  int bad = 0;
  for (i64 c = thread_x(); c < p.dv; c += threads) {
    float sum = 0;
    for (int s = 0; s < p.splits; ++s)
      sum = fadd_rn(sum, fmul_rn(weight[s], p.part_o[(s * rows_total + row) * p.dv + c]));
    const float out = attended ? fmul_rn(sum, inv) : 0.f;
    bad |= !is_finite(out);
    if (write) o[i * p.osr + c * p.osd] = from_float<T>(out);
  }
  bad = sync_threads_or(bad);
  if (thread_x() == 0) {
    if (bad && is_finite(m) && is_finite(l)) {
      p.overflowed[row] = 1;
      atomic_add(p.overflow_count, 1);
    }
    if (p.lse) p.lse[row] = attended ? fadd_rn(m, log_f(l)) : -kInf;
  }
}

constexpr int kMaxSplits = 64;
constexpr int kCombineThreads = 128;

// Whether every row of a tensor starts 16-byte aligned (cp.async's chunk): its element 0,
// its head and row strides (in 2-byte elements) and each batch element's row 0.
inline bool aligned16(const void* base, const std::int64_t stride[4], const long long* row0,
                      i64 batch) {
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return false;
  if (stride[3] != 1 || stride[1] % 8 != 0 || stride[2] % 8 != 0) return false;
  for (i64 b = 0; b < batch; ++b)
    if (row0[b] % 8 != 0) return false;
  return true;
}

// Shared memory of a flash block, in bytes.
constexpr std::size_t smem_bytes(std::size_t element_bytes, int kd, int warps) {
  return static_cast<std::size_t>(warps * 16 + 2 * kBlockN) * kd * element_bytes;
}

// The kernels as bodies a runtime launches (one thread's work, given the block's shared
// memory): a block of kWarps * 16 query rows, and a combine block of one row's split partials.
template <class T, int kD, int kWarps>
struct FlashBlock {
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMinBlocks = 1;  // 255 registers: one block per SM
  static constexpr std::size_t kSmemBytes = smem_bytes(sizeof(T), kD, kWarps);
  FlashParams p;
  SDPA_CTS_KERNEL_FN void operator()(unsigned char* smem) const {
    flash_block<T, kD, kWarps>(p, smem);
  }
};
template <class T>
struct FlashCombine {
  static constexpr int kThreads = kCombineThreads;
  static constexpr int kMinBlocks = 1;
  static constexpr std::size_t kSmemBytes = sizeof(float) * kMaxSplits;
  FlashParams p;
  i64 rows_total;
  SDPA_CTS_KERNEL_FN void operator()(unsigned char* smem) const {
    combine_row<T>(p, rows_total, reinterpret_cast<float*>(smem), kThreads);
  }
};

// The head dim a problem's tiles are padded to: 64, 128 or 256.
inline int padded_head_dim(i64 dim) { return dim <= 64 ? 64 : dim <= 128 ? 128 : 256; }

// Warps per block: 8 when their tiles fit the device's shared memory per block
// (`smem_limit`, 0 = unknown: 8), else 4. Head dim 64's 8-warp tiles (32 KiB) fit every
// device, so only 128 and 256 have a 4-warp instance.
inline int block_warps(std::size_t element_bytes, i64 dim, std::size_t smem_limit) {
  const int kd = padded_head_dim(dim);
  if (kd == 64 || smem_limit == 0 || smem_bytes(element_bytes, kd, kMaxWarps) <= smem_limit) {
    return kMaxWarps;
  }
  return kMaxWarps / 2;
}

// The block configuration a problem takes on a device (the launch below), and what one block
// of it needs of a multiprocessor.
inline LaunchNeeds launch_needs(std::size_t element_bytes, i64 dim, std::size_t smem_limit) {
  const int kd = padded_head_dim(dim), warps = block_warps(element_bytes, dim, smem_limit);
  static const char* const names[2][3] = {
      {"head dims up to 64, 8 warps", "head dims up to 128, 8 warps",
       "head dims up to 256, 8 warps"},
      {"head dims up to 64, 4 warps", "head dims up to 128, 4 warps",
       "head dims up to 256, 4 warps"}};
  return {names[warps == kMaxWarps ? 0 : 1][kd == 64    ? 0
                                            : kd == 128 ? 1
                                                        : 2],
          smem_bytes(element_bytes, kd, warps), warps * 32, 255};
}

// The host side of a cuda.flash call, wherever the kernels run. `Runtime` gives memory and
// launches (cuda_runtime.cuh on a GPU, the emulator's on the host): see docs/KERNELS.md,
// "Adding a CUDA fused kernel".
template <class T, class Runtime>
void run(const sdpa_cts_params& pl, const LaunchDevice& dev, Runtime& rt) {
  if (pl.batch == 0 || pl.heads_q == 0 || pl.len_q == 0) return;
  const i64 dim = std::max(pl.head_dim_qk, pl.head_dim_v);
  if (dim > 256) throw std::runtime_error("cuda.flash: head dim above 256");
  const i64 rows_total = pl.batch * pl.heads_q * pl.len_q;
  const OverflowFlags flags = rt.overflow_flags(rows_total);
  const std::vector<long long> batch = batch_arrays_host(pl);
  const BatchArrays host = batch_arrays_at(batch.data(), pl.batch);

  FlashParams p{};
  fill_fused_params(pl, rt.batch_arrays(batch, pl.batch), flags, p);
  p.vec = pl.head_dim_qk % 8 == 0 && pl.head_dim_v % 8 == 0 &&
          aligned16(pl.q, pl.q_stride, host.q0, pl.batch) &&
          aligned16(pl.k, pl.k_stride, host.k0, pl.batch) &&
          aligned16(pl.v, pl.v_stride, host.v0, pl.batch);
  const int warps = block_warps(sizeof(T), dim, dev.smem_per_block);
  const i64 block_m = warps * 16;
  p.m_blocks = (pl.len_q + block_m - 1) / block_m;
  const i64 tiles = pl.batch * pl.heads_q * p.m_blocks;
  p.splits =
      choose_splits(tiles, (pl.len_kv + kBlockN - 1) / kBlockN, rt.sm_count(dev), kMaxSplits);

  auto launch = [&](FlashParams& params) {
    if (params.splits > 1) {
      params.part_o = static_cast<float*>(
          rt.scratch(2, sizeof(float) * params.splits * rows_total * pl.head_dim_v + 16));
      auto* stats =
          static_cast<float*>(rt.scratch(3, sizeof(float) * 2 * params.splits * rows_total));
      params.part_m = stats;
      params.part_l = stats + params.splits * rows_total;
    }
    const i64 blocks = tiles * params.splits;
    const bool full = warps == kMaxWarps;
    if (dim <= 64) {
      rt.launch(FlashBlock<T, 64, kMaxWarps>{params}, blocks);
    } else if (dim <= 128) {
      full ? rt.launch(FlashBlock<T, 128, kMaxWarps>{params}, blocks)
           : rt.launch(FlashBlock<T, 128, kMaxWarps / 2>{params}, blocks);
    } else {
      full ? rt.launch(FlashBlock<T, 256, kMaxWarps>{params}, blocks)
           : rt.launch(FlashBlock<T, 256, kMaxWarps / 2>{params}, blocks);
    }
    if (params.splits > 1) rt.launch(FlashCombine<T>{params, rows_total}, rows_total);
  };
  launch(p);
  if (rt.read_count(flags.count) > 0) {  // the overflow guard, flagged rows only
    prepare_overflow_pass(pl, flags, p);
    p.splits = 1;
    launch(p);
  }
  rt.finish();
}

// cuda.flash on the lowered problem: f16 and bf16.
template <class Runtime>
void run_lowered(const sdpa_cts_params& pl, const LaunchDevice& dev, Runtime& rt) {
  switch (pl.dtype) {
    case SDPA_CTS_DTYPE_F16:
      return run<f16_t>(pl, dev, rt);
    case SDPA_CTS_DTYPE_BF16:
      return run<bf16_t>(pl, dev, rt);
  }
  throw std::runtime_error("cuda.flash: element type not supported by this kernel");
}

}  // namespace flash
}  // namespace sdpa::cuda::detail
