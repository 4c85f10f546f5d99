// cuda.mem_efficient's kernel body: a memory-efficient (never materialises S or P) SIMT kernel
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
//
// Written in simt.hpp's operations: mem_efficient_kernel.cu runs it on a GPU, the host
// emulator (kernels/cuda/emulator/) runs the same code for the tests.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/fused_params.hpp"
#include "kernels/cuda/keep_mask.hpp"
#include "kernels/cuda/plan.hpp"
#include "kernels/cuda/simt.hpp"
#include "kernels/cuda/tile_schedule.hpp"

namespace sdpa::cuda::detail {
namespace mem_efficient {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kKeys = 32;                     // keys per chunk: one per lane
constexpr int kDSlab = 128;                   // Q/K head-dim slab staged at once
constexpr int kVCols = 128;                   // output columns per block (4 per lane)
constexpr int kColsPerLane = kVCols / 32;

struct MemEfficientParams : FusedParams {
  int mask;                // SDPA_CTS_MASK_*
  const void* mask_data;   // mask element 0
  i64 ms0, ms1, ms2, ms3;  // mask strides
  i64 m_blocks, slabs;     // row blocks per (b, h), column slabs
};

SDPA_CTS_KERNEL_FN float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = nan_max(x, shfl_xor(x, o));
  return x;
}
SDPA_CTS_KERNEL_FN float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x = fadd_rn(x, shfl_xor(x, o));
  return x;
}

// The block's shared memory.
struct SharedTiles {
  float q_s[kRows][kDSlab];
  float k_s[kKeys][kDSlab + 1];  // +1: lane-per-key reads hit distinct banks
  float v_s[kKeys][kVCols];
  float p_s[kWarps][kRowsPerWarp][kKeys];
};

