// Sharding: one run split across the machines of a CI system (docs/SCALE-OUT.md). Job j of
// the full, ordered job list belongs to shard j mod N, so the shards are disjoint, together
// are the whole run for any N, and each gets every N-th job (cheap and expensive cases mix).
// A merge puts record m of shard K back at position K + m*N (reports/merge.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sdpa::conformance {

struct Shard {
  int index = 0;  // this shard, 0-based (as TEST_SHARD_INDEX and JOB_COMPLETION_INDEX)
  int count = 1;  // number of shards; 1 = the whole run
  bool whole() const { return count == 1; }
  // Whether job `job` (0-based position in the full job list) is in this shard.
  bool has(std::size_t job) const {
    return job % static_cast<std::size_t>(count) == static_cast<std::size_t>(index);
  }
};

// "K/N" with 0 <= K < N (e.g. "2/3"). Throws std::invalid_argument naming the text.
Shard parse_shard(std::string_view text);

// "K/N".
std::string shard_name(const Shard& s);

// The shard a test runner asks for: TEST_TOTAL_SHARDS and TEST_SHARD_INDEX (Bazel's
// convention, set by other runners too); the whole run when TEST_TOTAL_SHARDS is unset.
// When TEST_SHARD_STATUS_FILE is set, touches it (tells the runner sharding is supported).
// Throws std::invalid_argument for malformed or inconsistent values.
Shard shard_from_environment();

// Number of jobs shard `s` of a run of `total` jobs gets.
std::size_t shard_size(std::size_t total, const Shard& s);

}  // namespace sdpa::conformance
