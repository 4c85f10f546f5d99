// The verdict vocabulary, in one place: every status, its report name and summary key,
// which statuses fail a run, tallies, and the greppable summary line. The judge gives these
// verdicts, the reports write them, the runner and every command count them
// (docs/TESTING.md "Statuses"). It lives in core/, below both the judge (conformance/) and
// the reports (reports/), so that neither includes the other; its names stay in
// sdpa::conformance, the namespace of the conformance verdicts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sdpa::conformance {

enum class Status {
  pass,              // within the per-element bound and the quality gate
  fail,              // outside the bound, a guard violation, or an error after supports() said yes
  not_supported,     // the backend declined, with its reasons
  invalid,           // the problem breaks a rule of the contract
  mistrusted,        // the exact output cannot discriminate (all zero on attended rows)
  crash,             // the worker process died
  timeout,           // no result within the per-case timeout
  quality_warning,   // within the bound, but more than 2x the naive same-precision error
  expected_failure,  // FAIL, CRASH or TIMEOUT on a case listed as a known failure (--expect)
  not_judged         // the harness could not judge the case here: its buffers need more host
                     // memory than the run allows, or the harness's own allocation failed
};

inline constexpr std::array<Status, 10> kAllStatuses = {Status::pass,
                                                        Status::fail,
                                                        Status::not_supported,
                                                        Status::invalid,
                                                        Status::mistrusted,
                                                        Status::crash,
                                                        Status::timeout,
                                                        Status::quality_warning,
                                                        Status::expected_failure,
                                                        Status::not_judged};

// Upper-case name used in reports and verdict lines: "PASS", "FAIL", ...
const char* status_name(Status s);
// The status of that upper-case name, or nullopt.
std::optional<Status> parse_status_name(std::string_view name);
// Lower-case key of the summary line: "passed", "failed", "not_supported", ...
const char* status_key(Status s);

// FAIL, CRASH and TIMEOUT: the statuses that fail a run (non-zero exit, JUnit <failure>).
bool is_failure(Status s);
// PASS and QUALITY_WARNING: the backend computed the function (the matrix's "pass").
bool is_pass(Status s);
// Statuses whose worst_ratio is a measurement (PASS, QUALITY_WARNING, FAIL).
bool has_ratio(Status s);

// Records per status.
struct StatusCounts {
  std::array<std::int64_t, kAllStatuses.size()> n{};
  std::int64_t total = 0;
  std::int64_t failures() const;  // FAIL + CRASH + TIMEOUT
  std::int64_t operator[](Status s) const { return n[static_cast<std::size_t>(s)]; }
  void add(Status s);
};

// The greppable one-line summary: "passed: N failed: N not_supported: N invalid: N
// mistrusted: N crash: N timeout: N quality_warning: N expected_failure: N not_judged: N".
std::string summary_line(const StatusCounts& counts);

}  // namespace sdpa::conformance
