// A tier's expanded cases (conformance/engine/tier_cases.hpp): each distinct case once.
#include "conformance/engine/tier_cases.hpp"

#include <gtest/gtest.h>

#include <set>

#include "golden/golden_file.hpp"

namespace sdpa::conformance {
namespace {

// The ci tier includes the smoke tier, and its golden set holds the smoke set's cases: each
// golden case counts once, from the first file that has it.
TEST(TierCases, EveryCaseOnceEvenWhenGoldenFilesOverlap) {
  const TierEntries t = load_tier("ci", default_tiers_dir(), default_source_dir());
  ASSERT_GE(t.golden_files.size(), 2u);
  std::size_t listed = t.case_ids.size();
  std::set<std::string> distinct(t.case_ids.begin(), t.case_ids.end());
  for (const auto& f : t.golden_files) {
    const golden::GoldenFile g(f);
    listed += g.case_ids().size();
    distinct.insert(g.case_ids().begin(), g.case_ids().end());
  }
  ASSERT_LT(distinct.size(), listed) << "the golden files no longer overlap: this test checks "
                                        "nothing; pick files that do";
  const std::vector<TierCase> cases = tier_cases(t);
  EXPECT_EQ(cases.size(), distinct.size());
  std::set<std::string> seen;
  for (const auto& c : cases) EXPECT_TRUE(seen.insert(c.id).second) << c.id << " twice";
  // Generated cases first, then the golden cases, the first file keeping a shared case.
  ASSERT_GT(cases.size(), t.case_ids.size());
  EXPECT_EQ(cases[t.case_ids.size()].golden_file, t.golden_files.front());
}

}  // namespace
}  // namespace sdpa::conformance
