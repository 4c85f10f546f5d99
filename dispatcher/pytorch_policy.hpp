// The PyTorch policy (--policy pytorch): PyTorch's decision for a problem, modelled through
// its front end (pytorch_model.hpp), and where the suite policy's decision departs from it.
// docs/DISPATCH.md, "Policies".
#pragma once

#include <vector>

#include "dispatcher/dispatcher.hpp"

namespace sdpa::dispatcher {

// The explanation under the PyTorch model: the route PyTorch's public API takes, its order
// and rules, every backend's answer, what it chooses and what the chosen kernel raises.
Explanation explain_pytorch(const Problem& p, const Device& device, const Policy& policy,
                            const std::vector<const Backend*>& backends);

// Where the suite policy's decision `suite` departs from PyTorch's, and why.
PytorchComparison compare_with_pytorch(const Problem& p, const Device& device, const Policy& policy,
                                       const Explanation& suite);

}  // namespace sdpa::dispatcher
