// The tolerance table's version names its constants: changing a constant without a new version
// (and a line in docs/CONFORMANCE.md, "Versions of the table") fails here.
#include "conformance/judge/tolerance.hpp"

#include <gtest/gtest.h>

namespace sdpa::conformance {
namespace {

TEST(Tolerance, TableVersionNamesItsConstants) {
  const ToleranceTable t;
  ASSERT_EQ(t.version, "2026-12-5") << "a new version: update the constants below with it";
  EXPECT_EQ(t.safety, 4.0);
  EXPECT_EQ(t.weights_p_growth, 4.0);
  EXPECT_EQ(t.weights_acc_roundings, 64.0);
  EXPECT_EQ(t.weights_lse_factor, 2.0);
  EXPECT_EQ(t.quality_naive_factor, 2.0);
  EXPECT_EQ(t.quality_output_roundings, 8.0);
}

}  // namespace
}  // namespace sdpa::conformance
