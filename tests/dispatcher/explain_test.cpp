// explain(): every backend's verdict with its sentence, the rules that fired and why.
#include <gtest/gtest.h>

#include "dispatcher/dispatcher.hpp"
#include "dispatcher/rules.hpp"
#include "kernels/registry.hpp"
#include "test_backends.hpp"

namespace sdpa {
namespace {

using dispatcher::Explanation;
using dispatcher::Outcome;
using dispatcher::Policy;
using dispatcher::Verdict;

Explanation explain(const std::string& id, const std::string& dev, const Policy& p = Policy{}) {
  return dispatcher::explain(testing::problem(id + ".seed1.gen=normal"), testing::device(dev), p,
                             testing::test_registry());
}

const dispatcher::BackendVerdict& verdict(const Explanation& e, const std::string& name) {
  for (const auto& b : e.backends) {
    if (b.name == name) return b;
  }
  throw std::logic_error("no verdict for " + name);
}

TEST(Explain, ChosenLowerPriorityAndRejected) {
  const auto e = explain("b2.hq8.l128.s128.dqk64.f16", "sm80");
  EXPECT_EQ(e.outcome, Outcome::selected);
  EXPECT_EQ(e.chosen, "cuda.flash");
  EXPECT_EQ(e.order_source, "registry order");
  EXPECT_TRUE(e.rules.empty());
  EXPECT_EQ(e.order,
            (std::vector<std::string>{"cpu.flash", "cpu.mem_efficient", "cpu.math", "cuda.flash",
                                      "cuda.mem_efficient", "cuda.math", "cuda.cudnn"}));
  ASSERT_EQ(e.backends.size(), 7u);
  const auto& flash = verdict(e, "cuda.flash");
  EXPECT_EQ(flash.verdict, Verdict::chosen);
  EXPECT_EQ(flash.rank, 3);
  EXPECT_EQ(flash.reasons,
            (std::vector<std::string>{"the first backend in the registry order that supports it"}));
  const auto& mem = verdict(e, "cuda.mem_efficient");
  EXPECT_EQ(mem.verdict, Verdict::lower_priority);
  EXPECT_EQ(
      mem.reasons,
      (std::vector<std::string>{"eligible, but cuda.flash comes first in the registry order"}));
  const auto& cpu = verdict(e, "cpu.flash");
  EXPECT_EQ(cpu.verdict, Verdict::rejected);
  EXPECT_EQ(cpu.reasons, (std::vector<std::string>{"runs on CPU devices, not on sm80"}));
  EXPECT_TRUE(e.message.empty());
}

TEST(Explain, DisabledBackendsAndExplicitPriority) {
  Policy p;
  p.enabled = std::vector<std::string>{"cuda.math", "cuda.flash"};
  p.priority = {"cuda.math", "cuda.flash"};
  const auto e = explain("b2.hq8.l128.s128.dqk64.f16", "sm80", p);
  EXPECT_EQ(e.chosen, "cuda.math");
  EXPECT_EQ(e.order_source, "explicit priority");
  EXPECT_EQ(e.order, (std::vector<std::string>{"cuda.math", "cuda.flash"}));
  EXPECT_EQ(
      verdict(e, "cuda.flash").reasons,
      (std::vector<std::string>{"eligible, but cuda.math comes first in the explicit priority"}));
  const auto& mem = verdict(e, "cuda.mem_efficient");
  EXPECT_EQ(mem.verdict, Verdict::disabled);
  EXPECT_EQ(mem.rank, -1);
  EXPECT_EQ(mem.reasons, (std::vector<std::string>{"disabled by the policy"}));
}

TEST(Explain, RulesDoNotApplyOverAnExplicitPriorityOrWhenOff) {
  Policy p;
  p.priority = {"cpu.flash"};
  EXPECT_TRUE(explain("b1.hq1.l4.s4.dqk8.f32", "cpu-avx2", p).rules.empty());
  EXPECT_EQ(explain("b1.hq1.l4.s4.dqk8.f32", "cpu-avx2", p).chosen, "cpu.flash");
  Policy off;
  off.heuristics = false;
  EXPECT_TRUE(explain("b1.hq1.l4.s4.dqk8.f32", "cpu-avx2", off).rules.empty());
}

TEST(Explain, TinyPrefersMath) {
  const auto e = explain("b1.hq1.l4.s4.dqk8.f32", "cpu-avx2");
  ASSERT_EQ(e.rules.size(), 1u);
  EXPECT_EQ(e.rules[0].name, "tiny_prefers_math");
  EXPECT_EQ(e.rules[0].why,
            "B*Hq*L*S*(Dqk+Dv)=256 <= 32768 on a CPU: the math path has no tiling or threading "
            "overhead");
  EXPECT_EQ(e.rules[0].promoted, (std::vector<std::string>{"cpu.math"}));
  EXPECT_EQ(e.chosen, "cpu.math");
  EXPECT_EQ(
      verdict(e, "cpu.math").reasons,
      (std::vector<std::string>{"eligible, and rule tiny_prefers_math moved it to the front"}));
  const auto& flash = verdict(e, "cpu.flash");
  EXPECT_EQ(flash.verdict, Verdict::not_preferred);
  EXPECT_EQ(flash.reasons[0],
            "eligible, but rule tiny_prefers_math put cpu.math first: B*Hq*L*S*(Dqk+Dv)=256 <= "
            "32768 on a CPU: the math path has no tiling or threading overhead");
  // At the limit and just above it.
  EXPECT_EQ(explain("b1.hq1.l16.s16.dqk64.f32", "cpu-avx2").chosen, "cpu.math");   // 32768
  EXPECT_EQ(explain("b1.hq1.l16.s16.dqk65.f32", "cpu-avx2").chosen, "cpu.flash");  // 33280
  EXPECT_TRUE(explain("b1.hq1.l4.s4.dqk8.f16", "sm80").rules.empty()) << "CPU only";
}

TEST(Explain, DecodeSplitKv) {
  const auto e = explain("b1.hq1.l1.s1024.dqk64.f32", "cpu-avx2");
  ASSERT_EQ(e.rules.size(), 1u);
  EXPECT_EQ(e.rules[0].name, "decode_split_kv");
  EXPECT_EQ(e.rules[0].why,
            "decode shape L=1 <= 4, S=1024 >= 256 and B*Hq=1 < 2 cores: split-KV backends spread "
            "the keys over the device");
  EXPECT_EQ(e.rules[0].promoted, (std::vector<std::string>{"cpu.mem_efficient"}));
  EXPECT_EQ(e.chosen, "cpu.mem_efficient");
  EXPECT_EQ(verdict(e, "cpu.flash").verdict, Verdict::not_preferred);
  EXPECT_EQ(verdict(e, "cpu.math").verdict, Verdict::lower_priority);
  EXPECT_EQ(verdict(e, "cpu.math").reasons[0],
            "eligible, but cpu.mem_efficient comes first in the registry order after the rules");
  // Each condition at its boundary.
  EXPECT_TRUE(explain("b1.hq1.l4.s256.dqk64.f32", "cpu-avx2").chosen == "cpu.mem_efficient");
  EXPECT_TRUE(explain("b1.hq1.l5.s256.dqk64.f32", "cpu-avx2").rules.empty());
  EXPECT_TRUE(explain("b1.hq1.l4.s255.dqk64.f32", "cpu-avx2").rules.empty());
  EXPECT_TRUE(explain("b1.hq2.l1.s1024.dqk64.f32", "cpu-avx2").rules.empty());
  EXPECT_EQ(explain("b1.hq2.l1.s1024.dqk64.f32", "cpu-avx2:cores=3").chosen, "cpu.mem_efficient");
}

Policy pytorch_policy() {
  Policy p;
  p.model = dispatcher::PolicyModel::pytorch;
  return p;
}

TEST(Explain, CudnnPreferredThenDecodeOnSm90) {
  // PyTorch's policy: cuDNN first, and it takes the decode shape.
  const auto t = explain("b1.hq8.l1.s4096.dqk128.f16", "sm90", pytorch_policy());
  ASSERT_EQ(t.rules.size(), 1u);
  EXPECT_EQ(t.rules[0].name, "cudnn_preferred");
  EXPECT_EQ(t.rules[0].why,
            "sm90 with cuDNN 9.16.0 > 9.15.0: PyTorch puts cuDNN first on sm9x / sm10x");
  EXPECT_EQ(t.rules[0].promoted, (std::vector<std::string>{"cuda.cudnn"}));
  EXPECT_EQ(t.chosen, "cuda.cudnn");
  // The suite policy: cuda.cudnn only models PyTorch's choice, so cudnn_preferred has nothing
  // to promote and does not fire; decode_split_kv puts cuda.flash first.
  const auto e = explain("b1.hq8.l1.s4096.dqk128.f16", "sm90");
  ASSERT_EQ(e.rules.size(), 1u);
  EXPECT_EQ(e.rules[0].name, "decode_split_kv");
  EXPECT_EQ(e.rules[0].promoted, (std::vector<std::string>{"cuda.flash"})) << "GPU backends only";
  EXPECT_EQ(e.chosen, "cuda.flash");
  EXPECT_EQ(e.order[0], "cuda.flash");
  EXPECT_EQ(e.order.back(), "cuda.cudnn");
  EXPECT_EQ(verdict(e, "cuda.cudnn").verdict, Verdict::lower_priority);
  EXPECT_EQ(verdict(e, "cuda.mem_efficient").verdict, Verdict::lower_priority);
}

TEST(Explain, TheSuitePolicyNeverPromotesAModel) {
  const auto e = explain("b2.hq8.l128.s128.dqk64.bf16", "sm90");
  EXPECT_TRUE(e.rules.empty());
  EXPECT_EQ(e.chosen, "cuda.flash");
  EXPECT_EQ(explain("b2.hq8.l128.s128.dqk64.bf16", "sm90", pytorch_policy()).chosen, "cuda.cudnn");
}

TEST(Explain, CudnnPreferredConditions) {
  const std::string id = "b2.hq8.l128.s128.dqk64.f16";
  const Policy torch = pytorch_policy();
  EXPECT_EQ(explain(id, "sm90", torch).rules.size(), 1u);
  EXPECT_EQ(explain(id, "sm100", torch).rules.size(), 1u);
  EXPECT_EQ(explain(id, "sm103", torch).rules.size(), 1u);
  EXPECT_TRUE(explain(id, "sm101", torch).rules.empty()) << "minor 1 below CUDA 13";
  EXPECT_EQ(explain(id, "sm101:cuda=13.0", torch).rules.size(), 1u);
  EXPECT_TRUE(explain(id, "sm90:cudnn=9.15.0", torch).rules.empty());
  EXPECT_TRUE(explain(id, "sm89", torch).rules.empty());
  EXPECT_TRUE(explain(id, "sm121", torch).rules.empty());
  Policy p = torch;
  p.enabled = std::vector<std::string>{"cuda.flash"};
  EXPECT_TRUE(explain(id, "sm90", p).rules.empty()) << "nothing to promote: the rule does not fire";
}

TEST(Explain, NoViableAndNoneEnabledAreOutcomes) {
  Policy only;
  only.enabled = std::vector<std::string>{"cuda.flash"};
  const auto e = explain("b2.hq8.l128.s128.dqk64.f32", "sm80", only);
  EXPECT_EQ(e.outcome, Outcome::no_viable_backend);
  EXPECT_TRUE(e.chosen.empty());
  EXPECT_EQ(verdict(e, "cuda.flash").verdict, Verdict::rejected);
  EXPECT_EQ(e.message,
            "no enabled backend can run this problem on sm80\nrejected backends:\n  cuda.flash:\n"
            "    - dtype f32 is not supported (supported: f16, bf16)\ndisabled by the policy: "
            "cpu.flash, cpu.mem_efficient, cpu.math, cuda.mem_efficient, cuda.math, cuda.cudnn");
  Policy none;
  none.enabled = std::vector<std::string>{};
  const auto n = explain("b2.hq8.l128.s128.dqk64.f32", "sm80", none);
  EXPECT_EQ(n.outcome, Outcome::no_backend_enabled);
  EXPECT_TRUE(n.order.empty());
  for (const auto& b : n.backends) EXPECT_EQ(b.verdict, Verdict::disabled);
}

TEST(Explain, RejectedListsEveryReasonOfSupports) {
  const auto e = explain("b1.hq2.l3.s5.dqk300.dv8.f32.causal=tl.mask=add", "sm80");
  const auto& flash = verdict(e, "cuda.flash");
  const Support s = cuda::flash_backend().supports(
      testing::problem("b1.hq2.l3.s5.dqk300.dv8.f32.causal=tl.mask=add.seed1.gen=normal"),
      testing::device("sm80"));
  EXPECT_EQ(flash.reasons, s.reasons);
  EXPECT_GE(flash.reasons.size(), 4u);
}

TEST(Explain, NamesOfVerdictsAndOutcomes) {
  EXPECT_STREQ(dispatcher::verdict_name(Verdict::chosen), "chosen");
  EXPECT_STREQ(dispatcher::verdict_name(Verdict::lower_priority), "lower_priority");
  EXPECT_STREQ(dispatcher::verdict_name(Verdict::not_preferred), "not_preferred");
  EXPECT_STREQ(dispatcher::verdict_name(Verdict::rejected), "rejected");
  EXPECT_STREQ(dispatcher::verdict_name(Verdict::disabled), "disabled");
  EXPECT_STREQ(dispatcher::outcome_name(Outcome::selected), "selected");
  EXPECT_STREQ(dispatcher::outcome_name(Outcome::no_backend_enabled), "no_backend_enabled");
  EXPECT_STREQ(dispatcher::outcome_name(Outcome::no_viable_backend), "no_viable_backend");
  EXPECT_STREQ(dispatcher::outcome_name(Outcome::invalid_problem), "invalid_problem");
  EXPECT_EQ(dispatcher::rule_names(),
            (std::vector<std::string>{"cudnn_preferred", "decode_split_kv", "tiny_prefers_math"}));
  // The rules read traits, which the backends declare as data.
  EXPECT_TRUE(find_backend("cpu.mem_efficient")->capabilities().traits.split_kv);
  EXPECT_TRUE(find_backend("cuda.flash")->capabilities().traits.split_kv);
  EXPECT_EQ(find_backend("cuda.math")->capabilities().traits.pytorch, PytorchKernel::math);
  EXPECT_EQ(find_backend("cuda.cudnn")->capabilities().traits.pytorch, PytorchKernel::cudnn);
  EXPECT_FALSE(find_backend("cuda.cudnn")->capabilities().traits.split_kv);
}

// The dispatcher never compares names: a backend with any name and the right traits is
// promoted by each rule, and one named like a built-in but without the trait is not.
TEST(Rules, PromoteByTraitsNotByName) {
  auto make = [](std::string name, DeviceKind kind, auto set) {
    Capabilities c = Capabilities::every_forward_input();
    c.weights = false;
    c.dtypes = {DType::f32, DType::f16};
    c.device = kind;
    set(c.traits);
    return testing::FakeCpuBackend(std::move(name), c);
  };
  const auto plain = make("cpu.math", DeviceKind::cpu, [](Traits&) {});
  const auto mathy = make("vendor.reference_path", DeviceKind::cpu,
                          [](Traits& t) { t.pytorch = PytorchKernel::math; });
  std::vector<const Backend*> order = {&plain, &mathy};
  auto fired = dispatcher::apply_rules(testing::problem("b1.hq1.l4.s4.dqk8.f32.seed1"),
                                       testing::device("cpu-avx2"), order);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].name, "tiny_prefers_math");
  EXPECT_EQ(order.front(), &mathy);

