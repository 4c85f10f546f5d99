// cpu.math's backward: for each query row, the logits over the row's keys, P by a complete
// softmax (recomputed, not taken from the LSE), D = dO . O from the forward's stored O,
// dP = dO V^T with the dropout keep-mask and 1 / (1 - p) re-applied, dS = P (dP - D) (times
// softcap's derivative), then dQ = scale dS K and the group's dK += scale dS^T Q,
// dV += (P keep / (1 - p))^T dO. A row is computed in the compute type (f32, f64 for f64
// problems); its contributions are summed into f64 accumulators (dQ of the row, dK and dV of
// the group) and rounded once. Overflow guard: a row whose dS comes out non-finite in f32
// while its logits are not NaN (dO . V beyond the f32 range, e.g. V near the maximum) is
// computed again in f64. Plain loops: one code path on every ISA target (docs/KERNELS.md).
#include "kernels/cpu/math_backward.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/philox.hpp"
#include "kernels/cpu/sdpa_rows.hpp"

namespace sdpa::cpu {
namespace {

template <typename T>
T dot(const T* a, const T* b, std::int64_t n) {
  T s = 0;
  for (std::int64_t e = 0; e < n; ++e) s += a[e] * b[e];
  return s;
}

// Loads n elements of `type` at element offset `off` (element stride `stride`) into dst.
template <typename T>
void load(DType type, const void* src, std::int64_t off, std::int64_t stride, std::int64_t n,
          T* dst) {
  for (std::int64_t e = 0; e < n; ++e)
    dst[e] = static_cast<T>(load_as_double(type, src, off + e * stride));
}

void store(DType type, void* dst, std::int64_t off, std::int64_t stride, std::int64_t n,
           const double* src, double factor) {
  for (std::int64_t e = 0; e < n; ++e)
    store_from_double(type, dst, off + e * stride, src[e] * factor);
}

void zero(DType type, void* dst, std::int64_t off, std::int64_t stride, std::int64_t n) {
  for (std::int64_t e = 0; e < n; ++e) store_from_double(type, dst, off + e * stride, 0.0);
}

// One (b, key/value head) group's inputs, widened to T once.
template <typename T>
struct GroupInputs {
  std::vector<T> k, v;  // [S_b][Dqk], [S_b][Dv]
};

// A row's inputs in T, and its results: dS t' and the dV weight P keep / (1 - p) per key.
template <typename T>
struct RowWork {
  std::vector<T> q, d_o, o, s, pr, sech2, dx, w, ds;
  std::vector<unsigned char> att;
  RowWork(std::size_t dq, std::size_t dv, std::size_t sb)
      : q(dq), d_o(dv), o(dv), s(sb), pr(sb), sech2(sb), dx(sb), w(sb), ds(sb), att(sb) {}
};

enum class RowResult { no_key, done, overflow };

// Row i of query head h in compute type T: fills work.dx and work.w over [r.lo, r.hi) (att
// marks the attended keys). `overflow` when dS is not finite although the logits are not NaN.
template <typename T>
RowResult compute_row(const sdpa_cts_params& p, const Geometry& g, const GroupInputs<T>& in,
                      RowWork<T>& w, std::int64_t b, std::int64_t h, std::int64_t i,
                      const KeyRange& r) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const std::int64_t dq = p.head_dim_qk, dv = p.head_dim_v;
  const T scale = static_cast<T>(p.scale);
  const T keep_scale = static_cast<T>(p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0);
  load(g.dtype, p.q, g.q_row(p.q_stride, b, h, i), p.q_stride[3], dq, w.q.data());
  bool any = false;
  for (std::int64_t j = r.lo; j < r.hi; ++j) {
    T x = scale * dot(w.q.data(), in.k.data() + j * dq, dq);
    w.sech2[j] = 1;
    if (p.softcap > 0) {
      const T c = static_cast<T>(p.softcap), t = std::tanh(x / c);
      x = c * t;
      w.sech2[j] = 1 - t * t;
    }
    if (p.mask_kind == SDPA_CTS_MASK_BOOL) {
      const auto* m = static_cast<const std::uint8_t*>(p.mask);
      if (m[g.mask_row(b, h, i) + j * g.mask_col_stride()] == 0) x = kNegInf;
    } else if (p.mask_kind == SDPA_CTS_MASK_ADDITIVE) {
      const T bias = static_cast<T>(
          load_as_double(g.dtype, p.mask, g.mask_row(b, h, i) + j * g.mask_col_stride()));
      x = bias == kNegInf ? kNegInf : x + bias;  // a -inf bias masks even a NaN logit
    }
    w.s[j] = x;
    w.att[j] = x != kNegInf;
    any = any || w.att[j];
  }
  if (!any) return RowResult::no_key;  // dQ_i = 0, no contribution to dK, dV
  T m = kNegInf;
  bool nan = false;
  for (std::int64_t j = r.lo; j < r.hi; ++j) {
    if (!w.att[j]) continue;
    if (std::isnan(w.s[j])) nan = true;
    m = std::max(m, w.s[j]);
  }
  if (nan) m = std::numeric_limits<T>::quiet_NaN();
  T l = 0;
  for (std::int64_t j = r.lo; j < r.hi; ++j) {
    if (w.att[j]) l += (w.pr[j] = std::exp(w.s[j] - m));
  }
  for (std::int64_t j = r.lo; j < r.hi; ++j) {
    if (w.att[j]) w.pr[j] /= l;
  }
  load(g.dtype, p.d_o, g.q_row(p.o_stride, b, h, i), p.o_stride[3], dv, w.d_o.data());
  load(g.dtype, p.o, g.q_row(p.o_stride, b, h, i), p.o_stride[3], dv, w.o.data());
  const T big_d = dot(w.d_o.data(), w.o.data(), dv);
  bool finite = true;
  for (std::int64_t j = r.lo; j < r.hi; ++j) {
    if (!w.att[j]) continue;
    T z = 1;
    if (p.dropout_threshold != 0) {
      z = dropout_keep(p.dropout_seed, p.dropout_offset, p.dropout_threshold, b, h, i, j, p.heads_q,
                       p.len_q, p.len_kv)
              ? keep_scale
              : T(0);
    }
    const T dp = z * dot(w.d_o.data(), in.v.data() + j * dv, dv);
    w.ds[j] = w.pr[j] * (dp - big_d);  // d bias: the bias is added after softcap
    w.dx[j] = w.ds[j] * w.sech2[j];
    // A dropped key has no term in dV, also in a NaN row (as in the forward's O).
    w.w[j] = z == 0 ? T(0) : w.pr[j] * z;
    finite = finite && std::isfinite(w.dx[j]);
  }
  return finite || nan ? RowResult::done : RowResult::overflow;
}

// One (b, key/value head) group: its query heads in order, every gradient element it owns.
template <typename T>
void backward_group(const sdpa_cts_params& p, const Geometry& g, std::int64_t b, std::int64_t hk,
                    double* ds_all) {
  const std::int64_t lb = g.lq(b), sb = g.skv(b), dq = p.head_dim_qk, dv = p.head_dim_v;
  const auto n = [](std::int64_t x) {
    return static_cast<std::size_t>(std::max<std::int64_t>(x, 1));
  };
  GroupInputs<T> in{std::vector<T>(n(sb * dq)), std::vector<T>(n(sb * dv))};
  GroupInputs<double> in64;  // widened on the first row that overflows
  for (std::int64_t j = 0; j < sb; ++j) {
    load(g.dtype, p.k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], dq, in.k.data() + j * dq);
    load(g.dtype, p.v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], dv, in.v.data() + j * dv);
  }
  std::vector<double> acc_k(n(sb * dq), 0.0), acc_v(n(sb * dv), 0.0), dqa(n(dq));
  RowWork<T> work(n(dq), n(dv), n(sb));
  RowWork<double> work64(n(dq), n(dv), n(sb));
  // Adds a finished row's terms to dQ_i and the group's dK, dV accumulators.
  auto accumulate = [&](const auto& w, const auto& kin, const KeyRange& r, std::int64_t h,
                        std::int64_t i) {
    std::fill(dqa.begin(), dqa.end(), 0.0);
    if (ds_all) {
      double* row = ds_all + ((b * p.heads_q + h) * p.len_q + i) * p.len_kv;
      for (std::int64_t j = r.lo; j < r.hi; ++j) row[j] = w.att[j] ? double(w.ds[j]) : 0.0;
    }
    for (std::int64_t j = r.lo; j < r.hi; ++j) {
      if (!w.att[j]) continue;
      const double dx = w.dx[j], wj = w.w[j];
      double* kj = acc_k.data() + j * dq;
      double* vj = acc_v.data() + j * dv;
      for (std::int64_t e = 0; e < dq; ++e) {
        dqa[e] += dx * double(kin.k[j * dq + e]);
        kj[e] += dx * double(w.q[e]);
      }
      for (std::int64_t d = 0; d < dv; ++d) vj[d] += wj * double(w.d_o[d]);
    }
  };
  for (std::int64_t h = hk * g.group; h < (hk + 1) * g.group; ++h) {
    // Rows beyond L_b of the padded layout: dQ = 0 (packed rows beyond L_b do not exist).
    if (!p.packed)
      for (std::int64_t i = lb; i < p.len_q; ++i)
        zero(g.dtype, p.d_q, g.q_row(p.q_stride, b, h, i), p.q_stride[3], dq);
    for (std::int64_t i = 0; i < lb; ++i) {
      const std::int64_t dq_off = g.q_row(p.q_stride, b, h, i);
      const KeyRange r = key_range(p, i, lb, sb);
      RowResult res = compute_row(p, g, in, work, b, h, i, r);
      if (res == RowResult::overflow) {
        if (in64.k.empty()) {
          in64.k.assign(in.k.begin(), in.k.end());
          in64.v.assign(in.v.begin(), in.v.end());
        }
        res = compute_row(p, g, in64, work64, b, h, i, r);
        accumulate(work64, in64, r, h, i);
      } else if (res == RowResult::done) {
        accumulate(work, in, r, h, i);
      } else {
        std::fill(dqa.begin(), dqa.end(), 0.0);
      }
      store(g.dtype, p.d_q, dq_off, p.q_stride[3], dq, dqa.data(), p.scale);
    }
  }
  for (std::int64_t j = 0; j < sb; ++j) {
    store(g.dtype, p.d_k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], dq, acc_k.data() + j * dq,
          p.scale);
    store(g.dtype, p.d_v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], dv, acc_v.data() + j * dv,
          1.0);
  }
  // Keys beyond S_b of the padded layout: dK = dV = 0.
  if (!p.packed)
    for (std::int64_t j = sb; j < p.len_kv; ++j) {
      zero(g.dtype, p.d_k, g.kv_row(p.k_stride, b, hk, j), p.k_stride[3], dq);
      zero(g.dtype, p.d_v, g.kv_row(p.v_stride, b, hk, j), p.v_stride[3], dv);
    }
}

}  // namespace

