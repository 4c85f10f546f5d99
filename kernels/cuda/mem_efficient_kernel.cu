// cuda.mem_efficient on the GPU: a memory-efficient (never materialises S or P) SIMT kernel
// in f32 arithmetic for f32, f16 and bf16, any head dims (Dqk and Dv independent), additive
// and boolean masks, causal top-left and bottom-right (and windows and softcap, which the
// descriptor does not accept: PyTorch's SDPA cannot express them), valid lengths and packed
// rows, GQA, dropout with the reference's Philox keep-mask, and LSE.
//
// Tiling: a thread block of 4 warps takes 16 query rows of one (b, h) and one slab of 128
// output columns; each warp owns 4 rows. Keys come in chunks of 32, one per lane: the chunk's
// K (in slabs of 128 dims) and V (the block's 128 output columns) are staged in shared memory
// as f32, every lane computes its key's logit for the warp's 4 rows, the rows' online softmax
// runs across the warp (shuffles), and each lane accumulates 4 output columns per row. A head
// dim Dv above 128 runs one block per slab of 128 columns; each recomputes the same logits
// and statistics in the same order, so every slab agrees on m and l.
//
// Order of operations per logit (docs/SEMANTICS.md): dot in f32 (sequential over d), times
// scale, softcap, + additive mask; masked keys are -inf. p_j = exp2((s_j - m) log2 e),
// rescales by exp2((m_old - m_new) log2 e), O = acc / l, times 1 / (1 - p) under dropout. No
// atomics and a fixed order: deterministic, and a row's bits depend on its own data only.
//
// UNVERIFIED ON HARDWARE until scripts/gpu-check.sh has run on a GPU (docs/KERNELS.md).
#include <math_constants.h>

#include "kernels/cuda/device_common.cuh"

namespace sdpa::cuda::detail {
namespace {

constexpr const char* kBackend = "cuda.mem_efficient";
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kKeys = 32;                     // keys per chunk: one per lane
constexpr int kDSlab = 128;                   // Q/K head-dim slab staged at once
constexpr int kVCols = 128;                   // output columns per block (4 per lane)
constexpr int kColsPerLane = kVCols / 32;

struct Params {
  i64 batch, heads, heads_kv, len_q, len_kv, dqk, dv;
  const void* q;
  const void* k;
  const void* v;
  void* o;
  i64 qsh, qsr, qsd, ksh, ksr, ksd, vsh, vsr, vsd, osh, osr, osd;  // head, row, dim strides
  BatchArrays rows;                                                // per-batch offsets and lengths
  float scale, softcap;                                            // logit scale; softcap (0 = off)
  Structure structure;                                             // causal and window
  int mask;                                                        // 0 none, 1 bool, 2 additive
  const void* mask_data;                                           // mask element 0
  i64 ms0, ms1, ms2, ms3;                                          // mask strides
  unsigned threshold;               // dropout keep threshold (0 = no dropout)
  float keep_scale;                 // 1 / (1 - p)
  unsigned long long seed, offset;  // Philox key and counter offset
  float* lse;                       // [B, Hq, L] or null
  float p_scale;                    // 2^-shift (overflow guard), 1 normally
  int shift;                        // that shift
  const unsigned char* redo;        // rows to recompute ([B, Hq, L]), or null: all
  unsigned char* overflowed;        // rows whose output overflowed ([B, Hq, L])
  int* overflow_count;              // how many
  i64 m_blocks, slabs;              // row blocks per (b, h), column slabs
};

__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = nan_max(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ inline float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <class T>
__global__ void __launch_bounds__(kThreads) mem_efficient_kernel(Params p) {
  __shared__ float q_s[kRows][kDSlab];
  __shared__ float k_s[kKeys][kDSlab + 1];  // +1: lane-per-key reads hit distinct banks
  __shared__ float v_s[kKeys][kVCols];
  __shared__ float p_s[kWarps][kRowsPerWarp][kKeys];

  i64 idx = blockIdx.x;
  const i64 slab = idx % p.slabs;
  idx /= p.slabs;
  const i64 mb = idx % p.m_blocks;
  idx /= p.m_blocks;
  const i64 h = idx % p.heads;
  const i64 b = idx / p.heads;
  const i64 hk = h / (p.heads / p.heads_kv);
  const i64 lq = p.rows.valid_q[b], skv = p.rows.valid_kv[b];
  const i64 i0 = mb * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const i64 row_base = (b * p.heads + h) * p.len_q;  // LSE / flag index of row 0

  if (p.redo) {  // the overflow guard's second pass: only blocks holding a flagged row
    bool any = false;
    for (int r = 0; r < kRows; ++r) any |= (i0 + r < p.len_q) && p.redo[row_base + i0 + r];
    if (!any) return;
  }

  const T* q = static_cast<const T*>(p.q) + p.rows.q0[b] + h * p.qsh;
  const T* k = static_cast<const T*>(p.k) + p.rows.k0[b] + hk * p.ksh;
  const T* v = static_cast<const T*>(p.v) + p.rows.v0[b] + hk * p.vsh;
  const i64 col0 = slab * kVCols;

  // The chunks of keys any row of this block may attend.
  const KeyBlocks kb = key_blocks(p.structure, i0, kRows, lq, skv, kKeys);

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kColsPerLane];
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -CUDART_INF_F;
    l[rr] = 0;
    for (int c = 0; c < kColsPerLane; ++c) acc[rr][c] = 0;
  }
  const bool q_once = p.dqk <= kDSlab;
  auto stage_q = [&](i64 d0) {
    for (int e = threadIdx.x; e < kRows * kDSlab; e += kThreads) {
      const int r = e / kDSlab, dd = e % kDSlab;
      const i64 i = i0 + r, d = d0 + dd;
      q_s[r][dd] = (i < lq && d < p.dqk) ? Io<T>::in(q[i * p.qsr + d * p.qsd]) : 0.f;
    }
  };
  if (q_once) stage_q(0);

