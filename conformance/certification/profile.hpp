// Certification profiles (conformance/profiles/*.profile, docs/CERTIFICATION.md): a named set
// of required features with a fixed must-pass case list and a seeded sampled part.
//
// The fixed part (`frozen`, then the golden files' cases) is the same for every seed: the
// case IDs the file lists (after its parent's fixed part, for `extends`), and the pairwise
// cases generated from the required features (conformance/engine/pair_coverage.hpp): the covering
// set of the pairs generator restricted to their values, and every two of them in a case of
// their own, so that each interaction (per-batch lengths x causal bottom-right, ...) is
// always checked (the policy is in profile.cpp).
//
// A profile file is a tier file (conformance/engine/tier.hpp: case IDs with {a,b} alternatives,
// `include <tier>`, `golden <path>`) with three lines of its own:
//   description: <one line>
//   require: <feature tag> ...     tags of case_features() (reports/records/run_record.hpp)
//   sample: <N> seed=<S> [max-work=<W>] [max-len=<L>]
//                                  N sampled cases, each using required features only
//
// The rule (policy, judge_profile): a case is *required* when every feature tag of it is in
// `require` (the tag "plain" always is). A backend meets a profile iff every required case
// PASSes (QUALITY_WARNING counts as a pass, MISTRUSTED as no evidence either way);
// NOT_SUPPORTED, FAIL, CRASH, TIMEOUT, INVALID or XFAIL on a required case fails the profile.
// Cases outside the features (an included tier brings some) are recorded, not held against
// the backend.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/engine/case_sampler.hpp"
#include "conformance/engine/pair_coverage.hpp"
#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

struct Profile {
  std::string name;         // file stem, e.g. "inference-core"
  std::string file;         // path it was read from
  std::string text;         // the file's exact text, after its parents' (a bundle keeps a copy)
  std::string description;  // the description line
  std::set<std::string> require;          // required feature tags
  std::vector<std::string> frozen;        // the fixed case IDs, canonical: the parent's
                                          // (for extends), the listed ones in file order,
                                          // then the pairwise ones not listed already
  std::vector<std::string> pairwise;      // the generated pairwise cases (the parent's, then
                                          // its own), each also in `frozen`
  std::vector<std::string> golden_files;  // frozen golden files (every case of each)
  int sample_count = 0;                   // sampled cases
  std::uint64_t sample_seed = 0;          // their seed (certify --seed overrides it)
  SamplerOptions sampler;                 // the sampler restricted to the required features
};

// Directory of the built-in profiles (<data dir>/conformance/profiles).
std::string default_profiles_dir();

// Names of the built-in profiles, sorted.
std::vector<std::string> builtin_profile_names();

// Reads a profile by name (<profiles_dir>/<name>.profile) or by path. Throws
// std::invalid_argument naming the file and line: unknown feature tag, a missing
// description, require or sample line, a frozen case that is invalid, bad sample values.
Profile load_profile(const std::string& name_or_path);

// The values the pairwise cases of a profile requiring `require` may take (policy,
// profile.cpp), and the backends whose blocks they are generated on (the scalar target).
PairRestriction pair_restriction(const std::set<std::string>& require);
std::vector<std::string> pair_backends();

// Whether the profile requires a case with these features.
bool is_required(const Profile& profile, const std::vector<std::string>& features);

// The sampled part: `profile.sample_count` cases drawn with `seed` whose features are all
// required (draws that use another feature are skipped; deterministic).
std::vector<std::string> sampled_cases(const Profile& profile, std::uint64_t seed);

// Every case of the profile: the frozen ones, then the sampled ones (golden file "").
std::vector<std::pair<std::string, std::string>> profile_cases(const Profile& profile,
                                                               std::uint64_t seed);

// The case list as text, one "<case ID>\t<golden file relative to the data dir, or ->" line
// per case: what a bundle stores and its manifest hashes.
std::string case_list_text(const std::vector<std::pair<std::string, std::string>>& cases);

// A backend's standing against a profile, from its records.
struct ProfileVerdict {
  bool met = false;                      // every required case passed (and the list is complete)
  bool complete = true;                  // records exist for every case (false for a shard)
  std::int64_t required = 0;             // records of required cases
  std::int64_t required_passed = 0;      // of which PASS or QUALITY_WARNING
  std::int64_t required_mistrusted = 0;  // of which MISTRUSTED (no evidence)
  std::int64_t outside = 0;              // records of cases outside the features
  std::int64_t outside_failures = 0;     // of which FAIL, CRASH or TIMEOUT (recorded)
  std::vector<std::string> reasons;      // why it is not met: one line per failing case
};

// Applies the rule above to the records of one backend. `expected_cases` is the number of
// cases the full profile has (a smaller record count makes the verdict incomplete, not met).
ProfileVerdict judge_profile(const Profile& profile, const std::vector<CaseRecord>& records,
                             std::size_t expected_cases);

}  // namespace sdpa::conformance
