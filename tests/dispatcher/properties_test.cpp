// RapidCheck properties of the dispatcher over random problems, devices and policies: it
// never picks a backend whose supports() says no, forcing an eligible backend picks it,
// priority is respected, scopes restore state (also on exceptions and per thread), and
// explain() agrees with select().
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <thread>

#include "dispatcher/dispatcher.hpp"
#include "test_backends.hpp"

namespace sdpa {
namespace {

using dispatcher::Policy;

std::vector<std::string> registry_names(const std::vector<const Backend*>& reg) {
  std::vector<std::string> n;
  for (const Backend* b : reg) n.emplace_back(b->name());
  return n;
}

const Backend* by_name(const std::vector<const Backend*>& reg, const std::string& n) {
  for (const Backend* b : reg) {
    if (b->name() == n) return b;
  }
  return nullptr;
}

Problem gen_problem() {
  Problem p;
  p.dtype = *rc::gen::element(DType::f64, DType::f32, DType::f16, DType::bf16);
  p.batch = *rc::gen::element<std::int64_t>(0, 1, 1, 2, 3);
  p.heads_kv = *rc::gen::element<std::int64_t>(1, 2);
  p.heads_q = p.heads_kv * *rc::gen::element<std::int64_t>(1, 2, 4);
  p.len_q = *rc::gen::element<std::int64_t>(0, 1, 3, 4, 64, 128, 200);
  p.len_kv = *rc::gen::element<std::int64_t>(0, 1, 5, 64, 100, 128, 256, 1024);
  p.head_dim_qk = *rc::gen::element<std::int64_t>(1, 8, 16, 60, 62, 64, 128, 192, 256, 264);
  p.head_dim_v =
      *rc::gen::element(p.head_dim_qk, p.head_dim_qk, std::int64_t{32}, std::int64_t{128});
  p.causal = *rc::gen::element(Causal::none, Causal::none, Causal::top_left, Causal::bottom_right);
  p.mask = *rc::gen::element(MaskKind::none, MaskKind::none, MaskKind::boolean, MaskKind::additive);
  if (p.mask != MaskKind::none) p.mask_broadcast = *rc::gen::inRange<std::uint8_t>(0, 16);
  p.dropout_p = *rc::gen::element(0.0, 0.0, 0.1, 0.125);
  if (*rc::gen::element(0, 0, 0, 1)) p.softcap = 30;
  if (*rc::gen::element(0, 0, 0, 1)) {
    p.window.enabled = true;
    p.window.left = 8;
    p.window.right = 0;
    p.window.align = Align::bottom_right;
  }
  p.want_lse = *rc::gen::arbitrary<bool>();
  p.want_weights = *rc::gen::element(false, false, false, true);
  const int lens = *rc::gen::element(0, 0, 0, 1, 2);
  if (lens && p.batch > 0) {
    for (std::int64_t b = 0; b < p.batch; ++b) {
      p.seqlens_q.push_back(*rc::gen::inRange<std::int64_t>(0, p.len_q + 1));
      p.seqlens_kv.push_back(*rc::gen::inRange<std::int64_t>(0, p.len_kv + 1));
    }
    p.packed = lens == 2 && p.mask == MaskKind::none;
  }
  apply_layout(p, *rc::gen::element(LayoutKind::bhsd, LayoutKind::bshd),
               *rc::gen::element<std::int64_t>(0, 0, 8),
               *rc::gen::element<std::int64_t>(0, 0, 1, 3, 8));
  RC_PRE(validate(p).empty());
  return p;
}

Device gen_device() {
  std::vector<std::string> names = simulated_device_names();
  for (const char* extra : {"sm90:cudnn=9.12.0", "sm107:cudnn=9.26.0", "cpu-avx2:cores=8",
                            "sm80:cudnn=8.9.4", "sm103", "sm90:cudnn=none"}) {
    names.emplace_back(extra);
  }
  return testing::device(*rc::gen::elementOf(names));
}

// A random subsequence of the names, in random order.
std::vector<std::string> gen_subset(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (*rc::gen::arbitrary<bool>()) out.push_back(n);
  }
  for (std::size_t i = out.size(); i > 1; --i) {
    std::swap(out[i - 1], out[*rc::gen::inRange<std::size_t>(0, i)]);
  }
  return out;
}

Policy gen_policy(const std::vector<const Backend*>& reg) {
  Policy p;
  const auto names = registry_names(reg);
  if (*rc::gen::element(0, 1, 1)) p.enabled = gen_subset(names);
  if (*rc::gen::element(0, 0, 1)) p.priority = gen_subset(names);
  p.heuristics = *rc::gen::element(true, true, false);
  p.require_deterministic = *rc::gen::element(false, false, false, true);
  return p;
}

bool enabled(const Policy& p, std::string_view name) {
  return !p.enabled || std::find(p.enabled->begin(), p.enabled->end(), name) != p.enabled->end();
}

// supports() plus the policy's determinism requirement: what the dispatcher must respect.
bool eligible(const Backend& b, const Problem& p, const Device& d, const Policy& policy) {
  return b.supports(p, d).ok() && (!policy.require_deterministic || b.capabilities().deterministic);
}

// The decision as a string: a backend name, "error:none" or "error:disabled".
std::string decide(const Problem& p, const Device& d, const Policy& policy,
                   const std::vector<const Backend*>& reg) {
  try {
    return std::string(dispatcher::select(p, d, policy, reg).name());
  } catch (const dispatcher::NoBackendEnabledError&) {
    return "error:disabled";
  } catch (const dispatcher::NoViableBackendError&) {
    return "error:none";
  }
}

void never_selects_an_unsupported_backend(const std::vector<const Backend*>& reg) {
  const Problem p = gen_problem();
  const Device d = gen_device();
  const Policy policy = gen_policy(reg);
  try {
    const Backend& b = dispatcher::select(p, d, policy, reg);
    RC_ASSERT(b.supports(p, d).ok());
    RC_ASSERT(enabled(policy, b.name()));
    RC_ASSERT(!policy.require_deterministic || b.capabilities().deterministic);
  } catch (const dispatcher::NoBackendEnabledError&) {
    for (const Backend* b : reg) RC_ASSERT(!enabled(policy, b->name()));
  } catch (const dispatcher::NoViableBackendError& e) {
    std::size_t enabled_count = 0;
    for (const Backend* b : reg) {
      if (!enabled(policy, b->name())) continue;
      ++enabled_count;
      RC_ASSERT(!eligible(*b, p, d, policy));
    }
    RC_ASSERT(e.rejected().size() == enabled_count);  // every rejected backend is listed
    for (const auto& r : e.rejected()) {
      std::vector<std::string> want = by_name(reg, r.backend)->supports(p, d).reasons;
      if (policy.require_deterministic && !by_name(reg, r.backend)->capabilities().deterministic) {
        want.push_back(dispatcher::kNotDeterministic);
      }
      RC_ASSERT(r.reasons == want);  // with all its reasons
    }
  }
}

RC_GTEST_PROP(DispatcherProperties, NeverSelectsABackendWhoseSupportsSaysNo, ()) {
  never_selects_an_unsupported_backend(testing::test_registry());
}

RC_GTEST_PROP(DispatcherProperties, NeverSelectsAnUnsupportedBuiltinBackend, ()) {
  never_selects_an_unsupported_backend(builtin_backends());
}

RC_GTEST_PROP(DispatcherProperties, ForcingAnyEligibleBackendSelectsIt, ()) {
  const Problem p = gen_problem();
  const Device d = gen_device();
  const auto& reg = testing::test_registry();
  for (const Backend* b : reg) {
    if (!b->supports(p, d).ok()) continue;
    {
      dispatcher::ScopedBackends only({std::string(b->name())});
      RC_ASSERT(dispatcher::select(p, d, dispatcher::current_policy(), reg).name() == b->name());
    }
    // First in an explicit priority with everything else enabled too.
    auto names = registry_names(reg);
    names.erase(std::find(names.begin(), names.end(), b->name()));
    names.insert(names.begin(), std::string(b->name()));
    dispatcher::ScopedBackends first(names, /*set_priority=*/true);
    RC_ASSERT(dispatcher::select(p, d, dispatcher::current_policy(), reg).name() == b->name());
  }
}

RC_GTEST_PROP(DispatcherProperties, PriorityIsRespected, ()) {
  const Problem p = gen_problem();
  const Device d = gen_device();
  const auto& reg = testing::test_registry();
  Policy policy = gen_policy(reg);
  // Explicit priority: the first eligible enabled backend in that order, then registry order.
  policy.priority = gen_subset(registry_names(reg));
  RC_PRE(!policy.priority.empty());
  std::vector<std::string> order = policy.priority;
  for (const auto& n : registry_names(reg)) {
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  }
  std::string want = "error:none";
  bool any_enabled = false;
  for (const auto& n : order) {
    if (!enabled(policy, n)) continue;
    any_enabled = true;
    if (eligible(*by_name(reg, n), p, d, policy)) {
      want = n;
      break;
    }
  }
  if (!any_enabled) want = "error:disabled";
  RC_ASSERT(decide(p, d, policy, reg) == want);
  RC_ASSERT(dispatcher::explain(p, d, policy, reg).rules.empty());

  // No priority, rules off: registry order.
  policy.priority.clear();
  policy.heuristics = false;
  want = any_enabled ? "error:none" : "error:disabled";
  for (const Backend* b : reg) {
    if (enabled(policy, b->name()) && eligible(*b, p, d, policy)) {
      want = std::string(b->name());
      break;
    }
  }
  RC_ASSERT(decide(p, d, policy, reg) == want);

  // With the rules: the first eligible backend of explain()'s order, which holds exactly
  // the enabled backends, and only rules that fired reorder it.
  policy.heuristics = true;
  const auto e = dispatcher::explain(p, d, policy, reg);
  std::vector<std::string> sorted_order = e.order, sorted_enabled;
  for (const auto& n : registry_names(reg)) {
    if (enabled(policy, n)) sorted_enabled.push_back(n);
  }
  std::sort(sorted_order.begin(), sorted_order.end());
  std::sort(sorted_enabled.begin(), sorted_enabled.end());
  RC_ASSERT(sorted_order == sorted_enabled);
  want = any_enabled ? "error:none" : "error:disabled";
  for (const auto& n : e.order) {
    if (eligible(*by_name(reg, n), p, d, policy)) {
      want = n;
      break;
    }
  }
  RC_ASSERT(decide(p, d, policy, reg) == want);
  if (e.rules.empty()) {
    std::vector<std::string> reg_order;
    for (const auto& n : registry_names(reg)) {
      if (enabled(policy, n)) reg_order.push_back(n);
    }
    RC_ASSERT(e.order == reg_order);
  }
}

bool same(const Policy& a, const Policy& b) {
  return a.enabled == b.enabled && a.priority == b.priority && a.heuristics == b.heuristics &&
         a.require_deterministic == b.require_deterministic;
}

// Opens `depth` nested scopes with random lists, checks each level, throws at a random level
// or not, and checks that every level is restored on the way out.
void nested_scopes(int depth, int throw_at, const std::vector<std::string>& names) {
  if (depth == 0) return;
  const Policy outer = dispatcher::current_policy();
  const auto list = gen_subset(names);
  const bool prio = *rc::gen::arbitrary<bool>();
  try {
    dispatcher::ScopedBackends scope(list, prio);
    RC_ASSERT(dispatcher::current_policy().enabled == std::optional(list));
    if (prio) {
      RC_ASSERT(
          std::equal(list.begin(), list.end(), dispatcher::current_policy().priority.begin()));
    } else {
      RC_ASSERT(dispatcher::current_policy().priority == outer.priority);
    }
    if (depth == throw_at) throw std::runtime_error("unwind");
    nested_scopes(depth - 1, throw_at, names);
    RC_ASSERT(dispatcher::current_policy().enabled == std::optional(list));
  } catch (const std::runtime_error&) {
    RC_ASSERT(same(dispatcher::current_policy(), outer));
    throw;
  }
  RC_ASSERT(same(dispatcher::current_policy(), outer));
}

RC_GTEST_PROP(DispatcherProperties, ScopesRestoreState, ()) {
  const auto names = registry_names(testing::test_registry());
  const Policy before = dispatcher::current_policy();
  const int depth = *rc::gen::inRange(1, 6);
  const int throw_at = *rc::gen::inRange(0, depth + 1);  // 0: no exception
  try {
    nested_scopes(depth, throw_at, names);
    RC_ASSERT(throw_at == 0);
  } catch (const std::runtime_error&) {
    RC_ASSERT(throw_at != 0);
  }
  RC_ASSERT(same(dispatcher::current_policy(), before));
}

RC_GTEST_PROP(DispatcherProperties, ScopesRestoreStateOnEveryThread, ()) {
  const auto names = registry_names(testing::test_registry());
  const int threads = *rc::gen::inRange(2, 5);
  std::vector<std::vector<std::string>> lists;
  for (int t = 0; t < threads; ++t) lists.push_back(gen_subset(names));
  const Policy before = dispatcher::current_policy();
  {
    dispatcher::ScopedBackends mine({"cuda.math"});
    std::vector<int> ok(static_cast<std::size_t>(threads), 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        bool good = !dispatcher::current_policy().enabled;  // the main thread's scope is not here
        for (int round = 0; round < 200 && good; ++round) {
          dispatcher::ScopedBackends outer(lists[static_cast<std::size_t>(t)]);
          {
            dispatcher::ScopedBackends inner({"cpu.math"}, true);
            good &= dispatcher::current_policy().enabled ==
                    std::optional(std::vector<std::string>{"cpu.math"});
          }
          good &= dispatcher::current_policy().enabled ==
                  std::optional(lists[static_cast<std::size_t>(t)]);
        }
        good &= !dispatcher::current_policy().enabled;
        ok[static_cast<std::size_t>(t)] = good;
      });
    }
    for (auto& th : pool) th.join();
    for (int v : ok) RC_ASSERT(v == 1);
    RC_ASSERT(dispatcher::current_policy().enabled ==
              std::optional(std::vector<std::string>{"cuda.math"}));
  }
  RC_ASSERT(same(dispatcher::current_policy(), before));
}