  for (i64 j0 = kb.begin * kKeys; j0 < kb.end * kKeys; j0 += kKeys) {
    // Logits: lane = key j0 + lane, for the warp's rows.
    float s[kRowsPerWarp] = {};
    for (i64 d0 = 0; d0 < p.dqk; d0 += kDSlab) {
      __syncthreads();
      if (!q_once) stage_q(d0);
      for (int e = threadIdx.x; e < kKeys * kDSlab; e += kThreads) {
        const int jj = e / kDSlab, dd = e % kDSlab;
        const i64 j = j0 + jj, d = d0 + dd;
        k_s[jj][dd] = (j < skv && d < p.dqk) ? Io<T>::in(k[j * p.ksr + d * p.ksd]) : 0.f;
      }
      __syncthreads();
      const int dn = p.dqk - d0 < kDSlab ? static_cast<int>(p.dqk - d0) : kDSlab;
      for (int dd = 0; dd < dn; ++dd) {
        const float kv = k_s[lane][dd];
        for (int rr = 0; rr < kRowsPerWarp; ++rr)
          s[rr] = __fadd_rn(s[rr], __fmul_rn(q_s[warp * kRowsPerWarp + rr][dd], kv));
      }
    }
    // This chunk's V columns of the block's slab.
    __syncthreads();
    for (int e = threadIdx.x; e < kKeys * kVCols; e += kThreads) {
      const int jj = e / kVCols, cc = e % kVCols;
      const i64 j = j0 + jj, c = col0 + cc;
      v_s[jj][cc] = (j < skv && c < p.dv) ? Io<T>::in(v[j * p.vsr + c * p.vsd]) : 0.f;
    }
    __syncthreads();
    const i64 j = j0 + lane;
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const i64 i = i0 + warp * kRowsPerWarp + rr;
      float x = -CUDART_INF_F;
      if (i < lq && j < skv && structurally_allowed(p.structure, i, j, lq, skv)) {
        const i64 mo = b * p.ms0 + h * p.ms1 + i * p.ms2 + j * p.ms3;
        if (p.mask != 1 || static_cast<const unsigned char*>(p.mask_data)[mo] != 0) {
          x = __fmul_rn(p.scale, s[rr]);
          if (p.softcap > 0) x = __fmul_rn(p.softcap, tanhf(__fdiv_rn(x, p.softcap)));
          if (p.mask == 2) x = __fadd_rn(x, Io<T>::in(static_cast<const T*>(p.mask_data)[mo]));
        }
      }
      const float m_new = nan_max(m[rr], warp_max(x));
      const float m_use = m_new == -CUDART_INF_F ? 0.f : m_new;
      const float alpha = exp2f(__fmul_rn(__fsub_rn(m[rr], m_use), CUDART_L2E_F));
      float e = __fmul_rn(exp2f(__fmul_rn(__fsub_rn(x, m_use), CUDART_L2E_F)), p.p_scale);
      l[rr] = __fadd_rn(__fmul_rn(alpha, l[rr]), warp_sum(e));
      m[rr] = m_new;
      if (p.threshold && j < skv) {
        const unsigned long long ctr =
            p.offset +
            ((static_cast<unsigned long long>(b) * p.heads + h) * p.len_q + i) *
                static_cast<unsigned long long>(p.len_kv) +
            j;
        if (philox_word0(ctr, p.seed) < p.threshold) e = 0;
      }
      p_s[warp][rr][lane] = e;
      for (int c = 0; c < kColsPerLane; ++c) acc[rr][c] = __fmul_rn(alpha, acc[rr][c]);
    }
    __syncwarp();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      for (int t = 0; t < kKeys; ++t) {
        const float pt = p_s[warp][rr][t];
        if (pt == 0) continue;  // warp-uniform: masked and dropped keys add nothing
        for (int c = 0; c < kColsPerLane; ++c)
          acc[rr][c] = __fadd_rn(acc[rr][c], __fmul_rn(pt, v_s[t][lane + 32 * c]));
      }
    }
    __syncwarp();
  }

  // Epilogue: O = acc / l (times the dropout scale); rows without an attended key are 0.
  T* o = static_cast<T*>(p.o) + p.rows.o0[b] + h * p.osh;
  const i64 o_rows = p.rows.o_rows[b];
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const i64 i = i0 + warp * kRowsPerWarp + rr;
    if (i >= p.len_q) continue;
    if (p.redo && !p.redo[row_base + i]) continue;
    const bool attended = m[rr] != -CUDART_INF_F && i < lq;
    const float inv = attended ? __fdiv_rn(p.keep_scale, l[rr]) : 0.f;
    bool bad = false;
    for (int c = 0; c < kColsPerLane; ++c) {
      const i64 col = col0 + lane + 32 * c;
      const float out = attended ? __fmul_rn(acc[rr][c], inv) : 0.f;
      bad |= col < p.dv && !isfinite(out);
      if (i < o_rows && col < p.dv) o[i * p.osr + col * p.osd] = Io<T>::out(out);
    }
    bad = __any_sync(0xffffffffu, bad);
    const bool stats_finite = isfinite(m[rr]) && isfinite(l[rr]);
    if (lane == 0) {
      if (bad && stats_finite && !p.redo) {
        p.overflowed[row_base + i] = 1;
        atomicAdd(p.overflow_count, 1);
      }
      if (slab == 0 && p.lse) {
        p.lse[row_base + i] = attended
                                  ? __fadd_rn(m[rr], __fadd_rn(logf(l[rr]), p.shift * CUDART_LN2_F))
                                  : -CUDART_INF_F;
      }
    }
  }
}

