// Dropout in the reference: the keep-mask of SEMANTICS.md reproduced exactly, the 1/(1-p)
// scaling, p = 0 as a no-op, the keep rate, seeds and offsets, and LSE before dropout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/philox.hpp"
#include "reference/sdpa_reference.hpp"
#include "tests/reference/test_util.hpp"

namespace sdpa::test {
namespace {

// keep(b, h, i, j) written out from SEMANTICS.md with the raw generator: counter = offset +
// ((b * Hq + h) * L + i) * S + j (low word, high word, 0, 0), key = seed (low, high), keep
// iff the first output word >= round(p * 2^32).
bool keep_from_spec(std::uint64_t seed, std::uint64_t offset, double p, std::int64_t b,
                    std::int64_t h, std::int64_t i, std::int64_t j, std::int64_t Hq, std::int64_t L,
                    std::int64_t S) {
  const auto threshold = static_cast<std::uint64_t>(std::nearbyint(std::ldexp(p, 32)));
  const std::uint64_t ctr = offset + static_cast<std::uint64_t>(((b * Hq + h) * L + i) * S + j);
  const PhiloxCounter out = philox4x32_10(
      {static_cast<std::uint32_t>(ctr), static_cast<std::uint32_t>(ctr >> 32), 0u, 0u},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  return out[0] >= threshold;
}

TEST(DropoutMask, KeepFunctionMatchesTheWrittenDefinition) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(0.5), 0x80000000u);
  EXPECT_EQ(dropout_threshold(0.25), 0x40000000u);
  EXPECT_EQ(dropout_threshold(1.0 - 0x1p-40), 0xFFFFFFFFu);  // saturated
  EXPECT_EQ(dropout_threshold(0x1p-33), 0u);                 // 0.5 rounds to even
  EXPECT_EQ(dropout_threshold(0x1p-33 * 3), 2u);             // 1.5 rounds to even
  for (double p : {0.1, 0.5, 0.9})
    for (std::uint64_t seed : {0ull, 1ull, 0x123456789ABCDEFull})
      for (std::uint64_t offset : {0ull, 7ull, 0xFFFFFFFFull})
        for (std::int64_t x = 0; x < 200; ++x) {
          const std::int64_t b = x % 2, h = (x / 2) % 3, i = (x / 6) % 5, j = x / 30;
          ASSERT_EQ(dropout_keep(seed, offset, dropout_threshold(p), b, h, i, j, 3, 5, 7),
                    keep_from_spec(seed, offset, p, b, h, i, j, 3, 5, 7))
              << "p=" << p << " seed=" << seed << " offset=" << offset << " x=" << x;
        }
}

// A problem whose every attended weight is positive, with varlen and causal masks.
Problem dropout_problem(double p, bool packed = false) {
  Problem pr = make_problem(2, 4, 2, 7, 33, 5, 3);
  pr.causal = Causal::bottom_right;
  pr.seqlens_q = {7, 5};
  pr.seqlens_kv = {33, 20};
  pr.packed = packed;
  apply_layout(pr, LayoutKind::bhsd, 0, 0);
  pr.dropout_p = p;
  pr.dropout_seed = 0xDEADBEEF12345ull;
  pr.dropout_offset = 12345;
  pr.want_lse = pr.want_weights = true;
  return pr;
}

TEST(DropoutWeights, ScaledSoftmaxAtKeptPositionsAndZeroElsewhere) {
  for (bool packed : {false, true})
    for (double p : {0.5, 0.75, 0.1, 0.3, 0.99}) {
      SCOPED_TRACE("p=" + std::to_string(p) + (packed ? " packed" : ""));
      const Problem pr = dropout_problem(p, packed);
      Problem none = pr;
      none.dropout_p = 0;
      Data d = zero_data(pr);
      fill_random(pr, d, 31);
      const Result with = run(pr, d), without = run(none, d);
      // 1/(1-p) is a power of two for p = 0.5 and 0.75: then the scaling is exact.
      const bool exact = p == 0.5 || p == 0.75;
      std::int64_t kept = 0, dropped = 0;
      for (std::int64_t b = 0; b < pr.batch; ++b)
        for (std::int64_t h = 0; h < pr.heads_q; ++h)
          for (std::int64_t i = 0; i < pr.len_q; ++i) {
            long double o[3] = {0, 0, 0};
            for (std::int64_t j = 0; j < pr.len_kv; ++j) {
              const std::size_t x = mi(pr, b, h, i, j);
              const double P = without.weights[x];
              const bool keep =
                  dropout_keep(pr.dropout_seed, pr.dropout_offset, dropout_threshold(p), b, h, i, j,
                               pr.heads_q, pr.len_q, pr.len_kv);
              if (!keep) {
                ASSERT_EQ(with.weights[x], 0.0) << b << "," << h << "," << i << "," << j;
                dropped += P > 0;
                continue;
              }
              kept += P > 0;
              const double want = P / (1 - p);
              if (exact) {
                ASSERT_EQ(with.weights[x], want) << b << "," << h << "," << i << "," << j;
              } else {
                ASSERT_NEAR(with.weights[x], want, 4 * kU64 * want) << b << "," << h << "," << i;
              }
              const std::int64_t hk = h / (pr.heads_q / pr.heads_kv);
              for (std::int64_t c = 0; c < 3; ++c) {
                o[c] += static_cast<long double>(with.weights[x]) * d.v[vi(pr, b, hk, j, c)];
              }
            }
            // O uses exactly the mask and scaling the weights show.
            for (std::int64_t c = 0; c < 3; ++c) {
              const std::size_t x = oi(pr, b, h, i, c);
              EXPECT_NEAR(with.o[x], static_cast<double>(o[c]),
                          8 * kU64 * (std::fabs(with.o[x]) + with.mag_a[x]));
            }
          }
      EXPECT_GT(kept, 0);
      EXPECT_GT(dropped, 0);
      // The binary128 engine applies the same mask.
      const Result with128 = run(pr, d, Precision::binary128);
      for (std::size_t x = 0; x < with.weights.size(); ++x) {
        ASSERT_EQ(with.weights[x] == 0, with128.weights[x] == 0) << x;
        ASSERT_NEAR(with.weights[x], with128.weights[x], 1e-13 * with128.weights[x]) << x;
      }
    }
}

TEST(DropoutWeights, ZeroProbabilityIsBitwiseNoDropout) {
  Problem pr = dropout_problem(0.0);
  Problem seeded = pr;
  seeded.dropout_seed = 99;
  seeded.dropout_offset = 1234567;
  Data d = zero_data(pr);
  fill_random(pr, d, 5);
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    EXPECT_EQ(diff_results(run(seeded, d, prec), run(pr, d, prec)), "");
  }
}

