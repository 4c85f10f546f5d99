// cpu.flash's backward: FlashAttention-2's recomputation, one task per (batch element, kv
// head) with its whole group of query heads, so that dQ accumulates across the key blocks in the
// task's own buffer (no atomic adds, no second pass) and every output element is the work of
// one task in a fixed order: bitwise the same for any thread count.
//
// The fast path is the per-target kernel (flash_backward_impl.hpp: blocked f32 GEMMs on the
// SIMD layer). A task in which a value left the f32 range or was not finite (non-finite
// inputs, dO . V or dO . O beyond f32) is computed again on the guarded path below: portable
// loops with f64 sums, P recomputed twice (dK/dV per key block, then dQ per row block), dP
// recomputed in f64 where f32 overflows. A row whose LSE is -inf attends no key and has no
// term: its gradients are zeros, never exp(-inf - -inf).
#include "kernels/cpu/flash_backward.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "core/philox.hpp"
#include "flash_backward_impl_isas.hpp"
#include "kernels/cpu/bf16_range.hpp"
#include "kernels/cpu/flash_backward_kernel.hpp"
#include "kernels/cpu/isa_dispatch.hpp"
#include "kernels/cpu/isa_target.hpp"
#include "kernels/cpu/sdpa_rows.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cpu::flash {
// backward_task_<target> of each unit of flash_backward_impl.hpp (kernels/cpu/CMakeLists.txt).
SDPA_CTS_ISA_DECLARE(flash_backward_impl, BackwardTaskFnType, backward_task)
}  // namespace sdpa::cpu::flash

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
  const sdpa_cts_params& p;
  const Geometry& g;
  float scale;
  float keep_scale;
  std::vector<double> d;  // D_i per logical row (b, h, i)
  i64 row(i64 b, i64 h, i64 i) const { return (b * p.heads_q + h) * p.len_q + i; }
  float lse(i64 b, i64 h, i64 i) const { return p.lse[row(b, h, i)]; }
};

// The two terms of pair (i, j) of query head h: dS t' and the dV weight P z, each as the
// gradient GEMMs take it. False when the pair is not attended (a mask). `q`, `d_o` are row i's,
// `k`, `v` key j's.
bool pair_terms(const Context& c, i64 b, i64 h, i64 i, i64 j, const float* q, const float* d_o,
                const float* k, const float* v, double* ds, double* w) {
  const sdpa_cts_params& p = c.p;
  float x = c.scale * dot(q, k, p.head_dim_qk), tp = 1;
  if (p.softcap > 0) {
    const float cap = static_cast<float>(p.softcap), t = std::tanh(x / cap);
    x = cap * t;
    tp = 1 - t * t;
  }
  if (p.mask_kind == SDPA_CTS_MASK_BOOL) {
    if (static_cast<const std::uint8_t*>(
            p.mask)[c.g.mask_row(b, h, i) + j * c.g.mask_col_stride()] == 0)
      return false;
  } else if (p.mask_kind == SDPA_CTS_MASK_ADDITIVE) {
    const float bias = static_cast<float>(
        load_as_double(c.g.dtype, p.mask, c.g.mask_row(b, h, i) + j * c.g.mask_col_stride()));
    if (bias == -std::numeric_limits<float>::infinity()) return false;
    x += bias;
  }
  if (x == -std::numeric_limits<float>::infinity()) return false;
  const float prob = std::exp(x - c.lse(b, h, i));
  float z = 1;
  if (c.p.dropout_threshold != 0) {
    z = dropout_keep(p.dropout_seed, p.dropout_offset, c.p.dropout_threshold, b, h, i, j, p.heads_q,
                     p.len_q, p.len_kv)
            ? c.keep_scale
            : 0.0f;
  }
  float dp = z * dot(d_o, v, p.head_dim_v);
  double dpd = dp;
  if (!std::isfinite(dp)) dpd = double(z) * dot64(d_o, v, p.head_dim_v);  // overflow guard
  *ds = as_operand(c.g.dtype, double(prob) * (dpd - c.d[c.row(b, h, i)]) * double(tp));
  // A dropped key has no term in dV, also in a NaN row (as in the forward's O).
  *w = z == 0 ? 0.0 : as_operand(c.g.dtype, double(prob) * double(z));
  return true;
}

