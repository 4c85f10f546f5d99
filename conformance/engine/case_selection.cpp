#include "conformance/engine/case_selection.hpp"

#include <regex>
#include <stdexcept>

#include "conformance/engine/case_sampler.hpp"
#include "conformance/engine/command_line_case.hpp"
#include "conformance/engine/data_gen.hpp"
#include "conformance/engine/tier.hpp"
#include "conformance/engine/tier_cases.hpp"
#include "core/case_id.hpp"
#include "golden/golden_file.hpp"

namespace sdpa::conformance {
namespace {

// Re-seeds a generated case for --seed: the data seed becomes a mix of its own and the
// run's, so each run seed gives new data with a new, printable case ID.
std::string reseed(const std::string& id, std::uint64_t run_seed) {
  Case c = parse_case_id_or_throw(id);
  std::uint64_t x = c.data.seed ^ (run_seed * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  c.data.seed = x % 1000000007ull;
  return format_case_id(c);
}

}  // namespace

std::vector<SelectedCase> select_cases(const CaseSelection& s, std::string* name) {
  std::vector<SelectedCase> cases;
  *name = "custom";
  if (!s.cases.empty() && s.golden.size() > 1) {
    throw std::invalid_argument("--case with --golden takes one golden file");
  }
  if (s.max_work != 0 && s.sample == 0) {
    throw std::invalid_argument("--max-work applies to sampled cases: it needs --sample");
  }
  if (s.sample > 0) {
    if (!s.cases.empty() || !s.golden.empty() || !s.tier.empty()) {
      throw std::invalid_argument("--sample cannot be combined with --case, --golden or --tier");
    }
    SamplerOptions so;
    if (s.max_work > 0) so.max_work = s.max_work;
    *name = "sample";
    for (int i = 0; i < s.sample; ++i) {
      cases.emplace_back(format_case_id(sample_case(sample_seed(s.seed, i), so)), "");
    }
  } else if (!s.cases.empty()) {
    for (const auto& id : s.cases) {
      const Case c = parse_command_line_case(id);
      // A generated case's data generator must exist: a misspelt one is the caller's error,
      // said before anything runs, not a FAIL charged to the backend.
      if (s.golden.empty()) require_known_generator(c.data.generator);
      const std::string canonical = format_case_id(c);
      cases.emplace_back(canonical, s.golden.empty() ? "" : s.golden.front());
    }
  } else if (!s.golden.empty()) {
    for (const auto& f : s.golden) {
      const golden::GoldenFile file(f);
      for (const auto& id : file.case_ids()) cases.emplace_back(id, f);
    }
  } else {
    *name = s.tier.empty() ? "smoke" : s.tier;
    for (const auto& c : tier_cases(*name)) cases.emplace_back(c.id, c.golden_file);
  }
  if (s.seed != 0 && s.sample == 0) {
    for (auto& [id, file] : cases) {
      if (file.empty()) id = reseed(id, s.seed);
    }
  }
  if (!s.filter.empty()) {
    std::regex re;
    try {
      re = std::regex(s.filter);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("--filter: bad regular expression '" + s.filter +
                                  "': " + e.what());
    }
    std::erase_if(cases, [&](const SelectedCase& c) { return !std::regex_search(c.first, re); });
  }
  return cases;
}

}  // namespace sdpa::conformance
