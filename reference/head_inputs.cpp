#include "reference/head_inputs.hpp"

#include <cmath>
#include <limits>

#include "core/philox.hpp"

namespace sdpa::reference {
namespace {

// Element offset of (b, h, row, d) in a Q/K/V/O tensor, packed or padded.
std::int64_t offset(const Problem& p, const TensorLayout& t, const std::vector<std::int64_t>& cu,
                    std::int64_t b, std::int64_t h, std::int64_t row, std::int64_t d) {
  const std::int64_t r = p.packed ? cu[static_cast<std::size_t>(b)] + row : row;
  return element_offset(t, p.packed, b, h, r, d);
}

// Structural masks of SEMANTICS.md step 5 for valid lengths (lq, skv).
bool structurally_allowed(const Problem& p, std::int64_t i, std::int64_t j, std::int64_t lq,
                          std::int64_t skv) {
  const std::int64_t br_off = skv - lq;
  if (p.causal == Causal::top_left && j > i) return false;
  if (p.causal == Causal::bottom_right && j > i + br_off) return false;
  if (p.window.enabled) {
    const std::int64_t off = p.window.align == Align::bottom_right ? br_off : 0;
    if (p.window.left >= 0 && j < i + off - p.window.left) return false;
    if (p.window.right >= 0 && j > i + off + p.window.right) return false;
  }
  return true;
}

}  // namespace

int magnitude_shift(const HeadInputs& in, double dropout_p) {
  double vmax = 0;
  for (const double x : in.v) vmax = std::fmax(vmax, std::fabs(x));
  const double keep_scale = in.kept.empty() ? 1.0 : 1.0 / (1.0 - dropout_p);
  const double room = std::numeric_limits<double>::max() / (4.0 * double(in.rows_kv + 1));
  return vmax * keep_scale > room ? kMagnitudeShift : 0;
}

HeadInputs gather_head(const Problem& p, const Inputs& in, std::int64_t b, std::int64_t h) {
  HeadInputs hd;
  hd.b = b;
  hd.h = h;
  hd.hk = h / (p.heads_q / p.heads_kv);
  hd.rows_q = seqlen_q(p, b);
  hd.rows_kv = seqlen_kv(p, b);
  hd.dqk = p.head_dim_qk;
  hd.dv = p.head_dim_v;
  hd.scale = effective_scale(p);
  hd.softcap = p.softcap;
  const auto cuq = p.packed ? cu_seqlens_q(p) : std::vector<std::int64_t>{};
  const auto cuk = p.packed ? cu_seqlens_kv(p) : std::vector<std::int64_t>{};
  const std::int64_t L = hd.rows_q, S = hd.rows_kv;
  hd.q.resize(static_cast<std::size_t>(L * hd.dqk));
  hd.k.resize(static_cast<std::size_t>(S * hd.dqk));
  hd.v.resize(static_cast<std::size_t>(S * hd.dv));
  for (std::int64_t i = 0; i < L; ++i)
    for (std::int64_t e = 0; e < hd.dqk; ++e)
      hd.q[i * hd.dqk + e] = load_as_double(p.dtype, in.q, offset(p, p.q, cuq, b, h, i, e));
  for (std::int64_t j = 0; j < S; ++j) {
    for (std::int64_t e = 0; e < hd.dqk; ++e)
      hd.k[j * hd.dqk + e] = load_as_double(p.dtype, in.k, offset(p, p.k, cuk, b, hd.hk, j, e));
    for (std::int64_t d = 0; d < hd.dv; ++d)
      hd.v[j * hd.dv + d] = load_as_double(p.dtype, in.v, offset(p, p.v, cuk, b, hd.hk, j, d));
  }
  const StridedView mv = mask_view(p);
  hd.allowed.assign(static_cast<std::size_t>(L * S), 1);
  if (p.mask == MaskKind::additive) hd.bias.assign(static_cast<std::size_t>(L * S), 0.0);
  for (std::int64_t i = 0; i < L; ++i) {
    for (std::int64_t j = 0; j < S; ++j) {
      std::uint8_t ok = structurally_allowed(p, i, j, L, S);
      if (p.mask != MaskKind::none) {
        const std::int64_t mo =
            b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
        if (p.mask == MaskKind::boolean) {
          ok = ok && static_cast<const std::uint8_t*>(in.mask)[mo] != 0;
        } else {
          const double x = load_as_double(p.dtype, in.mask, mo);
          hd.bias[i * S + j] = x;
          if (x == -std::numeric_limits<double>::infinity()) ok = 0;
        }
      }
      hd.allowed[i * S + j] = ok;
    }
  }
  if (p.dropout_p > 0) {
    const std::uint32_t thr = dropout_threshold(p.dropout_p);
    hd.kept.resize(static_cast<std::size_t>(L * S));
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t j = 0; j < S; ++j)
        hd.kept[i * S + j] = dropout_keep(p.dropout_seed, p.dropout_offset, thr, b, h, i, j,
                                          p.heads_q, p.len_q, p.len_kv);
  }
  return hd;
}

}  // namespace sdpa::reference
