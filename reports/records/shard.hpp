// Sharding: one run split across the machines of a CI system (docs/SCALE-OUT.md). Case c of
// the full, ordered case list belongs to shard c mod N with all its jobs (every backend and
// SIMD target), so the shards are disjoint, together are the whole run for any N, each gets
// every N-th case (cheap and expensive cases mix) and every backend. A merge puts job group m
// of shard K back at case position K + m*N (reports/merge.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sdpa::conformance {

struct Shard {
  int index = 0;  // this shard, 0-based (as TEST_SHARD_INDEX and JOB_COMPLETION_INDEX)
  int count = 1;  // number of shards; 1 = the whole run
  bool whole() const { return count == 1; }
  // Whether case `c` (0-based position in the full case list) is in this shard.
  bool has(std::size_t c) const {
    return c % static_cast<std::size_t>(count) == static_cast<std::size_t>(index);
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

// Number of cases shard `s` of a run of `total` cases gets.
std::size_t shard_size(std::size_t total, const Shard& s);

}  // namespace sdpa::conformance
