// Shared pieces of cpu.math and cpu.mem_efficient: where each element of a problem lives,
// which keys a query row may attend (SEMANTICS.md step 5), and the per-row pipeline from
// raw dot products to unnormalised softmax numerators (steps 2 to 7).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/philox.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/overflow_guard.hpp"
#include "kernels/cpu/vec_kernels.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cpu {

// Element offsets and lengths of one lowered problem: a view of its params (the lowering
// derived the group, the lengths, the packed offsets and the mask strides once).
struct Geometry {
  explicit Geometry(const LoweredProblem& lowered)
      : p(lowered.params()), dtype(lowered.dtype()), group(lowered.params().group) {}

  const sdpa_cts_params& p;
  DType dtype;         // element type of Q, K, V, O, an additive mask and the weights
  std::int64_t group;  // Hq / Hkv

  std::int64_t lq(std::int64_t b) const { return p.seqlens_q[b]; }
  std::int64_t skv(std::int64_t b) const { return p.seqlens_kv[b]; }
  // Offset of element (b, h, row, 0) of a Q/O-shaped (q_row) or K/V-shaped (kv_row) tensor
  // with these strides.
  std::int64_t q_row(const std::int64_t* stride, std::int64_t b, std::int64_t h,
                     std::int64_t i) const {
    const std::int64_t r = p.packed ? p.cu_seqlens_q[b] + i : i;
    return (p.packed ? 0 : b * stride[0]) + h * stride[1] + r * stride[2];
  }
  std::int64_t kv_row(const std::int64_t* stride, std::int64_t b, std::int64_t h,
                      std::int64_t j) const {
    const std::int64_t r = p.packed ? p.cu_seqlens_kv[b] + j : j;
    return (p.packed ? 0 : b * stride[0]) + h * stride[1] + r * stride[2];
  }
  std::int64_t mask_row(std::int64_t b, std::int64_t h, std::int64_t i) const {
    return b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2];
  }
  std::int64_t mask_col_stride() const { return p.mask_stride[3]; }
};

// Keys [lo, hi) row i of a batch element with lengths (lb, sb) may attend under the
// causal and window rules (an interval; empty when hi <= lo).
struct KeyRange {
  std::int64_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
};
KeyRange key_range(const sdpa_cts_params& p, std::int64_t i, std::int64_t lb, std::int64_t sb);

// Byte pointer arithmetic on a typed buffer.
inline const void* at(const void* base, std::int64_t index, std::size_t esz) {
  return static_cast<const unsigned char*>(base) + index * static_cast<std::int64_t>(esz);
}
inline void* at(void* base, std::int64_t index, std::size_t esz) {
  return static_cast<unsigned char*>(base) + index * static_cast<std::int64_t>(esz);
}

// Statistics of one row over a block of keys after row_softmax_block().
struct RowStats {
  double m = -std::numeric_limits<double>::infinity();  // largest logit (NaN if one is NaN)
  double l = 0;  // sum of exp(s_j - m) over the block, before dropout
  bool any() const { return !(m == -std::numeric_limits<double>::infinity()); }
};

// Element-type operations the row pipeline needs: f32 through a vector table, f64 scalar.
struct F32RowOps {
  const vk::Table& t;
  void mul(float* s, std::int64_t n, double f) const { t.row_mul(s, n, static_cast<float>(f)); }
  void add(float* s, const float* b, std::int64_t n) const { t.row_add(s, b, n); }
  double max(const float* s, std::int64_t n) const { return t.row_max(s, n); }
  double exp_sum(float* s, std::int64_t n, double m) const {
    return t.row_exp_sum(s, n, static_cast<float>(m));
  }
  void load(DType type, const void* src, std::int64_t stride, std::int64_t n, float* dst) const {
    t.load_row(type, src, stride, n, dst);
  }
};
struct F64RowOps {
  void mul(double* s, std::int64_t n, double f) const {
    for (std::int64_t j = 0; j < n; ++j) s[j] *= f;
  }
  void add(double* s, const double* b, std::int64_t n) const {
    for (std::int64_t j = 0; j < n; ++j) s[j] += b[j];
  }
  double max(const double* s, std::int64_t n) const {
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < n; ++j) {
      if (std::isnan(s[j])) return s[j];
      if (s[j] > m) m = s[j];
    }
    return m;
  }
  double exp_sum(double* s, std::int64_t n, double m) const {
    double z = 0;
    for (std::int64_t j = 0; j < n; ++j) z += (s[j] = std::exp(s[j] - m));
    return z;
  }
  void load(DType type, const void* src, std::int64_t stride, std::int64_t n, double* dst) const {
    for (std::int64_t e = 0; e < n; ++e) dst[e] = load_as_double(type, src, e * stride);
  }
};

