// Tests of Philox4x32-10 and the dropout keep-mask (core/philox.hpp).
#include "core/philox.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace sdpa {
namespace {

// Known-answer vectors of Random123 (kat_vectors, "philox4x32 10" lines): counter, key,
// expected output.
TEST(Philox, Random123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, EveryInputWordMatters) {
  const PhiloxCounter c{1, 2, 3, 4};
  const PhiloxKey k{5, 6};
  const PhiloxCounter base = philox4x32_10(c, k);
  for (int w = 0; w < 4; ++w) {
    PhiloxCounter c2 = c;
    c2[w] ^= 1u;
    EXPECT_NE(philox4x32_10(c2, k), base) << "counter word " << w;
  }
  for (int w = 0; w < 2; ++w) {
    PhiloxKey k2 = k;
    k2[w] ^= 0x80000000u;
    EXPECT_NE(philox4x32_10(c, k2), base) << "key word " << w;
  }
  EXPECT_EQ(philox4x32_10(c, k), base);  // pure
}

TEST(Philox, DropoutThreshold) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(-0.0), 0u);
  EXPECT_EQ(dropout_threshold(-0.5), 0u);
  EXPECT_EQ(dropout_threshold(std::numeric_limits<double>::quiet_NaN()), 0u);
  EXPECT_EQ(dropout_threshold(0.5), 0x80000000u);
  EXPECT_EQ(dropout_threshold(0.25), 0x40000000u);
  EXPECT_EQ(dropout_threshold(0.75), 0xC0000000u);
  EXPECT_EQ(dropout_threshold(std::ldexp(1.0, -32)), 1u);
  // round to nearest, ties to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, just above 0.5 -> 1
  EXPECT_EQ(dropout_threshold(std::ldexp(1.0, -33)), 0u);
  EXPECT_EQ(dropout_threshold(3 * std::ldexp(1.0, -33)), 2u);
  EXPECT_EQ(dropout_threshold(5 * std::ldexp(1.0, -33)), 2u);
  EXPECT_EQ(dropout_threshold(std::ldexp(1.0, -33) * (1 + 1e-9)), 1u);
  EXPECT_EQ(dropout_threshold(0.3), 1288490189u);  // 0.3 * 2^32 = 1288490188.8
  // Near 1: the threshold saturates at 2^32 - 1 instead of wrapping to 0.
  EXPECT_EQ(dropout_threshold(1.0 - std::ldexp(1.0, -31)), 0xFFFFFFFEu);
  EXPECT_EQ(dropout_threshold(1.0 - std::ldexp(1.0, -32)), 0xFFFFFFFFu);
  EXPECT_EQ(dropout_threshold(1.0 - std::ldexp(1.0, -33)), 0xFFFFFFFFu);  // rounds to 2^32
  EXPECT_EQ(dropout_threshold(std::nextafter(1.0, 0.0)), 0xFFFFFFFFu);
  EXPECT_EQ(dropout_threshold(1.0), 0xFFFFFFFFu);
  EXPECT_EQ(dropout_threshold(7.0), 0xFFFFFFFFu);
}

TEST(Philox, KeepMatchesTheDocumentedCounterAndKey) {
  // counter = offset + ((b * Hq + h) * L + i) * S + j, low word first; key = seed, low first.
  const std::uint64_t seed = 0x0123456789abcdefull, offset = 0xfedcba9876543210ull;
  const std::int64_t Hq = 3, L = 5, S = 7;
  const std::uint32_t t = dropout_threshold(0.5);
  int kept = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < Hq; ++h)
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < S; ++j) {
          const std::uint64_t ctr =
              offset + static_cast<std::uint64_t>(((b * Hq + h) * L + i) * S + j);
          const PhiloxCounter out = philox4x32_10(
              {static_cast<std::uint32_t>(ctr), static_cast<std::uint32_t>(ctr >> 32), 0, 0},
              {0x89abcdefu, 0x01234567u});
          const bool keep = dropout_keep(seed, offset, t, b, h, i, j, Hq, L, S);
          ASSERT_EQ(keep, out[0] >= t) << b << " " << h << " " << i << " " << j;
          kept += keep;
        }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 2 * Hq * L * S);
}

