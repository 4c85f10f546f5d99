#include "tests/conformance/mutants/mutant_kernel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "core/philox.hpp"

namespace sdpa::testing {
namespace {

// Element offsets of Q, K, V, O and the mask for one problem, packed or padded.
struct Addressing {
  const Problem& p;                            // the problem
  std::vector<std::int64_t> cuq, cuk;          // packed row offsets (empty when padded)
  std::array<std::int64_t, 4> sq, sk, sv, so;  // element strides of Q, K, V, O
  StridedView mask;                            // mask view [B, Hq, L, S] with broadcast strides

  Addressing(const Problem& prob, Mutation m)
      : p(prob),
        cuq(prob.packed ? cu_seqlens_q(prob) : std::vector<std::int64_t>{}),
        cuk(prob.packed ? cu_seqlens_kv(prob) : std::vector<std::int64_t>{}),
        sq(prob.q.stride),
        sk(prob.k.stride),
        sv(prob.v.stride),
        so(prob.o.stride),
        mask(mask_view(prob)) {
    if (m == Mutation::stride_assumed_contiguous) {
      sq = contiguous_strides(q_view(prob).shape);
      sk = contiguous_strides(k_view(prob).shape);
      sv = contiguous_strides(v_view(prob).shape);
      so = contiguous_strides(o_view(prob).shape);
    }
  }
  // Offset of (b, h, row, d) in a tensor with strides s and packed offsets cu.
  std::int64_t at(const std::array<std::int64_t, 4>& s, const std::vector<std::int64_t>& cu,
                  std::int64_t b, std::int64_t h, std::int64_t row, std::int64_t d) const {
    const std::int64_t r = p.packed ? cu[static_cast<std::size_t>(b)] + row : row;
    return element_offset(TensorLayout{s, 0}, p.packed, b, h, r, d);
  }
};

// One (b, h) slice and the bug switched on.
template <typename Acc>
struct Slice {
  const Problem& p;        // the problem
  const Buffers& buf;      // its buffers
  const Addressing& at;    // its offsets
  Mutation m;              // the bug (none = correct)
  std::int64_t b, h, hk;   // batch element, query head, its kv head
  std::int64_t lb, sb;     // valid query rows and keys of this batch element
  Acc scale;               // logit scale
  std::uint32_t drop_thr;  // dropout keep threshold (0 = no dropout)
  int v_shift = 0;         // V is read as V * 2^-v_shift (overflow guard, v_shift_for)
};

// Overflow guard. The unnormalised accumulator sum_j p_j V_j (p_j <= 1) can exceed the
// accumulator's range by a factor of up to S_b although O = acc / l never does (a convex
// combination of the V_j). V is therefore read scaled by 2^-k, the smallest k with
// S_b max|V| 2^-k <= max / 2, and O is multiplied by 2^k at the end: exact, except for V
// values that become subnormal, which lie far below the sum's resolution. k = 0 for every
// ordinary problem; non-finite V keeps k = 0 (inf and NaN propagate as they must).
template <typename Acc>
int v_shift_for(const Slice<Acc>& s) {
  double vmax = 0;
  for (std::int64_t j = 0; j < s.sb; ++j)
    for (std::int64_t d = 0; d < s.p.head_dim_v; ++d)
      vmax = std::max(vmax, std::fabs(load_as_double(s.p.dtype, s.buf.v,
                                                     s.at.at(s.at.sv, s.at.cuk, s.b, s.hk, j, d))));
  const double limit = double(std::numeric_limits<Acc>::max()) / 2;
  if (!std::isfinite(vmax) || vmax == 0 || vmax * double(s.sb) <= limit) return 0;
  return int(std::ceil(std::log2(vmax) + std::log2(double(s.sb)) - std::log2(limit)));
}

// Result of a range of keys for one row: normalised output and LSE (before dropout).
template <typename Acc>
struct Partial {
  std::vector<Acc> o;                               // O over these keys, normalised
  Acc lse = -std::numeric_limits<Acc>::infinity();  // -inf: no key attended
  bool nan = false;                                 // an attended logit was NaN
};

// Whether the structural masks let row i attend key j (SEMANTICS.md step 5).
template <typename Acc>
bool structurally_allowed(const Slice<Acc>& s, std::int64_t i, std::int64_t j) {
  const Problem& p = s.p;
  const std::int64_t br = s.sb - s.lb;  // bottom-right offset
  if (p.causal != Causal::none) {
    std::int64_t off = p.causal == Causal::bottom_right ? br : 0;
    if (s.m == Mutation::causal_tl_br_swapped) off = p.causal == Causal::bottom_right ? 0 : br;
    const bool ok = s.m == Mutation::causal_off_by_one ? j < i + off : j <= i + off;
    if (!ok) return false;
  }
  if (p.window.enabled) {
    const std::int64_t off = p.window.align == Align::bottom_right ? br : 0;
    const std::int64_t lo = i + off - p.window.left + (s.m == Mutation::window_off_by_one);
    if (p.window.left >= 0 && j < lo) return false;
    if (p.window.right >= 0 && j > i + off + p.window.right) return false;
  }
  return true;
}

template <typename Acc>
Acc capped(Acc x, double c) {
  return c > 0 ? Acc(c) * std::tanh(x / Acc(c)) : x;
}

// Logit of (i, j): softcap, bias, masks; -inf when masked.
template <typename Acc>
Acc logit(const Slice<Acc>& s, const std::vector<Acc>& q, std::int64_t i, std::int64_t j) {
  const Problem& p = s.p;
  Acc dot = 0;
  for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
    dot += q[static_cast<std::size_t>(e)] *
           Acc(load_as_double(p.dtype, s.buf.k, s.at.at(s.at.sk, s.at.cuk, s.b, s.hk, j, e)));
  }
  Acc x = s.scale * dot;
  const bool cap_late = s.m == Mutation::softcap_after_mask;
  if (!cap_late) x = capped(x, p.softcap);
  bool allowed = structurally_allowed(s, i, j);
  if (p.mask != MaskKind::none) {
    const std::int64_t mb = s.m == Mutation::mask_batch_broadcast ? 0 : s.b;
    const std::int64_t mo = mb * s.at.mask.stride[0] + s.h * s.at.mask.stride[1] +
                            i * s.at.mask.stride[2] + j * s.at.mask.stride[3];
    if (p.mask == MaskKind::boolean) {
      allowed = allowed && static_cast<const std::uint8_t*>(s.buf.mask)[mo] != 0;
    } else {
      x += Acc(load_as_double(p.dtype, s.buf.mask, mo));
    }
  }
  if (!allowed) x = -std::numeric_limits<Acc>::infinity();
  if (cap_late) x = capped(x, p.softcap);
  return x;
}

// Online softmax over keys [j0, j1) of row i, key block by key block.
template <typename Acc>
Partial<Acc> attend_keys(const Slice<Acc>& s, const std::vector<Acc>& q, std::int64_t i,
                         std::int64_t j0, std::int64_t j1) {
  const Problem& p = s.p;
  const std::int64_t Dv = p.head_dim_v;
  constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
  Partial<Acc> out;
  std::vector<Acc> acc(static_cast<std::size_t>(Dv), Acc(0));
  Acc m = kNegInf, l = 0;
  Acc logits[kKeyBlock];
  for (std::int64_t jb = j0; jb < j1; jb += kKeyBlock) {
    const std::int64_t je = std::min(jb + kKeyBlock, j1);
    if (s.m == Mutation::last_partial_tile_dropped && je - jb < kKeyBlock) break;
    Acc block_max = kNegInf;
    for (std::int64_t j = jb; j < je; ++j) {
      Acc x = logit(s, q, i, j);
      if (std::isnan(x)) {
        if (s.m == Mutation::nan_hidden) {
          x = kNegInf;  // the bug: a NaN logit treated as a masked key
        } else {
          out.nan = true;  // the row's max is NaN: the whole row is NaN
        }
      }
      logits[j - jb] = x;
      block_max = std::max(block_max, std::isnan(x) ? kNegInf : x);
    }
    const Acc m_new = std::max(m, block_max);
    if (m_new == kNegInf) continue;  // every key so far masked (or NaN: flagged above)
    // Rescale what was accumulated under the old max (alpha = 0 for the first block).
    const Acc alpha = std::exp(m - m_new);
    l *= alpha;
    if (s.m != Mutation::missing_rescale)
      for (auto& a : acc) a *= alpha;
    m = m_new;
    for (std::int64_t j = jb; j < je; ++j) {
      const Acc x = logits[j - jb];
      if (x == kNegInf) continue;  // masked (a -inf logit masks the key)
      Acc pj = std::exp(x - m);
      if (s.m == Mutation::p_in_bf16) pj = Acc(bf16_to_float(float_to_bf16(float(pj))));
      l += pj;
      // Dropout: the keep-mask of the logical (unpacked) position; 1/(1-p) comes at the end.
      if (s.drop_thr != 0 && !dropout_keep(p.dropout_seed, p.dropout_offset, s.drop_thr, s.b, s.h,
                                           i, j, p.heads_q, p.len_q, p.len_kv))
        continue;
      for (std::int64_t d = 0; d < Dv; ++d) {
        acc[static_cast<std::size_t>(d)] +=
            pj * Acc(std::ldexp(
                     load_as_double(p.dtype, s.buf.v, s.at.at(s.at.sv, s.at.cuk, s.b, s.hk, j, d)),
                     -s.v_shift));
      }
    }
  }
  if (std::isnan(l)) out.nan = true;  // +inf logits: exp(inf - inf) (IEEE, SEMANTICS.md)
  if (l > 0) out.lse = m + std::log(l);
  out.o.resize(static_cast<std::size_t>(Dv));
  for (std::int64_t d = 0; d < Dv; ++d) out.o[d] = acc[static_cast<std::size_t>(d)] / l;
  return out;
}

// Combines the splits of one row with the weights exp(lse_c - lse).
template <typename Acc>
Partial<Acc> combine(const std::vector<Partial<Acc>>& parts, std::int64_t Dv, Mutation m) {
  constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
  Partial<Acc> out;
  out.o.assign(static_cast<std::size_t>(Dv), Acc(0));
  Acc mx = kNegInf;
  for (const auto& c : parts) {
    out.nan = out.nan || c.nan;
    if (c.lse > mx) mx = c.lse;
  }
  if (mx == kNegInf) return out;  // no split attended a key
  Acc sum = 0;
  for (const auto& c : parts) sum += std::exp(c.lse - mx);
  out.lse = mx + std::log(sum);
  std::int64_t attended = 0;
  for (const auto& c : parts) attended += c.lse != kNegInf;
  for (const auto& c : parts) {
    if (c.lse == kNegInf) continue;  // an empty split contributes nothing
    const Acc w = m == Mutation::split_combine_unweighted ? Acc(1) / Acc(attended)
                                                          : std::exp(c.lse - out.lse);
    for (std::int64_t d = 0; d < Dv; ++d) out.o[d] += w * c.o[d];
  }
  return out;
}

// Writes one row of O, with the two write bugs of the last row of the last slice.
template <typename Acc>
void write_row(const Slice<Acc>& s, std::int64_t i, const std::vector<double>& row, bool last_row) {
  const Problem& p = s.p;
  if (last_row && s.m == Mutation::row_unwritten) return;
  const std::int64_t Dv = p.head_dim_v;
  for (std::int64_t d = 0; d < Dv; ++d) {
    store_from_double(p.dtype, s.buf.o, s.at.at(s.at.so, s.at.cuq, s.b, s.h, i, d),
                      row[static_cast<std::size_t>(d)]);
  }
  if (last_row && s.m == Mutation::write_past_end && Dv > 0) {
    store_from_double(p.dtype, s.buf.o, s.at.at(s.at.so, s.at.cuq, s.b, s.h, i, Dv), 0.0);
  }
}

// The output of a row without any attended key.
template <typename Acc>
void masked_row(const Slice<Acc>& s, std::vector<double>& row) {
  const Problem& p = s.p;
  if (s.m == Mutation::masked_row_nan) {
    std::fill(row.begin(), row.end(), std::numeric_limits<double>::quiet_NaN());  // acc / l = 0 / 0
    return;
  }
  if (s.m == Mutation::masked_row_mean_v) {  // as if -inf were a large finite negative
    for (std::size_t d = 0; d < row.size(); ++d) {
      Acc sum = 0;
      for (std::int64_t j = 0; j < s.sb; ++j)
        sum += Acc(load_as_double(p.dtype, s.buf.v,
                                  s.at.at(s.at.sv, s.at.cuk, s.b, s.hk, j, std::int64_t(d))));
      row[d] = double(sum / Acc(s.sb));
    }
    return;
  }
  std::fill(row.begin(), row.end(), 0.0);  // SEMANTICS.md: O = 0, LSE = -inf
}

template <typename Acc>
void run_slice(const Slice<Acc>& s) {
  const Problem& p = s.p;
  const std::int64_t Dqk = p.head_dim_qk, Dv = p.head_dim_v;
  const bool last_slice = s.b == p.batch - 1 && s.h == p.heads_q - 1;
  const std::int64_t rows = p.packed ? s.lb : p.len_q;  // rows the O layout holds
  const double keep_scale =
      p.dropout_p > 0 && s.m != Mutation::dropout_scale_missing ? 1.0 / (1.0 - p.dropout_p) : 1.0;
  std::vector<Acc> q(static_cast<std::size_t>(Dqk));
  std::vector<double> row(static_cast<std::size_t>(Dv));
  for (std::int64_t i = 0; i < rows; ++i) {
    double lse = -std::numeric_limits<double>::infinity();
    if (i >= s.lb) {
      std::fill(row.begin(), row.end(), 0.0);  // padding rows are written as 0
    } else {
      for (std::int64_t e = 0; e < Dqk; ++e)
        q[e] = Acc(load_as_double(p.dtype, s.buf.q, s.at.at(s.at.sq, s.at.cuq, s.b, s.h, i, e)));
      // Split-KV for decode-like rows; one split otherwise.
      const bool split = s.lb <= kSplitMaxRows && s.sb > kSplitKeys;
      const std::int64_t chunk = split ? kSplitKeys : std::max<std::int64_t>(s.sb, 1);
      std::vector<Partial<Acc>> parts;
      for (std::int64_t j0 = 0; j0 < s.sb; j0 += chunk)
        parts.push_back(attend_keys(s, q, i, j0, std::min(j0 + chunk, s.sb)));
      const Partial<Acc> r = combine(parts, Dv, s.m);
      if (r.nan) {  // no NaN hiding: an attended NaN logit makes the row NaN
        std::fill(row.begin(), row.end(), std::numeric_limits<double>::quiet_NaN());
        lse = std::numeric_limits<double>::quiet_NaN();
      } else if (r.lse == -std::numeric_limits<Acc>::infinity()) {
        masked_row(s, row);
      } else {
        for (std::int64_t d = 0; d < Dv; ++d)
          row[d] = std::ldexp(double(r.o[d]), s.v_shift) * keep_scale;
        lse = double(r.lse);
        if (s.m == Mutation::lse_base2) lse /= std::numbers::ln2;
      }
    }
    write_row(s, i, row, last_slice && i == rows - 1);
    if (p.want_lse) s.buf.lse[(s.b * p.heads_q + s.h) * p.len_q + i] = float(lse);
  }
  // LSE rows a packed O does not hold still exist in the [B, Hq, L] LSE.
  if (p.want_lse) {
    for (std::int64_t i = rows; i < p.len_q; ++i)
      s.buf.lse[(s.b * p.heads_q + s.h) * p.len_q + i] = -std::numeric_limits<float>::infinity();
  }
}

template <typename Acc>
void run_all(const Problem& p, const Buffers& buf, Mutation m) {
  const Addressing at(p, m);
  const std::int64_t group = p.heads_kv > 0 ? p.heads_q / p.heads_kv : 1;
  const std::uint32_t thr = p.dropout_p > 0 ? dropout_threshold(p.dropout_p) : 0;
  double scale = effective_scale(p);
  if (m == Mutation::scale_from_dv && !p.scale && p.head_dim_v > 0)
    scale = 1.0 / std::sqrt(double(p.head_dim_v));
  const std::int64_t total_q = rows_q(p), total_kv = rows_kv(p);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
    if (m == Mutation::varlen_ignored) {  // every sequence as long as the longest
      lb = p.packed ? std::min(p.len_q, total_q - at.cuq[b]) : p.len_q;
      sb = p.packed ? std::min(p.len_kv, total_kv - at.cuk[b]) : p.len_kv;
    }
    for (std::int64_t h = 0; h < p.heads_q; ++h) {
      const std::int64_t hk = m == Mutation::gqa_tiled ? h % p.heads_kv : h / group;
      Slice<Acc> slice{p, buf, at, m, b, h, hk, lb, sb, Acc(scale), thr};
      slice.v_shift = v_shift_for(slice);
      run_slice(slice);
    }
  }
}

}  // namespace

void mutant_attention(const Problem& p, const Buffers& buf, Mutation m) {
  if (p.dtype == DType::f64) {
    run_all<double>(p, buf, m);
  } else {
    run_all<float>(p, buf, m);
  }
}

}  // namespace sdpa::testing
