// Judges one generated case (data from its case ID) on one backend against the reference:
// the adapter of the judge (conformance/judge/judge.hpp) for generated data.
#pragma once

#include "conformance/judge/judge.hpp"
#include "core/case_id.hpp"

namespace sdpa::conformance {

// Generates the inputs of `c`, runs `backend` on `device` with guarded buffers, and judges.
CaseOutcome check_case(const Backend& backend, const Case& c, const Device& device,
                       const RunOptions& options = {}, const ToleranceTable& table = {});

}  // namespace sdpa::conformance