// Guarded path: dK and dV of keys [j0, j1) of key/value head hk of batch element b.
void key_block(const Context& c, i64 b, i64 hk, i64 j0, i64 j1) {
  const sdpa_cts_params& p = c.p;
  const Geometry& g = c.g;
  const i64 dq = p.head_dim_qk, dv = p.head_dim_v, lb = g.lq(b), sb = g.skv(b), n = j1 - j0;
  std::vector<float> k(static_cast<std::size_t>(std::max<i64>(n * dq, 1))),
      v(static_cast<std::size_t>(std::max<i64>(n * dv, 1))), q(std::max<i64>(dq, 1)),
      d_o(std::max<i64>(dv, 1));
  std::vector<double> acc_k(static_cast<std::size_t>(std::max<i64>(n * dq, 1)), 0.0),
      acc_v(static_cast<std::size_t>(std::max<i64>(n * dv, 1)), 0.0);
  for (i64 j = j0; j < j1; ++j) {
    load(g.dtype, p.k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], dq, k.data() + (j - j0) * dq);
    load(g.dtype, p.v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], dv, v.data() + (j - j0) * dv);
  }
  for (i64 h = hk * g.group; h < (hk + 1) * g.group; ++h)
    for (i64 i = 0; i < lb; ++i) {
      const KeyRange r = key_range(p, i, lb, sb);
      const i64 a = std::max(r.lo, j0), e = std::min(r.hi, j1);
      if (e <= a || c.lse(b, h, i) == -std::numeric_limits<float>::infinity()) continue;
      load(g.dtype, p.q, g.q_row(p.q_stride, b, h, i), p.q_stride[3], dq, q.data());
      load(g.dtype, p.d_o, g.q_row(p.o_stride, b, h, i), p.o_stride[3], dv, d_o.data());
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
    store(g.dtype, p.d_k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], dq,
          acc_k.data() + (j - j0) * dq, p.scale);
    store(g.dtype, p.d_v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], dv,
          acc_v.data() + (j - j0) * dv, 1.0);
  }
}

// Guarded path: dQ of rows [i0, i1) of query head h of batch element b.
void row_block(const Context& c, i64 b, i64 h, i64 i0, i64 i1) {
  const sdpa_cts_params& p = c.p;
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
      load(g.dtype, p.q, g.q_row(p.q_stride, b, h, i), p.q_stride[3], dq, q.data());
      load(g.dtype, p.d_o, g.q_row(p.o_stride, b, h, i), p.o_stride[3], dv, d_o.data());
      for (i64 j = r.lo; j < r.hi; ++j) {
        load(g.dtype, p.k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], dq, k.data());
        load(g.dtype, p.v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], dv, v.data());
        double ds, w;
        if (!pair_terms(c, b, h, i, j, q.data(), d_o.data(), k.data(), v.data(), &ds, &w)) continue;
        for (i64 x = 0; x < dq; ++x) acc[x] += ds * double(k[x]);
      }
    }
    store(g.dtype, p.d_q, g.q_row(p.q_stride, b, h, i), p.q_stride[3], dq, acc.data(), p.scale);
  }
}

