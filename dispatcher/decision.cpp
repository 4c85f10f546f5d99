#include "dispatcher/decision.hpp"

#include <algorithm>

#include "dispatcher/rules.hpp"

namespace sdpa::dispatcher::detail {
namespace {

const Backend* find_in(const std::vector<const Backend*>& backends, std::string_view name) {
  for (const Backend* b : backends) {
    if (b->name() == name) return b;
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The rules a policy applies: every named rule for the suite; PyTorch's cudnn_preferred for
// the PyTorch policy, and none on its jagged (NestedTensor) route, whose order is fixed.
const std::vector<std::string>* rule_set(const Policy& policy, bool jagged) {
  static const std::vector<std::string> pytorch = {"cudnn_preferred"};
  static const std::vector<std::string> none;
  if (policy.model == PolicyModel::suite) return nullptr;
  return jagged ? &none : &pytorch;
}

}  // namespace

std::vector<std::string> names_of(const std::vector<const Backend*>& v) {
  std::vector<std::string> out;
  for (const Backend* b : v) out.emplace_back(b->name());
  return out;
}

Plan make_plan(const Problem& p, const Device& device, const Policy& policy,
               const std::vector<const Backend*>& backends, bool jagged) {
  auto check_name = [&](const std::string& n) {
    if (!find_in(backends, n)) {
      throw std::invalid_argument("the policy names unknown backend '" + n +
                                  "' (known: " + join(names_of(backends), ", ") + ")");
    }
  };
  if (policy.enabled) std::for_each(policy.enabled->begin(), policy.enabled->end(), check_name);
  std::for_each(policy.priority.begin(), policy.priority.end(), check_name);

  Plan plan;
  plan.explicit_priority = !policy.priority.empty();
  std::vector<const Backend*> all;
  for (const auto& n : policy.priority) {
    const Backend* b = find_in(backends, n);
    if (std::find(all.begin(), all.end(), b) == all.end()) all.push_back(b);
  }
  for (const Backend* b : backends) {
    if (std::find(all.begin(), all.end(), b) == all.end()) all.push_back(b);
  }
  for (const Backend* b : all) {
    const bool on = !policy.enabled || std::find(policy.enabled->begin(), policy.enabled->end(),
                                                 b->name()) != policy.enabled->end();
    if (on) plan.base.push_back(b);
  }
  for (const Backend* b : backends) {
    if (std::find(plan.base.begin(), plan.base.end(), b) == plan.base.end()) {
      plan.disabled.push_back(b);
    }
  }
  plan.order = plan.base;
  if (!plan.explicit_priority && policy.heuristics) {
    plan.rules = apply_rules(p, device, plan.order, rule_set(policy, jagged),
                             /*promote_models=*/policy.model == PolicyModel::pytorch);
  }
  return plan;
}

// supports() plus the policy's own reasons. The suite policy declines a backend that would
// raise after selection; the PyTorch policy keeps the error with the acceptance.
Support check(const Backend& b, const Problem& p, const Device& device, const Policy& policy) {
  Support s = b.supports(p, device);
  if (policy.model == PolicyModel::suite && !s.raises.empty()) {
    s.reasons = s.all_reasons();
    s.raises.clear();
  }
  if (policy.require_deterministic && !b.capabilities().deterministic) s.decline(kNotDeterministic);
  return s;
}

std::string no_backend_message(const Plan& plan) {
  if (plan.disabled.empty()) return "no backend is enabled: no backend is registered";
  return "no backend is enabled: the policy enables none of " + join(names_of(plan.disabled), ", ");
}

std::string no_viable_message(const std::vector<Rejection>& rejected, const Plan& plan,
                              const Device& device) {
  std::string m =
      "no enabled backend can run this problem on " + device.name + "\nrejected backends:";
  for (const auto& r : rejected) {
    m += "\n  " + r.backend + ":";
    for (const auto& reason : r.reasons) m += "\n    - " + reason;
  }
  if (!plan.disabled.empty())
    m += "\ndisabled by the policy: " + join(names_of(plan.disabled), ", ");
  return m;
}

std::string join_reasons(const std::vector<std::string>& v) { return join(v, "; "); }

// Fills the explanation's verdicts from a plan and a walk (the rules' bookkeeping included).
void fill_verdicts(Explanation& e, const Plan& plan, const Walk& walk,
                   const std::vector<const Backend*>& backends) {
  const Backend* chosen = walk.chosen;
  // The last rule that moved the chosen backend forward, if any.
  const RuleFiring* promoter = nullptr;
  if (chosen) {
    for (const auto& r : plan.rules) {
      if (std::find(r.promoted.begin(), r.promoted.end(), chosen->name()) != r.promoted.end()) {
        promoter = &r;
      }
    }
  }
  auto position = [](const std::vector<const Backend*>& v, const Backend* b) {
    return static_cast<int>(std::find(v.begin(), v.end(), b) - v.begin());
  };
  // The order just before that rule ran: whoever was ahead of the chosen backend there lost
  // its place to the rule, not to the priority.
  std::vector<const Backend*> before_promoter = plan.base;
  for (const auto& r : plan.rules) {
    if (&r == promoter) break;
    std::stable_partition(before_promoter.begin(), before_promoter.end(), [&](const Backend* b) {
      return std::find(r.promoted.begin(), r.promoted.end(), b->name()) != r.promoted.end();
    });
  }
  // "the registry order", "PyTorch's order".
  const std::string the = e.order_source.rfind("PyTorch", 0) == 0 ? "" : "the ";
  const std::string source = the + e.order_source + (plan.rules.empty() ? "" : " after the rules");
  for (const Backend* b : backends) {
    BackendVerdict v;
    v.name = std::string(b->name());
    const auto it = std::find(plan.order.begin(), plan.order.end(), b);
    if (it == plan.order.end()) {
      v.verdict = Verdict::disabled;
      v.reasons = {"disabled by the policy"};
      e.backends.push_back(std::move(v));
      continue;
    }
    v.rank = static_cast<int>(it - plan.order.begin());
    const Support& s = walk.support[static_cast<std::size_t>(v.rank)];
    if (b == chosen) {
      v.verdict = Verdict::chosen;
      v.reasons = {!walk.chosen_note.empty() ? walk.chosen_note
                   : promoter
                       ? "eligible, and rule " + promoter->name + " moved it to the front"
                       : "the first backend in " + the + e.order_source + " that supports it"};
    } else if (!s.picker_accepts()) {
      v.verdict = Verdict::rejected;
      v.reasons = s.reasons;
    } else if (!walk.others_note.empty()) {
      v.verdict = Verdict::lower_priority;
      v.reasons = {walk.others_note};
    } else if (promoter && position(before_promoter, b) < position(before_promoter, chosen)) {
      v.verdict = Verdict::not_preferred;
      v.reasons = {"eligible, but rule " + promoter->name + " put " + std::string(chosen->name()) +
                   " first: " + promoter->why};
    } else {
      v.verdict = Verdict::lower_priority;
      v.reasons = {"eligible, but " + std::string(chosen->name()) + " comes first in " + source};
    }
    e.backends.push_back(std::move(v));
  }
}

void finish_outcome(Explanation& e, const Plan& plan, const Walk& walk, const Device& device) {
  if (walk.chosen) {
    e.outcome = Outcome::selected;
    e.chosen = std::string(walk.chosen->name());
    return;
  }
  std::vector<Rejection> rejected;
  for (std::size_t i = 0; i < plan.order.size(); ++i) {
    rejected.push_back({std::string(plan.order[i]->name()), walk.support[i].reasons});
  }
  if (plan.order.empty()) {
    e.outcome = Outcome::no_backend_enabled;
    e.message = no_backend_message(plan);
  } else {
    e.outcome = Outcome::no_viable_backend;
    e.message = no_viable_message(rejected, plan, device);
  }
}

}  // namespace sdpa::dispatcher::detail
