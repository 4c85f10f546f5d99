// The structural masks of docs/SEMANTICS.md written as the document states them, one key at a
// time: the oracle the attended-key interval (kernels/attended_keys.hpp) and the CUDA key
// schedule are checked against. Deliberately not an interval computation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attended_keys.hpp"

namespace sdpa::testing {

// Query i attends key j (0 <= i < lb, 0 <= j < sb) when no structural mask removes it. With
// off = sb - lb for bottom-right alignment (0 for top-left): causal keeps j <= i + off; the
// window keeps i + off - left <= j <= i + off + right, a negative bound being unbounded.
inline bool spec_attends(const KeyStructure& st, std::int64_t i, std::int64_t j, std::int64_t lb,
                         std::int64_t sb) {
  if (i < 0 || i >= lb || j < 0 || j >= sb) return false;
  const std::int64_t br = sb - lb;
  if (st.causal == SDPA_CTS_CAUSAL_TOP_LEFT && j > i) return false;
  if (st.causal == SDPA_CTS_CAUSAL_BOTTOM_RIGHT && j > i + br) return false;
  if (st.window) {
    const std::int64_t off = st.window_br ? br : 0;
    if (st.left >= 0 && j < i + off - st.left) return false;
    if (st.right >= 0 && j > i + off + st.right) return false;
  }
  return true;
}

// Every structure: no mask, both causal alignments, windows of both alignments with
// bounded and unbounded sides, and windows combined with causal masks.
inline std::vector<KeyStructure> all_structures() {
  std::vector<KeyStructure> all;
  for (int causal = 0; causal <= 2; ++causal) {
    all.push_back({causal, false, false, -1, -1});
    for (bool br : {false, true}) {
      for (std::int64_t left : {-1, 0, 1, 3, 9}) {
        for (std::int64_t right : {-1, 0, 2, 7}) all.push_back({causal, true, br, left, right});
      }
    }
  }
  return all;
}

inline std::string describe(const KeyStructure& st, std::int64_t lq, std::int64_t skv) {
  return "causal=" + std::to_string(st.causal) + " window=" + std::to_string(st.window) +
         " br=" + std::to_string(st.window_br) + " left=" + std::to_string(st.left) +
         " right=" + std::to_string(st.right) + " lq=" + std::to_string(lq) +
         " skv=" + std::to_string(skv);
}

}  // namespace sdpa::testing