// The guarded path for the task (b, kv head hk): D of its rows, then every key block's dK and
// dV and every row block's dQ of its query heads.
void guarded_task(Context& c, i64 b, i64 hk) {
  const sdpa_cts_params& p = c.p;
  const Geometry& g = c.g;
  const i64 dv = p.head_dim_v;
  std::vector<float> d_o(std::max<i64>(dv, 1)), o(std::max<i64>(dv, 1));
  for (i64 h = hk * g.group; h < (hk + 1) * g.group; ++h)
    for (i64 i = 0; i < g.lq(b); ++i) {
      load(g.dtype, p.d_o, g.q_row(p.o_stride, b, h, i), p.o_stride[3], dv, d_o.data());
      load(g.dtype, p.o, g.q_row(p.o_stride, b, h, i), p.o_stride[3], dv, o.data());
      c.d[static_cast<std::size_t>(c.row(b, h, i))] = dot64(d_o.data(), o.data(), dv);
    }
  for (i64 j0 = 0; j0 < g.skv(b); j0 += kBackwardKeyBlock)
    key_block(c, b, hk, j0, std::min(j0 + kBackwardKeyBlock, g.skv(b)));
  for (i64 h = hk * g.group; h < (hk + 1) * g.group; ++h)
    for (i64 i0 = 0; i0 < std::max<i64>(g.lq(b), 1); i0 += kBackwardRowBlock)
      row_block(c, b, h, i0, std::min(i0 + kBackwardRowBlock, g.lq(b)));
}

// Padding of the task (b, hk) in the padded layout: keys beyond S_b and rows beyond L_b are 0.
void zero_padding(const Context& c, i64 b, i64 hk) {
  const sdpa_cts_params& p = c.p;
  const Geometry& g = c.g;
  if (p.packed) return;
  for (i64 j = g.skv(b); j < p.len_kv; ++j) {
    zero(g.dtype, p.d_k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], p.head_dim_qk);
    zero(g.dtype, p.d_v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], p.head_dim_v);
  }
  for (i64 h = hk * g.group; h < (hk + 1) * g.group; ++h)
    for (i64 i = g.lq(b); i < p.len_q; ++i)
      zero(g.dtype, p.d_q, g.q_row(p.q_stride, b, h, i), p.q_stride[3], p.head_dim_qk);
}

std::size_t align64(std::size_t x) { return (x + 63) / 64 * 64; }

// The per-thread scratch of the fast kernel (flash_backward_kernel.hpp).
flash::BackwardScratch backward_scratch(i64 group, i64 rows, i64 dqp, i64 dvp) {
  using flash::kBwdKeyBlock;
  using flash::kBwdRowBlock;
  flash::BackwardScratch s;
  std::size_t at = 0;
  auto take = [&](std::size_t floats) {
    const std::size_t off = at;
    at += align64(std::max<std::size_t>(floats, 1) * 4);
    return off;
  };
  const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
  s.qr = take(n(kBwdRowBlock * dqp));
  s.dor = take(n(kBwdRowBlock * dvp));
  s.kt = take(n(dqp * kBwdKeyBlock));
  s.vt = take(n(dvp * kBwdKeyBlock));
  s.kr = take(n(kBwdKeyBlock * dqp));
  s.dk = take(n(kBwdKeyBlock * dqp));
  s.dv = take(n(kBwdKeyBlock * dvp));
  s.s = take(n(kBwdRowBlock * kBwdKeyBlock));
  s.ds = take(n(kBwdRowBlock * kBwdKeyBlock));
  s.tmp = take(n(2 * std::max(dqp, dvp) + 64));
  s.dq = take(n(group * rows * dqp));
  s.rows = take(n(2 * group * rows));
  // The bf16 dot path's arrays (in floats: two bf16 or one u32 pair each).
  s.qb = take(n(kBwdRowBlock * dqp / 2));
  s.dob = take(n(kBwdRowBlock * dvp / 2));
  s.kb = take(n(kBwdKeyBlock * dqp / 2));
  s.vb = take(n(kBwdKeyBlock * dvp / 2));
  s.kt2 = take(n(dqp / 2 * kBwdKeyBlock));
  s.vt2 = take(n(dvp / 2 * kBwdKeyBlock));
  s.k2 = take(n(kBwdKeyBlock / 2 * dqp));
  s.q2 = take(n(kBwdRowBlock / 2 * dqp));
  s.do2 = take(n(kBwdRowBlock / 2 * dvp));
  s.w2 = take(n(kBwdRowBlock / 2 * kBwdKeyBlock));
  s.ds2 = take(n(kBwdRowBlock / 2 * kBwdKeyBlock));
  s.dsj = take(n(kBwdRowBlock * kBwdKeyBlock / 2));
  s.bytes = at;
  return s;
}

