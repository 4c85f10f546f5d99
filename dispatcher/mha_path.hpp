// The nn.MultiheadAttention path picker: which of PyTorch's MHA paths a call takes (the
// fast-path conditions of MultiheadAttention.forward in torch/nn/modules/activation.py, with
// the first failing one), and which SDPA backend it then reaches under this suite's
// dispatcher. docs/DISPATCH.md.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dispatcher/dispatcher.hpp"
#include "reference/mha_spec.hpp"

namespace sdpa::dispatcher {

using reference::MhaCall;

enum class MhaRoute {
  fast_sdpa,          // torch._native_multi_head_attention, attention by an SDPA kernel
  fast_materialized,  // torch._native_multi_head_attention, bmm + masked softmax
  slow_sdpa,          // F.multi_head_attention_forward calling F.scaled_dot_product_attention
  slow_materialized,  // F.multi_head_attention_forward computing softmax(QK^T) itself
  error,              // PyTorch raises (a NestedTensor outside the fast path)
};
const char* route_name(MhaRoute r);

// One fast-path condition, in PyTorch's order.
struct FastPathCheck {
  std::string condition;  // what must hold, e.g. "batch_first"
  bool passed = true;
  std::string reason;  // PyTorch's why_not_fast_path text when it fails
};

struct MhaPath {
  std::vector<FastPathCheck> checks;  // every condition, in the order that decides the text
  bool fast_path = false;             // torch._native_multi_head_attention is called
  std::string why_not_fast_path;      // the first failing condition ("" on the fast path)
  MhaRoute route = MhaRoute::slow_materialized;
  std::string route_reason;   // why this route; names the need_weights default when it decides
  bool reaches_sdpa = false;  // PyTorch runs an SDPA kernel for the attention
  Problem sdpa_problem;       // the attention as an SDPA problem (want_weights when materialised)
  Explanation sdpa;           // this suite's dispatcher on sdpa_problem
};

// Throws std::invalid_argument("invalid MHA call: ...") when validate(call) fails, and what
// explain() throws.
MhaPath pick_mha_path(const MhaCall& call, const Device& device, const Policy& policy,
                      const std::vector<const Backend*>& backends);
// The same with the policy's backends (policy_backends()).
MhaPath pick_mha_path(const MhaCall& call, const Device& device,
                      const Policy& policy = current_policy());

}  // namespace sdpa::dispatcher
