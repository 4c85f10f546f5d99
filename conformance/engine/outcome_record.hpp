// A judge's verdict in a run record: where the judge's outcome (conformance/judge/) meets the
// records the reports write (reports/records/), which include neither the judge nor the engine.
#pragma once

#include "conformance/judge/judge.hpp"
#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

// Copies an outcome's verdict, message and error figures into a record.
void set_outcome(CaseRecord& record, const CaseOutcome& outcome);

}  // namespace sdpa::conformance
