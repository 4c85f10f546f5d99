// Tests of strided views: sizes, extents, validation and the self-overlap test
// (core/tensor_view.hpp).
#include "core/tensor_view.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

namespace sdpa {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

StridedView make(std::array<std::int64_t, 4> shape, std::array<std::int64_t, 4> stride) {
  StridedView v;
  v.shape = shape;
  v.stride = stride;
  return v;
}

StridedView contiguous(std::array<std::int64_t, 4> shape) {
  return make(shape, contiguous_strides(shape));
}

// Brute force: number of distinct offsets and the largest one.
struct Offsets {
  std::int64_t distinct = 0;
  std::int64_t max = -1;
  std::int64_t count = 0;
};
Offsets enumerate(const StridedView& v) {
  std::set<std::int64_t> seen;
  Offsets r;
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d) {
          const std::int64_t off =
              a * v.stride[0] + b * v.stride[1] + c * v.stride[2] + d * v.stride[3];
          seen.insert(off);
          r.max = std::max(r.max, off);
          ++r.count;
        }
  r.distinct = static_cast<std::int64_t>(seen.size());
  return r;
}

TEST(TensorView, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides({2, 3, 4, 5}), (std::array<std::int64_t, 4>{60, 20, 5, 1}));
  EXPECT_EQ(contiguous_strides({1, 1, 1, 1}), (std::array<std::int64_t, 4>{1, 1, 1, 1}));
  // A zero-size dimension does not zero the strides of the dimensions outside it.
  EXPECT_EQ(contiguous_strides({2, 0, 4, 5}), (std::array<std::int64_t, 4>{20, 20, 5, 1}));
}

TEST(TensorView, NumelAndExtentOfContiguousViews) {
  const auto v = contiguous({2, 3, 4, 5});
  EXPECT_EQ(view_numel(v), 120);
  EXPECT_EQ(view_extent(v), 120);
  EXPECT_EQ(view_numel(contiguous({1, 1, 1, 1})), 1);
  EXPECT_EQ(view_extent(contiguous({1, 1, 1, 1})), 1);
  EXPECT_EQ(view_extent(contiguous({1, 1, 1, 7})), 7);
}

TEST(TensorView, ZeroSizeDimensions) {
  for (int k = 0; k < 4; ++k) {
    std::array<std::int64_t, 4> shape{3, 4, 5, 6};
    shape[k] = 0;
    const auto v = make(shape, {1000, 100, 10, 1});
    EXPECT_EQ(view_numel(v), 0) << k;
    EXPECT_EQ(view_extent(v), 0) << k;
    EXPECT_EQ(validate_view(v, "q"), "") << k;
    EXPECT_EQ(validate_no_self_overlap(v, "o"), "") << k;
  }
  // An empty view may have any strides, even ones that would overflow if it had elements.
  const auto empty_huge = make({0, kMax, kMax, 2}, {kMax, kMax, kMax, kMax});
  EXPECT_EQ(view_numel(empty_huge), 0);
  EXPECT_EQ(view_extent(empty_huge), 0);
}

TEST(TensorView, StrideZeroAndGaps) {
  // Broadcast: stride 0 on a dimension of size 4 covers the same elements four times.
  const auto bcast = make({2, 4, 3, 8}, {24, 0, 8, 1});
  EXPECT_EQ(view_numel(bcast), 2 * 4 * 3 * 8);
  EXPECT_EQ(view_extent(bcast), 48);
  EXPECT_EQ(validate_view(bcast, "k"), "");
  // Rows of 8 elements with a gap of 3 after each.
  const auto gapped = make({1, 2, 3, 8}, {66, 33, 11, 1});
  EXPECT_EQ(view_numel(gapped), 48);
  EXPECT_EQ(view_extent(gapped), 33 + 2 * 11 + 7 + 1);
  // All strides zero: one element.
  EXPECT_EQ(view_extent(make({5, 5, 5, 5}, {0, 0, 0, 0})), 1);
  // A size-1 dimension contributes nothing whatever its stride.
  EXPECT_EQ(view_extent(make({1, 1, 2, 3}, {1000000, 77, 3, 1})), 6);
}

RC_GTEST_PROP(TensorViewProperty, ExtentIsMaxOffsetPlusOne, ()) {
  StridedView v;
  for (int k = 0; k < 4; ++k) {
    v.shape[k] = *rc::gen::inRange<std::int64_t>(0, 5);
    v.stride[k] = *rc::gen::inRange<std::int64_t>(0, 40);
  }
  const Offsets o = enumerate(v);
  RC_ASSERT(view_numel(v) == o.count);
  RC_ASSERT(view_extent(v) == o.max + 1);
  RC_ASSERT(validate_view(v, "x").empty());
  // The overlap test is sufficient: whenever it accepts, the offsets are all distinct.
  if (validate_no_self_overlap(v, "o").empty()) RC_ASSERT(o.distinct == o.count);
  // A duplicate offset is always rejected.
  if (o.distinct != o.count) RC_ASSERT(!validate_no_self_overlap(v, "o").empty());
}

