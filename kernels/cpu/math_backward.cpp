// cpu.math's backward: for each query row, the logits over the row's keys, P by a complete
// softmax (recomputed, not taken from the LSE), D = dO . O from the forward's stored O,
// dP = dO V^T with the dropout keep-mask and 1 / (1 - p) re-applied, dS = P (dP - D) (times
// softcap's derivative), then dQ = scale dS K and the group's dK += scale dS^T Q,
// dV += (P keep / (1 - p))^T dO. Plain loops in the accumulation type: one code path on
// every ISA target (the compiler's vectorisation), clarity first (docs/KERNELS.md).
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

// Loads n elements of `type` at `src` with element stride `stride` into dst.
template <typename T>
void load(DType type, const void* src, std::int64_t off, std::int64_t stride, std::int64_t n,
          T* dst) {
  for (std::int64_t e = 0; e < n; ++e)
    dst[e] = static_cast<T>(load_as_double(type, src, off + e * stride));
}

template <typename T>
void store(DType type, void* dst, std::int64_t off, std::int64_t stride, std::int64_t n,
           const T* src, double factor) {
  for (std::int64_t e = 0; e < n; ++e)
    store_from_double(type, dst, off + e * stride, static_cast<double>(src[e] * T(factor)));
}

void zero(DType type, void* dst, std::int64_t off, std::int64_t stride, std::int64_t n) {
  for (std::int64_t e = 0; e < n; ++e) store_from_double(type, dst, off + e * stride, 0.0);
}

