// Pairwise coverage: which pairs of values of the case dimensions that select different code
// in the kernels a set of runs covers, and a generated covering set that covers every pair a
// backend can run (docs/CONFORMANCE.md, "Pair coverage").
//
// A job is one case on one backend, SIMD target and thread count. Its value in each
// dimension comes from the parsed problem (never from the ID's text), so a tier's cases and
// the generated ones are classified the same way. The lengths are judged against the block
// sizes of the backend that runs them: below, at and beyond one block.
//
// The forward and the backward are counted apart (PairPass): the backward is other code with
// blocks of its own, so its pairs are those of the jobs that run it, with the lengths judged
// against its blocks (Capabilities::backward_tiling).
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

// Whose pairs: the forward pass's (every job, the lengths against Capabilities::tiling) or
// the backward pass's (only the jobs with the backward on, the lengths against
// Capabilities::backward_tiling, else the forward's cuts). The backward's dimensions are the
// forward's; its pairs are those whose values meet in one backward job, so that a pair met
// only by forward cases (per-batch lengths x causal bottom-right without `bwd`) does not
// count for the backward's code. Pairs with backward=off are no pairs of the backward pass.
enum class PairPass { forward, backward };

// "forward" or "backward".
const char* pair_pass_name(PairPass pass);

// The length cuts `pass` judges lengths against on `backend`.
const TilingCuts& pass_tiling(const Backend& backend, PairPass pass);

// The dimensions on `backend` (the length dimensions name the block sizes of `pass`).
std::vector<PairDimension> pair_dimensions(const Backend& backend,
                                           PairPass pass = PairPass::forward);

// The value index of each dimension for `c` run on `backend` with `isa` and `threads` (the
// lengths against the blocks of `pass`).
std::vector<int> classify_job(const Case& c, const Backend& backend, IsaTarget isa, int threads,
                              PairPass pass = PairPass::forward);

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
  PairPass pass = PairPass::forward;  // the pass whose pairs these are
  std::vector<PairDimension> dimensions;
  std::size_t jobs = 0;  // jobs of the backend counted (for the backward: those with `bwd`)
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
// some valid case on some backend in `backends` can have is covered, on each backend, for
// the forward and, among backward cases, for the backward (PairPass); the pairs found
// impossible are returned per backend (in `impossible`, same order). The forward's cases
// come first, as they were before the backward had pairs of its own: the cases added for the
// backward's pairs follow them, from `backward_from` on.
struct CoveringSet {
  std::vector<std::string> case_ids;
  std::vector<std::vector<ValuePair>> impossible;           // per backend: the forward's
  std::vector<std::vector<ValuePair>> backward_impossible;  // per backend: the backward's
  std::size_t backward_from = 0;  // case_ids[backward_from..] were added for the backward
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

// Whether `restriction` allows both values of p (of `dims`). Throws std::invalid_argument as
// generate_covering_set does for an unknown dimension or value name.
bool pair_allowed(const std::vector<PairDimension>& dims, const PairRestriction& restriction,
                  const ValuePair& p);

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

// The coverage of `pass` by the jobs of `jobs` that ran on `backend` (by name; for the
// backward, those with the backward on). Pairs with a SIMD target no such job ran on are
// left out of every count (`not_run`); `impossible` from generate_covering_set (its
// `impossible` or `backward_impossible`). A backend without a backward has every pair of
// the backward pass not possible.
PairCoverage pair_coverage(const Backend& backend, const std::vector<CoverageJob>& jobs,
                           const std::vector<ValuePair>& impossible,
                           PairPass pass = PairPass::forward);

// Why no case `backend` accepts can hold both values of p in `pass`, or "" when no rule says
// so.
std::string impossible_reason(const Backend& backend, const std::vector<PairDimension>& dims,
                              const ValuePair& p, PairPass pass = PairPass::forward);

// "dtype=f64 x dropout=on".
std::string describe_pair(const std::vector<PairDimension>& dims, const ValuePair& p);

}  // namespace sdpa::conformance
