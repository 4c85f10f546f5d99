#include "dispatcher/dispatcher.hpp"

#include <algorithm>

#include "core/device.hpp"

namespace sdpa::dispatcher {
namespace {

// The effective order of one decision.
struct Plan {
  std::vector<const Backend*> base;      // enabled backends before the rules
  std::vector<const Backend*> order;     // enabled backends after the rules
  std::vector<const Backend*> disabled;  // registry order
  std::vector<RuleFiring> rules;         // the rules that fired
  bool explicit_priority = false;
};

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

std::vector<std::string> names_of(const std::vector<const Backend*>& v) {
  std::vector<std::string> out;
  for (const Backend* b : v) out.emplace_back(b->name());
  return out;
}

Plan make_plan(const Problem& p, const Device& device, const Policy& policy,
               const std::vector<const Backend*>& backends) {
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
  if (!plan.explicit_priority && policy.heuristics) plan.rules = apply_rules(p, device, plan.order);
  return plan;
}

Support check(const Backend& b, const Problem& p, const Device& device, const Policy& policy) {
  Support s = b.supports(p, device);
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

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::chosen:
      return "chosen";
    case Verdict::lower_priority:
      return "lower_priority";
    case Verdict::not_preferred:
      return "not_preferred";
    case Verdict::rejected:
      return "rejected";
    case Verdict::disabled:
      return "disabled";
  }
  return "?";
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::selected:
      return "selected";
    case Outcome::no_backend_enabled:
      return "no_backend_enabled";
    case Outcome::no_viable_backend:
      return "no_viable_backend";
    case Outcome::invalid_problem:
      return "invalid_problem";
  }
  return "?";
}

const Backend& select(const Problem& p, const Device& device, const Policy& policy,
                      const std::vector<const Backend*>& backends) {
  const Plan plan = make_plan(p, device, policy, backends);
  if (auto r = validate(p); !r.empty()) throw std::invalid_argument("invalid problem: " + r);
  if (plan.order.empty()) throw NoBackendEnabledError(no_backend_message(plan));
  std::vector<Rejection> rejected;
  for (const Backend* b : plan.order) {
    Support s = check(*b, p, device, policy);
    if (s.ok()) return *b;
    rejected.push_back({std::string(b->name()), std::move(s.reasons)});
  }
  std::string message = no_viable_message(rejected, plan, device);
  throw NoViableBackendError(message, std::move(rejected));
}

Explanation explain(const Problem& p, const Device& device, const Policy& policy,
                    const std::vector<const Backend*>& backends) {
  const Plan plan = make_plan(p, device, policy, backends);
  Explanation e;
  e.order_source = plan.explicit_priority ? "explicit priority" : "registry order";
  e.order = names_of(plan.order);
  e.rules = plan.rules;
  if (auto r = validate(p); !r.empty()) {
    e.outcome = Outcome::invalid_problem;
    e.message = "invalid problem: " + r;
    return e;
  }
  // Every enabled backend is asked, so the explanation has every reason.
  std::vector<Support> support;
  const Backend* chosen = nullptr;
  std::vector<Rejection> rejected;
  for (const Backend* b : plan.order) {
    support.push_back(check(*b, p, device, policy));
    if (support.back().ok()) {
      if (!chosen) chosen = b;
    } else {
      rejected.push_back({std::string(b->name()), support.back().reasons});
    }
  }
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
  const std::string source = e.order_source + (plan.rules.empty() ? "" : " after the rules");
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
    const Support& s = support[static_cast<std::size_t>(v.rank)];
    if (b == chosen) {
      v.verdict = Verdict::chosen;
      v.reasons = {promoter ? "eligible, and rule " + promoter->name + " moved it to the front"
                            : "the first backend in the " + e.order_source + " that supports it"};
    } else if (!s.ok()) {
      v.verdict = Verdict::rejected;
      v.reasons = s.reasons;
    } else if (promoter && position(before_promoter, b) < position(before_promoter, chosen)) {
      v.verdict = Verdict::not_preferred;
      v.reasons = {"eligible, but rule " + promoter->name + " put " + std::string(chosen->name()) +
                   " first: " + promoter->why};
    } else {
      v.verdict = Verdict::lower_priority;
      v.reasons = {"eligible, but " + std::string(chosen->name()) + " comes first in the " +
                   source};
    }
    e.backends.push_back(std::move(v));
  }
  if (chosen) {
    e.outcome = Outcome::selected;
    e.chosen = std::string(chosen->name());
  } else if (plan.order.empty()) {
    e.outcome = Outcome::no_backend_enabled;
    e.message = no_backend_message(plan);
  } else {
    e.outcome = Outcome::no_viable_backend;
    e.message = no_viable_message(rejected, plan, device);
  }
  return e;
}

}  // namespace sdpa::dispatcher
