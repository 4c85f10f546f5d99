// Hand-built runs for the report tests and the sample report.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reports/records/run_record.hpp"

namespace sdpa::testing {

using namespace sdpa::conformance;

// Every status but NOT_JUDGED (ReportsNotJudged has its own run) at least once, with messages
// full of characters that need escaping (< > & quotes, newlines, CR, tabs, control characters,
// backticks, CDATA and comment terminators, non-ASCII), odd backend names and feature tags, and
// non-finite numbers. Known worst_ratio order:
// NaN (cpu.flash FAIL), 35 (cpu.flash FAIL), 1 (vendor PASS), 0.8 (QUALITY_WARNING), ...
// The last two records come from an expectations file (--expect): an XFAIL on cpu.flash and an
// unexpectedly passing PASS on cpu.math.
RunSummary tricky_run();

// A plausible run: `n` records over cpu.math, cpu.flash, cpu.mem_efficient and cuda.flash,
// real case IDs and their case_features(), err/tol spread over every bin, a few failures;
// cpu.mem_efficient's failures are known failures (XFAIL), and a few of its passes are
// unexpectedly passing.
RunSummary realistic_run(std::size_t n, std::uint64_t seed = 1);

}  // namespace sdpa::testing