// The keep-mask's layout pinned by known answers, the table of docs/SEMANTICS.md ("Dropout
// keep-mask"): seed 0x0123456789abcdef is key {0x89abcdef, 0x01234567} (low half in word 0);
// the counter is offset + ((b * Hq + h) * L + i) * S + j, low half in word 0, high half in
// word 1, words 2 and 3 zero; keep compares output word 0 with the threshold.
TEST(Philox, KeepMaskLayoutKnownAnswers) {
  struct KeepVector {
    std::uint64_t offset;
    std::int64_t b, h, i, j;
    PhiloxCounter counter;  // the counter words of (offset, b, h, i, j)
    PhiloxCounter out;      // philox4x32_10(counter, key)
    bool keep;              // at p = 0.5
  };
  const std::uint64_t seed = 0x0123456789abcdefull;
  const PhiloxKey key{0x89abcdefu, 0x01234567u};
  const std::int64_t Hq = 3, L = 5, S = 7;
  const std::uint32_t t = dropout_threshold(0.5);
  ASSERT_EQ(t, 0x80000000u);
  const KeepVector vectors[] = {
      {0, 0, 0, 0, 0, {0u, 0u, 0u, 0u}, {0xb850222eu, 0xc58cb04bu, 0x14a7a020u, 0x7a84fff9u}, true},
      {0,
       1,
       2,
       3,
       4,
       {0xc8u, 0u, 0u, 0u},
       {0x5b8ea629u, 0x6e92b2e0u, 0x0107ed45u, 0xd2ea1fc0u},
       false},
      // 0xffffffff + 200 carries into counter word 1.
      {0xffffffffull,
       1,
       2,
       3,
       4,
       {0xc7u, 1u, 0u, 0u},
       {0x861ae443u, 0xdba66991u, 0xc9df41b8u, 0x4d4c11cau},
       true}};
  for (const KeepVector& v : vectors) {
    const std::string at = "offset " + std::to_string(v.offset) + ", (b, h, i, j) = (" +
                           std::to_string(v.b) + ", " + std::to_string(v.h) + ", " +
                           std::to_string(v.i) + ", " + std::to_string(v.j) + ")";
    EXPECT_EQ(philox4x32_10(v.counter, key), v.out) << at;
    EXPECT_EQ(dropout_keep(seed, v.offset, t, v.b, v.h, v.i, v.j, Hq, L, S), v.keep) << at;
    // Output word 0 is the one compared: a threshold equal to it keeps, one above it drops.
    EXPECT_TRUE(dropout_keep(seed, v.offset, v.out[0], v.b, v.h, v.i, v.j, Hq, L, S)) << at;
    EXPECT_FALSE(dropout_keep(seed, v.offset, v.out[0] + 1u, v.b, v.h, v.i, v.j, Hq, L, S)) << at;
  }
}

// keep = u >= threshold exactly: a threshold equal to the first output word keeps, one above
// it drops.
TEST(Philox, KeepBoundaryIsInclusive) {
  for (std::int64_t j = 0; j < 16; ++j) {
    const std::uint64_t seed = 77, offset = 5;
    const std::uint64_t ctr = offset + static_cast<std::uint64_t>(j);
    const std::uint32_t u = philox4x32_10({static_cast<std::uint32_t>(ctr), 0, 0, 0}, {77, 0})[0];
    if (u == 0 || u == 0xffffffffu) continue;
    EXPECT_TRUE(dropout_keep(seed, offset, u, 0, 0, 0, j, 1, 1, 16)) << j;
    EXPECT_FALSE(dropout_keep(seed, offset, u + 1, 0, 0, 0, j, 1, 1, 16)) << j;
    EXPECT_TRUE(dropout_keep(seed, offset, u - 1, 0, 0, 0, j, 1, 1, 16)) << j;
  }
}

TEST(Philox, KeepIsAPureFunction) {
  const std::uint32_t t = dropout_threshold(0.3);
  for (std::int64_t j = 0; j < 1000; ++j) {
    const bool a = dropout_keep(42, 7, t, 1, 2, 3, j, 4, 5, 1000);
    const bool b = dropout_keep(42, 7, t, 1, 2, 3, j, 4, 5, 1000);
    ASSERT_EQ(a, b);
  }
  // Different seeds give different masks.
  int differ = 0;
  for (std::int64_t j = 0; j < 1000; ++j) {
    differ += dropout_keep(42, 7, t, 0, 0, 0, j, 1, 1, 1000) !=
              dropout_keep(43, 7, t, 0, 0, 0, j, 1, 1, 1000);
  }
  EXPECT_GT(differ, 200);
  // The high half of the seed matters too.
  differ = 0;
  for (std::int64_t j = 0; j < 1000; ++j) {
    differ += dropout_keep(42, 7, t, 0, 0, 0, j, 1, 1, 1000) !=
              dropout_keep(42 + (std::uint64_t{1} << 32), 7, t, 0, 0, 0, j, 1, 1, 1000);
  }
  EXPECT_GT(differ, 200);
}

