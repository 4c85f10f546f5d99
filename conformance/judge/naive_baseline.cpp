#include "conformance/judge/naive_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/philox.hpp"

namespace sdpa::conformance {
namespace {

// Rounds x to the contract's type as a value held in T.
template <typename T>
T round_to(DType t, T x) {
  switch (t) {
    case DType::f16:
      return static_cast<T>(half_to_float(float_to_half(static_cast<float>(x))));
    case DType::bf16:
      return static_cast<T>(bf16_to_float(float_to_bf16(static_cast<float>(x))));
    case DType::f32:
      return static_cast<T>(static_cast<float>(x));
    case DType::f64:
      return x;
  }
  return x;
}

template <typename T>
std::vector<double> naive(const Problem& p, const reference::Inputs& in, const PrecisionContract& c,
                          SumOrder order) {
  // Index of the n-th term of a sum of `count` terms in the chosen order.
  const auto nth = [order](std::int64_t n, std::int64_t count) {
    return order == SumOrder::forward ? n : count - 1 - n;
  };
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dq = p.head_dim_qk,
                     Dv = p.head_dim_v;
  std::vector<double> out(static_cast<std::size_t>(B * H * L * Dv), 0.0);
  const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
  const T scale = static_cast<T>(effective_scale(p));
  const StridedView mv = mask_view(p);
  const std::uint32_t thr = dropout_threshold(p.dropout_p);
  const T keep_scale = p.dropout_p > 0 ? T(1) / (T(1) - static_cast<T>(p.dropout_p)) : T(1);
  const auto at = [&](const TensorLayout& t, const std::vector<std::int64_t>& cu, std::int64_t b,
                      std::int64_t h, std::int64_t r, std::int64_t d) {
    return element_offset(t, p.packed, b, h, p.packed ? cu[static_cast<std::size_t>(b)] + r : r, d);
  };
  std::vector<T> s(static_cast<std::size_t>(S));
  std::vector<char> att(static_cast<std::size_t>(S));
  // The rows of one (b, kv head) and one query, read once as T (exact: every input type
  // widens exactly), so the loops below are arithmetic only.
  std::vector<T> kt(static_cast<std::size_t>(S * Dq)), vt(static_cast<std::size_t>(S * Dv)),
      qt(static_cast<std::size_t>(Dq));
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t hk = h / (H / p.heads_kv);
      if (h % (H / p.heads_kv) == 0) {
        for (std::int64_t j = 0; j < sb; ++j) {
          for (std::int64_t e = 0; e < Dq; ++e)
            kt[j * Dq + e] =
                static_cast<T>(load_as_double(p.dtype, in.k, at(p.k, cuk, b, hk, j, e)));
          for (std::int64_t d = 0; d < Dv; ++d)
            vt[j * Dv + d] =
                static_cast<T>(load_as_double(p.dtype, in.v, at(p.v, cuk, b, hk, j, d)));
        }
      }
      for (std::int64_t i = 0; i < lb; ++i) {
        for (std::int64_t e = 0; e < Dq; ++e)
          qt[e] = static_cast<T>(load_as_double(p.dtype, in.q, at(p.q, cuq, b, h, i, e)));
        T m = -std::numeric_limits<T>::infinity();
        bool any = false;
        // Keys [lo, hi) the causal mask and the window leave to row i: only these are summed
        // (the terms outside are masked, so skipping them changes no bit, and a 128k
        // sliding-window case costs its window, not S per row).
        const std::int64_t off = sb - lb;
        std::int64_t lo = 0, hi = sb;
        if (p.causal == Causal::top_left) hi = std::min(hi, i + 1);
        if (p.causal == Causal::bottom_right) hi = std::min(hi, i + off + 1);
        if (p.window.enabled) {
          const std::int64_t o = p.window.align == Align::bottom_right ? off : 0;
          if (p.window.left >= 0) lo = std::max(lo, i + o - p.window.left);
          if (p.window.right >= 0) hi = std::min(hi, i + o + p.window.right + 1);
        }
        lo = std::max<std::int64_t>(lo, 0);
        hi = std::max(hi, lo);
        for (std::int64_t j = lo; j < hi; ++j) {
          bool ok = true;
          T x = 0;
          for (std::int64_t n = 0; n < Dq; ++n) {
            const std::int64_t e = nth(n, Dq);
            x += qt[e] * kt[j * Dq + e];
          }
          x *= scale;
          if (p.softcap > 0)
            x = static_cast<T>(p.softcap) * std::tanh(x / static_cast<T>(p.softcap));
          if (p.mask != MaskKind::none) {
            const std::int64_t mo =
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
            if (p.mask == MaskKind::boolean) {
              ok = ok && static_cast<const std::uint8_t*>(in.mask)[mo] != 0;
            } else {
              x += static_cast<T>(load_as_double(p.dtype, in.mask, mo));
            }
          }
          if (x == -std::numeric_limits<T>::infinity()) ok = false;
          att[j] = ok;
          s[j] = x;
          if (ok) {
            any = true;
            if (!(x <= m)) m = x;  // NaN propagates
          }
        }
        if (!any) continue;  // fully masked: 0
        T z = 0;
        for (std::int64_t n = 0; n < hi - lo; ++n) {
          const std::int64_t j = lo + nth(n, hi - lo);
          if (!att[j]) continue;
          s[j] = std::exp(s[j] - m);
          z += s[j];
        }
        for (std::int64_t d = 0; d < Dv; ++d) {
          T acc = 0;
          for (std::int64_t n = 0; n < hi - lo; ++n) {
            const std::int64_t j = lo + nth(n, hi - lo);
            if (!att[j]) continue;
            T pj = round_to(c.p_type, s[j] / z);
            if (p.dropout_p > 0) {
              pj = dropout_keep(p.dropout_seed, p.dropout_offset, thr, b, h, i, j, H, L, S)
                       ? pj * keep_scale
                       : T(0);
            }
            acc += pj * vt[j * Dv + d];
          }
          const double rounded = round_to(p.dtype, static_cast<double>(acc));
          out[static_cast<std::size_t>(((b * H + h) * L + i) * Dv + d)] = rounded;
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<double> naive_low_precision(const Problem& p, const reference::Inputs& in,
                                        SumOrder order) {
  PrecisionContract c;
  c.accumulate = p.dtype == DType::f64 ? DType::f64 : DType::f32;
  c.p_type = p.dtype;
  if (c.accumulate == DType::f64) return naive<double>(p, in, c, order);
  return naive<float>(p, in, c, order);
}

}  // namespace sdpa::conformance
