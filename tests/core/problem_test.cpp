// Tests of the Problem descriptor: validation rules, layouts, views and packed offsets
// (core/problem.hpp).
#include "core/problem.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace sdpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A valid, non-trivial problem: GQA, Dv != Dqk, contiguous bhsd.
Problem base() {
  Problem p;
  p.batch = 2;
  p.heads_q = 8;
  p.heads_kv = 2;
  p.len_q = 5;
  p.len_kv = 7;
  p.head_dim_qk = 16;
  p.head_dim_v = 8;
  p.dtype = DType::f16;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  return p;
}

// The reason must name the field first ("field: ...").
::testing::AssertionResult rejected_for(const Problem& p, const std::string& field) {
  const std::string r = validate(p);
  if (r.empty()) return ::testing::AssertionFailure() << "accepted, expected '" << field << "'";
  if (r.rfind(field + ":", 0) != 0) {
    return ::testing::AssertionFailure() << "reason '" << r << "' does not name '" << field << "'";
  }
  return ::testing::AssertionSuccess();
}

TEST(Problem, ValidProblems) {
  EXPECT_EQ(validate(Problem{}), "");
  EXPECT_EQ(validate(base()), "");
  Problem p = base();
  p.causal = Causal::bottom_right;
  p.window = {true, 3, 0, Align::bottom_right};
  p.mask = MaskKind::additive;
  p.mask_broadcast = kBroadcastB | kBroadcastH;
  p.seqlens_q = {5, 0};
  p.seqlens_kv = {0, 7};
  p.softcap = 30;
  p.scale = -0.25;
  p.dropout_p = 0.999;
  p.want_lse = p.want_weights = true;
  EXPECT_EQ(validate(p), "");
  p.scale = 0.0;  // any finite scale
  EXPECT_EQ(validate(p), "");
  apply_layout(p, LayoutKind::bshd, 3, 5);
  EXPECT_EQ(validate(p), "");
  // Inputs may broadcast (stride 0), e.g. K and V expanded over heads.
  Problem b = base();
  b.k.stride[1] = 0;
  b.v.stride[1] = 0;
  EXPECT_EQ(validate(b), "");
}

