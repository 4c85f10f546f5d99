// cpu.flash's backward: FlashAttention-2's recomputation with a deterministic dQ.
//
//   pass 0  D_i = dO_i . O_i for every query row (O the forward's stored output);
//   pass 1  one task per (b, key/value head, block of kBackwardKeyBlock keys): for every query
//           row of the group that reaches the block, P_ij = exp(s_ij - LSE_i) from the forward's
//           LSE, dP_ij = z_ij dO_i . V_j, dS_ij = P_ij (dP_ij - D_i) t'_ij, and the block's
//           dV_j += P_ij z_ij dO_i, dK_j += dS_ij Q_i;
//   pass 2  one task per (b, query head, block of kBackwardRowBlock rows): the same dS_ij again,
//           dQ_i = scale sum_j dS_ij K_j over the row's keys.
// FlashAttention-2 accumulates dQ across key blocks with atomic adds, whose order varies; the
// second pass costs one more recomputation of P and dS and makes every element the work of one
// task in a fixed order. A row whose LSE is -inf attends no key and has no term: its gradients
// are zeros, never exp(-inf - -inf). Overflow guard: a dP that overflows f32 (dO . V beyond its
// range) is computed again in f64. Portable loops: one code path for every ISA target.
#include "kernels/cpu/flash_backward.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/philox.hpp"
#include "kernels/cpu/sdpa_rows.hpp"

