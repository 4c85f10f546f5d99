// Family "arch" (docs/TESTING.md): every CPU kernel on every SIMD target this machine has,
// forced one at a time; and the dispatcher's decisions on simulated devices (the CPUs this
// machine can run, cpu-<target>, and the simulated GPUs sm50 ... sm121): explain() chooses a
// backend of the device's kind, what it selects on a CPU passes, a CPU backend whose
// supports() said yes never declines, throws or fails at run time, and one that was rejected
// (every CPU backend on a GPU) is NOT_SUPPORTED in the conformance engine too. The CUDA
// descriptors have no kernels in this build; their rules are tests/dispatcher's.
#include <algorithm>

#include "conformance/judge/requested_outputs.hpp"
#include "dispatcher/dispatcher.hpp"
#include "kernels/registry.hpp"
#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

// Anything the CPU kernels may meet: every dtype, masks, causal, windows, lengths, GQA,
// dropout, softcap, outputs; `within` restricts to what `b` declares (nullptr: no limit, so
// that some backends decline).
Case gen_any_case(const Backend* b) {
  const Heads h = gen_heads();
  const DType t =
      b ? gen_dtype(*b) : one_of<DType>({DType::f32, DType::f16, DType::bf16, DType::f64});
  Problem p = make_problem(in_range(1, 2), h.q, h.kv, in_range(1, 24), in_range(1, 48),
                           in_range(1, 32), in_range(1, 32), t);
  p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
  p.mask = one_of<MaskKind>({MaskKind::none, MaskKind::boolean, MaskKind::additive});
  if (p.mask != MaskKind::none) p.mask_broadcast = static_cast<std::uint8_t>(in_range(0, 15));
  if (coin()) {
    p.window = {true, in_range(-1, 20), in_range(-1, 20),
                one_of<Align>({Align::top_left, Align::bottom_right})};
  }
  gen_varlen(p, true);
  if (coin()) p.softcap = one_of<double>({5, 30});
  if (coin()) {
    p.dropout_p = one_of<double>({0.1, 0.5});
    p.dropout_seed = static_cast<std::uint64_t>(in_range(0, 1000));
  }
  p.want_lse = !b || b->capabilities().lse;
  p.want_weights = (!b || b->capabilities().weights) && in_range(0, 3) == 0;
  return {p, gen_recipe()};
}

class Arch : public testing::TestWithParam<Combo> {};

TEST_P(Arch, EveryTargetForcedPasses) {
  check("any case passes on the forced target", [&] {
    const Backend& b = *GetParam().backend;
    require_pass(b, gen_any_case(&b), {0, GetParam().target});
  });
}

INSTANTIATE_TEST_SUITE_P(All, Arch, testing::ValuesIn(every_backend_and_target()), combo_name);

// The simulated CPUs this machine can run for real (cpu-<target>), then the simulated GPUs.
std::vector<std::string> simulated_devices() {
  std::vector<std::string> v;
  for (const std::string& t : simd_targets()) v.push_back("cpu-" + t);
  for (const std::string& n : simulated_device_names()) {
    if (n.rfind("sm", 0) == 0) v.push_back(n);
  }
  return v;
}

TEST(ArchDispatch, WhatExplainSelectsPassesAndSupportedNeverDeclines) {
  check("explain()'s choice passes; yes from supports() is never taken back", [&] {
    const Case c = gen_any_case(nullptr);
    const std::string dev_name = one_of(simulated_devices());
    const Device dev = *simulated_device(dev_name);
    const TargetRun opt{0, dev.kind == DeviceKind::cpu ? dev_name.substr(4) : ""};
    dispatcher::Policy policy;
    policy.require_deterministic = in_range(0, 3) == 0;
    if (coin()) {
      std::vector<std::string> enabled;
      for (const Backend* b : builtin_backends()) {
        if (coin()) enabled.emplace_back(b->name());
      }
      policy.enabled = enabled;
    }
    const dispatcher::Explanation e = dispatcher::explain(c.problem, dev, policy);
    const std::string where = " on " + dev_name;
    if (e.outcome == dispatcher::Outcome::selected) {
      const Backend* chosen = find_backend(e.chosen);
      if (!chosen || chosen->capabilities().device != dev.kind) {
        fail("explain() chose '" + e.chosen + "', not a backend of the device's kind" + where +
             "\n  " + format_case_id(c));
      }
    }
    for (const dispatcher::BackendVerdict& v : e.backends) {
      const Backend* b = find_backend(v.name);
      if (!b || b->capabilities().device != DeviceKind::cpu) continue;
      bool declined = false;
      if (v.verdict == dispatcher::Verdict::rejected) {
        // Rejected by supports() (not only by the policy's determinism requirement): the
        // conformance engine must see the same decline.
        const Support s = b->supports(c.problem, dev);
        if (s.ok()) continue;
        // The judge first takes out the outputs the backend does not return
        // (conformance/judge/requested_outputs.hpp): a rejection for those alone is judged on
        // the rest of the case, and must pass there as any yes from supports().
        const Problem rest =
            conformance::without_unreturned_outputs(b->capabilities(), c.problem).judged;
        const bool declines_the_rest = !b->supports(rest, dev).ok();
        const std::string why = judge(*b, c, opt, dev, &declined);
        if (declines_the_rest && (!declined || !why.empty())) {
          fail("explain() rejected " + v.name + where + " but check_case did not decline: " + why +
               "\n  " + repro(*b, c, opt));
        }
        if (!declines_the_rest && (declined || !why.empty())) {
          fail(v.name + where + " returns the rest of a case it rejects for an output, and then: " +
               (declined ? "declined. " : "") + why + "\n  " + repro(*b, c, opt));
        }
        continue;
      }
      if (v.verdict == dispatcher::Verdict::disabled) continue;
      // chosen, lower_priority or not_preferred: supports() said yes, so the backend returns
      // every output the problem asks for: its capabilities must say so too, or the judge,
      // which asks a backend only for what its capabilities say it returns, would judge it on
      // less than what the dispatcher gave it (a yes for weights from a backend without them).
      const auto unreturned =
          conformance::without_unreturned_outputs(b->capabilities(), c.problem).not_returned;
      if (!unreturned.empty()) {
        fail(v.name + " (" + dispatcher::verdict_name(v.verdict) + where +
             ") accepts a problem asking for an output its capabilities say it does not "
             "return: " +
             unreturned.front() + "\n  " + repro(*b, c, opt));
      }
      const std::string why = judge(*b, c, opt, dev, &declined);
      if (declined || !why.empty()) {
        fail(v.name + " (" + dispatcher::verdict_name(v.verdict) + where + ") said yes and then: " +
             (declined ? "declined. " : "") + why + "\n  " + repro(*b, c, opt));
      }
    }
  });
}

}  // namespace
}  // namespace sdpa::props
