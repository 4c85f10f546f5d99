#include "dispatcher/pytorch_policy.hpp"

#include <algorithm>

#include "dispatcher/decision.hpp"
#include "dispatcher/pytorch_model.hpp"

namespace sdpa::dispatcher {

using namespace detail;

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

namespace {

// The PyTorch kernel the suite's chosen backend stands for (SDPBackend names; "" for none),
// as the backend declares it.
std::string suite_counterpart_kind(std::string_view name) {
  const Backend* b = find_backend(name);
  return b ? pytorch_kernel_name(b->capabilities().traits.pytorch) : "";
}

}  // namespace

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

}  // namespace sdpa::dispatcher
