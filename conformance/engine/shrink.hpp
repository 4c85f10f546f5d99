// The shrinker: reduces a failing case toward the smallest case ID that still fails the
// same way (`sdpa-cts shrink`, and every finding of `sdpa-cts fuzz`). It works on the case
// ID's fields, so every candidate is a case anyone can paste: it removes optional fields
// (features, layouts, outputs), lowers sizes (to 1, by half, by one), resets the data to
// gen=normal seed0, and keeps a candidate only when the problem is valid. docs/FUZZING.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sdpa::conformance {

// The one-step reductions of a case ID, canonical and valid, the most promising first
// (whole features before sizes, large cuts before small ones). Throws std::invalid_argument
// for an ID that does not parse.
std::vector<std::string> shrink_candidates(const std::string& case_id);

// The size of a case as the shrinker orders them: B*Hq*L*S*max(Dqk, Dv), then the number of
// fields of its ID, then the sum of the sizes, then how far its data is from gen=normal seed0.
struct CaseSize {
  std::int64_t work = 0;
  std::size_t fields = 0;
  std::int64_t dims = 0;
  int data = 0;
  bool operator<(const CaseSize& o) const {
    if (work != o.work) return work < o.work;
    if (fields != o.fields) return fields < o.fields;
    if (dims != o.dims) return dims < o.dims;
    return data < o.data;
  }
};
CaseSize case_size(const std::string& case_id);

// Answers, for each candidate ID, whether it still fails the same way (the caller runs them,
// e.g. in isolated workers, all at once).
using StillFails = std::function<std::vector<bool>(const std::vector<std::string>& ids)>;

struct ShrinkResult {
  std::string case_id;            // the smallest failing ID found (the input if none smaller)
  std::vector<std::string> path;  // every accepted step, in order
  int rounds = 0;                 // rounds of candidates evaluated
  std::size_t tried = 0;          // candidates evaluated in all
};

// Greedy: each round evaluates every candidate of the current ID and moves to the first that
// still fails (in candidate order); stops when none does or after `max_rounds`.
ShrinkResult shrink_case(const std::string& case_id, const StillFails& still_fails,
                         int max_rounds = 200);

}  // namespace sdpa::conformance