TEST(Philox, OffsetShiftsTheCounter) {
  const std::uint32_t t = dropout_threshold(0.5);
  for (std::int64_t j = 0; j < 500; ++j) {
    ASSERT_EQ(dropout_keep(9, 1, t, 0, 0, 0, j, 1, 1, 1000),
              dropout_keep(9, 0, t, 0, 0, 0, j + 1, 1, 1, 1000));
  }
  // The linear index is row-major over [B, Hq, L, S]: the last key of a row precedes the first
  // key of the next row, the last row of a head precedes the next head, and so on.
  const std::int64_t Hq = 2, L = 3, S = 4;
  EXPECT_EQ(dropout_keep(9, 1, t, 0, 0, 0, S - 1, Hq, L, S),
            dropout_keep(9, 0, t, 0, 0, 1, 0, Hq, L, S));
  for (std::uint64_t off = 0; off < 64; ++off) {
    ASSERT_EQ(dropout_keep(9, off + S * L, t, 0, 0, 0, 0, Hq, L, S),
              dropout_keep(9, off, t, 0, 1, 0, 0, Hq, L, S));
    ASSERT_EQ(dropout_keep(9, off + S * L * Hq, t, 0, 0, 0, 0, Hq, L, S),
              dropout_keep(9, off, t, 1, 0, 0, 0, Hq, L, S));
  }
  // The 64-bit counter carries into its high word and wraps around.
  const std::uint64_t low_max = 0xffffffffull;
  const PhiloxKey key{9, 0};
  EXPECT_EQ(dropout_keep(9, low_max, t, 0, 0, 0, 1, 1, 1, 2),
            philox4x32_10({0, 1, 0, 0}, key)[0] >= t);
  EXPECT_EQ(dropout_keep(9, ~0ull, t, 0, 0, 0, 1, 1, 1, 2),
            philox4x32_10({0, 0, 0, 0}, key)[0] >= t);
}

TEST(Philox, ZeroProbabilityKeepsEverything) {
  for (std::int64_t j = 0; j < 10000; ++j) {
    ASSERT_TRUE(dropout_keep(j * 31, j, dropout_threshold(0.0), 0, 0, 0, j, 1, 1, 10000));
  }
}

TEST(Philox, SaturatedThresholdKeepsAlmostNothing) {
  const std::uint32_t t = dropout_threshold(1.0 - 1e-12);
  ASSERT_EQ(t, 0xFFFFFFFFu);
  int kept = 0;
  for (std::int64_t j = 0; j < 100000; ++j) kept += dropout_keep(5, 0, t, 0, 0, 0, j, 1, 1, 100000);
  EXPECT_LE(kept, 1);  // only u == 2^32 - 1 is kept: expected 2.3e-5 of 100000 draws
}

TEST(Philox, KeepRateWithinBinomialBound) {
  const double p = 0.3;
  const std::uint32_t t = dropout_threshold(p);
  const std::int64_t n = 200000;
  const std::int64_t Hq = 4, L = 50, S = 250;  // 4 * 50 * 250 * 4 = 200000 draws
  std::int64_t kept = 0;
  for (std::int64_t b = 0; b < 4; ++b)
    for (std::int64_t h = 0; h < Hq; ++h)
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < S; ++j) kept += dropout_keep(1234, 0, t, b, h, i, j, Hq, L, S);
  const double expected = n * (1 - p);
  const double sigma = std::sqrt(n * p * (1 - p));
  EXPECT_LE(std::fabs(static_cast<double>(kept) - expected), 5 * sigma)
      << kept << " kept of " << n << ", expected " << expected;
}

// The keep rate follows p for any threshold, not just 0.3 (a property over p and seed).
RC_GTEST_PROP(PhiloxProperty, KeepRateFollowsP, (std::uint64_t seed, std::uint64_t offset)) {
  const double p = *rc::gen::inRange(1, 100) / 100.0;
  const std::uint32_t t = dropout_threshold(p);
  const std::int64_t n = 4000;
  std::int64_t kept = 0;
  for (std::int64_t j = 0; j < n; ++j) kept += dropout_keep(seed, offset, t, 0, 0, 0, j, 1, 1, n);
  const double sigma = std::sqrt(n * p * (1 - p));
  RC_ASSERT(std::fabs(static_cast<double>(kept) - n * (1 - p)) <= 6 * sigma + 1);
}

}  // namespace
}  // namespace sdpa