// One (b, key/value head) group: its query heads in order, every gradient element it owns.
template <typename T>
void backward_group(const Problem& p, const Geometry& g, const Buffers& fwd,
                    const GradientPointers& grads, std::int64_t b, std::int64_t hk) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const std::int64_t lb = g.lq(b), sb = g.skv(b), dq = p.head_dim_qk, dv = p.head_dim_v;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(std::max<std::int64_t>(x, 1)); };
  const T scale = static_cast<T>(effective_scale(p));
  const T keep_scale = static_cast<T>(p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0);
  std::vector<T> k(n(sb * dq)), v(n(sb * dv)), acc_k(n(sb * dq), T(0)), acc_v(n(sb * dv), T(0));
  for (std::int64_t j = 0; j < sb; ++j) {
    load(p.dtype, fwd.k, g.kv_row(p.k, b, hk, j),
         p.k.stride[3], dq, k.data() + j * dq);
    load(p.dtype, fwd.v, g.kv_row(p.v, b, hk, j), p.v.stride[3], dv, v.data() + j * dv);
  }
  std::vector<T> q(n(dq)), d_o(n(dv)), o(n(dv)), dqa(n(dq)), s(n(sb)), pr(n(sb)), sech2(n(sb));
  std::vector<unsigned char> att(n(sb));
  for (std::int64_t h = hk * g.group; h < (hk + 1) * g.group; ++h) {
    // Rows beyond L_b of the padded layout: dQ = 0 (packed rows beyond L_b do not exist).
    if (!p.packed)
      for (std::int64_t i = lb; i < p.len_q; ++i)
        zero(p.dtype, grads.dq, g.q_row(p.q, b, h, i), p.q.stride[3], dq);
    for (std::int64_t i = 0; i < lb; ++i) {
      const std::int64_t dq_off = g.q_row(p.q, b, h, i);
      const KeyRange r = key_range(p, i, lb, sb);
      load(p.dtype, fwd.q, g.q_row(p.q, b, h, i), p.q.stride[3], dq, q.data());
      bool any = false;
      for (std::int64_t j = r.lo; j < r.hi; ++j) {
        T x = scale * dot(q.data(), k.data() + j * dq, dq);
        sech2[j] = 1;
        if (p.softcap > 0) {
          const T c = static_cast<T>(p.softcap), t = std::tanh(x / c);
          x = c * t;
          sech2[j] = 1 - t * t;
        }
        if (p.mask == MaskKind::boolean) {
          const auto* m = static_cast<const std::uint8_t*>(fwd.mask);
          if (m[g.mask_row(b, h, i) + j * g.mstride[3]] == 0) x = kNegInf;
        } else if (p.mask == MaskKind::additive) {
          const T bias = static_cast<T>(
              load_as_double(p.dtype, fwd.mask, g.mask_row(b, h, i) + j * g.mstride[3]));
          x = bias == kNegInf ? kNegInf : x + bias;  // a -inf bias masks even a NaN logit
        }
        s[j] = x;
        att[j] = x != kNegInf;
        any = any || att[j];
      }
      if (!any) {  // no attended key: dQ_i = 0, no contribution to dK, dV
        zero(p.dtype, grads.dq, dq_off, p.q.stride[3], dq);
        continue;
      }
      T m = kNegInf;
      bool nan = false;
      for (std::int64_t j = r.lo; j < r.hi; ++j) {
        if (!att[j]) continue;
        if (std::isnan(s[j])) nan = true;
        m = std::max(m, s[j]);
      }
      if (nan) m = std::numeric_limits<T>::quiet_NaN();
      T l = 0;
      for (std::int64_t j = r.lo; j < r.hi; ++j) {
        if (att[j]) l += (pr[j] = std::exp(s[j] - m));
      }
      for (std::int64_t j = r.lo; j < r.hi; ++j) {
        if (att[j]) pr[j] /= l;
      }
      load(p.dtype, grads.d_out, g.q_row(p.o, b, h, i), p.o.stride[3], dv, d_o.data());
      load(p.dtype, fwd.o, g.q_row(p.o, b, h, i), p.o.stride[3], dv, o.data());
      const T big_d = dot(d_o.data(), o.data(), dv);
      std::fill(dqa.begin(), dqa.end(), T(0));
      for (std::int64_t j = r.lo; j < r.hi; ++j) {
        if (!att[j]) continue;
        T z = 1;
        if (g.drop_threshold != 0) {
          z = dropout_keep(p.dropout_seed, p.dropout_offset, g.drop_threshold, b, h, i, j,
                           p.heads_q, p.len_q, p.len_kv)
                  ? keep_scale
                  : T(0);
        }
        const T dp = z * dot(d_o.data(), v.data() + j * dv, dv);
        const T ds = pr[j] * (dp - big_d) * sech2[j];
        const T w = pr[j] * z;
        T* kj = acc_k.data() + j * dq;
        T* vj = acc_v.data() + j * dv;
        for (std::int64_t e = 0; e < dq; ++e) {
          dqa[e] += ds * k[j * dq + e];
          kj[e] += ds * q[e];
        }
        for (std::int64_t d = 0; d < dv; ++d) vj[d] += w * d_o[d];
      }
      store(p.dtype, grads.dq, dq_off, p.q.stride[3], dq, dqa.data(), effective_scale(p));
    }
  }
  for (std::int64_t j = 0; j < sb; ++j) {
    store(p.dtype, grads.dk, g.kv_row(p.k, b, hk, j), p.k.stride[3], dq, acc_k.data() + j * dq,
          effective_scale(p));
    store(p.dtype, grads.dv, g.kv_row(p.v, b, hk, j), p.v.stride[3], dv, acc_v.data() + j * dv,
          1.0);
  }
  // Keys beyond S_b of the padded layout: dK = dV = 0.
  if (!p.packed)
    for (std::int64_t j = sb; j < p.len_kv; ++j) {
      zero(p.dtype, grads.dk, g.kv_row(p.k, b, hk, j), p.k.stride[3], dq);
      zero(p.dtype, grads.dv, g.kv_row(p.v, b, hk, j), p.v.stride[3], dv);
    }
}

}  // namespace

void math_backward(const Problem& p, const Buffers& forward, const GradientPointers& grads,
                   const RunOptions& options) {
  const Geometry g(p);
  const std::int64_t groups = p.batch * p.heads_kv;
#pragma omp parallel for schedule(dynamic, 1) num_threads(thread_count(options))
  for (std::int64_t bg = 0; bg < groups; ++bg) {
    if (p.dtype == DType::f64) {
      backward_group<double>(p, g, forward, grads, bg / p.heads_kv, bg % p.heads_kv);
    } else {
      backward_group<float>(p, g, forward, grads, bg / p.heads_kv, bg % p.heads_kv);
    }
  }
}

}  // namespace sdpa::cpu
