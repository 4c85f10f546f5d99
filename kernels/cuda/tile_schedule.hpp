// Which keys a tile of query rows visits in the fused CUDA kernels (flash_kernel.cu,
// mem_efficient_kernel.cu): the structural masks of docs/SEMANTICS.md, the key range they
// leave a row, the key blocks a row block needs, their split among split-KV blocks, and
// whether a block needs the per-element mask. Plain C++ that nvcc compiles for the device
// and the host tests compile as it is (tests/kernels/cuda_tile_schedule_test.cpp), so the
// GPU kernels' scheduling is checked on machines without a GPU.
#pragma once

#include <cstdint>

#include "kernels/attended_keys.hpp"

namespace sdpa::cuda::detail {

using i64 = long long;
using sdpa::attended_keys;
using sdpa::attends;
using sdpa::KeyInterval;
using sdpa::KeyStructure;

// The key blocks of `block_n` keys a block of `block_m` query rows from row i0 visits.
struct KeyBlocks {
  i64 begin = 0, end = 0;  // blocks [begin, end); empty when no row attends any key
  bool rows_full = false;  // every row of the block is a valid query row (i0 + block_m <= lq)
  i64 lo_last = 0;         // first allowed key of the block's last valid row
  i64 hi_first = -1;       // last allowed key of its first row
};

// Both ends of a row's attended interval grow with the row, so the first and last rows
// bound the block's keys.
SDPA_CTS_HOST_DEVICE inline KeyBlocks key_blocks(const KeyStructure& st, i64 i0, i64 block_m,
                                                 i64 lq, i64 skv, i64 block_n) {
  KeyBlocks kb;
  const i64 i_end = i0 + block_m < lq ? i0 + block_m : lq;
  if (i0 >= i_end || skv <= 0) return kb;
  const KeyInterval first_row = attended_keys(st, i0, lq, skv);
  const KeyInterval last_row = attended_keys(st, i_end - 1, lq, skv);
  const i64 first = first_row.lo, last = last_row.hi - 1;
  if (first <= last) {
    kb.begin = first / block_n;
    kb.end = last / block_n + 1;
  }
  kb.rows_full = i0 + block_m <= lq;
  kb.lo_last = last_row.lo;
  kb.hi_first = first_row.hi - 1;
  return kb;
}

// Split `split` of `splits` takes an equal share of the blocks, in order.
SDPA_CTS_HOST_DEVICE inline void split_key_blocks(KeyBlocks& kb, i64 splits, i64 split) {
  if (splits <= 1) return;
  const i64 per = (kb.end - kb.begin + splits - 1) / splits;
  const i64 begin = kb.begin + split * per < kb.end ? kb.begin + split * per : kb.end;
  kb.end = begin + per < kb.end ? begin + per : kb.end;
  kb.begin = begin;
}

// Whether the block of keys [j0, j0 + block_n) needs the per-element mask: false only when
// every key exists and every row of the row block may attend every key.
SDPA_CTS_HOST_DEVICE inline bool block_needs_mask(const KeyBlocks& kb, i64 j0, i64 block_n,
                                                  i64 skv) {
  return !(kb.rows_full && j0 + block_n <= skv && j0 >= kb.lo_last &&
           j0 + block_n - 1 <= kb.hi_first);
}

// Split-KV count: split when the (b, h, row-block) tiles fill less than two waves of the
// device, keeping at least four key blocks per split, at most `max_splits`.
inline int choose_splits(i64 tiles, i64 key_blocks, int sm_count, int max_splits) {
  if (tiles <= 0 || sm_count <= 0 || tiles >= sm_count) return 1;
  i64 n = (2 * static_cast<i64>(sm_count) + tiles - 1) / tiles;
  if (n > key_blocks / 4) n = key_blocks / 4;
  if (n > max_splits) n = max_splits;
  return n < 1 ? 1 : static_cast<int>(n);
}

// Overflow guard of the fused kernels (as the CPU kernels' kernels/cpu/overflow_guard.hpp):
// the unnormalised sum acc = sum_j p_j v_j (p_j <= 1) may leave the f32 range by up to a
// factor of the key count although acc / l never does. A row whose output came out
// non-finite while its softmax statistics are finite is computed again with every p_j
// scaled by 2^-k, 2^k >= 2 S (exact: a power of two), and only those rows are rewritten.
inline int overflow_shift(i64 keys) {
  int k = 1;
  while (k < 62 && (i64(1) << k) < 2 * keys) ++k;
  return k;
}

}  // namespace sdpa::cuda::detail