TEST(Problem, EmptyProblemsAreValid) {
  for (int k = 0; k < 7; ++k) {
    Problem p = base();
    std::int64_t* dims[] = {&p.batch,  &p.heads_q,     &p.heads_kv,  &p.len_q,
                            &p.len_kv, &p.head_dim_qk, &p.head_dim_v};
    *dims[k] = 0;
    if (k == 2) p.heads_q = 0;  // hkv = 0 needs hq = 0 (hkv = 0 with hq > 0 is invalid)
    apply_layout(p, LayoutKind::bhsd, 0, 0);
    EXPECT_EQ(validate(p), "") << k;
    apply_layout(p, LayoutKind::bshd, 1, 2);
    EXPECT_EQ(validate(p), "") << k;
  }
  Problem none = base();
  none.heads_q = 0;
  none.heads_kv = 3;  // 0 query heads: 0 is a multiple of any number of kv heads
  apply_layout(none, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(validate(none), "");
  // All dimensions zero at once.
  Problem zero;
  zero.batch = zero.heads_q = zero.heads_kv = zero.len_q = zero.len_kv = 0;
  zero.head_dim_qk = zero.head_dim_v = 0;
  apply_layout(zero, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(validate(zero), "");
  Problem packed = base();
  packed.packed = true;
  packed.seqlens_q = {0, 0};
  packed.seqlens_kv = {0, 0};
  apply_layout(packed, LayoutKind::bshd, 0, 0);
  EXPECT_EQ(validate(packed), "");
}

TEST(Problem, NegativeDimensions) {
  const char* names[] = {"b", "hq", "hkv", "l", "s", "dqk", "dv"};
  for (int k = 0; k < 7; ++k) {
    Problem p = base();
    std::int64_t* dims[] = {&p.batch,  &p.heads_q,     &p.heads_kv,  &p.len_q,
                            &p.len_kv, &p.head_dim_qk, &p.head_dim_v};
    *dims[k] = -1;
    EXPECT_TRUE(rejected_for(p, names[k])) << names[k];
  }
}

TEST(Problem, Heads) {
  Problem p = base();
  p.heads_q = 6;
  p.heads_kv = 4;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_TRUE(rejected_for(p, "hkv"));
  p.heads_kv = 0;
  EXPECT_TRUE(rejected_for(p, "hkv"));
  p.heads_kv = 3;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(validate(p), "");
  p.heads_kv = 6;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(validate(p), "");
  p.heads_kv = 12;  // more kv heads than query heads
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_TRUE(rejected_for(p, "hkv"));
}

TEST(Problem, Softcap) {
  Problem p = base();
  for (double c : {-1.0, -1e-300, kInf, -kInf, kNaN}) {
    p.softcap = c;
    EXPECT_TRUE(rejected_for(p, "softcap")) << c;
  }
  p.softcap = 0;
  EXPECT_EQ(validate(p), "");
  p.softcap = 1e-300;
  EXPECT_EQ(validate(p), "");
}

TEST(Problem, Scale) {
  Problem p = base();
  for (double s : {kInf, -kInf, kNaN}) {
    p.scale = s;
    EXPECT_TRUE(rejected_for(p, "scale")) << s;
  }
  for (double s : {-1e300, -1.0, 0.0, 1e-300, 1e300}) {
    p.scale = s;
    EXPECT_EQ(validate(p), "") << s;
  }
}

TEST(Problem, EffectiveScale) {
  Problem p = base();
  EXPECT_EQ(effective_scale(p), 0.25);  // 1 / sqrt(16)
  p.head_dim_qk = 3;
  EXPECT_EQ(effective_scale(p), 1.0 / std::sqrt(3.0));
  p.scale = -2.0;
  EXPECT_EQ(effective_scale(p), -2.0);
  p.scale = 0.0;
  EXPECT_EQ(effective_scale(p), 0.0);
}

// Whether x is the double nearest to 1 / sqrt(d), decided exactly: with x = m 2^e (m odd or
// even, 53 bits), the two midpoints (2m -+ 1) 2^(e-1) must bracket 1 / sqrt(d), i.e.
// (2m - 1)^2 d < 2^(2 - 2e) < (2m + 1)^2 d, in 128-bit integers (d <= 1024 keeps every product
// below 2^120).
bool nearest_to_inverse_sqrt(double x, std::int64_t d) {
  int e = 0;
  const double frac = std::frexp(x, &e);  // x = frac 2^e, frac in [0.5, 1)
  const auto m = static_cast<unsigned __int128>(std::ldexp(frac, 53));
  e -= 53;  // x = m 2^e
  const int shift = 2 - 2 * e;
  const unsigned __int128 one = static_cast<unsigned __int128>(1) << shift;
  const auto lo = (2 * m - 1) * (2 * m - 1) * static_cast<unsigned __int128>(d);
  const auto hi = (2 * m + 1) * (2 * m + 1) * static_cast<unsigned __int128>(d);
  return lo < one && one < hi;
}

// The default scale is 1.0 / sqrt(Dqk) evaluated in f64 with two roundings (the square root,
// then the quotient), as PyTorch computes it; docs/SEMANTICS.md step 2 says so and names the
// head dims where that is one ulp from the correctly rounded value. Both facts pinned here.
TEST(Problem, DefaultScaleIsTwoRoundingsAsDocumented) {
  Problem p = base();
  p.scale.reset();
  std::vector<std::int64_t> not_nearest;
  for (std::int64_t d = 1; d <= 1024; ++d) {
    p.head_dim_qk = d;
    const double x = effective_scale(p);
    EXPECT_EQ(x, 1.0 / std::sqrt(static_cast<double>(d))) << "Dqk = " << d;
    const double up = std::nextafter(x, 1.0), down = std::nextafter(x, 0.0);
    // One ulp at most from the nearest: x or a neighbour is the nearest double.
    EXPECT_TRUE(nearest_to_inverse_sqrt(x, d) || nearest_to_inverse_sqrt(up, d) ||
                nearest_to_inverse_sqrt(down, d))
        << "Dqk = " << d;
    if (!nearest_to_inverse_sqrt(x, d)) not_nearest.push_back(d);
  }
  ASSERT_EQ(not_nearest.size(), 218u);
  EXPECT_EQ((std::vector<std::int64_t>(not_nearest.begin(), not_nearest.begin() + 7)),
            (std::vector<std::int64_t>{2, 3, 6, 7, 8, 12, 15}));
  for (std::int64_t d : {32, 128})
    EXPECT_NE(std::find(not_nearest.begin(), not_nearest.end(), d), not_nearest.end()) << d;
  for (std::int64_t d : {1, 4, 16, 64, 256})  // exact powers: no rounding at all
    EXPECT_EQ(std::find(not_nearest.begin(), not_nearest.end(), d), not_nearest.end()) << d;
}

TEST(Problem, DropoutProbability) {
  Problem p = base();
  for (double d : {-0.1, -1e-300, 1.0, 1.5, kInf, kNaN}) {
    p.dropout_p = d;
    EXPECT_TRUE(rejected_for(p, "p")) << d;
  }
  for (double d : {0.0, 1e-300, 0.5, std::nextafter(1.0, 0.0)}) {
    p.dropout_p = d;
    EXPECT_EQ(validate(p), "") << d;
  }
}

TEST(Problem, MaskBroadcast) {
  Problem p = base();
  p.mask_broadcast = kBroadcastH;
  EXPECT_TRUE(rejected_for(p, "mbc"));  // no mask tensor
  p.mask = MaskKind::boolean;
  EXPECT_EQ(validate(p), "");
  p.mask_broadcast = 15;
  EXPECT_EQ(validate(p), "");
  p.mask_broadcast = 16;
  EXPECT_TRUE(rejected_for(p, "mbc"));
  p.mask_broadcast = 0;
  p.mask = MaskKind::additive;
  EXPECT_EQ(validate(p), "");
}

TEST(Problem, MaskView) {
  Problem p = base();  // B 2, Hq 8, L 5, S 7
  p.mask = MaskKind::boolean;
  StridedView v = mask_view(p);
  EXPECT_EQ(v.shape, (std::array<std::int64_t, 4>{2, 8, 5, 7}));
  EXPECT_EQ(v.stride, (std::array<std::int64_t, 4>{280, 35, 7, 1}));
  p.mask_broadcast = kBroadcastB | kBroadcastL;  // [1, Hq, 1, S] in memory
  v = mask_view(p);
  EXPECT_EQ(v.stride, (std::array<std::int64_t, 4>{0, 7, 0, 1}));
  p.mask_broadcast = kBroadcastH | kBroadcastS;
  v = mask_view(p);
  EXPECT_EQ(v.stride, (std::array<std::int64_t, 4>{5, 0, 1, 0}));
  p.mask_broadcast = 15;
  EXPECT_EQ(mask_view(p).stride, (std::array<std::int64_t, 4>{0, 0, 0, 0}));
}

TEST(Problem, SequenceLengths) {
  Problem p = base();  // B = 2, L = 5, S = 7
  p.seqlens_q = {5};
  EXPECT_TRUE(rejected_for(p, "qlen"));  // wrong count
  p.seqlens_q = {5, 5, 5};
  EXPECT_TRUE(rejected_for(p, "qlen"));
  p.seqlens_q = {6, 0};
  EXPECT_TRUE(rejected_for(p, "qlen"));  // > L
  p.seqlens_q = {0, -1};
  EXPECT_TRUE(rejected_for(p, "qlen"));  // < 0
  p.seqlens_q = {0, 5};
  EXPECT_EQ(validate(p), "");
  EXPECT_EQ(seqlen_q(p, 0), 0);
  EXPECT_EQ(seqlen_q(p, 1), 5);
  EXPECT_EQ(seqlen_kv(p, 1), 7);  // empty list: all S
  p.seqlens_kv = {1};
  EXPECT_TRUE(rejected_for(p, "kvlen"));
  p.seqlens_kv = {8, 1};
  EXPECT_TRUE(rejected_for(p, "kvlen"));
  p.seqlens_kv = {3, -2};
  EXPECT_TRUE(rejected_for(p, "kvlen"));
  p.seqlens_kv = {7, 0};
  EXPECT_EQ(validate(p), "");
  EXPECT_EQ(seqlen_kv(p, 0), 7);
  EXPECT_EQ(seqlen_kv(p, 1), 0);
}

TEST(Problem, PackedRowsAndOffsets) {
  Problem p = base();  // B = 2, L = 5, S = 7
  p.batch = 3;
  p.seqlens_q = {3, 0, 5};
  p.seqlens_kv = {7, 2, 1};
  EXPECT_EQ(cu_seqlens_q(p), (std::vector<std::int64_t>{0, 3, 3, 8}));
  EXPECT_EQ(cu_seqlens_kv(p), (std::vector<std::int64_t>{0, 7, 9, 10}));
  EXPECT_EQ(rows_q(p), 5);  // not packed: L
  EXPECT_EQ(rows_kv(p), 7);
  p.packed = true;
  EXPECT_EQ(rows_q(p), 8);
  EXPECT_EQ(rows_kv(p), 10);
  apply_layout(p, LayoutKind::bshd, 0, 0);
  EXPECT_EQ(validate(p), "");
  // Views: the batch dimension disappears (shape 1, stride 0), rows are the packed totals.
  const StridedView q = q_view(p);
  EXPECT_EQ(q.shape, (std::array<std::int64_t, 4>{1, 8, 8, 16}));
  EXPECT_EQ(q.stride, (std::array<std::int64_t, 4>{0, 16, 128, 1}));
  for (const TensorLayout* t : {&p.q, &p.k, &p.v, &p.o}) EXPECT_EQ(t->stride[0], 0);  // unused
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(p.q.stride, (std::array<std::int64_t, 4>{0, 8 * 16, 16, 1}));
  EXPECT_EQ(k_view(p).shape, (std::array<std::int64_t, 4>{1, 2, 10, 16}));
  EXPECT_EQ(v_view(p).shape, (std::array<std::int64_t, 4>{1, 2, 10, 8}));
  EXPECT_EQ(o_view(p).shape, (std::array<std::int64_t, 4>{1, 8, 8, 8}));
  // Without explicit lengths every batch element has the full L / S.
  Problem f = base();
  f.packed = true;
  EXPECT_EQ(cu_seqlens_q(f), (std::vector<std::int64_t>{0, 5, 10}));
  EXPECT_EQ(cu_seqlens_kv(f), (std::vector<std::int64_t>{0, 7, 14}));
  EXPECT_EQ(rows_q(f), 10);
  EXPECT_EQ(rows_kv(f), 14);
  // Packed rows and a mask tensor do not mix.
  p.mask = MaskKind::boolean;
  EXPECT_TRUE(rejected_for(p, "mask"));
}

// With a list of the wrong size (INVALID, reported by validate), the packed offsets and row
// totals use the entries that exist and never read past the list.
TEST(Problem, PackedOffsetsWithAWrongLengthCountStayInBounds) {
  Problem p = base();  // B = 2
  p.packed = true;
  p.batch = 4;
  p.seqlens_q = {3, 2};
  p.seqlens_kv = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(cu_seqlens_q(p), (std::vector<std::int64_t>{0, 3, 5, 5, 5}));
  EXPECT_EQ(cu_seqlens_kv(p), (std::vector<std::int64_t>{0, 1, 3, 6, 10}));
  EXPECT_EQ(rows_q(p), 5);
  EXPECT_EQ(rows_kv(p), 10);
  apply_layout(p, LayoutKind::bshd, 0, 0);
  EXPECT_TRUE(rejected_for(p, "qlen"));
  p.seqlens_q.clear();
  EXPECT_TRUE(rejected_for(p, "kvlen"));
  // A negative batch gives a single zero offset, not an allocation of 2^64 entries.
  p.batch = -3;
  EXPECT_EQ(cu_seqlens_q(p), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(rows_q(p), 0);
  EXPECT_TRUE(rejected_for(p, "b"));
}

// Row totals of a huge packed batch are computed without building the offsets.
TEST(Problem, HugePackedBatchIsRejectedWithoutAllocating) {
  Problem p = base();
  p.packed = true;
  p.batch = std::int64_t{1} << 40;
  p.len_q = p.len_kv = std::int64_t{1} << 30;
  EXPECT_EQ(rows_q(p), std::numeric_limits<std::int64_t>::max());  // saturated
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_TRUE(rejected_for(p, "packed"));
}

TEST(Problem, PackedLengthsMustFitInt32) {
  Problem p = base();
  p.packed = true;
  p.batch = 2;
  p.heads_q = p.heads_kv = 1;
  p.head_dim_qk = p.head_dim_v = 1;
  p.len_q = std::int64_t{1} << 31;  // one past INT32_MAX
  p.len_kv = 1;
  p.seqlens_q = {0, 0};
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_TRUE(rejected_for(p, "packed"));
  p.len_q = 1 << 30;
  p.seqlens_q = {1 << 30, 1 << 30};  // total 2^31 rows
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_TRUE(rejected_for(p, "packed"));
  p.seqlens_q = {1 << 30, (1 << 30) - 1};
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(validate(p), "");
}

TEST(Problem, ApplyLayoutBhsd) {
  Problem p = base();  // B 2, Hq 8, Hkv 2, L 5, S 7, Dqk 16, Dv 8
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(p.q.stride, contiguous_strides({2, 8, 5, 16}));
  EXPECT_EQ(p.k.stride, contiguous_strides({2, 2, 7, 16}));
  EXPECT_EQ(p.v.stride, contiguous_strides({2, 2, 7, 8}));
  EXPECT_EQ(p.o.stride, contiguous_strides({2, 8, 5, 8}));
  EXPECT_EQ(p.q.base_offset, 0);
  apply_layout(p, LayoutKind::bhsd, 3, 11);  // rows of D + 3
  EXPECT_EQ(p.q.stride, (std::array<std::int64_t, 4>{8 * 5 * 19, 5 * 19, 19, 1}));
  EXPECT_EQ(p.k.stride, (std::array<std::int64_t, 4>{2 * 7 * 19, 7 * 19, 19, 1}));
  EXPECT_EQ(p.v.stride, (std::array<std::int64_t, 4>{2 * 7 * 11, 7 * 11, 11, 1}));
  EXPECT_EQ(p.o.stride, (std::array<std::int64_t, 4>{8 * 5 * 11, 5 * 11, 11, 1}));
  for (const TensorLayout* t : {&p.q, &p.k, &p.v, &p.o}) EXPECT_EQ(t->base_offset, 11);
  EXPECT_EQ(validate(p), "");
}

TEST(Problem, ApplyLayoutBshd) {
  Problem p = base();
  apply_layout(p, LayoutKind::bshd, 0, 0);
  // [B, rows, H, D] memory: row stride H*D, head stride D.
  EXPECT_EQ(p.q.stride, (std::array<std::int64_t, 4>{5 * 8 * 16, 16, 8 * 16, 1}));
  EXPECT_EQ(p.k.stride, (std::array<std::int64_t, 4>{7 * 2 * 16, 16, 2 * 16, 1}));
  EXPECT_EQ(p.v.stride, (std::array<std::int64_t, 4>{7 * 2 * 8, 8, 2 * 8, 1}));
  EXPECT_EQ(p.o.stride, (std::array<std::int64_t, 4>{5 * 8 * 8, 8, 8 * 8, 1}));
  apply_layout(p, LayoutKind::bshd, 2, 1);  // rows of H*D + 2
  EXPECT_EQ(p.q.stride, (std::array<std::int64_t, 4>{5 * 130, 16, 130, 1}));
  EXPECT_EQ(p.o.stride, (std::array<std::int64_t, 4>{5 * 66, 8, 66, 1}));
  EXPECT_EQ(p.v.base_offset, 1);
  EXPECT_EQ(validate(p), "");
  // The views see exactly these strides with the logical [B, H, rows, D] shape.
  EXPECT_EQ(q_view(p).shape, (std::array<std::int64_t, 4>{2, 8, 5, 16}));
  EXPECT_EQ(q_view(p).stride, p.q.stride);
  EXPECT_EQ(o_view(p).shape, (std::array<std::int64_t, 4>{2, 8, 5, 8}));
}

TEST(Problem, NegativeStridesAndOffsets) {
  const char* names[] = {"q", "k", "v", "o"};
  for (int t = 0; t < 4; ++t) {
    for (int d = 0; d < 4; ++d) {
      Problem p = base();
      TensorLayout* layouts[] = {&p.q, &p.k, &p.v, &p.o};
      layouts[t]->stride[d] = -1;
      EXPECT_TRUE(rejected_for(p, names[t])) << names[t] << " " << d;
    }
    Problem p = base();
    TensorLayout* layouts[] = {&p.q, &p.k, &p.v, &p.o};
    layouts[t]->base_offset = -1;
    EXPECT_TRUE(rejected_for(p, names[t])) << names[t];
  }
}

TEST(Problem, OutputMustNotOverlapItself) {
  Problem p = base();
  p.o.stride[1] = 0;  // all query heads write the same memory
  EXPECT_TRUE(rejected_for(p, "o"));
  p = base();
  p.o.stride[2] = 4;  // rows of Dv = 8 every 4 elements
  EXPECT_TRUE(rejected_for(p, "o"));
  p = base();
  p.o.stride[0] = p.o.stride[1];  // batch and heads interleave
  EXPECT_TRUE(rejected_for(p, "o"));
  // The same patterns are legal for inputs.
  p = base();
  p.q.stride[1] = 0;
  p.k.stride[2] = 4;
  EXPECT_EQ(validate(p), "");
}

TEST(Problem, HugeShapesOverflow) {
  Problem p = base();
  p.batch = std::int64_t{1} << 40;
  p.len_q = std::int64_t{1} << 30;
  apply_layout(p, LayoutKind::bhsd, 0, 0);  // Q has 2^77 elements
  EXPECT_TRUE(rejected_for(p, "q"));
  // Strides that fit but whose largest offset does not.
  p = base();
  p.q.stride[0] = std::numeric_limits<std::int64_t>::max() / 2;
  EXPECT_TRUE(rejected_for(p, "q"));
  // Each tensor fits, but the [B, Hq, L, S] attention weights do not.
  p = base();
  p.batch = 1;
  p.heads_q = p.heads_kv = 1;
  p.head_dim_qk = p.head_dim_v = 1;
  p.len_q = p.len_kv = std::int64_t{1} << 31;
  p.q.stride = {0, 0, 1, 1};
  p.k.stride = {0, 0, 1, 1};
  p.v.stride = {0, 0, 1, 1};
  p.o.stride = {0, 0, 1, 1};
  EXPECT_TRUE(rejected_for(p, "weights"));
  // A mask whose [B, Hq, L, S] shape overflows while Q, K, V and O fit.
  p = base();
  p.batch = 1;
  p.heads_q = std::int64_t{1} << 18;  // [B, Hq, L, S] = 2^62 elements: no room for 8 bytes each
  p.heads_kv = 1;
  p.len_q = p.len_kv = std::int64_t{1} << 22;
  p.head_dim_qk = p.head_dim_v = 1;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  p.mask = MaskKind::boolean;
  EXPECT_TRUE(rejected_for(p, "mask"));
  p.mask_broadcast = kBroadcastH;  // [1, 1, L, S] in memory: fits, but the weights do not
  EXPECT_TRUE(rejected_for(p, "weights"));
  // apply_layout saturates instead of overflowing; the saturated strides are rejected.
  p = base();
  p.len_q = std::int64_t{1} << 62;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  EXPECT_EQ(p.q.stride[0], std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(p.q.stride[1], std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(validate(p).empty());
  apply_layout(p, LayoutKind::bshd, std::numeric_limits<std::int64_t>::max(), 0);
  EXPECT_EQ(p.q.stride[2], std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(validate(p).empty());
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

TEST(Problem, BackwardNeedsDistinctGradientPlaces) {
  // With or without the LSE (a backend whose backward reads it declines a case without it).
  Problem p = base();
  p.backward = true;
  EXPECT_EQ(validate(p), "");
  p.want_lse = true;
  EXPECT_EQ(validate(p), "");
  // K broadcast over heads (stride 0) is a valid input, but dK cannot be written there.
  p.k.stride[1] = 0;
  EXPECT_TRUE(rejected_for(p, "bwd"));
  p.backward = false;
  EXPECT_EQ(validate(p), "");
}

TEST(Problem, DBiasNeedsTheBackwardAndAnAdditiveMask) {
  Problem p = base();
  p.bias_grad = true;
  EXPECT_TRUE(rejected_for(p, "dbias"));  // no bwd
  p.backward = true;
  EXPECT_TRUE(rejected_for(p, "dbias"));  // no mask
  p.mask = MaskKind::boolean;
  EXPECT_TRUE(rejected_for(p, "dbias"));  // a boolean mask has no gradient
  p.mask = MaskKind::additive;
  EXPECT_EQ(validate(p), "");
  // d bias has the mask's storage: one element per stored mask element.
  p.mask_broadcast = kBroadcastB | kBroadcastH;
  EXPECT_EQ(mask_elements(p), p.len_q * p.len_kv);
  p.mask_broadcast = 0;
  EXPECT_EQ(mask_elements(p), p.batch * p.heads_q * p.len_q * p.len_kv);
}

}  // namespace
}  // namespace sdpa
