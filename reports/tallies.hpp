// The tallies every report shows: counts per backend, err/tol bins, worst cases and the
// backend x feature matrix. Reports never judge: they only group and count what the judge
// decided (the status vocabulary is core/verdict.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reports/records/run_record.hpp"

namespace sdpa::reports {

// Reports are written in the conformance vocabulary (records, statuses, tallies).
using namespace sdpa::conformance;

// Counts per backend, backends sorted by name.
std::map<std::string, StatusCounts> counts_by_backend(const RunSummary& run);

// Log-scale bins of worst_ratio: "0" (exact), "<1e-4", "1e-4..1e-3", "1e-3..1e-2",
// "1e-2..0.1", "0.1..1" (1 included: a ratio of 1 passes) and ">1" (the bound is broken; NaN and
// infinity land here too).
inline constexpr std::size_t kRatioBins = 7;
const std::array<const char*, kRatioBins>& ratio_bin_labels();
std::size_t ratio_bin(double ratio);

// Per backend (sorted by name): the number of has_ratio() records in each bin.
std::map<std::string, std::array<std::int64_t, kRatioBins>> ratio_histograms(const RunSummary& run);

// The `n` records with the highest worst_ratio among has_ratio() records with a ratio above 0
// (NaN ranks first, then +inf), ties broken by backend then case ID.
std::vector<const CaseRecord*> worst_cases(const RunSummary& run, std::size_t n);

// One matrix cell: PASS and QUALITY_WARNING count as pass; FAIL, CRASH and TIMEOUT as fail;
// XFAIL (a known failure, --expect) as expected_failure, never as pass; INVALID, MISTRUSTED
// and NOT_JUDGED as other.
struct FeatureCell {
  std::int64_t pass = 0;              // PASS and QUALITY_WARNING
  std::int64_t fail = 0;              // FAIL, CRASH and TIMEOUT
  std::int64_t not_supported = 0;     // NOT_SUPPORTED
  std::int64_t other = 0;             // INVALID, MISTRUSTED and NOT_JUDGED
  std::int64_t expected_failure = 0;  // XFAIL
  std::int64_t total() const { return pass + fail + not_supported + other + expected_failure; }
};

// The feature column "all" (every record) first, then the dtype=... tags, then the rest, each
// group sorted by name.
std::vector<std::string> feature_columns(const RunSummary& run);

// matrix[backend][feature], including the "all" column.
std::map<std::string, std::map<std::string, FeatureCell>> feature_matrix(const RunSummary& run);

// The backward's results of one backend: records whose gradients were judged (they carry a
// "dq" tensor ratio), the worst err/tol per gradient tensor over them, and how many gave
// different bytes at two thread counts.
struct GradientTally {
  std::int64_t judged = 0;              // records with judged gradients
  std::int64_t passed = 0;              // of which PASS or QUALITY_WARNING
  std::map<std::string, double> worst;  // "dq", "dk", "dv" -> worst ratio (NaN ranks first)
  std::int64_t nondeterministic = 0;    // records whose backward bits followed the thread count
};
// Per backend (sorted by name), for backends with at least one judged backward.
std::map<std::string, GradientTally> gradient_tallies(const RunSummary& run);

}  // namespace sdpa::reports
