#include "core/problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sdpa {

double effective_scale(const Problem& p) {
  if (p.scale) return *p.scale;
  return p.head_dim_qk > 0 ? 1.0 / std::sqrt(static_cast<double>(p.head_dim_qk)) : 1.0;
}

std::int64_t seqlen_q(const Problem& p, std::int64_t b) {
  return p.seqlens_q.empty() ? p.len_q : p.seqlens_q[static_cast<std::size_t>(b)];
}

std::int64_t seqlen_kv(const Problem& p, std::int64_t b) {
  return p.seqlens_kv.empty() ? p.len_kv : p.seqlens_kv[static_cast<std::size_t>(b)];
}

namespace {

// Saturating arithmetic for sizes and strides: a problem too large for int64 gets
// INT64_MAX, which validate() rejects, instead of a signed overflow.
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}
std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

// Length of batch element b from a list that may be invalid (validate() reports a list of
// the wrong size; until then a missing entry counts as 0 rather than being read past the end).
std::int64_t length_of(const std::vector<std::int64_t>& lens, std::int64_t full, std::int64_t b) {
  if (lens.empty()) return full;
  return b < static_cast<std::int64_t>(lens.size()) ? lens[static_cast<std::size_t>(b)] : 0;
}

std::vector<std::int64_t> prefix(const Problem& p, bool q_side) {
  const std::int64_t batch = std::max<std::int64_t>(p.batch, 0);
  std::vector<std::int64_t> cu(static_cast<std::size_t>(batch) + 1, 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    cu[b + 1] = q_side ? sat_add(cu[b], length_of(p.seqlens_q, p.len_q, b))
                       : sat_add(cu[b], length_of(p.seqlens_kv, p.len_kv, b));
  }
  return cu;
}

// The packed row total without building the prefix sums (the batch may be huge).
std::int64_t packed_rows(const Problem& p, bool q_side) {
  const auto& lens = q_side ? p.seqlens_q : p.seqlens_kv;
  const std::int64_t batch = std::max<std::int64_t>(p.batch, 0);
  if (lens.empty()) return sat_mul(batch, q_side ? p.len_q : p.len_kv);
  std::int64_t n = 0;
  for (std::int64_t b = 0; b < batch && b < static_cast<std::int64_t>(lens.size()); ++b) {
    n = sat_add(n, lens[static_cast<std::size_t>(b)]);
  }
  return n;
}

StridedView make_view(const Problem& p, const TensorLayout& t, std::int64_t heads,
                      std::int64_t rows, std::int64_t dim) {
  StridedView v;
  v.shape = {p.packed ? 1 : p.batch, heads, rows, dim};
  v.stride = t.stride;
  if (p.packed) v.stride[0] = 0;
  return v;
}

bool finite(double x) { return std::isfinite(x); }

}  // namespace

std::vector<std::int64_t> cu_seqlens_q(const Problem& p) { return prefix(p, true); }
std::vector<std::int64_t> cu_seqlens_kv(const Problem& p) { return prefix(p, false); }

std::int64_t rows_q(const Problem& p) { return p.packed ? packed_rows(p, true) : p.len_q; }
std::int64_t rows_kv(const Problem& p) { return p.packed ? packed_rows(p, false) : p.len_kv; }

StridedView q_view(const Problem& p) {
  return make_view(p, p.q, p.heads_q, rows_q(p), p.head_dim_qk);
}
StridedView k_view(const Problem& p) {
  return make_view(p, p.k, p.heads_kv, rows_kv(p), p.head_dim_qk);
}
StridedView v_view(const Problem& p) {
  return make_view(p, p.v, p.heads_kv, rows_kv(p), p.head_dim_v);
}
StridedView o_view(const Problem& p) {
  return make_view(p, p.o, p.heads_q, rows_q(p), p.head_dim_v);
}

StridedView mask_view(const Problem& p) {
  StridedView v;
  v.shape = {p.batch, p.heads_q, p.len_q, p.len_kv};
  const std::uint8_t flags[4] = {kBroadcastB, kBroadcastH, kBroadcastL, kBroadcastS};
  std::int64_t acc = 1;
  for (int k = 3; k >= 0; --k) {
    if (p.mask_broadcast & flags[k]) {
      v.stride[k] = 0;
    } else {
      v.stride[k] = acc;
      acc = sat_mul(acc, std::max<std::int64_t>(v.shape[k], 1));
    }
  }
  return v;
}

std::int64_t mask_elements(const Problem& p) {
  const StridedView v = mask_view(p);
  std::int64_t n = 1;
  for (int k = 0; k < 4; ++k) {
    if (v.stride[k] != 0 || v.shape[k] == 0) n = sat_mul(n, v.shape[k]);
  }
  return n;
}

StridedView lse_view(const Problem& p) {
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q;
  return StridedView{{B, H, L, 1}, {H * L, L, 1, 1}};
}

StridedView weights_view(const Problem& p) {
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv;
  return StridedView{{B, H, L, S}, {H * L * S, L * S, S, 1}};
}

