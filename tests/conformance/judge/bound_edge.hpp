// Where to plant an error at a stated fraction of a bound's term (the bound-edge tests): the
// element, and the values of the output type whose errors are closest to the fractions.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/judge.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
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

// The judge's verdicts on an edge's two planted values.
struct EdgeVerdicts {
  conformance::CaseOutcome low, high;
  BoundEdge edge;
};

// Rewrites a case's generated inputs (a test's choice of data), or null.
using PrepareInputs = void (*)(const Problem&, InputBuffers&);

// Fresh inputs of `c`, rewritten by `prepare` when given (and snapshot again, so the judge's
// check of unchanged inputs holds the rewritten values).
inline InputBuffers prepared_inputs(const Case& c, PrepareInputs prepare) {
  InputBuffers in = conformance::make_inputs(c);
  if (prepare) {
    prepare(c.problem, in);
    in.snapshot();
  }
  return in;
}

// The judge's verdicts on the planted backend (`contract`) at the edge's two values of
// `tensor`, each on fresh inputs, with `table`.
inline void judge_planted_values(EdgeVerdicts& v, const Case& c, PrepareInputs prepare,
                                 const PrecisionContract& contract, const std::string& tensor,
                                 const conformance::ToleranceTable& table) {
  for (auto [value, out] : {std::pair{v.edge.low_value, &v.low}, {v.edge.high_value, &v.high}}) {
    InputBuffers fresh = prepared_inputs(c, prepare);
    *out = conformance::judge(PlantedBackend(contract, {tensor, v.edge.index, value}), c.problem,
                              fresh, detect_cpu(), RunOptions{}, nullptr, table);
  }
}

// What an edge must give: an element found; within the bound at the low value (PASS, or
// QUALITY_WARNING: the quality gate may warn about an error above the naive algorithm's);
// FAIL naming `tensor` at the high one.
inline void expect_edge_verdicts(const EdgeVerdicts& v, const std::string& tensor) {
  ASSERT_TRUE(v.edge.found) << "no element where the type's grid allows the planted fractions";
  SCOPED_TRACE(tensor + "[" + std::to_string(v.edge.index) + "] planted at " +
               std::to_string(v.edge.low_fraction) + " and " +
               std::to_string(v.edge.high_fraction) + " times the term");
  EXPECT_TRUE(v.low.status == conformance::Status::pass ||
              v.low.status == conformance::Status::quality_warning)
      << conformance::status_name(v.low.status) << ": " << v.low.message;
  EXPECT_EQ(v.high.status, conformance::Status::fail) << v.high.message;
  EXPECT_NE(v.high.message.find("at " + tensor + "["), std::string::npos) << v.high.message;
}

// Each of `constants` of the tolerance table doubled: the edges (by `label`) whose value
// beyond the bound then passes; at least one must (else the doubling went unseen).
template <class Edge>
void expect_every_constant_doubled_seen(
    const std::vector<std::pair<const char*, double conformance::ToleranceTable::*>>& constants,
    const std::vector<Edge>& edges,
    const std::function<EdgeVerdicts(const Edge&, const conformance::ToleranceTable&)>& judge_edge,
    const std::function<std::string(const Edge&)>& label) {
  for (const auto& [name, member] : constants) {
    conformance::ToleranceTable doubled;
    doubled.*member *= 2;
    std::string seen_by;
    for (const Edge& e : edges)
      if (judge_edge(e, doubled).high.status != conformance::Status::fail)
        seen_by += " " + label(e);
    EXPECT_FALSE(seen_by.empty()) << name << " doubled: every edge still fails";
  }
}

}  // namespace sdpa::testing
