// The results route's precision contract text (golden/results_backend.hpp, `cases judge
// --contract`): every key, tensor-core accumulation's `mma=B/E` among them, and the errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "golden/results_backend.hpp"

namespace sdpa::golden {
namespace {

TEST(ResultsContract, TextRoundTripsWithTensorCoreAccumulation) {
  const PrecisionContract c = parse_contract("acc=f32,p=f16,online=1,block=64,mma=8/1");
  EXPECT_EQ(c.p_type, DType::f16);
  EXPECT_EQ(c.key_block, 64);
  EXPECT_EQ(c.mma_block, 8);
  EXPECT_EQ(c.mma_extra_bits, 1);
  EXPECT_EQ(format_contract(c), "acc=f32,p=f16,online=1,block=64,mma=8/1");
  // Without the key nothing changes: sums rounded to nearest.
  const PrecisionContract plain = parse_contract("acc=f32");
  EXPECT_EQ(plain.mma_block, 0);
  EXPECT_EQ(format_contract(plain), "acc=f32,p=f32,online=0,block=0");
}

TEST(ResultsContract, BadTensorCoreAccumulationNamesTheKey) {
  for (const char* bad : {"mma=8", "mma=/1", "mma=8/", "mma=100/1", "mma=8/x", "mma=8/1/2"}) {
    try {
      (void)parse_contract(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("key 'mma': expected BLOCK/EXTRA_BITS"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace sdpa::golden