TEST(DropoutWeights, LseAndItsMagnitudesAreTheValuesBeforeDropout) {
  Problem pr = dropout_problem(0.4);
  Problem none = pr;
  none.dropout_p = 0;
  Data d = zero_data(pr);
  fill_random(pr, d, 8);
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    const Result a = run(pr, d, prec), b = run(none, d, prec);
    EXPECT_EQ(diff_bits(a.lse, b.lse, "lse"), "");
    EXPECT_EQ(diff_bits(a.lse_mag_c, b.lse_mag_c, "lse_mag_c"), "");
    EXPECT_EQ(diff_bits(a.lse_mag_g, b.lse_mag_g, "lse_mag_g"), "");
    EXPECT_NE(diff_bits(a.o, b.o, "o"), "") << "dropout changed nothing: the case is void";
  }
}

// The keep-mask the reference used, read from its weights (Q = 0: every weight is positive).
std::vector<bool> reference_mask(double p, std::uint64_t seed, std::uint64_t offset, std::int64_t B,
                                 std::int64_t H, std::int64_t L, std::int64_t S) {
  Problem pr = make_problem(B, H, 1, L, S, 1, 1);
  pr.dropout_p = p;
  pr.dropout_seed = seed;
  pr.dropout_offset = offset;
  pr.want_weights = true;
  const Result r = run(pr, zero_data(pr));
  std::vector<bool> keep(r.weights.size());
  for (std::size_t x = 0; x < keep.size(); ++x) keep[x] = r.weights[x] != 0;
  return keep;
}

