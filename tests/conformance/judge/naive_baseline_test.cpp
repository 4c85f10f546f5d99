#include "conformance/judge/naive_baseline.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

// Both summation orders compute the naive algorithm: close to the reference, and not the
// same bits (so the reverse order is really applied).
TEST(NaiveBaseline, BothSummationOrdersAreNaiveAndDiffer) {
  const Case c =
      parse_case_id_or_throw("b1.hq2.l16.s64.dqk64.dv16.f32.causal=br.lse.seed3.gen=normal");
  const InputBuffers in = make_inputs(c);
  const reference::Result ref = reference::run_sdpa(c.problem, in.pointers());
  const std::vector<double> fwd = naive_low_precision(c.problem, in.pointers(), SumOrder::forward);
  const std::vector<double> rev = naive_low_precision(c.problem, in.pointers(), SumOrder::reverse);
  ASSERT_EQ(fwd.size(), ref.o.size());
  ASSERT_EQ(rev.size(), ref.o.size());
  int differ = 0;
  for (std::size_t x = 0; x < ref.o.size(); ++x) {
    EXPECT_NEAR(fwd[x], ref.o[x], 1e-5) << x;
    EXPECT_NEAR(rev[x], ref.o[x], 1e-5) << x;
    differ += fwd[x] != rev[x];
  }
  EXPECT_GT(differ, 0);
  // The default is the forward order.
  EXPECT_EQ(naive_low_precision(c.problem, in.pointers()), fwd);
}

}  // namespace
}  // namespace sdpa
