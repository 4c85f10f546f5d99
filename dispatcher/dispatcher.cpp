#include "dispatcher/dispatcher.hpp"

#include <algorithm>

#include "core/device.hpp"
#include "dispatcher/decision.hpp"
#include "dispatcher/pytorch_model.hpp"
#include "dispatcher/pytorch_policy.hpp"

namespace sdpa::dispatcher {

using namespace detail;

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
    case Outcome::not_expressible:
      return "not_expressible";
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

const std::vector<const Backend*>& policy_backends(const Policy& policy) {
  return policy.model == PolicyModel::pytorch ? pytorch_model_backends() : builtin_backends();
}

const Backend& select(const Problem& p, const Device& device, const Policy& policy,
                      const std::vector<const Backend*>& backends) {
  if (policy.model == PolicyModel::pytorch) {
    const Explanation e = explain(p, device, policy, backends);
    switch (e.outcome) {
      case Outcome::selected:
        for (const Backend* b : backends) {
          if (b->name() == e.chosen) return *b;
        }
        break;
      case Outcome::no_backend_enabled:
        throw NoBackendEnabledError(e.message);
      case Outcome::no_viable_backend: {
        std::vector<Rejection> rejected;
        for (const auto& v : e.backends) {
          if (v.verdict == Verdict::rejected) rejected.push_back({v.name, v.reasons});
        }
        throw NoViableBackendError(e.message, std::move(rejected));
      }
      case Outcome::invalid_problem:
        throw std::invalid_argument(e.message);
      case Outcome::not_expressible:
        throw DispatchError(e.message);
    }
    throw DispatchError("internal: the chosen backend is not in the list");
  }
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

const Backend& select(const Problem& p, const Device& device, const Policy& policy) {
  return select(p, device, policy, policy_backends(policy));
}

namespace {

Explanation explain_suite(const Problem& p, const Device& device, const Policy& policy,
                          const std::vector<const Backend*>& backends) {
  const Plan plan = make_plan(p, device, policy, backends);
  Explanation e;
  e.model = policy.model;
  e.order_source = plan.explicit_priority ? "explicit priority" : "registry order";
  e.order = names_of(plan.order);
  e.rules = plan.rules;
  if (auto r = validate(p); !r.empty()) {
    e.outcome = Outcome::invalid_problem;
    e.message = "invalid problem: " + r;
    return e;
  }
  // Every enabled backend is asked, so the explanation has every reason.
  Walk walk;
  for (const Backend* b : plan.order) {
    walk.support.push_back(check(*b, p, device, policy));
    if (walk.support.back().ok() && !walk.chosen) walk.chosen = b;
  }
  fill_verdicts(e, plan, walk, backends);
  finish_outcome(e, plan, walk, device);
  return e;
}

}  // namespace

Explanation explain(const Problem& p, const Device& device, const Policy& policy,
                    const std::vector<const Backend*>& backends) {
  if (policy.model == PolicyModel::pytorch) return explain_pytorch(p, device, policy, backends);
  Explanation e = explain_suite(p, device, policy, backends);
  if (e.outcome != Outcome::invalid_problem) {
    e.pytorch = compare_with_pytorch(p, device, policy, e);
  }
  return e;
}

Explanation explain(const Problem& p, const Device& device, const Policy& policy) {
  return explain(p, device, policy, policy_backends(policy));
}

}  // namespace sdpa::dispatcher
