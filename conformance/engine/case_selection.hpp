// Which cases a command runs: --tier, --case, --golden, --filter, --seed, --sample and
// --max-work, shared by `run` and `cases export`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sdpa::conformance {

struct CaseSelection {
  std::string tier;                 // tier name or file ("" = smoke, unless another source)
  std::vector<std::string> cases;   // case IDs instead of a tier
  std::vector<std::string> golden;  // golden files: their cases (with --case: that case)
  std::string filter;               // keep cases whose ID matches this regular expression
  std::uint64_t seed = 0;           // re-seeds generated cases; the sampler's seed
  int sample = 0;                   // N sampled cases instead of a tier
  std::int64_t max_work = 0;        // work budget of a sampled case (0 = the default)
};

// (case ID, golden file or "" for generated data).
using SelectedCase = std::pair<std::string, std::string>;

// The selected cases, in order; *name is the tier's name, "sample" or "custom". Throws
// std::invalid_argument for conflicting options, a bad tier, ID, file or filter, and for a
// --case that is not a valid problem (command_line_case.hpp).
std::vector<SelectedCase> select_cases(const CaseSelection& s, std::string* name);

}  // namespace sdpa::conformance
