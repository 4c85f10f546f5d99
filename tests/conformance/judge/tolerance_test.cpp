// The tolerance table's version names its constants: changing a constant without a new version
// (and a line in docs/CONFORMANCE.md, "Versions of the table") fails here.
#include "conformance/judge/tolerance.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace sdpa::conformance {
namespace {

TEST(Tolerance, TableVersionNamesItsConstants) {
  const ToleranceTable t;
  ASSERT_EQ(t.version, "2026-12-9") << "a new version: update the constants below with it";
  EXPECT_EQ(t.safety, 4.0);
  EXPECT_EQ(t.weights_p_growth, 4.0);
  EXPECT_EQ(t.weights_acc_roundings, 64.0);
  EXPECT_EQ(t.weights_lse_factor, 2.0);
  EXPECT_EQ(t.quality_naive_factor, 2.0);
  EXPECT_EQ(t.quality_output_roundings, 8.0);
  EXPECT_EQ(t.grad_ds_roundings, 2.0);
  EXPECT_EQ(t.grad_softcap_roundings, 4.0);
}

TEST(Tolerance, TensorCoreAccumulationGrowsLinearly) {
  // A100's block FMAs (8 products, 1 extra bit): per block 2 + 9 * 2^0 = 11 units of u_acc;
  // H100's (16, 2): 2 + 17 / 2 = 10.5.
  PrecisionContract c;
  EXPECT_EQ(tensor_core_growth(c, 4096), 0.0);
  c.mma_block = 8;
  c.mma_extra_bits = 1;
  EXPECT_EQ(tensor_core_growth(c, 4096), 512 * 11.0);
  EXPECT_EQ(tensor_core_growth(c, 9), 2 * 11.0);
  c.mma_block = 16;
  c.mma_extra_bits = 2;
  EXPECT_EQ(tensor_core_growth(c, 64), 4 * 10.5);
  // The bound's factors take the larger of sqrt growth and the tensor cores'; the LSE's row
  // sum (not on tensor cores) keeps sqrt growth.
  Problem p;
  p.dtype = DType::f16;
  p.head_dim_qk = 4;
  c.accumulate = DType::f32;
  c.p_type = DType::f16;
  const ToleranceFactors f = tolerance_factors(p, c, 4096);
  EXPECT_EQ(f.k_s, 256 * 10.5);
  EXPECT_EQ(f.k_l, 4.0 * 64);
  EXPECT_EQ(f.k_e, 10.5);  // one block of 16: 10.5 > 4 sqrt(4) = 8
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