void explain_agrees_with_select(const std::vector<const Backend*>& reg) {
  const Problem p = gen_problem();
  const Device d = gen_device();
  const Policy policy = gen_policy(reg);
  const auto e = dispatcher::explain(p, d, policy, reg);
  const std::string decision = decide(p, d, policy, reg);
  switch (e.outcome) {
    case dispatcher::Outcome::selected:
      RC_ASSERT(decision == e.chosen);
      break;
    case dispatcher::Outcome::no_viable_backend:
      RC_ASSERT(decision == "error:none");
      break;
    case dispatcher::Outcome::no_backend_enabled:
      RC_ASSERT(decision == "error:disabled");
      break;
    case dispatcher::Outcome::invalid_problem:
      RC_FAIL("a valid problem was called invalid");
    case dispatcher::Outcome::not_expressible:
      // Only the PyTorch policy answers so, and gen_policy draws the suite's policies.
      RC_FAIL("the suite policy answered not_expressible");
  }
  RC_ASSERT(e.backends.size() == reg.size());
  int chosen = 0;
  for (std::size_t i = 0; i < reg.size(); ++i) {
    const auto& v = e.backends[i];
    const Backend& b = *reg[i];
    RC_ASSERT(v.name == b.name());
    RC_ASSERT(!v.reasons.empty());
    if (!enabled(policy, b.name())) {
      RC_ASSERT(v.verdict == dispatcher::Verdict::disabled);
      RC_ASSERT(v.rank == -1);
      continue;
    }
    RC_ASSERT(v.rank >= 0);
    RC_ASSERT(e.order[static_cast<std::size_t>(v.rank)] == v.name);
    const bool ok = eligible(b, p, d, policy);
    RC_ASSERT(ok == (v.verdict != dispatcher::Verdict::rejected));
    if (!ok) {
      std::vector<std::string> want = b.supports(p, d).reasons;
      if (policy.require_deterministic && !b.capabilities().deterministic) {
        want.push_back(dispatcher::kNotDeterministic);
      }
      RC_ASSERT(v.reasons == want);
    }
    if (v.verdict == dispatcher::Verdict::chosen) ++chosen;
  }
  RC_ASSERT(chosen == (e.outcome == dispatcher::Outcome::selected ? 1 : 0));
  if (e.outcome == dispatcher::Outcome::no_viable_backend) {
    try {
      dispatcher::select(p, d, policy, reg);
    } catch (const dispatcher::NoViableBackendError& err) {
      RC_ASSERT(e.message == err.what());
    }
  }
}

RC_GTEST_PROP(DispatcherProperties, ExplainAndSelectAgree, ()) {
  explain_agrees_with_select(testing::test_registry());
}

RC_GTEST_PROP(DispatcherProperties, ExplainAndSelectAgreeOnTheBuiltinRegistry, ()) {
  explain_agrees_with_select(builtin_backends());
}

}  // namespace
}  // namespace sdpa