// The pipeline of one query row (b, h, i) over the keys [j0, j0 + n) whose raw dot products
// q.k_j are in s[0, n): scale, softcap, additive or boolean mask, structural range [lo, hi)
// (pass lo = j0, hi = j0 + n when the block is inside it), max, exp. On return s holds the
// numerators exp(s_j - m) with dropped keys (dropout) and keys outside the range set to 0,
// and the stats give m and the pre-dropout sum. A NaN logit makes m NaN and s NaN at every
// key whose logit was not -inf (SEMANTICS.md: NaN is never hidden). `tmp` holds n values.
template <typename T, typename Ops>
RowStats row_softmax_block(const Ops& ops, const Geometry& g, std::int64_t b, std::int64_t h,
                           std::int64_t i, std::int64_t lo, std::int64_t hi, T* s, std::int64_t j0,
                           std::int64_t n, T* tmp) {
  const sdpa_cts_params& p = g.p;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const std::int64_t a = std::max(lo, j0), e = std::min(hi, j0 + n);
  RowStats st;
  if (e <= a) {
    for (std::int64_t j = 0; j < n; ++j) s[j] = 0;
    return st;
  }
  for (std::int64_t j = 0; j < a - j0; ++j) s[j] = 0;
  for (std::int64_t j = e - j0; j < n; ++j) s[j] = 0;
  T* x = s + (a - j0);
  const std::int64_t cnt = e - a;
  ops.mul(x, cnt, p.scale);
  if (p.softcap > 0) {
    const T c = static_cast<T>(p.softcap);
    for (std::int64_t j = 0; j < cnt; ++j) x[j] = c * std::tanh(x[j] / c);
  }
  if (p.mask_kind != SDPA_CTS_MASK_NONE) {
    const std::int64_t ms = g.mask_col_stride();
    const std::int64_t off = g.mask_row(b, h, i) + a * ms;
    if (p.mask_kind == SDPA_CTS_MASK_BOOL) {
      const auto* m = static_cast<const std::uint8_t*>(p.mask) + off;
      for (std::int64_t j = 0; j < cnt; ++j)
        if (m[j * ms] == 0) x[j] = kNegInf;
    } else {
      ops.load(g.dtype, at(p.mask, off, dtype_size(g.dtype)), ms, cnt, tmp);
      ops.add(x, tmp, cnt);
      // A -inf bias masks its key even when the logit is NaN (NaN + -inf is NaN): the
      // weight there stays exactly 0 in a NaN row, as at every masked key (SEMANTICS.md,
      // "Non-finite inputs"; found by fuzz/targets/differential.cpp).
      for (std::int64_t j = 0; j < cnt; ++j)
        if (tmp[j] == kNegInf) x[j] = kNegInf;
    }
  }
  const double m = ops.max(x, cnt);
  if (std::isnan(m)) {
    for (std::int64_t j = 0; j < cnt; ++j)
      x[j] = x[j] == kNegInf ? T(0) : std::numeric_limits<T>::quiet_NaN();
    st.m = st.l = m;
    return st;
  }
  if (m == -std::numeric_limits<double>::infinity()) {
    for (std::int64_t j = 0; j < cnt; ++j) x[j] = 0;
    return st;
  }
  st.m = m;
  st.l = ops.exp_sum(x, cnt, m);
  if (p.dropout_threshold != 0) {
    for (std::int64_t j = 0; j < cnt; ++j) {
      if (!dropout_keep(p.dropout_seed, p.dropout_offset, p.dropout_threshold, b, h, i, a + j,
                        p.heads_q, p.len_q, p.len_kv)) {
        x[j] = 0;
      }
    }
  }
  return st;
}

// cpu.mem_efficient's split rule: keys per chunk for a batch element with S_b keys. A function
// of (S_b, Dqk, Dv) only, never of the thread count or the batch (mem_efficient_backend.cpp).
std::int64_t mem_efficient_chunk_length(std::int64_t sb, std::int64_t dqk, std::int64_t dv);

// OpenMP thread count of a run.
int thread_count(const RunOptions& options);

}  // namespace sdpa::cpu