void apply_layout(Problem& p, LayoutKind kind, std::int64_t gap, std::int64_t base_offset) {
  auto set = [&](TensorLayout& t, std::int64_t heads, std::int64_t rows, std::int64_t dim) {
    if (kind == LayoutKind::bhsd) {
      const std::int64_t row = sat_add(dim, gap);
      t.stride = {sat_mul(sat_mul(heads, rows), row), sat_mul(rows, row), row, 1};
    } else {
      const std::int64_t row = sat_add(sat_mul(heads, dim), gap);
      t.stride = {sat_mul(rows, row), dim, row, 1};
    }
    if (p.packed) t.stride[0] = 0;
    t.base_offset = base_offset;
  };
  const std::int64_t rq = rows_q(p), rk = rows_kv(p);
  set(p.q, p.heads_q, rq, p.head_dim_qk);
  set(p.k, p.heads_kv, rk, p.head_dim_qk);
  set(p.v, p.heads_kv, rk, p.head_dim_v);
  set(p.o, p.heads_q, rq, p.head_dim_v);
}

std::string validate(const Problem& p) {
  const struct {
    const char* name;
    std::int64_t value;
  } dims[] = {{"b", p.batch},  {"hq", p.heads_q},      {"hkv", p.heads_kv}, {"l", p.len_q},
              {"s", p.len_kv}, {"dqk", p.head_dim_qk}, {"dv", p.head_dim_v}};
  for (const auto& d : dims) {
    if (d.value < 0) return std::string(d.name) + ": negative size " + std::to_string(d.value);
  }
  if (p.heads_kv == 0 && p.heads_q > 0) return "hkv: must be > 0 when hq > 0";
  if (p.heads_kv > 0 && p.heads_q % p.heads_kv != 0) {
    return "hkv: hq (" + std::to_string(p.heads_q) + ") is not a multiple of hkv (" +
           std::to_string(p.heads_kv) + ")";
  }
  if (!finite(p.softcap) || p.softcap < 0) return "softcap: must be finite and >= 0";
  if (p.scale && !finite(*p.scale)) return "scale: must be finite";
  if (!finite(p.dropout_p) || p.dropout_p < 0 || p.dropout_p >= 1) {
    return "p: dropout probability must be in [0, 1)";
  }
  if (p.mask == MaskKind::none && p.mask_broadcast != 0) {
    return "mbc: broadcast dimensions given without a mask tensor";
  }
  if (p.mask_broadcast > 15) return "mbc: unknown broadcast flags";
  const auto check_lens = [&](const std::vector<std::int64_t>& lens, std::int64_t max,
                              const char* name, const char* max_name) -> std::string {
    if (lens.empty()) return "";
    if (static_cast<std::int64_t>(lens.size()) != p.batch) {
      return std::string(name) + ": " + std::to_string(lens.size()) + " lengths given for batch " +
             std::to_string(p.batch);
    }
    for (std::size_t b = 0; b < lens.size(); ++b) {
      if (lens[b] < 0 || lens[b] > max) {
        return std::string(name) + ": length " + std::to_string(lens[b]) + " of batch element " +
               std::to_string(b) + " is outside [0, " + max_name + "=" + std::to_string(max) + "]";
      }
    }
    return "";
  };
  if (auto r = check_lens(p.seqlens_q, p.len_q, "qlen", "l"); !r.empty()) return r;
  if (auto r = check_lens(p.seqlens_kv, p.len_kv, "kvlen", "s"); !r.empty()) return r;
  if (p.packed) {
    if (p.mask != MaskKind::none) return "mask: a mask tensor cannot be combined with packed rows";
    const std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
    // Every product below stays far from int64 overflow: each factor is checked first.
    if (p.batch > int32_max) return "packed: batch too large for int32 cu_seqlens";
    if (p.len_q > int32_max || p.len_kv > int32_max) {
      return "packed: lengths too large for int32 cu_seqlens";
    }
    if (rows_q(p) > int32_max) return "packed: total query rows overflow int32 cu_seqlens";
    if (rows_kv(p) > int32_max) return "packed: total key rows overflow int32 cu_seqlens";
  }
  const struct {
    const char* name;
    const TensorLayout* layout;
    StridedView (*view)(const Problem&);
  } tensors[] = {
      {"q", &p.q, q_view}, {"k", &p.k, k_view}, {"v", &p.v, v_view}, {"o", &p.o, o_view}};
  for (const auto& t : tensors) {
    if (t.layout->base_offset < 0) return std::string(t.name) + ": negative base offset";
    if (auto r = validate_view(t.view(p), t.name); !r.empty()) return r;
  }
  if (auto r = validate_no_self_overlap(o_view(p), "o"); !r.empty()) return r;
  if (p.bias_grad && !p.backward) return "dbias: d bias is a gradient: it needs bwd";
  if (p.bias_grad && p.mask != MaskKind::additive) {
    return "dbias: only an additive mask has a gradient (mask=add)";
  }
  if (p.backward) {
    // dQ, dK and dV are written in the layouts of Q, K and V: each must be a distinct place.
    for (const auto& t : tensors) {
      if (t.layout == &p.o) continue;
      if (auto r = validate_no_self_overlap(t.view(p), t.name); !r.empty()) {
        return "bwd: the gradient is written in the input's layout, which overlaps itself (" + r +
               ")";
      }
    }
  }
  if (p.mask != MaskKind::none) {
    if (auto r = validate_view(mask_view(p), "mask"); !r.empty()) return r;
  }
  // Output-side tensors the harness allocates contiguously must be addressable too.
  std::int64_t n;
  if (__builtin_mul_overflow(p.batch, p.heads_q, &n) || __builtin_mul_overflow(n, p.len_q, &n) ||
      __builtin_mul_overflow(n, p.len_kv, &n) || n > std::numeric_limits<std::int64_t>::max() / 8) {
    return "weights: [B, Hq, L, S] element count overflows int64";
  }
  return "";
}

}  // namespace sdpa
