// The optional outputs a case asks for (the LSE, the attention weights, d bias) are requests
// to a backend, not conditions for judging it: a backend that does not return one is judged on
// the rest of the case (O, and a backward case's dQ, dK, dV) and the record says which
// requested outputs it did not return (docs/CONFORMANCE.md, "Requested outputs"). Policy:
// a case that judged nothing a backend returns is no evidence either way, and a gate of
// NOT_SUPPORTED for every case that asks for the LSE hides every hard generator from a
// function that, like every framework's attention, returns O alone.
//
// The LSE stays a condition where the backend's own backward reads it (backward_needs_lse):
// without it the backward cannot run.
#pragma once

#include <string>
#include <vector>

#include "core/problem.hpp"
#include "kernels/backend.hpp"

namespace sdpa::conformance {

struct RequestedOutputs {
  Problem judged;                         // the case's problem without the outputs below
  std::vector<std::string> not_returned;  // "lse", "weights", "dbias" (case feature tags)
};

// `p` without the optional outputs `caps` says the backend does not return.
RequestedOutputs without_unreturned_outputs(const Capabilities& caps, const Problem& p);

}  // namespace sdpa::conformance
