// Pairwise coverage: which pairs of values of the case dimensions that select different code
// in the kernels a set of runs covers, and a generated covering set that covers every pair a
// backend can run (docs/CONFORMANCE.md, "Pair coverage").
//
// A job is one case on one backend, SIMD target and thread count. Its value in each
// dimension comes from the parsed problem (never from the ID's text), so a tier's cases and
// the generated ones are classified the same way. The lengths are judged against the block
// sizes of the backend that runs them: below, at and beyond one block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "kernels/backend.hpp"

namespace sdpa::conformance {

// One dimension and the names of its values.
struct PairDimension {
  std::string name;                 // e.g. "dtype"
  std::vector<std::string> values;  // e.g. {"f32", "f16", "bf16", "f64"}
  bool generated;                   // the covering set chooses it (SIMD and threads are
                                    // the run's: every case runs on each)
};

// The dimensions on `backend` (the length dimensions name its block sizes).
std::vector<PairDimension> pair_dimensions(const Backend& backend);

// The value index of each dimension for `c` run on `backend` with `isa` and `threads`.
std::vector<int> classify_job(const Case& c, const Backend& backend, IsaTarget isa, int threads);

// A pair of values of two dimensions, d1 < d2.
struct ValuePair {
  int d1, v1, d2, v2;
  bool operator<(const ValuePair& o) const;
  bool operator==(const ValuePair& o) const;
};

// The pairs of one backend: covered, not possible, and uncovered. A pair is "not possible"
// only with a reason that holds for every case (impossible_reason); a pair the generator
// failed to build without such a reason stays uncovered, so it fails the gate.
struct PairCoverage {
  std::string backend;
  std::vector<PairDimension> dimensions;
  std::size_t jobs = 0;  // jobs of the backend counted
  std::vector<ValuePair> covered;
  std::vector<ValuePair> impossible;
  std::vector<std::string> impossible_reasons;  // one per impossible pair
  std::vector<ValuePair> uncovered;
  std::size_t not_run = 0;  // pairs with a SIMD target no job ran on (not counted)
};

// One job a run ran and judged: a case on a backend, at a SIMD target and a thread count.
// `sdpa-cts pairs` reads them from the results of runs (their records name all three).
struct CoverageJob {
  std::string case_id;
  std::string backend;
  IsaTarget isa = IsaTarget::scalar;
  int threads = 1;  // OpenMP threads it ran with
};

// The jobs a run of `case_ids` on `backend` at `threads` threads on every target in `isas`
// would judge: those the backend accepts (for tests and planning; the gate reads results).
std::vector<CoverageJob> accepted_jobs(const std::vector<std::string>& case_ids,
                                       const Backend& backend, const Device& device,
                                       const std::vector<IsaTarget>& isas, int threads);

// A generated covering set: case IDs such that every pair of the generated dimensions that
// some valid case on some backend in `backends` can have is covered, on each backend; the
// pairs found impossible are returned per backend (in `impossible`, same order).
struct CoveringSet {
  std::vector<std::string> case_ids;
  std::vector<std::vector<ValuePair>> impossible;  // per backend
};
CoveringSet generate_covering_set(const std::vector<const Backend*>& backends,
                                  const Device& device);

// A covering set restricted to some values, e.g. those of a certification profile's required
// features (conformance/certification/profile.hpp). `values` names, per dimension, the values a
// generated case may take (a dimension not named keeps every value; an unknown dimension or value
// name is an error); every generated case must also pass `admit` when it is set, which rules out
// what the dimensions cannot name (a length that makes a case "decode" or "empty"); `lse`
// asks for the LSE output in every generated case. Only pairs of allowed values are wanted;
// those no admitted case covers are returned in `impossible`. An empty restriction
// generates exactly the unrestricted set above.
struct PairRestriction {
  std::map<std::string, std::set<std::string>> values;
  std::function<bool(const Case&)> admit;
  bool lse = false;
};
CoveringSet generate_covering_set(const std::vector<const Backend*>& backends, const Device& device,
                                  const PairRestriction& restriction);

// Every two features in a case of their own. The features are the allowed values of the
// feature dimensions (causal to row_pitch) other than the first allowed one (the feature
// off). Each feature alone on every allowed element type, and each two features of two
// dimensions together on the first allowed element type; every other dimension at its first
// allowed value, the lengths beyond `backend`'s last row and key blocks (more than one query
// row, more keys than rows: what a decode or an empty case cannot show). The covering set
// packs many features into each case, so there a pair can come only with a third feature
// (per-batch lengths x causal bottom-right only in a decode case, or with a window that a
// backend declines); here nothing else hides it. Cases the backend does not run or the
// restriction does not admit are left out.
std::vector<std::string> isolated_pair_cases(const Backend& backend, const Device& device,
                                             const PairRestriction& restriction);

// The coverage of the jobs of `jobs` that ran on `backend` (by name). Pairs with a SIMD
// target no such job ran on are left out of every count (`not_run`); `impossible` from
// generate_covering_set.
PairCoverage pair_coverage(const Backend& backend, const std::vector<CoverageJob>& jobs,
                           const std::vector<ValuePair>& impossible);

// Why no case `backend` accepts can hold both values of p, or "" when no rule says so.
std::string impossible_reason(const Backend& backend, const std::vector<PairDimension>& dims,
                              const ValuePair& p);

// "dtype=f64 x dropout=on".
std::string describe_pair(const std::vector<PairDimension>& dims, const ValuePair& p);

}  // namespace sdpa::conformance
