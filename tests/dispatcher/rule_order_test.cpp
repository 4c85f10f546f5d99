// The order the dispatcher's rules leave (dispatcher/rules.hpp), as properties over random rule
// sets: every rule that fires moves the backends it promotes to the front (or, demoting, to
// the back) and keeps the priority order within the moved group and within the rest
// (docs/DISPATCH.md, "Rules"). The expected order is recomputed here from each move's set
// alone, so a rule that moves the right backends in the wrong order fails. Fixed seeds.
// And the PyTorch policy's order pinned to the order PyTorch publishes for each condition.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dispatcher/dispatcher.hpp"
#include "dispatcher/pytorch_model.hpp"
#include "dispatcher/pytorch_policy.hpp"
#include "dispatcher/rules.hpp"
#include "tests/dispatcher/test_backends.hpp"

namespace sdpa {
namespace {

// A CPU backend with the traits the CPU rules read: split-KV (decode_split_kv) and PyTorch's
// math kind (tiny_prefers_math).
std::unique_ptr<Backend> fake(int index, bool split_kv, bool math) {
  Capabilities c = Capabilities::every_forward_input();
  c.dtypes = {DType::f32};
  c.traits.split_kv = split_kv;
  if (math) c.traits.pytorch = PytorchKernel::math;
  return std::make_unique<testing::FakeCpuBackend>("fake." + std::to_string(index), c);
}

std::vector<std::string> names(const std::vector<const Backend*>& order) {
  std::vector<std::string> n;
  for (const Backend* b : order) n.emplace_back(b->name());
  return n;
}

TEST(RuleOrder, PromotionKeepsThePriorityOrderOfBothGroups) {
  std::mt19937 rng(20261207);  // fixed seed: reproducible
  // Shapes that fire none, one or both CPU rules (tiny work; a decode shape with B*Hq below
  // the cores of a 64-core CPU; both).
  const char* shapes[] = {"b1.hq1.l4.s8.dqk8.f32.seed1", "b1.hq2.l1.s512.dqk64.f32.seed1",
                          "b1.hq1.l1.s256.dqk8.f32.seed1", "b4.hq16.l256.s256.dqk64.f32.seed1"};
  Device cpu = testing::device("cpu");
  cpu.cpu.cores = 64;
  int fired_with_both_groups = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = std::uniform_int_distribution<int>(2, 9)(rng);
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<const Backend*> order;
    for (int i = 0; i < n; ++i) {
      owned.push_back(fake(i, rng() % 2 == 0, rng() % 3 == 0));
      order.push_back(owned.back().get());
    }
    const Problem p = testing::problem(shapes[rng() % 4]);
    std::vector<const Backend*> expected = order;
    const auto fired = dispatcher::apply_rules(p, cpu, order);
    for (const auto& f : fired) {
      SCOPED_TRACE(f.name);
      const std::set<std::string> promoted(f.promoted.begin(), f.promoted.end());
      ASSERT_EQ(promoted.size(), f.promoted.size()) << "a backend promoted twice";
      std::stable_partition(expected.begin(), expected.end(), [&](const Backend* b) {
        return promoted.count(std::string(b->name()));
      });
      // The firing lists its promoted backends in their new order: the old relative order.
      const auto now = names(expected);
      EXPECT_EQ(f.promoted, std::vector<std::string>(now.begin(), now.begin() + promoted.size()));
      if (promoted.size() >= 2 && promoted.size() < expected.size()) ++fired_with_both_groups;
    }
    ASSERT_EQ(names(order), names(expected)) << "trial " << trial << ", " << n << " backends";
  }
  // The property was exercised where an unstable partition could reorder: two or more
  // promoted backends with others left behind.
  EXPECT_GT(fired_with_both_groups, 50);
}

// A demotion moves the chosen backends to the back and keeps the relative order of the
// demoted group and of the rest; a promotion the same to the front. The expected order is
// built here by two passes over the old order, not by a partition.
TEST(RuleOrder, DemotionKeepsThePriorityOrderOfBothGroups) {
  std::mt19937 rng(20261208);  // fixed seed: reproducible
  int both_groups = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = std::uniform_int_distribution<int>(2, 9)(rng);
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<const Backend*> order;
    std::set<std::string> chosen;
    for (int i = 0; i < n; ++i) {
      owned.push_back(fake(i, false, false));
      order.push_back(owned.back().get());
      if (rng() % 3 == 0) chosen.insert(std::string(owned.back()->name()));
    }
    const auto pick = [&](const Backend& b) { return chosen.count(std::string(b.name())) > 0; };
    for (bool demoting : {true, false}) {
      std::vector<const Backend*> now = order;
      const auto moved = demoting ? dispatcher::demote(now, pick) : dispatcher::promote(now, pick);
      std::vector<std::string> kept, picked;
      for (const Backend* b : order) (pick(*b) ? picked : kept).emplace_back(b->name());
      std::vector<std::string> expected = demoting ? kept : picked;
      const auto& tail_group = demoting ? picked : kept;
      expected.insert(expected.end(), tail_group.begin(), tail_group.end());
      ASSERT_EQ(names(now), expected) << (demoting ? "demote" : "promote") << ", trial " << trial;
      EXPECT_EQ(moved, picked) << "the moved names, in their kept order";
      if (picked.size() >= 2 && kept.size() >= 2) ++both_groups;
    }
  }
  EXPECT_GT(both_groups, 50);  // exercised where an unstable partition could reorder
}