// One thread of a mem-efficient block (kThreads per block, a SharedTiles of shared memory).
template <class T>
SDPA_CTS_KERNEL_FN void mem_efficient_block(const MemEfficientParams& p, SharedTiles& sm) {
  auto& q_s = sm.q_s;
  auto& k_s = sm.k_s;
  auto& v_s = sm.v_s;
  auto& p_s = sm.p_s;

  i64 idx = block_x();
  const i64 slab = idx % p.slabs;
  idx /= p.slabs;
  const i64 mb = idx % p.m_blocks;
  idx /= p.m_blocks;
  const i64 h = idx % p.heads;
  const i64 b = idx / p.heads;
  const i64 lq = p.rows.valid_q[b], skv = p.rows.valid_kv[b];
  const i64 i0 = mb * kRows;
  const int warp = thread_x() / 32, lane = thread_x() % 32;
  const i64 row_base = (b * p.heads + h) * p.len_q;  // LSE / flag index of row 0

  if (!block_has_work(p, row_base, i0, kRows)) return;
  const HeadInputs<T> in = head_inputs<T>(p, b, h);
  const T* q = in.q;
  const T* k = in.k;
  const T* v = in.v;
  const i64 col0 = slab * kVCols;

  // The chunks of keys any row of this block may attend.
  const KeyBlocks kb = key_blocks(p.structure, i0, kRows, lq, skv, kKeys);

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kColsPerLane];
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -kInf;
    l[rr] = 0;
    for (int c = 0; c < kColsPerLane; ++c) acc[rr][c] = 0;
  }
  const bool q_once = p.dqk <= kDSlab;
  auto stage_q = [&](i64 d0) {
    for (int e = thread_x(); e < kRows * kDSlab; e += kThreads) {
      const int r = e / kDSlab, dd = e % kDSlab;
      const i64 i = i0 + r, d = d0 + dd;
      q_s[r][dd] = (i < lq && d < p.dqk) ? to_float(q[i * p.qsr + d * p.qsd]) : 0.f;
    }
  };
  if (q_once) stage_q(0);

  for (i64 j0 = kb.begin * kKeys; j0 < kb.end * kKeys; j0 += kKeys) {
    // Logits: lane = key j0 + lane, for the warp's rows.
    float s[kRowsPerWarp] = {};
    for (i64 d0 = 0; d0 < p.dqk; d0 += kDSlab) {
      sync_threads();
      if (!q_once) stage_q(d0);
      for (int e = thread_x(); e < kKeys * kDSlab; e += kThreads) {
        const int jj = e / kDSlab, dd = e % kDSlab;
        const i64 j = j0 + jj, d = d0 + dd;
        k_s[jj][dd] = (j < skv && d < p.dqk) ? to_float(k[j * p.ksr + d * p.ksd]) : 0.f;
      }
      sync_threads();
      const int dn = p.dqk - d0 < kDSlab ? static_cast<int>(p.dqk - d0) : kDSlab;
      for (int dd = 0; dd < dn; ++dd) {
        const float kv = k_s[lane][dd];
        for (int rr = 0; rr < kRowsPerWarp; ++rr)
          s[rr] = fadd_rn(s[rr], fmul_rn(q_s[warp * kRowsPerWarp + rr][dd], kv));
      }
    }
    // This chunk's V columns of the block's slab.
    sync_threads();
    for (int e = thread_x(); e < kKeys * kVCols; e += kThreads) {
      const int jj = e / kVCols, cc = e % kVCols;
      const i64 j = j0 + jj, c = col0 + cc;
      v_s[jj][cc] = (j < skv && c < p.dv) ? to_float(v[j * p.vsr + c * p.vsd]) : 0.f;
    }
    sync_threads();
    const i64 j = j0 + lane;
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const i64 i = i0 + warp * kRowsPerWarp + rr;
      float x = -kInf;
      if (i < lq && j < skv && attends(p.structure, i, j, lq, skv)) {
        const i64 mo = b * p.ms0 + h * p.ms1 + i * p.ms2 + j * p.ms3;
        if (p.mask != SDPA_CTS_MASK_BOOL ||
            static_cast<const unsigned char*>(p.mask_data)[mo] != 0) {
          x = fmul_rn(p.scale, s[rr]);
          if (p.softcap > 0) x = fmul_rn(p.softcap, tanh_f(fdiv_rn(x, p.softcap)));
          if (p.mask == SDPA_CTS_MASK_ADDITIVE)
            x = fadd_rn(x, to_float(static_cast<const T*>(p.mask_data)[mo]));
        }
      }
      const float m_new = nan_max(m[rr], warp_max(x));
      const float m_use = m_new == -kInf ? 0.f : m_new;
      const float alpha = exp2_f(fmul_rn(fsub_rn(m[rr], m_use), kLog2e));
      float e = fmul_rn(exp2_f(fmul_rn(fsub_rn(x, m_use), kLog2e)), p.p_scale);
      l[rr] = fadd_rn(fmul_rn(alpha, l[rr]), warp_sum(e));
      m[rr] = m_new;
      if (p.threshold && j < skv) {
        if (philox_word0(keep_counter(p.offset, b * p.heads + h, p.len_q, p.len_kv, i, j), p.seed) <
            p.threshold)
          e = 0;
      }
      p_s[warp][rr][lane] = e;
      for (int c = 0; c < kColsPerLane; ++c) acc[rr][c] = fmul_rn(alpha, acc[rr][c]);
    }
    sync_warp();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      for (int t = 0; t < kKeys; ++t) {
        const float pt = p_s[warp][rr][t];
        if (pt == 0) continue;  // warp-uniform: masked and dropped keys add nothing
        for (int c = 0; c < kColsPerLane; ++c)
          acc[rr][c] = fadd_rn(acc[rr][c], fmul_rn(pt, v_s[t][lane + 32 * c]));
      }
    }
    sync_warp();
  }

  // Epilogue: O = acc / l (times the dropout scale); rows without an attended key are 0.
  T* o = static_cast<T*>(p.o) + p.rows.o0[b] + h * p.osh;
  const i64 o_rows = p.rows.o_rows[b];
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const i64 i = i0 + warp * kRowsPerWarp + rr;
    if (i >= p.len_q) continue;
    if (p.redo && !p.redo[row_base + i]) continue;
    const bool attended = m[rr] != -kInf && i < lq;
    const float inv = attended ? fdiv_rn(p.keep_scale, l[rr]) : 0.f;
    bool bad = false;
    for (int c = 0; c < kColsPerLane; ++c) {
      const i64 col = col0 + lane + 32 * c;
      const float out = attended ? fmul_rn(acc[rr][c], inv) : 0.f;
      bad |= col < p.dv && !is_finite(out);
      if (i < o_rows && col < p.dv) o[i * p.osr + col * p.osd] = from_float<T>(out);
    }
    bad = any_in_warp(bad);
    const bool stats_finite = is_finite(m[rr]) && is_finite(l[rr]);
    if (lane == 0) {
      if (bad && stats_finite && !p.redo) {
        p.overflowed[row_base + i] = 1;
        atomic_add(p.overflow_count, 1);
      }
      if (slab == 0 && p.lse) {
        p.lse[row_base + i] =
            attended ? fadd_rn(m[rr], fadd_rn(log_f(l[rr]), p.shift * kLn2)) : -kInf;
      }
    }
  }
}