TEST(TensorView, Int64Overflow) {
  const std::int64_t big = std::int64_t{1} << 32;
  // numel: 2^32 * 2^32 overflows.
  const auto huge_shape = make({big, big, 1, 1}, {1, 1, 1, 1});
  EXPECT_EQ(view_numel(huge_shape), -1);
  // extent: a valid numel but a stride that overflows the largest offset.
  const auto huge_stride = make({1, 1, 3, 1}, {1, 1, kMax / 2 + 1, 1});
  EXPECT_EQ(view_numel(huge_stride), 3);
  EXPECT_EQ(view_extent(huge_stride), -1);
  // extent: the sum of the spans overflows although each span fits.
  const auto sum_overflow = make({2, 2, 1, 1}, {kMax / 2 + 1, kMax / 2 + 1, 1, 1});
  EXPECT_EQ(view_extent(sum_overflow), -1);
  // Max offset = kMax - 1: the +1 still fits.
  const auto edge = make({2, 1, 1, 1}, {kMax - 1, 1, 1, 1});
  EXPECT_EQ(view_extent(edge), kMax);
  // Max offset = kMax: the extent kMax + 1 does not.
  const auto past_edge = make({1, 1, 1, 2}, {1, 1, 1, kMax});
  EXPECT_EQ(view_extent(past_edge), -1);
}

TEST(TensorView, ValidateNamesTheTensor) {
  const std::int64_t big = std::int64_t{1} << 32;
  const StridedView bad[] = {
      make({2, -1, 3, 4}, {12, 12, 4, 1}),          // negative size
      make({2, 1, 3, 4}, {12, 12, -4, 1}),          // negative stride
      make({big, big, 1, 1}, {1, 1, 1, 1}),         // numel overflow
      make({1, 1, 3, 1}, {1, 1, kMax / 2 + 1, 1}),  // offset overflow
      make({1, 1, 1, 2}, {1, 1, 1, kMax}),          // extent overflow
      make({1, 1, 1, 2}, {1, 1, 1, kMax / 8}),      // byte extent overflow
  };
  for (const auto& v : bad) {
    const std::string r = validate_view(v, "kcache");
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.rfind("kcache", 0), 0u) << r;  // starts with the tensor's name
  }
  EXPECT_NE(validate_view(bad[0], "q").find("negative size"), std::string::npos);
  EXPECT_NE(validate_view(bad[1], "q").find("negative stride"), std::string::npos);
  EXPECT_NE(validate_view(bad[2], "q").find("overflow"), std::string::npos);
  // Every index addressed through size_t bytes of an 8-byte type fits.
  EXPECT_EQ(validate_view(make({1, 1, 1, 2}, {1, 1, 1, kMax / 8 - 1}), "q"), "");
  EXPECT_EQ(validate_view(contiguous({2, 3, 4, 5}), "q"), "");
}

TEST(TensorView, NoSelfOverlapAcceptsContiguousPermutedAndGapped) {
  EXPECT_EQ(validate_no_self_overlap(contiguous({2, 3, 4, 5}), "o"), "");
  // bshd: [B, L, H, D] memory viewed as [B, H, L, D].
  EXPECT_EQ(validate_no_self_overlap(make({2, 3, 4, 5}, {60, 5, 15, 1}), "o"), "");
  // Fully permuted: the last logical dimension has the largest stride.
  EXPECT_EQ(validate_no_self_overlap(make({2, 3, 4, 5}, {1, 2, 6, 24}), "o"), "");
  // Gaps between rows and between heads.
  EXPECT_EQ(validate_no_self_overlap(make({2, 3, 4, 5}, {200, 64, 7, 1}), "o"), "");
  // Strides exactly at the span boundary (rows of 5, stride 5) are fine.
  EXPECT_EQ(validate_no_self_overlap(make({1, 1, 4, 5}, {20, 20, 5, 1}), "o"), "");
  // Stride 0 on a size-1 dimension is harmless.
  EXPECT_EQ(validate_no_self_overlap(make({1, 3, 4, 5}, {0, 20, 5, 1}), "o"), "");
}

TEST(TensorView, NoSelfOverlapRejectsBroadcastAndInterleaving) {
  const StridedView bad[] = {
      make({2, 3, 4, 5}, {60, 0, 5, 1}),   // stride 0 on a dimension of size 3
      make({1, 1, 1, 2}, {1, 1, 1, 0}),    // stride 0 on the innermost dimension
      make({1, 1, 4, 5}, {20, 20, 4, 1}),  // rows of 5 elements every 4: overlapping rows
      make({1, 1, 2, 5}, {10, 10, 2, 1}),  // interleaved, offset 2 is (0,2) and (1,0)
      make({1, 2, 2, 2}, {8, 2, 2, 1}),    // two dimensions with the same stride
      // Interleaved strides 2 and 3 over 3x3: the offsets happen to be distinct, but the test
      // is sufficient, not exact, so the view is rejected as possibly overlapping.
      make({1, 1, 3, 3}, {9, 9, 2, 3}),
  };
  for (const auto& v : bad) {
    const std::string r = validate_no_self_overlap(v, "out");
    EXPECT_FALSE(r.empty());
    EXPECT_EQ(r.rfind("out", 0), 0u) << r;
  }
  // The same views are fine as inputs (only outputs must not overlap).
  for (const auto& v : bad) EXPECT_EQ(validate_view(v, "k"), "");
}

}  // namespace
}  // namespace sdpa