void math_backward(const LoweredProblem& lowered, const RunOptions& options) {
  const Geometry g(lowered);
  const sdpa_cts_params& p = g.p;
  const std::int64_t groups = p.batch * p.heads_kv;
  // d bias: every dS in place (0 where a pair is not attended), each written by one group.
  std::vector<double> ds_all;
  if (p.bias_grad)
    ds_all.assign(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.len_kv), 0.0);
  double* ds = p.bias_grad ? ds_all.data() : nullptr;
#pragma omp parallel for schedule(dynamic, 1) num_threads(thread_count(options))
  for (std::int64_t bg = 0; bg < groups; ++bg) {
    if (g.dtype == DType::f64) {
      backward_group<double>(p, g, bg / p.heads_kv, bg % p.heads_kv, ds);
    } else {
      backward_group<float>(p, g, bg / p.heads_kv, bg % p.heads_kv, ds);
    }
  }
  if (!p.bias_grad) return;
  // The sums over the mask's broadcast dimensions, in (b, h, i, j) order on one thread.
  const std::int64_t* mstride = p.mask_stride;
  std::vector<double> sum(static_cast<std::size_t>(lowered.mask_elements()), 0.0);
  std::size_t x = 0;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i)
        for (std::int64_t j = 0; j < p.len_kv; ++j, ++x) {
          sum[static_cast<std::size_t>(b * mstride[0] + h * mstride[1] + i * mstride[2] +
                                       j * mstride[3])] += ds_all[x];
        }
  store(g.dtype, p.d_bias, 0, 1, static_cast<std::int64_t>(sum.size()), sum.data(), 1.0);
}

}  // namespace sdpa::cpu