template <class T>
void run_typed(const AttentionPlan& pl) {
  if (pl.batch == 0 || pl.heads_q == 0 || pl.len_q == 0) return;
  const DeviceBatchArrays batch_arrays(kBackend, pl);
  const i64 rows_total = pl.batch * pl.heads_q * pl.len_q;
  const OverflowFlags flags = overflow_flags(kBackend, rows_total);

  Params p{};
  p.batch = pl.batch;
  p.heads = pl.heads_q;
  p.heads_kv = pl.heads_kv;
  p.len_q = pl.len_q;
  p.len_kv = pl.len_kv;
  p.dqk = pl.dqk;
  p.dv = pl.dv;
  p.q = pl.q.data;
  p.k = pl.k.data;
  p.v = pl.v.data;
  p.o = const_cast<void*>(pl.o.data);
  p.qsh = pl.q.stride_h, p.qsr = pl.q.stride_row, p.qsd = pl.q.stride_d;
  p.ksh = pl.k.stride_h, p.ksr = pl.k.stride_row, p.ksd = pl.k.stride_d;
  p.vsh = pl.v.stride_h, p.vsr = pl.v.stride_row, p.vsd = pl.v.stride_d;
  p.osh = pl.o.stride_h, p.osr = pl.o.stride_row, p.osd = pl.o.stride_d;
  p.rows = batch_arrays.get();
  p.scale = static_cast<float>(pl.scale);
  p.softcap = static_cast<float>(pl.softcap);
  p.structure = structure_of(pl);
  p.mask = pl.mask;
  p.mask_data = pl.mask_data;
  p.ms0 = pl.mask_stride[0], p.ms1 = pl.mask_stride[1], p.ms2 = pl.mask_stride[2],
  p.ms3 = pl.mask_stride[3];
  p.threshold = pl.dropout_threshold;
  p.keep_scale = pl.dropout_threshold ? static_cast<float>(1.0 / (1.0 - pl.dropout_p)) : 1.f;
  p.seed = pl.dropout_seed;
  p.offset = pl.dropout_offset;
  p.lse = pl.lse;
  p.p_scale = 1;
  p.shift = 0;
  p.redo = nullptr;
  p.overflowed = flags.rows;
  p.overflow_count = flags.count;
  p.m_blocks = (pl.len_q + kRows - 1) / kRows;
  p.slabs = pl.dv > 0 ? (pl.dv + kVCols - 1) / kVCols : 1;
  const unsigned grid = grid_x(pl.batch * pl.heads_q * p.m_blocks * p.slabs, kBackend);
  mem_efficient_kernel<T><<<grid, kThreads>>>(p);
  check_cuda(kBackend, "mem_efficient_kernel launch", cudaGetLastError());
  if (read_count(kBackend, flags.count) >
      0) {  // the overflow guard's second pass, for the flagged rows only
    p.shift = overflow_shift(pl.len_kv);
    p.p_scale = ldexpf(1.f, -p.shift);
    p.redo = flags.rows;
    mem_efficient_kernel<T><<<grid, kThreads>>>(p);
    check_cuda(kBackend, "mem_efficient_kernel launch (overflow guard)", cudaGetLastError());
  }
  check_cuda(kBackend, "cudaDeviceSynchronize", cudaDeviceSynchronize());
}

}  // namespace

void run_mem_efficient_plan(const AttentionPlan& plan, const LaunchDevice&) {
  switch (plan.dtype) {
    case 0:
      return run_typed<float>(plan);
    case 1:
      return run_typed<__half>(plan);
    case 2:
      return run_typed<__nv_bfloat16>(plan);
  }
  throw std::runtime_error("cuda.mem_efficient: element type not supported by this kernel");
}

}  // namespace sdpa::cuda::detail
