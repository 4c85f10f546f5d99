// The pieces of one dispatch decision that the suite policy (dispatcher.cpp) and the PyTorch
// policy (pytorch_policy.cpp) share: the plan (enabled backends, their order, the rules that
// fired), every backend's answer, and the verdicts and messages of an explanation.
// Internal to the dispatcher library.
#pragma once

#include <string>
#include <vector>

#include "dispatcher/dispatcher.hpp"

namespace sdpa::dispatcher::detail {

// The effective order of one decision.
struct Plan {
  std::vector<const Backend*> base;      // enabled backends before the rules
  std::vector<const Backend*> order;     // enabled backends after the rules
  std::vector<const Backend*> disabled;  // registry order
  std::vector<RuleFiring> rules;         // the rules that fired
  bool explicit_priority = false;
};

// Every enabled backend's answer, in the plan's order, and which one is chosen.
struct Walk {
  std::vector<Support> support;  // aligned with plan.order
  const Backend* chosen = nullptr;
  std::string chosen_note;  // replaces the chosen backend's default reason when set
  std::string others_note;  // replaces every eligible, unchosen backend's reason when set
};

// The plan of a decision: the enabled backends in the policy's order (an unknown name in the
// policy throws std::invalid_argument), reordered by the policy's rules (`jagged`: PyTorch's
// NestedTensor route, whose order is fixed).
Plan make_plan(const Problem& p, const Device& device, const Policy& policy,
               const std::vector<const Backend*>& backends, bool jagged = false);

// supports() plus the policy's own reasons.
Support check(const Backend& b, const Problem& p, const Device& device, const Policy& policy);

// The backends' names, in order.
std::vector<std::string> names_of(const std::vector<const Backend*>& v);

// Reasons joined by "; ".
std::string join_reasons(const std::vector<std::string>& v);

// The message of "no backend is enabled".
std::string no_backend_message(const Plan& plan);

// The message of "no enabled backend can run this problem", with every rejection.
std::string no_viable_message(const std::vector<Rejection>& rejected, const Plan& plan,
                              const Device& device);

// Fills the explanation's verdicts from a plan and a walk (the rules' bookkeeping included).
void fill_verdicts(Explanation& e, const Plan& plan, const Walk& walk,
                   const std::vector<const Backend*>& backends);

// The outcome and message of an explanation from its walk.
void finish_outcome(Explanation& e, const Plan& plan, const Walk& walk, const Device& device);

}  // namespace sdpa::dispatcher::detail