  const auto splitter =
      make("vendor.decode", DeviceKind::cpu, [](Traits& t) { t.split_kv = true; });
  order = {&plain, &splitter};
  fired = dispatcher::apply_rules(testing::problem("b1.hq1.l1.s4096.dqk64.f32.seed1"),
                                  testing::device("cpu-avx2:cores=8"), order);
  ASSERT_FALSE(fired.empty());
  EXPECT_EQ(fired[0].name, "decode_split_kv");
  EXPECT_EQ(order.front(), &splitter);

  const auto graph =
      make("vendor.graph", DeviceKind::cuda, [](Traits& t) { t.pytorch = PytorchKernel::cudnn; });
  const auto named = make("cuda.cudnn", DeviceKind::cuda, [](Traits&) {});
  order = {&named, &graph};
  fired = dispatcher::apply_rules(testing::problem("b4.hq8.l512.s512.dqk64.f16.seed1"),
                                  testing::device("sm90"), order);
  ASSERT_FALSE(fired.empty());
  EXPECT_EQ(fired[0].name, "cudnn_preferred");
  EXPECT_EQ(order.front(), &graph);

  // A model of another library's kernel is promoted only when the caller asks.
  const auto model = make("vendor.model", DeviceKind::cuda, [](Traits& t) {
    t.pytorch = PytorchKernel::cudnn;
    t.model_only = true;
  });
  order = {&named, &model};
  fired = dispatcher::apply_rules(testing::problem("b4.hq8.l512.s512.dqk64.f16.seed1"),
                                  testing::device("sm90"), order);
  EXPECT_TRUE(fired.empty());
  EXPECT_EQ(order.front(), &named);
  fired = dispatcher::apply_rules(testing::problem("b4.hq8.l512.s512.dqk64.f16.seed1"),
                                  testing::device("sm90"), order, nullptr,
                                  /*promote_models=*/true);
  ASSERT_FALSE(fired.empty());
  EXPECT_EQ(order.front(), &model);
}

}  // namespace
}  // namespace sdpa
