// The exact values of one attention head, computed here in long double from the case's inputs,
// for the bound-edge tests: the magnitudes of docs/CONFORMANCE.md ("The bound") and the
// backward's dS, so that a test derives its planted error from the contract's terms without
// reading the judge's or the reference's magnitudes. Dense single-head problems (B = Hq = Hkv
// = 1) without masks, dropout or per-batch lengths.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/problem.hpp"

namespace sdpa::testing {

struct ExactHead {
  std::int64_t L = 0, S = 0, Dq = 0, Dv = 0;
  std::vector<double> q, k, v, d_out;  // [L, Dq], [S, Dq], [S, Dv], [L, Dv] (dO when backward)
  std::vector<double> logit;           // [L, S] s_ij: scale q.k, through softcap when present
  std::vector<double> dot_mag;         // [L, S] a_ij = |scale| sum_e |q_ie k_je|
  std::vector<double> softcap_slope;   // [L, S] t'_ij = 1 - tanh^2 (1 without softcap)
  std::vector<double> p;               // [L, S] the weights
  std::vector<double> o;               // [L, Dv]
  std::vector<double> lse;             // [L]
  std::vector<double> ds;              // [L, S] P (dP - D), without t' (backward only)

  ExactHead(const Problem& pr, const InputBuffers& in) {
    if (pr.batch != 1 || pr.heads_q != 1 || pr.heads_kv != 1 || pr.mask != MaskKind::none ||
        pr.causal != Causal::none || pr.window.enabled || !pr.seqlens_q.empty() ||
        pr.dropout_p != 0)
      throw std::invalid_argument("ExactHead: a dense single-head problem without masks");
    L = pr.len_q, S = pr.len_kv, Dq = pr.head_dim_qk, Dv = pr.head_dim_v;
    load(pr, pr.q, in.q.data(), L, Dq, q);
    load(pr, pr.k, in.k.data(), S, Dq, k);
    load(pr, pr.v, in.v.data(), S, Dv, v);
    if (pr.backward) load(pr, pr.o, in.d_out->data(), L, Dv, d_out);
    const long double scale = effective_scale(pr), cap = pr.softcap;
    logit.assign(n(L * S), 0);
    dot_mag.assign(n(L * S), 0);
    softcap_slope.assign(n(L * S), 1);
    p.assign(n(L * S), 0);
    o.assign(n(L * Dv), 0);
    lse.assign(n(L), 0);
    for (std::int64_t i = 0; i < L; ++i) {
      long double big = -INFINITY;
      for (std::int64_t j = 0; j < S; ++j) {
        long double dot = 0, mag = 0;
        for (std::int64_t e = 0; e < Dq; ++e) {
          dot += (long double)q[n(i * Dq + e)] * k[n(j * Dq + e)];
          mag += std::fabs((long double)q[n(i * Dq + e)] * k[n(j * Dq + e)]);
        }
        long double x = scale * dot;
        if (cap > 0) {
          const long double th = std::tanh(x / cap);
          x = cap * th;
          softcap_slope[n(i * S + j)] = double(1 - th * th);
        }
        logit[n(i * S + j)] = double(x);
        dot_mag[n(i * S + j)] = double(std::fabs(scale) * mag);
        big = std::max(big, x);
      }
      long double sum = 0;
      for (std::int64_t j = 0; j < S; ++j) sum += std::exp((long double)logit[n(i * S + j)] - big);
      const long double l = big + std::log(sum);
      lse[n(i)] = double(l);
      for (std::int64_t j = 0; j < S; ++j)
        p[n(i * S + j)] = double(std::exp((long double)logit[n(i * S + j)] - l));
      for (std::int64_t d = 0; d < Dv; ++d) {
        long double acc = 0;
        for (std::int64_t j = 0; j < S; ++j) acc += (long double)p[n(i * S + j)] * v[n(j * Dv + d)];
        o[n(i * Dv + d)] = double(acc);
      }
    }
    if (!pr.backward) return;
    ds.assign(n(L * S), 0);
    for (std::int64_t i = 0; i < L; ++i) {
      long double big_d = 0;
      for (std::int64_t d = 0; d < Dv; ++d)
        big_d += (long double)d_out[n(i * Dv + d)] * o[n(i * Dv + d)];
      for (std::int64_t j = 0; j < S; ++j) {
        long double dp = 0;
        for (std::int64_t d = 0; d < Dv; ++d)
          dp += (long double)d_out[n(i * Dv + d)] * v[n(j * Dv + d)];
        ds[n(i * S + j)] = double(p[n(i * S + j)] * (dp - big_d));
      }
    }
  }

  // sum_j P_ij |V_jd| (the accumulation term's magnitude, A).
  double weighted_abs_v(std::int64_t i, std::int64_t d) const {
    return weighted(
        i, d, [](std::int64_t, std::int64_t) { return 1.0; }, false);
  }
  // sum_j P_ij a_ij |V_jd - O_id| (the dot products' term, G).
  double dot_term(std::int64_t i, std::int64_t d) const {
    return weighted(i, d, [&](std::int64_t r, std::int64_t j) { return dot_mag[n(r * S + j)]; });
  }
  // sum_j P_ij |s_ij| |V_jd - O_id| (the logits' rounding and exp term, C).
  double logit_term(std::int64_t i, std::int64_t d) const {
    return weighted(i, d,
                    [&](std::int64_t r, std::int64_t j) { return std::fabs(logit[n(r * S + j)]); });
  }
  // sum over the keys whose weight relative to the row's largest is below 2^-14 (those whose
  // P may underflow in a kernel) of |V_jd|, divided by the sum of those relative weights (the
  // subnormal term's magnitude, U).
  double underflow_term(std::int64_t i, std::int64_t d) const {
    long double big = -INFINITY, z = 0, u = 0;
    for (std::int64_t j = 0; j < S; ++j) big = std::max<long double>(big, logit[n(i * S + j)]);
    for (std::int64_t j = 0; j < S; ++j) {
      const long double e = std::exp((long double)logit[n(i * S + j)] - big);
      z += e;
      if (e < 0x1p-14L) u += std::fabs(v[n(j * Dv + d)]);
    }
    return double(u / z);
  }
  // sum_j P_ij |s_ij| and sum_j P_ij a_ij (the LSE's logit and dot-product magnitudes).
  double lse_logit_term(std::int64_t i) const { return row_sum(i, logit, true); }
  double lse_dot_term(std::int64_t i) const { return row_sum(i, dot_mag, false); }

  static std::size_t n(std::int64_t x) { return static_cast<std::size_t>(x); }

 private:
  static void load(const Problem& pr, const TensorLayout& t, const void* data, std::int64_t rows,
                   std::int64_t cols, std::vector<double>& out) {
    out.assign(n(rows * cols), 0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        out[n(r * cols + c)] = load_as_double(pr.dtype, data, element_offset(t, false, 0, 0, r, c));
  }
  template <class Weight>
  double weighted(std::int64_t i, std::int64_t d, Weight w, bool centred = true) const {
    long double acc = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      const double vj = v[n(j * Dv + d)];
      acc +=
          (long double)p[n(i * S + j)] * w(i, j) * std::fabs(centred ? vj - o[n(i * Dv + d)] : vj);
    }
    return double(acc);
  }
  double row_sum(std::int64_t i, const std::vector<double>& m, bool absolute) const {
    long double acc = 0;
    for (std::int64_t j = 0; j < S; ++j)
      acc +=
          (long double)p[n(i * S + j)] * (absolute ? std::fabs(m[n(i * S + j)]) : m[n(i * S + j)]);
    return double(acc);
  }
};

}  // namespace sdpa::testing