TEST(DropoutRate, KeepRateWithinAFiveSigmaBinomialBound) {
  for (double p : {0.1, 0.5, 0.9}) {
    const auto keep = reference_mask(p, 2024, 0, 2, 4, 64, 256);
    const double n = static_cast<double>(keep.size());
    double k = 0;
    for (bool x : keep) k += x;
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(k, n * (1 - p), 5 * sigma) << "p=" << p << ": kept " << k << " of " << n;
  }
  // A larger sample straight from the keep function, near both ends of p.
  for (double p : {0.01, 0.3, 0.999}) {
    const std::uint32_t thr = dropout_threshold(p);
    const std::int64_t n = 1 << 20;
    double k = 0;
    for (std::int64_t x = 0; x < n; ++x) k += dropout_keep(7, 0, thr, 0, 0, 0, x, 1, 1, n);
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(k, n * (1 - p), 5 * sigma) << "p=" << p;
  }
}

TEST(DropoutSeeds, SeedsAndOffsetsGiveDifferentMasksAndOffsetShiftsTheCounter) {
  const double p = 0.5;
  const std::int64_t B = 1, H = 2, L = 16, S = 64;
  const auto base = reference_mask(p, 1, 0, B, H, L, S);
  const auto other_seed = reference_mask(p, 2, 0, B, H, L, S);
  const auto high_seed = reference_mask(p, 1 + (1ull << 32), 0, B, H, L, S);
  const auto shifted = reference_mask(p, 1, 1, B, H, L, S);
  const double n = static_cast<double>(base.size());
  for (const auto* m : {&other_seed, &high_seed, &shifted}) {
    double diff = 0;
    for (std::size_t x = 0; x < base.size(); ++x) diff += base[x] != (*m)[x];
    // Independent masks differ with probability 2p(1-p) = 1/2 per element.
    EXPECT_NEAR(diff, n / 2, 5 * std::sqrt(n / 4));
  }
  // counter = offset + linear index: offset 1 reads the stream one element further on.
  for (std::size_t x = 0; x + 1 < base.size(); ++x) ASSERT_EQ(shifted[x], base[x + 1]) << x;
  // The same seed and offset give the same mask.
  EXPECT_EQ(reference_mask(p, 1, 0, B, H, L, S), base);
}

TEST(DropoutSeeds, MaskIndexUsesTheQueryHeadAndLogicalShape) {
  // Hq = 2, Hkv = 1: the two query heads share K and V but draw different masks; with
  // varlen the index still runs over the logical [B, Hq, L, S] shape.
  Problem pr = make_problem(2, 2, 1, 4, 9, 2, 2);
  pr.seqlens_q = {4, 3};
  pr.seqlens_kv = {9, 6};
  pr.dropout_p = 0.5;
  pr.dropout_seed = 77;
  pr.want_weights = true;
  const Result r = run(pr, zero_data(pr));
  std::int64_t differ = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < seqlen_q(pr, b); ++i)
      for (std::int64_t j = 0; j < seqlen_kv(pr, b); ++j) {
        for (std::int64_t h = 0; h < 2; ++h) {
          EXPECT_EQ(r.weights[mi(pr, b, h, i, j)] != 0,
                    keep_from_spec(77, 0, 0.5, b, h, i, j, 2, 4, 9));
        }
        differ += (r.weights[mi(pr, b, 0, i, j)] != 0) != (r.weights[mi(pr, b, 1, i, j)] != 0);
      }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace sdpa::test
