// The order the dispatcher's rules leave (dispatcher/rules.hpp), as a property over random rule
// sets: every rule that fires moves the backends it promotes to the front and keeps the
// priority order within the promoted group and within the rest (docs/DISPATCH.md, "Rules").
// The expected order is recomputed here from each firing's promoted set alone, so a rule that
// promotes the right backends in the wrong order fails. Fixed seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace sdpa
