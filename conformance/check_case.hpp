// Runs one case on one backend and judges it against the reference: the core of the
// conformance engine. Statuses follow TESTING.md.
#pragma once

#include <cstdint>
#include <string>

#include "conformance/tolerance.hpp"
#include "core/case_id.hpp"
#include "kernels/backend.hpp"

namespace sdpa {

enum class Status {
  pass,
  fail,
  not_supported,
  invalid,
  mistrusted,
  crash,
  timeout,
  quality_warning
};

// Upper-case name used in reports: "PASS", "FAIL", ...
const char* status_name(Status s);

struct CaseOutcome {
  Status status = Status::pass;  // the verdict
  std::string message;           // why (reasons, the worst element and its bound, ...)
  double max_abs_error = 0;      // largest |kernel - reference| over O
  double nmse = 0;  // sum (kernel - ref)^2 / sum ref^2 over finite O elements (information only)
  double worst_ratio = 0;   // largest |error| / tolerance over O and LSE
  std::string worst_where;  // "o[b,h,i,d]" or "lse[b,h,i]" of the worst ratio
};

// Runs `c` on `backend` with guarded buffers and judges the result.
CaseOutcome check_case(const Backend& backend, const Case& c, const Device& device,
                       const RunOptions& options = {}, const ToleranceTable& table = {});

}  // namespace sdpa