flash::BackwardTaskFn backward_kernel(IsaTarget target) {
  return SDPA_CTS_ISA_DISPATCH(flash_backward_impl, flash::BackwardTaskFnType, flash::backward_task,
                               target);
}

// True when every nonzero element of the bf16 tensor `v` of `base` has a magnitude of at least
// 2^-63 (or is not finite): its products with another such element are normal f32 numbers,
// which the bf16 dot path needs (vdpbf16ps flushes subnormal operands and products).
bool bf16_magnitudes_at_least_2m63(const void* base, const StridedView& v) {
  return smallest_bf16_exponent(base, v) >= 127 - 63;
}

struct FreeDeleter {
  void operator()(unsigned char* p) const { std::free(p); }
};

}  // namespace

void flash_backward(const LoweredProblem& lowered, const Device& device,
                    const RunOptions& options) {
  const IsaTarget target = isa_to_run(device);
  const flash::BackwardTaskFn kernel = backward_kernel(target);
  const Geometry g(lowered);
  const sdpa_cts_params& p = g.p;
  Context c{p,
            g,
            static_cast<float>(p.scale),
            static_cast<float>(p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0),
            {}};
  c.d.assign(static_cast<std::size_t>(std::max<i64>(p.batch * p.heads_q * p.len_q, 1)), 0.0);
  flash::BackwardParams P;
  static_cast<sdpa_cts_params&>(P) = lowered.params();
  P.softcap_f32 = static_cast<float>(p.softcap);
  P.dqk_padded = (p.head_dim_qk + 15) / 16 * 16;
  P.dv_padded = (p.head_dim_v + 15) / 16 * 16;
  P.scratch = backward_scratch(g.group, p.len_q, P.dqk_padded, P.dv_padded);
  // bf16 through vdpbf16ps where the forward takes it (flash_backend.cpp: the avx512bf16 target
  // forced, or chosen on an AMD CPU, whose vdpbf16ps runs at twice its f32 FMA rate), unless an
  // input holds a magnitude its flushing could lose.
  static const bool fast_bf16_dot = __builtin_cpu_is("amd");
  P.bf16_dot = target == IsaTarget::avx512bf16 && g.dtype == DType::bf16 &&
               (device.cpu.isa_chosen || fast_bf16_dot) &&
               bf16_magnitudes_at_least_2m63(p.q, lowered.q_view()) &&
               bf16_magnitudes_at_least_2m63(p.k, lowered.k_view()) &&
               bf16_magnitudes_at_least_2m63(p.v, lowered.v_view()) &&
               bf16_magnitudes_at_least_2m63(p.d_o, lowered.o_view());

  const i64 tasks = p.batch * p.heads_kv;
  if (tasks == 0) return;
  const int threads =
      static_cast<int>(std::max<i64>(std::min<i64>(thread_count(options), tasks), 1));
  std::vector<std::unique_ptr<unsigned char, FreeDeleter>> scratch;
  for (int t = 0; t < threads; ++t) {
    auto* mem = static_cast<unsigned char*>(std::aligned_alloc(64, P.scratch.bytes));
    if (!mem) throw std::bad_alloc();
    scratch.emplace_back(mem);
  }
  // Each task on one thread, in any order: its outputs are its own.
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (i64 x = 0; x < tasks; ++x) {
    const i64 b = x / p.heads_kv, hk = x % p.heads_kv;
    if (!kernel(P, b, hk, scratch[static_cast<std::size_t>(omp_get_thread_num())].get()))
      guarded_task(c, b, hk);
    zero_padding(c, b, hk);
  }
}

}  // namespace sdpa::cpu
