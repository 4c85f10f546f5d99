#include "dispatcher/dispatcher.hpp"

#include <algorithm>

#include "core/device.hpp"
#include "dispatcher/pytorch_model.hpp"

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

// The rules a policy applies: every named rule for the suite; PyTorch's cudnn_preferred for
// the PyTorch policy, and none on its jagged (NestedTensor) route, whose order is fixed.
const std::vector<std::string>* rule_set(const Policy& policy, bool jagged) {
  static const std::vector<std::string> pytorch = {"cudnn_preferred"};
  static const std::vector<std::string> none;
  if (policy.model == PolicyModel::suite) return nullptr;
  return jagged ? &none : &pytorch;
}

Plan make_plan(const Problem& p, const Device& device, const Policy& policy,
               const std::vector<const Backend*>& backends, bool jagged = false) {
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

// Every enabled backend's answer, in the plan's order, and which one is chosen.
struct Walk {
  std::vector<Support> support;  // aligned with plan.order
  const Backend* chosen = nullptr;
  std::string chosen_note;  // replaces the chosen backend's default reason when set
  std::string others_note;  // replaces every eligible, unchosen backend's reason when set
};

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

std::string join_reasons(const std::vector<std::string>& v) { return join(v, "; "); }

Explanation explain_pytorch(const Problem& p, const Device& device, const Policy& policy,
                            const std::vector<const Backend*>& backends) {
  Explanation e;
  e.model = policy.model;
  if (auto r = validate(p); !r.empty()) {
    const Plan plan = make_plan(p, device, policy, backends);
    e.order_source = plan.explicit_priority ? "explicit priority" : "PyTorch's order";
    e.order = names_of(plan.order);
    e.outcome = Outcome::invalid_problem;
    e.message = "invalid problem: " + r;
    return e;
  }
  const TorchCall call = torch_call(p);
  e.torch_route = torch_route_name(call.route);
  const bool jagged = call.route == TorchRoute::nested;
  // The order is decided on the call SDPA finally sees (the masked one for CausalBias).
  const Problem& final_problem = call.masked ? *call.masked : call.problem;
  const Plan plan = make_plan(final_problem, device, policy, backends, jagged);
  e.order_source = plan.explicit_priority ? "explicit priority" : "PyTorch's order";
  e.order = names_of(plan.order);
  e.rules = plan.rules;
  if (call.route == TorchRoute::not_expressible) {
    e.front_end = call.not_expressible;
    e.outcome = Outcome::not_expressible;
    e.message =
        "PyTorch's public API cannot express this problem: " + join_reasons(call.not_expressible);
    e.pytorch_choice = "not_expressible";
    return e;
  }
  e.front_end = call.notes;
  auto ask = [&](const Backend& b, const Problem& q) {
    Support s = check(b, q, device, policy);
    pytorch_route_checks(b, call, device, s);
    return s;
  };
  Walk walk;
  if (call.route == TorchRoute::causal_bias) {
    // CausalBias._dispatch: can_use_flash_attention, then can_use_efficient_attention on the
    // mask-free call (CUDA checks: a CPU tensor fails them), then SDPA with the mask.
    const Backend* direct = nullptr;
    std::vector<Support> first(plan.order.size());
    for (const char* kind : {"flash", "efficient"}) {
      for (std::size_t i = 0; i < plan.order.size(); ++i) {
        const Backend* b = plan.order[i];
        if (pytorch_backend_name(*b) != kind || b->capabilities().device != DeviceKind::cuda) {
          continue;
        }
        first[i] = ask(*b, call.problem);
        if (!direct && first[i].picker_accepts()) direct = b;
      }
    }
    for (std::size_t i = 0; i < plan.order.size(); ++i) {
      const Backend* b = plan.order[i];
      if (b == direct) {
        walk.support.push_back(first[i]);
        continue;
      }
      Support s = ask(*b, *call.masked);
      const bool asked_first =
          pytorch_backend_name(*b) == "flash" || pytorch_backend_name(*b) == "efficient";
      if (asked_first && b->capabilities().device == DeviceKind::cuda && !s.picker_accepts()) {
        Support both;
        for (const auto& r : first[i].reasons) both.decline("CausalBias's mask-free call: " + r);
        for (const auto& r : s.reasons) both.decline("SDPA with the materialised mask: " + r);
        s = both;
      }
      walk.support.push_back(s);
    }
    if (direct) {
      walk.chosen = direct;
      walk.chosen_note = "CausalBias._dispatch calls it directly: it accepts the mask-free call";
      walk.others_note = "eligible, but CausalBias._dispatch takes " + std::string(direct->name()) +
                         " before calling SDPA";
    }
  } else {
    for (const Backend* b : plan.order) walk.support.push_back(ask(*b, call.problem));
  }
  if (!walk.chosen) {
    for (std::size_t i = 0; i < plan.order.size(); ++i) {
      if (walk.support[i].picker_accepts()) {
        walk.chosen = plan.order[i];
        break;
      }
    }
  }
  fill_verdicts(e, plan, walk, backends);
  finish_outcome(e, plan, walk, device);
  if (walk.chosen) {
    const auto idx = static_cast<std::size_t>(
        std::find(plan.order.begin(), plan.order.end(), walk.chosen) - plan.order.begin());
    e.raises = walk.support[idx].raises;
    e.pytorch_choice = pytorch_backend_name(*walk.chosen);
    if (!e.raises.empty()) {
      e.message = "PyTorch selects " + e.chosen + ", which then raises: " + join_reasons(e.raises);
    }
  } else {
    e.pytorch_choice = "error";
  }
  return e;
}

// The PyTorch kernel the suite's chosen backend stands for (SDPBackend names; "" for none),
// as the backend declares it.
std::string suite_counterpart_kind(std::string_view name) {
  const Backend* b = find_backend(name);
  return b ? pytorch_kernel_name(b->capabilities().traits.pytorch) : "";
}

// Where the suite policy's decision departs from PyTorch's, and why.
PytorchComparison compare_with_pytorch(const Problem& p, const Device& device, const Policy& policy,
                                       const Explanation& suite) {
  Policy torch_policy;
  torch_policy.model = PolicyModel::pytorch;
  const Explanation t = explain_pytorch(p, device, torch_policy, pytorch_model_backends());
  PytorchComparison c;
  c.choice = t.pytorch_choice;
  c.backend = t.chosen;
  const std::string ours =
      suite.outcome == Outcome::selected ? suite_counterpart_kind(suite.chosen) : "error";
  c.departs = ours != c.choice || !t.raises.empty();
  if (!c.departs) return c;
  if (t.outcome == Outcome::not_expressible) {
    c.why.push_back("PyTorch's public API cannot express it: " + join_reasons(t.front_end));
    return c;
  }
  if (suite.outcome == Outcome::selected && ours.empty()) {
    c.why.push_back(suite.chosen + " has no counterpart among PyTorch's kernels");
  }
  for (const auto& r : suite.rules) {
    if (!is_pytorch_rule(r.name)) {
      c.why.push_back("rule " + r.name +
                      " is this suite's own, PyTorch has no such rule: " + r.why);
    }
  }
  if (!policy.priority.empty() || policy.enabled || !policy.heuristics) {
    c.why.push_back("the policy's enabled set, priority or rule switch is not PyTorch's default");
  }
  if (t.outcome == Outcome::selected && suite.chosen != t.chosen) {
    const Backend* tb = find_backend(t.chosen);
    if (tb && tb->capabilities().traits.model_only) {
      c.why.push_back(t.chosen +
                      " only models PyTorch's choice (this suite has no kernel for it): the "
                      "suite's rules never promote it, and it comes last");
    }
  }
  for (const auto& note : t.front_end) c.why.push_back("PyTorch's front end: " + note);
  if (!t.raises.empty()) {
    c.why.push_back("PyTorch selects " + t.chosen + " and then raises: " + join_reasons(t.raises));
  }
  // Backends that answer differently from their PyTorch counterpart.
  for (const auto& sv : suite.backends) {
    const std::string kind = suite_counterpart_kind(sv.name);
    if (kind.empty() || sv.verdict == Verdict::disabled) continue;
    const Backend* sb = find_backend(sv.name);
    if (!sb || sb->capabilities().device != device.kind) continue;
    for (const auto& tv : t.backends) {
      const Backend* tb = nullptr;
      for (const Backend* b : pytorch_model_backends()) {
        if (b->name() == tv.name) tb = b;
      }
      if (!tb || pytorch_backend_name(*tb) != kind || tb->capabilities().device != device.kind) {
        continue;
      }
      const bool suite_yes = sv.verdict != Verdict::rejected;
      const bool torch_yes = tv.verdict != Verdict::rejected && tv.verdict != Verdict::disabled;
      if (suite_yes && !torch_yes) {
        c.why.push_back(sv.name + " accepts what PyTorch's " + tv.name +
                        " declines: " + join_reasons(tv.reasons));
      } else if (!suite_yes && torch_yes && sv.name != tv.name) {
        c.why.push_back(sv.name + " declines what PyTorch's " + tv.name +
                        " accepts: " + join_reasons(sv.reasons));
      } else if (!suite_yes && torch_yes) {
        c.why.push_back(sv.name + " declines here (" + join_reasons(sv.reasons) +
                        ") but accepts PyTorch's form of the call");
      }
    }
  }
  if (c.why.empty()) c.why.push_back("the backends' order differs from PyTorch's");
  return c;
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
