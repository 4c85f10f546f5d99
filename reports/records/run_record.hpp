// What a conformance run found, as plain data: the only thing reports/ sees. Reports never
// compute verdicts; they write these records.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "core/verdict.hpp"

namespace sdpa::conformance {

// One (case, backend) verdict.
struct CaseRecord {
  std::string case_id;           // canonical case ID
  std::string backend;           // backend name, e.g. "cpu.flash"
  std::string device;            // device name the backend ran on (or was judged for)
  std::string simd_target;       // forced SIMD target, "" = the backend's best
  int threads = 0;               // OpenMP threads the backend ran with
  Status status = Status::pass;  // verdict
  std::string message;           // reasons / worst element / error text
  double max_abs_error = 0;      // largest |kernel - reference| over O
  double nmse = 0;               // normalised mean squared error of O (information only)
  double worst_ratio = 0;        // largest error / tolerance (<= 1 passes)
  std::string worst_where;       // where the worst ratio occurred
  std::map<std::string, double> tensor_ratios;  // worst ratio per judged part: "forward",
                                                // and "dq", "dk", "dv" for a backward case
  bool nondeterministic_backward = false;       // the backward's gradient bytes differed between
                                                // two thread counts (no determinism declared)
  std::string output_digest;  // the output bytes' fingerprint (CaseOutcome::output_digest); ""
                              // when nothing was judged
  std::vector<std::string> judged;        // compared with their bounds: "o", "lse", "weights",
                                          // "dq", "dk", "dv", "dbias" (CaseOutcome::judged)
  std::vector<std::string> not_returned;  // asked for, not returned by the backend, not judged:
                                          // "lse", "weights", "dbias"
  double seconds = 0;                     // wall time of the backend run plus judging
  std::vector<std::string> features;  // feature tags of the case: "dtype=bf16", "causal=br", ...
  std::string repro;                  // paste-able command reproducing this record
  std::string expected;  // the known-failure entry (--expect) matching it: "reason [issue]";
                         // "" = none. With a passing status: it passed unexpectedly
};

// The whole run.
struct RunSummary {
  std::string tool_version;         // sdpa-cts version
  std::string tolerance_version;    // ToleranceTable::version that judged it
  std::string tier;                 // tier name or "custom"
  std::string device;               // device description
  std::uint64_t seed = 0;           // run seed (for sampled sweeps)
  std::string started_at;           // ISO 8601 UTC
  double seconds = 0;               // wall time of the whole run
  std::vector<CaseRecord> records;  // every verdict, in run order
  int shard_index = 0;              // this run's shard (reports/records/shard.hpp), 0-based
  int shard_count = 1;              // number of shards of the whole run (1 = not sharded)
  std::size_t jobs_total = 0;       // jobs of the whole run, all shards together
  std::size_t cases_total = 0;      // cases of the whole run; every case has the same number
                                    // of jobs (jobs_total / cases_total), kept in one shard
  std::string expectations;         // the known-failure file it ran with ("" = none)
};

// What a run's records cover: a result is one (case, backend, SIMD target) verdict, so a
// run of C cases on B backends and T targets has up to C x B x T results.
struct RunCoverage {
  std::size_t results = 0;                // records
  std::size_t cases = 0;                  // distinct case IDs
  std::size_t backends = 0;               // distinct backend names
  std::vector<std::string> simd_targets;  // distinct targets, sorted; "best" for records
                                          // run on each backend's best target ("")
};

// The coverage of `run`'s records.
RunCoverage run_coverage(const RunSummary& run);

// Records per status of a run.
StatusCounts count_statuses(const RunSummary& run);

// How many records judged each quantity ("o", "lse", "weights", "dq", "dk", "dv", "dbias": every
// one, 0 included) and how many asked for an output their backend does not return (only those
// that occur): CaseRecord::judged and ::not_returned.
struct JudgedCounts {
  std::vector<std::pair<std::string, std::int64_t>> judged;
  std::vector<std::pair<std::string, std::int64_t>> not_returned;
};
JudgedCounts count_judged(const RunSummary& run);
// "judged: o N, lse N, weights N, dq N, dk N, dv N, dbias N", then "; not returned (so not
// judged): lse N, ..." when some record has one.
std::string judged_line(const JudgedCounts& counts);

// Feature tags of a problem, used for the backend x feature matrix of the reports.
std::vector<std::string> case_features(const Problem& p);

// Every tag case_features can return, in a fixed order (certification profiles name them).
const std::vector<std::string>& known_feature_tags();

}  // namespace sdpa::conformance
