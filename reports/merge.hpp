// Merging the reports of a sharded run (docs/SCALE-OUT.md): each shard's report directory is
// read back into a RunSummary, the shards are checked to be the parts of one run, and their
// records are put back into run order, so that the merged reports are those of the unsharded
// run apart from timings.
#pragma once

#include <string>
#include <vector>

#include "reports/records/run_record.hpp"

namespace sdpa::reports {

// The run a report directory holds, from its summary.json (run metadata) and results.jsonl
// (the records, in order). Throws std::invalid_argument naming the file and the line or key
// for a missing or unreadable file, a line that is not a record, a missing or mistyped key,
// or a summary whose case count differs from the number of records. Other files of the
// directory (other reports, a certification bundle's manifest.json) are not read.
conformance::RunSummary read_run(const std::string& dir);

// The one run that the shards `shards` are parts of; `names[i]` names shards[i] in errors
// (its directory). Checks that every shard has the same tool_version, tolerance_version, tier,
// device, seed, shard_count, jobs_total, cases_total and expectations; that every index
// 0..N-1 occurs exactly once; and that each shard has shard_size(cases_total, shard) * g
// records, g = jobs_total / cases_total jobs per case. The m-th case (g records) of shard K
// goes back to case K + m*N. The result has shard_index 0 and shard_count 1, the
// earliest started_at and the largest seconds (the shards ran side by side). Throws
// std::invalid_argument naming the shard and the field for any mismatch. A pure function.
conformance::RunSummary merge_runs(const std::vector<conformance::RunSummary>& shards,
                                   const std::vector<std::string>& names);

}  // namespace sdpa::reports
