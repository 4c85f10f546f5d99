#include "conformance/engine/tier_cases.hpp"

#include <set>

#include "golden/golden_file.hpp"

namespace sdpa::conformance {

void append_golden_cases(const std::string& file, const std::string& family,
                         std::vector<TierCase>& out) {
  std::set<std::string> have;
  for (const auto& c : out) have.insert(c.id);
  const golden::GoldenFile g(file);
  for (const auto& id : g.case_ids()) {
    if (have.insert(id).second) out.push_back({id, file, family});
  }
}

std::vector<TierCase> tier_cases(const TierEntries& t) {
  std::vector<TierCase> out;
  for (std::size_t i = 0; i < t.case_ids.size(); ++i) {
    out.push_back({t.case_ids[i], "", t.case_families[i]});
  }
  for (std::size_t f = 0; f < t.golden_files.size(); ++f) {
    append_golden_cases(t.golden_files[f], t.golden_families[f], out);
  }
  return out;
}

std::vector<TierCase> tier_cases(const std::string& tier) {
  return tier_cases(load_tier(tier, default_tiers_dir(), default_source_dir()));
}

}  // namespace sdpa::conformance
