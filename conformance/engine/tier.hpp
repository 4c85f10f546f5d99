// Tiers: lists of cases as data files (conformance/tiers/*.tier), not code.
//
// Grammar, one entry per line ('#' starts a comment):
//   <case ID>             a case; {a,b,...} alternatives expand to every combination,
//                         e.g. b1.hq{1,4}.l{1,113}.s64.dqk64.{f32,bf16}.seed1.gen=normal
//   golden <path>         every case of a golden HDF5 file (path relative to the source tree)
//   include <tier>        the entries of another tier
//   # family: <name>      the family (docs/TESTING.md: dtype, masks, tile-edges, ...) of the case
//                         and golden lines after it, up to the next family line of the same
//                         file; an included tier's family lines do not leak out of it. A
//                         comment line, so older builds read the file unchanged. Names are
//                         [a-z0-9_-]+. The mutant kill table names the family of each kill.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sdpa::conformance {

struct TierEntries {
  std::vector<std::string> case_ids;         // expanded, in file order, duplicates removed
  std::vector<std::string> case_families;    // family of each case ID ("" before any family line)
  std::vector<std::string> golden_files;     // absolute paths, in file order
  std::vector<std::string> golden_families;  // family of each golden file line
};

// Most case IDs one tier line may expand to.
inline constexpr std::uint64_t kMaxAlternatives = 4096;

// Expands {a,b} alternatives (several groups multiply out). Throws std::invalid_argument
// on an unbalanced brace, or when the line would expand to more than kMaxAlternatives IDs.
std::vector<std::string> expand_alternatives(const std::string& pattern);

// Reads a tier by name (looked up as <tiers_dir>/<name>.tier) or by path. Throws
// std::invalid_argument naming the file and line for a bad line, a missing file or an
// include cycle. Case IDs are parsed to check them (the error names the field).
TierEntries load_tier(const std::string& name_or_path, const std::string& tiers_dir,
                      const std::string& source_dir);

// A file with tier lines and lines of its own (certification profiles): called with each
// line of the top file (comment removed, trimmed) and "file:line: " for errors; returns true
// when the line is its own (the tier grammar then skips it).
using TierDirective = std::function<bool(const std::string& line, const std::string& where)>;

// Reads the tier lines of the file at `path` (includes resolved in `tiers_dir`); `directive`
// sees every line of that file first. Errors as load_tier.
TierEntries load_tier_file(const std::string& path, const std::string& tiers_dir,
                           const std::string& source_dir, const TierDirective& directive);

// Directory of the built-in tiers, and the root that tier files' golden paths are relative
// to: $SDPA_CTS_DATA_DIR if set, else <prefix>/share/sdpa-cts of an installed sdpa-cts (the
// executable in <prefix>/bin), else the source tree of this build (compiled in).
std::string default_tiers_dir();
std::string default_source_dir();

}  // namespace sdpa::conformance
