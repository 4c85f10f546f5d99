// RapidCheck building blocks of the property suite: every draw shrinks towards the
// simplest value (small sizes, no mask, the first list element), so a failing case
// shrinks to a minimal one. Call them inside a property only (they draw with operator*).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/case_id.hpp"
#include "kernels/backend.hpp"

namespace sdpa::props {

// Uniform in [lo, hi], shrinking towards lo. The whole range from the first case on:
// RapidCheck's inRange narrows the range by its size parameter, which grows with the case
// count, and the tiers run few cases.
inline std::int64_t in_range(std::int64_t lo, std::int64_t hi) {
  return *rc::gen::resize(100, rc::gen::inRange<std::int64_t>(lo, hi + 1));
}

// One of the values, shrinking towards the first.
template <typename T>
T one_of(const std::vector<T>& values) {
  return values[static_cast<std::size_t>(
      in_range(0, static_cast<std::int64_t>(values.size()) - 1))];
}

inline bool coin() { return *rc::gen::arbitrary<bool>(); }

// A problem in the default bhsd layout.
inline Problem make_problem(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t L,
                            std::int64_t S, std::int64_t Dqk, std::int64_t Dv, DType t) {
  Problem p;
  p.batch = B;
  p.heads_q = Hq;
  p.heads_kv = Hkv;
  p.len_q = L;
  p.len_kv = S;
  p.head_dim_qk = Dqk;
  p.head_dim_v = Dv;
  p.dtype = t;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  return p;
}

// One of the backend's declared element types (the first declared when it shrinks).
inline DType gen_dtype(const Backend& b) { return one_of(b.capabilities().dtypes); }

// A data recipe: a generator whose values discriminate (never "zeros") and a seed.
inline DataRecipe gen_recipe() {
  DataRecipe r;
  r.generator = one_of<std::string>({"normal", "uniform", "int", "sparse"});
  r.seed = static_cast<std::uint64_t>(in_range(0, 1 << 20));
  return r;
}

// Small GQA head counts: Hkv in [1, 2], groups in [1, 3].
struct Heads {
  std::int64_t q = 1, kv = 1;
};
inline Heads gen_heads(std::int64_t max_kv = 2, std::int64_t max_group = 3) {
  const std::int64_t kv = in_range(1, max_kv);
  return {kv * in_range(1, max_group), kv};
}

// Per-batch valid lengths (possibly 0) or none.
inline void gen_varlen(Problem& p, bool allow_packed) {
  const int kind = static_cast<int>(in_range(0, allow_packed ? 2 : 1));
  if (kind == 0) return;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    p.seqlens_q.push_back(in_range(0, p.len_q));
    p.seqlens_kv.push_back(in_range(0, p.len_kv));
  }
  if (kind == 2 && p.mask == MaskKind::none) {
    p.packed = true;
    apply_layout(p, LayoutKind::bhsd, 0, 0);  // packed row counts change the strides
  }
}

}  // namespace sdpa::props
