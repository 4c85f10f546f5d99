// The selection policy: the environment default, scoped guards (nesting, restoring on exit,
// on exceptions, per thread), and the errors select() raises.
#include <gtest/gtest.h>

#include <cstdlib>
#include <latch>
#include <thread>

#include "dispatcher/dispatcher.hpp"
#include "test_backends.hpp"

namespace sdpa {
namespace {

using dispatcher::current_policy;
using dispatcher::Policy;
using dispatcher::ScopedBackends;

bool same(const Policy& a, const Policy& b) {
  return a.enabled == b.enabled && a.priority == b.priority && a.heuristics == b.heuristics &&
         a.require_deterministic == b.require_deterministic;
}

// Resets the process default around each test.
class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv(dispatcher::kBackendsEnv);
    dispatcher::reload_default_policy();
  }
  void TearDown() override {
    unsetenv(dispatcher::kBackendsEnv);
    dispatcher::reload_default_policy();
  }
};

TEST_F(PolicyTest, EnvValues) {
  EXPECT_TRUE(same(dispatcher::policy_from_backends_env(""), Policy{}));
  EXPECT_TRUE(same(dispatcher::policy_from_backends_env("all"), Policy{}));
  const Policy none = dispatcher::policy_from_backends_env("none");
  ASSERT_TRUE(none.enabled);
  EXPECT_TRUE(none.enabled->empty());
  const Policy two = dispatcher::policy_from_backends_env(" cuda.math , cuda.flash,cuda.math ");
  EXPECT_EQ(two.enabled, (std::vector<std::string>{"cuda.math", "cuda.flash"}));
  EXPECT_EQ(two.priority, (std::vector<std::string>{"cuda.math", "cuda.flash"}));
  try {
    dispatcher::policy_from_backends_env("cuda.math,,cuda.flash");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "SDPA_CTS_BACKENDS: empty backend name in 'cuda.math,,cuda.flash'");
  }
}

TEST_F(PolicyTest, DefaultComesFromTheEnvironment) {
  EXPECT_TRUE(same(dispatcher::default_policy(), Policy{}));
  setenv(dispatcher::kBackendsEnv, "cuda.mem_efficient,cuda.math", 1);
  EXPECT_TRUE(same(dispatcher::default_policy(), Policy{})) << "read once, until reloaded";
  dispatcher::reload_default_policy();
  EXPECT_EQ(current_policy().enabled,
            (std::vector<std::string>{"cuda.mem_efficient", "cuda.math"}));
  // CI: the override decides, with its order as the priority.
  const auto& reg = testing::test_registry();
  EXPECT_EQ(dispatcher::select(testing::problem("b1.hq2.l16.s16.dqk64.f16.seed1.gen=normal"),
                               testing::device("sm80"), current_policy(), reg)
                .name(),
            "cuda.mem_efficient");
  setenv(dispatcher::kBackendsEnv, "a,,b", 1);
  dispatcher::reload_default_policy();
  EXPECT_THROW(current_policy(), std::invalid_argument);
  EXPECT_THROW(current_policy(), std::invalid_argument) << "stays an error until fixed";
}

TEST_F(PolicyTest, UnknownNamesFailWhenUsed) {
  Policy p;
  p.enabled = std::vector<std::string>{"cuda.flsh"};
  try {
    dispatcher::select(testing::problem("b1.hq2.l16.s16.dqk64.f16.seed1.gen=normal"),
                       testing::device("sm80"), p, testing::test_registry());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "the policy names unknown backend 'cuda.flsh' (known: cpu.flash, "
                 "cpu.mem_efficient, cpu.math, cuda.flash, cuda.mem_efficient, cuda.math, "
                 "cuda.cudnn)");
  }
  Policy q;
  q.priority = {"nope"};
  EXPECT_THROW(dispatcher::explain(testing::problem("b1.hq2.l16.s16.dqk64.f16.seed1.gen=normal"),
                                   testing::device("sm80"), q, testing::test_registry()),
               std::invalid_argument);
}

