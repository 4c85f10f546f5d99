// Where to plant an error at a stated fraction of a bound's term (the bound-edge tests): the
// element, and the values of the output type whose errors are closest to the fractions.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tests/conformance/judge/exact_head.hpp"
#include "tests/conformance/judge/planted_backend.hpp"

namespace sdpa::testing {

struct BoundEdge {
  bool found = false;
  std::size_t index = 0;                     // the element
  double term = 0;                           // the term's size there
  double low_value = 0, low_fraction = 0;    // the value planted below the edge, its error / term
  double high_value = 0, high_fraction = 0;  // the value planted beyond it
};

// The element with the largest term whose type's grid has values within 0.2 of `low` and
// 0.25 of `high` times the term from the exact value (a coarse grid, as f16's against its own
// rounding, rules some elements out). `exact` and `term` are flat, the same size.
inline BoundEdge find_bound_edge(DType t, const std::vector<double>& exact,
                                 const std::vector<double>& term, double low, double high) {
  std::vector<std::size_t> order(term.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return term[a] > term[b]; });
  for (std::size_t x : order) {
    if (!(term[x] > 0) || !std::isfinite(term[x]) || !std::isfinite(exact[x])) continue;
    const auto [lv, lf] = planted_near(t, exact[x], term[x], low);
    const auto [hv, hf] = planted_near(t, exact[x], term[x], high);
    if (std::fabs(lf - low) <= 0.2 && std::fabs(hf - high) <= 0.25)
      return {true, x, term[x], lv, lf, hv, hf};
  }
  return {};
}

}  // namespace sdpa::testing
