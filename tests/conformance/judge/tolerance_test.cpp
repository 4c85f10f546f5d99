// The tolerance table's version names its constants: changing a constant without a new version
// (and a line in docs/CONFORMANCE.md, "Versions of the table") fails here.
#include "conformance/judge/tolerance.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace sdpa::conformance {
namespace {

TEST(Tolerance, TableVersionNamesItsConstants) {
  const ToleranceTable t;
  ASSERT_EQ(t.version, "2026-12-7") << "a new version: update the constants below with it";
  EXPECT_EQ(t.safety, 4.0);
  EXPECT_EQ(t.weights_p_growth, 4.0);
  EXPECT_EQ(t.weights_acc_roundings, 64.0);
  EXPECT_EQ(t.weights_lse_factor, 2.0);
  EXPECT_EQ(t.quality_naive_factor, 2.0);
  EXPECT_EQ(t.quality_output_roundings, 8.0);
  EXPECT_EQ(t.grad_ds_roundings, 2.0);
  EXPECT_EQ(t.grad_softcap_roundings, 4.0);
}

TEST(Tolerance, TheFloorGrowsWithTheKeyCount) {
  // One subnormal spacing of the output plus S_b + 1 of the accumulator (the products P_j V_j
  // that land in the subnormal range are each rounded there), times 1 / (1 - p) with dropout.
  Problem p;
  p.dtype = DType::f32;
  p.len_kv = 4096;
  PrecisionContract c;
  c.accumulate = DType::f32;
  c.p_type = DType::f32;
  const double sub = std::ldexp(1.0, -149);
  EXPECT_EQ(tolerance_factors(p, c, 4096).floor, sub + 4097 * sub);
  EXPECT_EQ(tolerance_factors(p, c, 0).floor, sub + 2 * sub);
  p.dropout_p = 0.75;
  EXPECT_EQ(tolerance_factors(p, c, 4096).floor, sub + 4097 * sub * 4);
  p.dtype = DType::bf16;
  p.dropout_p = 0;
  EXPECT_EQ(tolerance_factors(p, c, 15).floor, std::ldexp(1.0, -133) + 16 * sub);
}

}  // namespace
}  // namespace sdpa::conformance