// The kernel as a body a runtime launches (one thread's work, given the block's shared
// memory, a SharedTiles).
template <class T>
struct MemEfficientBlock {
  static constexpr int kThreads = mem_efficient::kThreads;
  static constexpr int kMinBlocks = 1;
  static constexpr std::size_t kSmemBytes = sizeof(SharedTiles);
  MemEfficientParams p;
  SDPA_CTS_KERNEL_FN void operator()(unsigned char* smem) const {
    mem_efficient_block<T>(p, *reinterpret_cast<SharedTiles*>(smem));
  }
};

// What one block needs of a multiprocessor (every problem takes the same configuration).
inline LaunchNeeds launch_needs() {
  return {"16 rows x 128-wide slabs", sizeof(SharedTiles), kThreads, 255};
}

// The host side of a cuda.mem_efficient call, wherever the kernel runs. `Runtime` gives
// memory and launches (cuda_runtime.cuh on a GPU, the emulator's on the host).
template <class T, class Runtime>
void run(const sdpa_cts_params& pl, Runtime& rt) {
  if (pl.batch == 0 || pl.heads_q == 0 || pl.len_q == 0) return;
  const i64 rows_total = pl.batch * pl.heads_q * pl.len_q;
  const OverflowFlags flags = rt.overflow_flags(rows_total);

  MemEfficientParams p{};
  fill_fused_params(pl, rt.batch_arrays(batch_arrays_host(pl), pl.batch), flags, p);
  p.mask = pl.mask_kind;
  p.mask_data = pl.mask;
  p.ms0 = pl.mask_stride[0], p.ms1 = pl.mask_stride[1], p.ms2 = pl.mask_stride[2],
  p.ms3 = pl.mask_stride[3];
  p.m_blocks = (pl.len_q + kRows - 1) / kRows;
  p.slabs = pl.head_dim_v > 0 ? (pl.head_dim_v + kVCols - 1) / kVCols : 1;
  const i64 blocks = pl.batch * pl.heads_q * p.m_blocks * p.slabs;
  rt.launch(MemEfficientBlock<T>{p}, blocks);
  if (rt.read_count(flags.count) > 0) {  // the overflow guard, flagged rows only
    prepare_overflow_pass(pl, flags, p);
    rt.launch(MemEfficientBlock<T>{p}, blocks);
  }
  rt.finish();
}

// cuda.mem_efficient on the lowered problem: f32, f16 and bf16.
template <class Runtime>
void run_lowered(const sdpa_cts_params& pl, Runtime& rt) {
  switch (pl.dtype) {
    case SDPA_CTS_DTYPE_F32:
      return run<float>(pl, rt);
    case SDPA_CTS_DTYPE_F16:
      return run<f16_t>(pl, rt);
    case SDPA_CTS_DTYPE_BF16:
      return run<bf16_t>(pl, rt);
  }
  throw std::runtime_error("cuda.mem_efficient: element type not supported by this kernel");
}

}  // namespace mem_efficient
}  // namespace sdpa::cuda::detail
