// The CUDA kernels' key scheduling (kernels/cuda/tile_schedule.hpp), checked on the host:
// the same code decides on the GPU which key blocks a row block visits, which split takes
// them, and which blocks skip the per-element mask. A block skipped wrongly drops keys on
// the GPU, and a block that skips the mask wrongly attends masked keys. The oracle is the
// masks as docs/SEMANTICS.md states them (spec_mask.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/tile_schedule.hpp"
#include "tests/kernels/spec_mask.hpp"

namespace sdpa::cuda::detail {
namespace {

using sdpa::testing::all_structures;
using sdpa::testing::describe;
using sdpa::testing::spec_attends;
using Structure = KeyStructure;

// Every allowed (i, j) of a row block lies in exactly one split's blocks, and a block that
// skips the mask holds only allowed pairs of existing keys.
TEST(CudaTileSchedule, BlocksAndSplitsCoverEveryAllowedKeyAndMaskSkipsAreSafe) {
  for (const Structure& st : all_structures()) {
    for (i64 lq : {1, 5, 17, 40}) {
      for (i64 skv : {0, 1, 6, 33, 70}) {
        for (i64 block_m : {4, 16}) {
          for (i64 block_n : {4, 8, 32}) {
            for (i64 splits : {1, 2, 3, 7}) {
              for (i64 i0 = 0; i0 < lq; i0 += block_m) {
                const KeyBlocks all = key_blocks(st, i0, block_m, lq, skv, block_n);
                std::vector<int> owner_count((skv + block_n - 1) / block_n + 1, 0);
                for (i64 s = 0; s < splits; ++s) {
                  KeyBlocks kb = all;
                  split_key_blocks(kb, splits, s);
                  ASSERT_LE(all.begin, kb.begin) << describe(st, lq, skv);
                  ASSERT_LE(kb.end, all.end) << describe(st, lq, skv);
                  for (i64 nb = kb.begin; nb < kb.end; ++nb) {
                    ++owner_count[static_cast<std::size_t>(nb)];
                    const i64 j0 = nb * block_n;
                    if (block_needs_mask(kb, j0, block_n, skv)) continue;
                    for (i64 i = i0; i < i0 + block_m; ++i) {
                      for (i64 j = j0; j < j0 + block_n; ++j) {
                        ASSERT_TRUE(i < lq && j < skv && spec_attends(st, i, j, lq, skv))
                            << describe(st, lq, skv) << " block_m=" << block_m
                            << " block_n=" << block_n << " i0=" << i0 << " j0=" << j0
                            << ": the mask is skipped but (" << i << ", " << j
                            << ") is not allowed";
                      }
                    }
                  }
                }
                for (i64 i = i0; i < i0 + block_m && i < lq; ++i) {
                  for (i64 j = 0; j < skv; ++j) {
                    if (!spec_attends(st, i, j, lq, skv)) continue;
                    ASSERT_EQ(owner_count[static_cast<std::size_t>(j / block_n)], 1)
                        << describe(st, lq, skv) << " block_m=" << block_m << " block_n=" << block_n
                        << " splits=" << splits << " i=" << i << " j=" << j
                        << ": an allowed key's block is visited "
                        << owner_count[static_cast<std::size_t>(j / block_n)] << " times";
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(CudaTileSchedule, FullInteriorBlocksSkipTheMask) {
  // No mask, every row and key valid: no block needs the per-element mask.
  const Structure none{0, false, false, -1, -1};
  const KeyBlocks kb = key_blocks(none, 0, 128, 256, 256, 64);
  EXPECT_EQ(kb.begin, 0);
  EXPECT_EQ(kb.end, 4);
  for (i64 nb = 0; nb < 4; ++nb) EXPECT_FALSE(block_needs_mask(kb, nb * 64, 64, 256)) << nb;
  // Causal top-left, rows 128..255: blocks 0 and 1 lie below every row's diagonal, blocks 2
  // and 3 cross it.
  const Structure causal{1, false, false, -1, -1};
  const KeyBlocks kc = key_blocks(causal, 128, 128, 256, 256, 64);
  EXPECT_EQ(kc.end, 4);
  EXPECT_FALSE(block_needs_mask(kc, 0, 64, 256));
  EXPECT_FALSE(block_needs_mask(kc, 64, 64, 256));
  EXPECT_TRUE(block_needs_mask(kc, 128, 64, 256));
  // Rows 0..127 of the same problem never visit keys past 127.
  EXPECT_EQ(key_blocks(causal, 0, 128, 256, 256, 64).end, 2);
  // A partial last key block always needs the mask.
  EXPECT_TRUE(block_needs_mask(key_blocks(none, 0, 128, 256, 250, 64), 192, 64, 250));
}

TEST(CudaTileSchedule, SplitCount) {
  EXPECT_EQ(choose_splits(132, 128, 132, 64), 1);  // the tiles fill the device
  EXPECT_EQ(choose_splits(32, 128, 132, 64), 9);   // decode B1 H32 S=8192 on 132 SMs
  EXPECT_EQ(choose_splits(32, 8, 132, 64), 2);     // at least four key blocks per split
  EXPECT_EQ(choose_splits(1, 4096, 132, 64), 64);  // at most the maximum
  EXPECT_EQ(choose_splits(32, 3, 132, 64), 1);
  EXPECT_EQ(choose_splits(32, 128, 0, 64), 1);  // unknown device: no split
}

}  // namespace
}  // namespace sdpa::cuda::detail