// The PyTorch policy's order is PyTorch's published one (sdp_priority_order in ATen's
// Context.h and check_prefer_cudnn_attention in cuda/sdp_utils.cpp) for each condition:
// flash, efficient, math, cudnn by default; cudnn, flash, efficient, math where cuDNN is
// preferred (sm9x / sm10x, cuDNN above 9.15.0, minor 0 or 3 or CUDA 13); the jagged
// (NestedTensor) picker's fixed flash, efficient, math, cudnn everywhere; on a CPU flash,
// math. The conditions are written out here, not read from the rule's data.
TEST(PytorchOrder, IsPyTorchsPublishedOrderForEachCondition) {
  const std::vector<std::string> plain = {"flash", "efficient", "math", "cudnn"};
  const std::vector<std::string> cudnn_first = {"cudnn", "flash", "efficient", "math"};
  struct Condition {
    const char* device;
    bool cudnn_first;
  };
  const Condition conditions[] = {{"sm80", false},
                                  {"sm86", false},
                                  {"sm89", false},
                                  {"sm90", true},
                                  {"sm90:cudnn=9.15.0", false},
                                  {"sm90:cudnn=9.15.1", true},
                                  {"sm90:cudnn=8.9.7", false},
                                  {"sm91", false},
                                  {"sm91:cuda=13.0", true},
                                  {"sm100", true},
                                  {"sm103", true},
                                  {"sm100:cudnn=9.15.0", false},
                                  {"sm103:cuda=12.9:cudnn=9.16.0", true},
                                  {"sm110:cuda=13.0", false},
                                  {"sm120", false},
                                  {"sm121:cuda=13.0", false}};
  dispatcher::Policy torch;
  torch.model = dispatcher::PolicyModel::pytorch;
  const auto pytorch_order = [&](const std::string& id, const Device& d) {
    const auto e = dispatcher::explain_pytorch(testing::problem(id), d, torch,
                                               dispatcher::pytorch_model_backends());
    std::vector<std::string> kinds;
    for (const auto& n : e.order) {
      for (const Backend* b : dispatcher::pytorch_model_backends()) {
        if (b->name() == n && b->capabilities().device == d.kind) {
          kinds.push_back(dispatcher::pytorch_backend_name(*b));
        }
      }
    }
    return kinds;
  };
  const std::string dense = "b1.hq2.l128.s128.dqk64.f16.seed1.gen=normal";
  const std::string jagged =
      "b2.hq2.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed.seed1.gen=normal";
  for (const auto& c : conditions) {
    const Device d = testing::device(c.device);
    EXPECT_EQ(pytorch_order(dense, d), c.cudnn_first ? cudnn_first : plain) << c.device;
    EXPECT_EQ(pytorch_order(jagged, d), plain) << c.device << " (jagged picker)";
  }
  EXPECT_EQ(pytorch_order(dense, testing::device("cpu")),
            (std::vector<std::string>{"flash", "math"}));
}

}  // namespace
}  // namespace sdpa
