#include "reports/tallies.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace sdpa::reports {

std::map<std::string, StatusCounts> counts_by_backend(const RunSummary& run) {
  std::map<std::string, StatusCounts> m;
  for (const auto& r : run.records) m[r.backend].add(r.status);
  return m;
}

// ---- err/tol histogram
// ----------------------------------------------------------------------------

const std::array<const char*, kRatioBins>& ratio_bin_labels() {
  static const std::array<const char*, kRatioBins> labels = {
      "0", "<1e-4", "1e-4..1e-3", "1e-3..1e-2", "1e-2..0.1", "0.1..1", ">1"};
  return labels;
}

std::size_t ratio_bin(double r) {
  if (std::isnan(r) || r > 1) return 6;
  if (r <= 0) return 0;
  if (r < 1e-4) return 1;
  if (r < 1e-3) return 2;
  if (r < 1e-2) return 3;
  if (r < 1e-1) return 4;
  return 5;
}

std::map<std::string, std::array<std::int64_t, kRatioBins>> ratio_histograms(
    const RunSummary& run) {
  std::map<std::string, std::array<std::int64_t, kRatioBins>> m;
  for (const auto& r : run.records) {
    if (!has_ratio(r.status)) continue;
    auto& h = m[r.backend];  // value-initialised: all zeros
    ++h[ratio_bin(r.worst_ratio)];
  }
  return m;
}

std::vector<const CaseRecord*> worst_cases(const RunSummary& run, std::size_t n) {
  std::vector<const CaseRecord*> v;
  for (const auto& r : run.records) {
    if (has_ratio(r.status) && (std::isnan(r.worst_ratio) || r.worst_ratio > 0)) v.push_back(&r);
  }
  auto before = [](const CaseRecord* a, const CaseRecord* b) {
    bool an = std::isnan(a->worst_ratio), bn = std::isnan(b->worst_ratio);
    if (an != bn) return an;
    if (!an && a->worst_ratio != b->worst_ratio) return a->worst_ratio > b->worst_ratio;
    return std::tie(a->backend, a->case_id) < std::tie(b->backend, b->case_id);
  };
  std::size_t k = std::min(n, v.size());
  std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end(), before);
  v.resize(k);
  return v;
}

// ---- Backend x feature matrix -----------------------------------------------------------------

std::vector<std::string> feature_columns(const RunSummary& run) {
  std::set<std::string> dtypes, rest;
  for (const auto& r : run.records) {
    for (const auto& f : r.features) {
      if (f == "all") continue;
      (f.rfind("dtype=", 0) == 0 ? dtypes : rest).insert(f);
    }
  }
  std::vector<std::string> cols = {"all"};
  cols.insert(cols.end(), dtypes.begin(), dtypes.end());
  cols.insert(cols.end(), rest.begin(), rest.end());
  return cols;
}

std::map<std::string, std::map<std::string, FeatureCell>> feature_matrix(const RunSummary& run) {
  std::map<std::string, std::map<std::string, FeatureCell>> m;
  for (const auto& r : run.records) {
    auto add = [&](FeatureCell& c) {
      if (is_pass(r.status)) {
        ++c.pass;
      } else if (is_failure(r.status)) {
        ++c.fail;
      } else if (r.status == Status::not_supported) {
        ++c.not_supported;
      } else if (r.status == Status::expected_failure) {
        ++c.expected_failure;
      } else {
        ++c.other;
      }
    };
    auto& row = m[r.backend];
    add(row["all"]);
    std::set<std::string> seen;  // a tag listed twice counts once
    for (const auto& f : r.features) {
      if (f != "all" && seen.insert(f).second) add(row[f]);
    }
  }
  return m;
}

std::map<std::string, GradientTally> gradient_tallies(const RunSummary& run) {
  std::map<std::string, GradientTally> out;
  for (const auto& r : run.records) {
    if (!r.tensor_ratios.count("dq")) continue;
    GradientTally& t = out[r.backend];
    ++t.judged;
    t.passed += r.status == Status::pass || r.status == Status::quality_warning;
    t.nondeterministic += r.nondeterministic_backward;
    for (const char* name : {"dq", "dk", "dv", "dbias"}) {
      const auto it = r.tensor_ratios.find(name);
      if (it == r.tensor_ratios.end()) continue;
      auto [w, fresh] = t.worst.emplace(name, it->second);
      if (!fresh && (std::isnan(it->second) || it->second > w->second)) w->second = it->second;
    }
  }
  return out;
}

}  // namespace sdpa::reports