namespace sdpa::cpu {
namespace {

using i64 = std::int64_t;

float dot(const float* a, const float* b, i64 n) {
  float s = 0;
  for (i64 e = 0; e < n; ++e) s += a[e] * b[e];
  return s;
}

double dot64(const float* a, const float* b, i64 n) {
  double s = 0;
  for (i64 e = 0; e < n; ++e) s += double(a[e]) * double(b[e]);
  return s;
}

void load(DType type, const void* src, i64 off, i64 stride, i64 n, float* dst) {
  for (i64 e = 0; e < n; ++e)
    dst[e] = static_cast<float>(load_as_double(type, src, off + e * stride));
}

void store(DType type, void* dst, i64 off, i64 stride, i64 n, const double* src, double factor) {
  for (i64 e = 0; e < n; ++e) store_from_double(type, dst, off + e * stride, src[e] * factor);
}

void zero(DType type, void* dst, i64 off, i64 stride, i64 n) {
  for (i64 e = 0; e < n; ++e) store_from_double(type, dst, off + e * stride, 0.0);
}

// The value a half-precision tensor-core GEMM would take as an operand: P and dS rounded to the
// input type (f16, bf16); f32 problems keep them. A finite dS beyond the input type's range
// (V near the maximum) is kept as it is: rounded, it would be inf, and the gradient, which can
// be finite, inf or NaN.
double as_operand(DType t, double x) {
  double r = x;
  switch (t) {
    case DType::f16:
      r = half_to_float(double_to_half(x));
      break;
    case DType::bf16:
      r = bf16_to_float(double_to_bf16(x));
      break;
    default:
      break;
  }
  return std::isinf(r) && std::isfinite(x) ? x : r;
}

struct Context {
  const Problem& p;
  const Geometry& g;
  const Buffers& fwd;
  const GradientPointers& grads;
  float scale;
  float keep_scale;
  std::vector<double> d;  // D_i per logical row (b, h, i)
  i64 row(i64 b, i64 h, i64 i) const { return (b * p.heads_q + h) * p.len_q + i; }
  float lse(i64 b, i64 h, i64 i) const { return fwd.lse[row(b, h, i)]; }
};

// The two terms of pair (i, j) of query head h: dS t' and the dV weight P z, each as the
// gradient GEMMs take it. False when the pair is not attended (a mask). `q`, `d_o` are row i's,
// `k`, `v` key j's.
bool pair_terms(const Context& c, i64 b, i64 h, i64 i, i64 j, const float* q, const float* d_o,
                const float* k, const float* v, double* ds, double* w) {
  const Problem& p = c.p;
  float x = c.scale * dot(q, k, p.head_dim_qk), tp = 1;
  if (p.softcap > 0) {
    const float cap = static_cast<float>(p.softcap), t = std::tanh(x / cap);
    x = cap * t;
    tp = 1 - t * t;
  }
  if (p.mask == MaskKind::boolean) {
    if (static_cast<const std::uint8_t*>(c.fwd.mask)[c.g.mask_row(b, h, i) + j * c.g.mstride[3]] ==
        0)
      return false;
  } else if (p.mask == MaskKind::additive) {
    const float bias = static_cast<float>(
        load_as_double(p.dtype, c.fwd.mask, c.g.mask_row(b, h, i) + j * c.g.mstride[3]));
    if (bias == -std::numeric_limits<float>::infinity()) return false;
    x += bias;
  }
  if (x == -std::numeric_limits<float>::infinity()) return false;
  const float prob = std::exp(x - c.lse(b, h, i));
  float z = 1;
  if (c.g.drop_threshold != 0) {
    z = dropout_keep(p.dropout_seed, p.dropout_offset, c.g.drop_threshold, b, h, i, j, p.heads_q,
                     p.len_q, p.len_kv)
            ? c.keep_scale
            : 0.0f;
  }
  float dp = z * dot(d_o, v, p.head_dim_v);
  double dpd = dp;
  if (!std::isfinite(dp)) dpd = double(z) * dot64(d_o, v, p.head_dim_v);  // overflow guard
  *ds = as_operand(p.dtype, double(prob) * (dpd - c.d[c.row(b, h, i)]) * double(tp));
  // A dropped key has no term in dV, also in a NaN row (as in the forward's O).
  *w = z == 0 ? 0.0 : as_operand(p.dtype, double(prob) * double(z));
  return true;
}

// Pass 1: dK and dV of keys [j0, j1) of key/value head hk of batch element b.
void key_block(const Context& c, i64 b, i64 hk, i64 j0, i64 j1) {
  const Problem& p = c.p;
  const Geometry& g = c.g;
  const i64 dq = p.head_dim_qk, dv = p.head_dim_v, lb = g.lq(b), sb = g.skv(b), n = j1 - j0;
  std::vector<float> k(static_cast<std::size_t>(std::max<i64>(n * dq, 1))),
      v(static_cast<std::size_t>(std::max<i64>(n * dv, 1))), q(std::max<i64>(dq, 1)),
      d_o(std::max<i64>(dv, 1));
  std::vector<double> acc_k(static_cast<std::size_t>(std::max<i64>(n * dq, 1)), 0.0),
      acc_v(static_cast<std::size_t>(std::max<i64>(n * dv, 1)), 0.0);
  for (i64 j = j0; j < j1; ++j) {
    load(p.dtype, c.fwd.k, g.kv_row(p.k, b, hk, j), p.k.stride[3], dq, k.data() + (j - j0) * dq);
    load(p.dtype, c.fwd.v, g.kv_row(p.v, b, hk, j), p.v.stride[3], dv, v.data() + (j - j0) * dv);
  }
  for (i64 h = hk * g.group; h < (hk + 1) * g.group; ++h)
    for (i64 i = 0; i < lb; ++i) {
      const KeyRange r = key_range(p, i, lb, sb);
      const i64 a = std::max(r.lo, j0), e = std::min(r.hi, j1);
      if (e <= a || c.lse(b, h, i) == -std::numeric_limits<float>::infinity()) continue;
      load(p.dtype, c.fwd.q, g.q_row(p.q, b, h, i), p.q.stride[3], dq, q.data());
      load(p.dtype, c.grads.d_out, g.q_row(p.o, b, h, i), p.o.stride[3], dv, d_o.data());
      for (i64 j = a; j < e; ++j) {
        double ds, w;
        const float* kj = k.data() + (j - j0) * dq;
        const float* vj = v.data() + (j - j0) * dv;
        if (!pair_terms(c, b, h, i, j, q.data(), d_o.data(), kj, vj, &ds, &w)) continue;
        double* ak = acc_k.data() + (j - j0) * dq;
        double* av = acc_v.data() + (j - j0) * dv;
        for (i64 x = 0; x < dq; ++x) ak[x] += ds * double(q[x]);
        for (i64 x = 0; x < dv; ++x) av[x] += w * double(d_o[x]);
      }
    }
  for (i64 j = j0; j < j1; ++j) {
    store(p.dtype, c.grads.dk, g.kv_row(p.k, b, hk, j), p.k.stride[3], dq,
          acc_k.data() + (j - j0) * dq, effective_scale(p));
    store(p.dtype, c.grads.dv, g.kv_row(p.v, b, hk, j), p.v.stride[3], dv,
          acc_v.data() + (j - j0) * dv, 1.0);
  }
}

// Pass 2: dQ of rows [i0, i1) of query head h of batch element b.
void row_block(const Context& c, i64 b, i64 h, i64 i0, i64 i1) {
  const Problem& p = c.p;
  const Geometry& g = c.g;
  const i64 dq = p.head_dim_qk, dv = p.head_dim_v, lb = g.lq(b), sb = g.skv(b);
  const i64 hk = h / g.group;
  std::vector<float> q(std::max<i64>(dq, 1)), d_o(std::max<i64>(dv, 1)), k(std::max<i64>(dq, 1)),
      v(std::max<i64>(dv, 1));
  std::vector<double> acc(std::max<i64>(dq, 1));
  for (i64 i = i0; i < i1; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const KeyRange r = key_range(p, i, lb, sb);
    if (!r.empty() && c.lse(b, h, i) != -std::numeric_limits<float>::infinity()) {
      load(p.dtype, c.fwd.q, g.q_row(p.q, b, h, i), p.q.stride[3], dq, q.data());
      load(p.dtype, c.grads.d_out, g.q_row(p.o, b, h, i), p.o.stride[3], dv, d_o.data());
      for (i64 j = r.lo; j < r.hi; ++j) {
        load(p.dtype, c.fwd.k, g.kv_row(p.k, b, hk, j), p.k.stride[3], dq, k.data());
        load(p.dtype, c.fwd.v, g.kv_row(p.v, b, hk, j), p.v.stride[3], dv, v.data());
        double ds, w;
        if (!pair_terms(c, b, h, i, j, q.data(), d_o.data(), k.data(), v.data(), &ds, &w)) continue;
        for (i64 x = 0; x < dq; ++x) acc[x] += ds * double(k[x]);
      }
    }
    store(p.dtype, c.grads.dq, g.q_row(p.q, b, h, i), p.q.stride[3], dq, acc.data(),
          effective_scale(p));
  }
}

// One task: keys or rows [lo, hi) of head `head` of batch element b.
struct Block {
  i64 b, head, lo, hi;
};

// The blocks of `size` over len(b) for every (b, head), a head of length 0 with one empty block.
template <typename Len>
std::vector<Block> blocks(i64 batch, i64 heads, Len len, i64 size) {
  std::vector<Block> out;
  for (i64 b = 0; b < batch; ++b)
    for (i64 h = 0; h < heads; ++h)
      for (i64 lo = 0; lo < std::max<i64>(len(b), 1); lo += size)
        out.push_back({b, h, lo, std::min(lo + size, len(b))});
  return out;
}

// Each block on one thread, in any order: every output element belongs to one block.
template <typename Fn>
void run_blocks(const std::vector<Block>& tasks, int threads, Fn fn) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::size_t t = 0; t < tasks.size(); ++t) fn(tasks[t]);
}

}  // namespace

