// The cases a tier runs, expanded: its generated case IDs, then each golden file's cases, each
// distinct case ID once. A golden file may repeat cases of another (the ci golden set holds
// the smoke set's cases, and the ci tier includes the smoke tier): the first file keeps them,
// so a tier's case count is its number of distinct cases.
#pragma once

#include <string>
#include <vector>

#include "conformance/engine/tier.hpp"

namespace sdpa::conformance {

struct TierCase {
  std::string id;           // canonical case ID
  std::string golden_file;  // "" = generated data; else the golden file holding it
  std::string family;       // family of the tier line (docs/TESTING.md), e.g. "masks"
};

// The cases of `t` in tier order. Throws what golden::GoldenFile throws for a bad file.
std::vector<TierCase> tier_cases(const TierEntries& t);

// The cases of the tier named `tier` (a name in the default tier directory, or a file).
std::vector<TierCase> tier_cases(const std::string& tier);

// Appends every case of the golden file `file` (with `family`) whose ID `out` does not hold.
void append_golden_cases(const std::string& file, const std::string& family,
                         std::vector<TierCase>& out);

}  // namespace sdpa::conformance
