// The emulator's measured tensor-core rounding (MmaRounding; docs/KERNELS.md, "Tensor-core
// rounding"): test vectors built from the published model's rules (terms aligned to the
// largest exponent and truncated, the result truncated, the products taken a block at a time),
// each giving a different f32 from the ideal tensor core's single rounding to nearest.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cuda/emulator/emulator.hpp"

namespace sdpa::cuda::emu {
namespace {

constexpr int kHalfEmin = -14;
constexpr float kOnePlusUlp = 1.0f + 0x1p-23f;  // the f32 after 1

TEST(EmulatorMma, TheResultIsTruncated) {
  // 1 + 0.75 * 2^-23: to nearest 1 + 2^-23, truncated 1.
  const float a[] = {0.75f}, b[] = {0x1p-23f};  // 2^-23: an f16 subnormal
  EXPECT_EQ(block_fma(a, b, 1, 1.0f, kHalfEmin, 1), 1.0f);
  EXPECT_EQ(static_cast<float>(1.0 + 0.75 * 0x1p-23), kOnePlusUlp);
}

TEST(EmulatorMma, TermsAreTruncatedBelowTheExtraAlignmentBits) {
  // 1 + 4 * 2^-25 = 1 + 2^-23 exactly: with 2 extra bits every 2^-25 survives the alignment,
  // with 1 every one is cut to zero.
  const float a[] = {0x1p-13f, 0x1p-13f, 0x1p-13f, 0x1p-13f};
  const float b[] = {0x1p-12f, 0x1p-12f, 0x1p-12f, 0x1p-12f};
  EXPECT_EQ(block_fma(a, b, 4, 1.0f, kHalfEmin, 2), kOnePlusUlp);
  EXPECT_EQ(block_fma(a, b, 4, 1.0f, kHalfEmin, 1), 1.0f);
}

TEST(EmulatorMma, SpecialValuesAreIeee) {
  const float inf = std::numeric_limits<float>::infinity();
  const float a[] = {inf, 1.0f}, b[] = {1.0f, 1.0f};
  EXPECT_EQ(block_fma(a, b, 2, 0.0f, kHalfEmin, 1), inf);
  EXPECT_TRUE(std::isnan(block_fma(a, b, 2, -inf, kHalfEmin, 1)));
  const float z[] = {0.0f, 0.0f};
  EXPECT_EQ(block_fma(z, z, 2, 0.0f, kHalfEmin, 1), 0.0f);
  // bf16 products reach 2^128: the f32 exponent overflows. Below it, truncation stops at the
  // largest finite f32.
  const float big[] = {0x1p64f};
  EXPECT_EQ(block_fma(big, big, 1, 0.0f, -126, 1), inf);
  const float one[] = {1.0f};
  EXPECT_EQ(block_fma(one, one, 1, std::numeric_limits<float>::max(), -126, 1),
            std::numeric_limits<float>::max());
}

// Row 0 times column 0 of one mma.sync m16n8k16 with three non-zero products: 1 (k = 0),
// 3 * 2^-25 (k = 1) and 2^-24 (k = 8), placed by the PTX fragment layouts.
float mma_row0_col0(const MmaRounding& rounding) {
  auto half_bits = [](float x) { return static_cast<unsigned>(Half(x).bits); };
  float out = 0;
  launch(
      1, 32, 0,
      [&](unsigned char*) {
        const int lane = ops::thread_x();
        unsigned a[4] = {0, 0, 0, 0};
        unsigned b0 = 0, b1 = 0;
        if (lane == 0) {
          a[0] = half_bits(1.0f) | half_bits(3 * 0x1p-13f) << 16;  // row 0, k = 0, 1
          a[2] = half_bits(0x1p-12f);                              // row 0, k = 8
          b0 = half_bits(1.0f) | half_bits(0x1p-12f) << 16;        // column 0, k = 0, 1
          b1 = half_bits(0x1p-12f);                                // column 0, k = 8
        }
        float c[4] = {0, 0, 0, 0};
        ops::mma_16816(c, a, b0, b1, false);
        if (lane == 0) out = c[0];
      },
      rounding);
  return out;
}

TEST(EmulatorMma, ProductsAreTakenABlockAtATime) {
  // Exactly 1 + 5 * 2^-25. Ideal: to nearest, 1 + 2^-23. A100 (blocks of 8, 1 extra bit): the
  // first block is 1 + 2^-24 truncated to 1, the second again 1. One block of 16 with 1 extra
  // bit: 1 + 2^-24 + 2^-24 = 1 + 2^-23. H100 (16, 2 bits): 1 + 5 * 2^-25 truncated, 1 + 2^-23.
  EXPECT_EQ(mma_row0_col0({}), kOnePlusUlp);
  EXPECT_EQ(mma_row0_col0({8, 1, ""}), 1.0f);
  EXPECT_EQ(mma_row0_col0({16, 1, ""}), kOnePlusUlp);
  EXPECT_EQ(mma_row0_col0({16, 2, ""}), kOnePlusUlp);
}

TEST(EmulatorMma, ABlockMustDivideTheProducts) {
  EXPECT_THROW(launch(
                   1, 32, 0, [](unsigned char*) {}, MmaRounding{5, 1, ""}),
               std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::cuda::emu