void flash_backward(const Problem& p, const Buffers& forward, const GradientPointers& grads,
                    const RunOptions& options) {
  const Geometry g(p);
  Context c{p,
            g,
            forward,
            grads,
            static_cast<float>(effective_scale(p)),
            static_cast<float>(p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0),
            {}};
  const i64 B = p.batch, H = p.heads_q, Hkv = p.heads_kv, L = p.len_q, S = p.len_kv;
  const i64 dq = p.head_dim_qk, dv = p.head_dim_v;
  const int threads = thread_count(options);
  // Pass 0: D per row, in f64 (dO . O of a V near the maximum overflows f32).
  c.d.assign(static_cast<std::size_t>(std::max<i64>(B * H * L, 1)), 0.0);
  {
    std::vector<float> d_o(std::max<i64>(dv, 1)), o(std::max<i64>(dv, 1));
    for (i64 b = 0; b < B; ++b)
      for (i64 h = 0; h < H; ++h)
        for (i64 i = 0; i < g.lq(b); ++i) {
          load(p.dtype, grads.d_out, g.q_row(p.o, b, h, i), p.o.stride[3], dv, d_o.data());
          load(p.dtype, forward.o, g.q_row(p.o, b, h, i), p.o.stride[3], dv, o.data());
          c.d[static_cast<std::size_t>(c.row(b, h, i))] = dot64(d_o.data(), o.data(), dv);
        }
  }
  // Pass 1: the (b, key/value head, key block) tasks; pass 2: the (b, query head, row block)
  // tasks. The first block of each head also zeroes its padding (keys beyond S_b, rows beyond
  // L_b, padded layout only); a head with no key or row has one empty block for that.
  run_blocks(blocks(
                 B, Hkv, [&](i64 b) { return g.skv(b); }, kBackwardKeyBlock),
             threads, [&](const Block& k) {
               if (k.hi > k.lo) key_block(c, k.b, k.head, k.lo, k.hi);
               if (k.lo == 0 && !p.packed) {
                 for (i64 j = g.skv(k.b); j < S; ++j) {
                   zero(p.dtype, grads.dk, g.kv_row(p.k, k.b, k.head, j), p.k.stride[3], dq);
                   zero(p.dtype, grads.dv, g.kv_row(p.v, k.b, k.head, j), p.v.stride[3], dv);
                 }
               }
             });
  run_blocks(blocks(
                 B, H, [&](i64 b) { return g.lq(b); }, kBackwardRowBlock),
             threads, [&](const Block& r) {
               if (r.hi > r.lo) row_block(c, r.b, r.head, r.lo, r.hi);
               if (r.lo == 0 && !p.packed) {
                 for (i64 i = g.lq(r.b); i < L; ++i)
                   zero(p.dtype, grads.dq, g.q_row(p.q, r.b, r.head, i), p.q.stride[3], dq);
               }
             });
}

}  // namespace sdpa::cpu