TEST_F(PolicyTest, SetDefaultPolicyIsSeenWithoutAScope) {
  Policy p;
  p.heuristics = false;
  dispatcher::set_default_policy(p);
  EXPECT_FALSE(current_policy().heuristics);
  Policy seen_in_thread;
  std::thread([&] { seen_in_thread = current_policy(); }).join();
  EXPECT_FALSE(seen_in_thread.heuristics);
}

TEST_F(PolicyTest, ScopeEnablesExactlyTheListAndRestores) {
  const Policy before = current_policy();
  {
    ScopedBackends scope({"cuda.math", "cuda.flash", "cuda.math"});
    EXPECT_EQ(current_policy().enabled, (std::vector<std::string>{"cuda.math", "cuda.flash"}));
    EXPECT_TRUE(current_policy().priority.empty()) << "no priority unless asked";
  }
  EXPECT_TRUE(same(current_policy(), before));
}

TEST_F(PolicyTest, SetPriorityPutsTheListFirstThenThePreviousPriority) {
  ScopedBackends outer({"a", "b", "c"}, true);
  EXPECT_EQ(current_policy().priority, (std::vector<std::string>{"a", "b", "c"}));
  {
    ScopedBackends inner({"c", "x"}, true);
    EXPECT_EQ(current_policy().enabled, (std::vector<std::string>{"c", "x"}));
    EXPECT_EQ(current_policy().priority, (std::vector<std::string>{"c", "x", "a", "b"}));
    {
      ScopedBackends keep({"a"});
      EXPECT_EQ(current_policy().priority, (std::vector<std::string>{"c", "x", "a", "b"}));
      EXPECT_EQ(current_policy().enabled, (std::vector<std::string>{"a"}));
    }
    EXPECT_EQ(current_policy().enabled, (std::vector<std::string>{"c", "x"}));
  }
  EXPECT_EQ(current_policy().priority, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(PolicyTest, ScopeRestoresOnException) {
  const Policy before = current_policy();
  try {
    ScopedBackends scope({"cuda.math"});
    ScopedBackends inner(Policy{{}, {"cuda.flash"}, false, true});
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(same(current_policy(), before));
}

TEST_F(PolicyTest, ScopesAreThreadLocal) {
  std::latch entered(1), checked(1);
  Policy in_thread;
  std::thread t([&] {
    ScopedBackends scope({"cuda.math"});
    in_thread = current_policy();
    entered.count_down();
    checked.wait();  // keep the scope open while the main thread looks
  });
  entered.wait();
  EXPECT_FALSE(current_policy().enabled) << "another thread's scope leaked here";
  checked.count_down();
  t.join();
  EXPECT_EQ(in_thread.enabled, (std::vector<std::string>{"cuda.math"}));
  // And the other way round: a scope here is not seen by a new thread.
  ScopedBackends scope({"cuda.flash"});
  Policy seen;
  std::thread([&] { seen = current_policy(); }).join();
  EXPECT_FALSE(seen.enabled);
}

TEST_F(PolicyTest, SelectUsesTheCurrentScope) {
  const Problem p = testing::problem("b1.hq2.l16.s16.dqk64.f16.seed1.gen=normal");
  const Device d = testing::device("sm80");
  const auto& reg = testing::test_registry();
  EXPECT_EQ(dispatcher::select(p, d, current_policy(), reg).name(), "cuda.flash");
  {
    ScopedBackends scope({"cuda.mem_efficient"});
    EXPECT_EQ(dispatcher::select(p, d, current_policy(), reg).name(), "cuda.mem_efficient");
  }
  EXPECT_EQ(dispatcher::select(p, d, current_policy(), reg).name(), "cuda.flash");
}

TEST_F(PolicyTest, NoBackendEnabledIsItsOwnError) {
  ScopedBackends scope(std::vector<std::string>{});
  try {
    dispatcher::select(testing::problem("b1.hq2.l16.s16.dqk64.f16.seed1.gen=normal"),
                       testing::device("sm80"), current_policy(), testing::test_registry());
    FAIL();
  } catch (const dispatcher::NoViableBackendError&) {
    FAIL() << "wrong error type";
  } catch (const dispatcher::NoBackendEnabledError& e) {
    EXPECT_STREQ(e.what(),
                 "no backend is enabled: the policy enables none of cpu.flash, "
                 "cpu.mem_efficient, cpu.math, cuda.flash, cuda.mem_efficient, cuda.math, "
                 "cuda.cudnn");
  }
  try {
    dispatcher::select(testing::problem("b1.hq2.l16.s16.dqk64.f16.seed1.gen=normal"),
                       testing::device("sm80"), Policy{}, {});
    FAIL();
  } catch (const dispatcher::NoBackendEnabledError& e) {
    EXPECT_STREQ(e.what(), "no backend is enabled: no backend is registered");
  }
}

TEST_F(PolicyTest, ForcingBackendsThatCannotRunListsEveryReason) {
  ScopedBackends scope({"cuda.flash", "cuda.cudnn"});
  try {
    dispatcher::select(testing::problem("b1.hq2.l3.s5.dqk64.f32.causal=tl.seed1.gen=normal"),
                       testing::device("sm75"), current_policy(), testing::test_registry());
    FAIL();
  } catch (const dispatcher::NoViableBackendError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no enabled backend can run this problem on sm75\n"
              "rejected backends:\n"
              "  cuda.flash:\n"
              "    - compute capability sm75 is outside the supported range [sm80, sm121]\n"
              "    - dtype f32 is not supported (supported: f16, bf16)\n"
              "    - causal top-left with L=3 != S=5: FlashAttention-2 aligns causal masks "
              "bottom-right\n"
              "  cuda.cudnn:\n"
              "    - dtype f32 is not supported (supported: f16, bf16)\n"
              "    - compute capability sm75 is outside the supported range [sm80, sm121]"
              "\ndisabled by the policy: cpu.flash, cpu.mem_efficient, cpu.math, "
              "cuda.mem_efficient, cuda.math");
    ASSERT_EQ(e.rejected().size(), 2u);
    EXPECT_EQ(e.rejected()[0].backend, "cuda.flash");
    EXPECT_EQ(e.rejected()[0].reasons.size(), 3u);
    EXPECT_EQ(e.rejected()[1].backend, "cuda.cudnn");
  }
}

TEST_F(PolicyTest, RequireDeterminismDeclinesNonDeterministicBackends) {
  Policy p;
  p.require_deterministic = true;
  p.enabled = std::vector<std::string>{"cuda.cudnn"};
  try {
    dispatcher::select(testing::problem("b1.hq2.l128.s128.dqk64.f16.seed1.gen=normal"),
                       testing::device("sm90"), p, testing::test_registry());
    FAIL();
  } catch (const dispatcher::NoViableBackendError& e) {
    ASSERT_EQ(e.rejected().size(), 1u);
    EXPECT_EQ(e.rejected()[0].reasons,
              (std::vector<std::string>{
                  "its forward pass is not deterministic, and the policy requires determinism"}));
  }
}

TEST_F(PolicyTest, InvalidProblems) {
  const Problem bad = testing::problem("b1.hq3.hkv2.l4.s4.dqk4.f32.seed1.gen=normal");
  try {
    dispatcher::select(bad, testing::device("sm80"), Policy{}, testing::test_registry());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "invalid problem: hkv: hq (3) is not a multiple of hkv (2)");
  }
  const auto e =
      dispatcher::explain(bad, testing::device("sm80"), Policy{}, testing::test_registry());
  EXPECT_EQ(e.outcome, dispatcher::Outcome::invalid_problem);
  EXPECT_EQ(e.message, "invalid problem: hkv: hq (3) is not a multiple of hkv (2)");
}

}  // namespace
}  // namespace sdpa
