// The dispatcher's explanations as JSON: what `sdpa-cts explain --json` prints and what
// scripts/pytorch-picker-diff.py reads (the policy, every backend's verdict and reasons, and
// the tensors of the call PyTorch would receive).
#pragma once

#include <nlohmann/json.hpp>

#include "dispatcher/dispatcher.hpp"
#include "dispatcher/pytorch_model.hpp"

namespace sdpa::dispatcher {

// {"model", "enabled", "priority", "heuristics", "require_deterministic"}.
nlohmann::json policy_json(const Policy& p);

// {"outcome", "chosen", "order_source", "order", "rules", "backends", ...}; under the PyTorch
// model also the route, the front end, PyTorch's choice and what it raises.
nlohmann::json explanation_json(const Explanation& e);

// The tensors of PyTorch's call as data: dense views [B, H, rows, D] (strides and storage
// offset in elements), or jagged rows [total, H, D] with the per-batch lengths.
nlohmann::json torch_call_json(const TorchCall& call);

}  // namespace sdpa::dispatcher
