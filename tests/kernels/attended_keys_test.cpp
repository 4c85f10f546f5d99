// The attended-key interval (kernels/attended_keys.hpp), the one definition every kernel and
// the CUDA key schedule use, against the structural masks as docs/SEMANTICS.md states them.
#include "kernels/attended_keys.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "kernels/cpu/sdpa_rows.hpp"
#include "kernels/lowered_problem.hpp"
#include "tests/kernels/spec_mask.hpp"

namespace sdpa {
namespace {

using testing::all_structures;
using testing::describe;
using testing::spec_attends;

TEST(AttendedKeys, IsExactlyTheKeysTheSemanticsAllow) {
  for (const KeyStructure& st : all_structures()) {
    for (std::int64_t lb = 0; lb <= 12; ++lb) {
      for (std::int64_t sb = 0; sb <= 14; ++sb) {
        for (std::int64_t i = 0; i < lb; ++i) {
          const KeyInterval r = attended_keys(st, i, lb, sb);
          ASSERT_GE(r.lo, 0) << describe(st, lb, sb) << " i=" << i;
          ASSERT_LE(r.lo, sb) << describe(st, lb, sb) << " i=" << i;
          ASSERT_GE(r.hi, 0) << describe(st, lb, sb) << " i=" << i;
          ASSERT_LE(r.hi, sb) << describe(st, lb, sb) << " i=" << i;
          for (std::int64_t j = 0; j < sb; ++j) {
            ASSERT_EQ(j >= r.lo && j < r.hi, spec_attends(st, i, j, lb, sb))
                << describe(st, lb, sb) << " i=" << i << " j=" << j;
            ASSERT_EQ(attends(st, i, j, lb, sb), spec_attends(st, i, j, lb, sb))
                << describe(st, lb, sb) << " i=" << i << " j=" << j;
          }
        }
      }
    }
  }
}

// Both ends grow with the row (what the CUDA schedule's first-row / last-row bounds rest on).
TEST(AttendedKeys, BothEndsGrowWithTheRow) {
  for (const KeyStructure& st : all_structures()) {
    for (std::int64_t lb = 1; lb <= 12; ++lb) {
      for (std::int64_t sb = 0; sb <= 14; ++sb) {
        for (std::int64_t i = 1; i < lb; ++i) {
          const KeyInterval a = attended_keys(st, i - 1, lb, sb), b = attended_keys(st, i, lb, sb);
          ASSERT_LE(a.lo, b.lo) << describe(st, lb, sb) << " i=" << i;
          ASSERT_LE(a.hi, b.hi) << describe(st, lb, sb) << " i=" << i;
        }
      }
    }
  }
}

// Window bounds beyond every key restrict nothing and overflow nothing.
TEST(AttendedKeys, HugeWindowBoundsAreUnbounded) {
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  for (bool br : {false, true}) {
    const KeyStructure st{SDPA_CTS_CAUSAL_NONE, true, br, huge, huge};
    for (std::int64_t i = 0; i < 5; ++i) {
      const KeyInterval r = attended_keys(st, i, 5, 9);
      EXPECT_EQ(r.lo, 0) << "i=" << i;
      EXPECT_EQ(r.hi, 9) << "i=" << i;
    }
  }
}

// The CPU kernels' row range is the same interval (empty ranges normalised to hi == lo).
TEST(AttendedKeys, CpuKeyRangeIsTheSameInterval) {
  Problem p;
  p.len_q = 6;
  p.len_kv = 9;
  for (const KeyStructure& st : all_structures()) {
    p.causal = static_cast<Causal>(st.causal);
    p.window = {st.window, st.left, st.right, st.window_br ? Align::bottom_right : Align::top_left};
    const KeyStructure lowered = key_structure(p);
    ASSERT_EQ(lowered.causal, st.causal);
    for (std::int64_t i = 0; i < 6; ++i) {
      const cpu::KeyRange r = cpu::key_range(LoweredProblem(p).params(), i, 6, 9);
      for (std::int64_t j = 0; j < 9; ++j) {
        ASSERT_EQ(j >= r.lo && j < r.hi, spec_attends(st, i, j, 6, 9))
            << describe(st, 6, 9) << " i=" << i << " j=" << j;
      }
      ASSERT_LE(r.lo, r.hi);
    }
  }
}

}  // namespace
}  // namespace sdpa
