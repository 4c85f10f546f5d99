#include "core/dtype.hpp"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_FALSE(parse_dtype("f8"));
}

}  // namespace
}  // namespace sdpa
