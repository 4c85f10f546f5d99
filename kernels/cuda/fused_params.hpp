// What both fused CUDA kernels (flash_body.hpp, mem_efficient_body.hpp) take of the lowered
// problem, by value in their kernel arguments, and the one place that fills it.
#pragma once

#include <cmath>

#include "kernels/attended_keys.hpp"
#include "kernels/cuda/plan.hpp"
#include "kernels/cuda/simt.hpp"
#include "kernels/cuda/tile_schedule.hpp"

namespace sdpa::cuda::detail {

struct FusedParams {
  i64 batch, heads, heads_kv, len_q, len_kv, dqk, dv;              // B, Hq, Hkv, L, S, Dqk, Dv
  const void* q;                                                   // element 0 of Q
  const void* k;                                                   // of K
  const void* v;                                                   // of V
  void* o;                                                         // of O
  i64 qsh, qsr, qsd, ksh, ksr, ksd, vsh, vsr, vsd, osh, osr, osd;  // head, row, dim strides
  BatchArrays rows;                 // per-batch offsets and lengths (where the kernel runs)
  float scale, softcap;             // logit scale; softcap (0 = off)
  KeyStructure structure;           // causal and window
  unsigned threshold;               // dropout keep threshold (0 = no dropout)
  float keep_scale;                 // 1 / (1 - p)
  unsigned long long seed, offset;  // Philox key and counter offset
  float* lse;                       // [B, Hq, L] or null
  float p_scale;                    // 2^-shift (overflow guard), 1 normally
  int shift;                        // that shift
  const unsigned char* redo;        // rows to recompute ([B, Hq, L]), or null: all
  unsigned char* overflowed;        // rows whose output overflowed ([B, Hq, L])
  int* overflow_count;              // how many
};

// Whether the block of `rows` query rows from i0 of the head whose row 0 is row_base holds
// a row to compute: every row normally, only those the overflow guard flagged in its
// second pass.
SDPA_CTS_KERNEL_FN bool block_has_work(const FusedParams& p, i64 row_base, i64 i0, int rows) {
  if (!p.redo) return true;
  bool any = false;
  for (int r = 0; r < rows; ++r) any |= (i0 + r < p.len_q) && p.redo[row_base + i0 + r];
  return any;
}

// Q's, K's and V's row 0 for query head h of batch element b (K and V of its GQA group).
template <class T>
struct HeadInputs {
  const T* q;
  const T* k;
  const T* v;
};
template <class T>
SDPA_CTS_KERNEL_FN HeadInputs<T> head_inputs(const FusedParams& p, i64 b, i64 h) {
  const i64 hk = h / (p.heads / p.heads_kv);
  return {static_cast<const T*>(p.q) + p.rows.q0[b] + h * p.qsh,
          static_cast<const T*>(p.k) + p.rows.k0[b] + hk * p.ksh,
          static_cast<const T*>(p.v) + p.rows.v0[b] + hk * p.vsh};
}

// The fields of `pl`, with the per-batch arrays and overflow flags where the kernel runs.
inline void fill_fused_params(const sdpa_cts_params& pl, const BatchArrays& rows,
                              const OverflowFlags& flags, FusedParams& p) {
  p.batch = pl.batch;
  p.heads = pl.heads_q;
  p.heads_kv = pl.heads_kv;
  p.len_q = pl.len_q;
  p.len_kv = pl.len_kv;
  p.dqk = pl.head_dim_qk;
  p.dv = pl.head_dim_v;
  p.q = pl.q;
  p.k = pl.k;
  p.v = pl.v;
  p.o = pl.o;
  p.qsh = pl.q_stride[1], p.qsr = pl.q_stride[2], p.qsd = pl.q_stride[3];
  p.ksh = pl.k_stride[1], p.ksr = pl.k_stride[2], p.ksd = pl.k_stride[3];
  p.vsh = pl.v_stride[1], p.vsr = pl.v_stride[2], p.vsd = pl.v_stride[3];
  p.osh = pl.o_stride[1], p.osr = pl.o_stride[2], p.osd = pl.o_stride[3];
  p.rows = rows;
  p.scale = static_cast<float>(pl.scale);
  p.softcap = static_cast<float>(pl.softcap);
  p.structure = key_structure(pl);
  p.threshold = pl.dropout_threshold;
  p.keep_scale = pl.dropout_threshold ? static_cast<float>(pl.keep_scale) : 1.f;
  p.seed = pl.dropout_seed;
  p.offset = pl.dropout_offset;
  p.lse = pl.lse;
  p.p_scale = 1;
  p.shift = 0;
  p.redo = nullptr;
  p.overflowed = flags.rows;
  p.overflow_count = flags.count;
}

// The overflow guard's second pass: every p scaled by 2^-shift, flagged rows only.
inline void prepare_overflow_pass(const sdpa_cts_params& pl, const OverflowFlags& flags,
                                  FusedParams& p) {
  p.shift = overflow_shift(pl.len_kv);
  p.p_scale = std::ldexp(1.f, -p.shift);
  p.redo = flags.rows;
}

}  // namespace sdpa::cuda::detail
