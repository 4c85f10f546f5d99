// The attended-key interval of a query row: the one definition of which keys the structural
// masks (causal, sliding window) and key padding leave a row (docs/SEMANTICS.md, step 5).
// Every kernel uses it (the CPU kernels, the CUDA kernels through nvcc and their emulator)
// and so does pair coverage, so a rule changes in one place. Plain C++ with no dependency
// beyond the C params header, so that nvcc compiles it for the device. The functions have
// internal linkage (static): the per-ISA translation units of the CPU kernels include this
// header with their own instruction-set flags, and the linker must never merge one target's
// copy into another's.
#pragma once

#include <stdint.h>

#include "sdpa_cts/params.h"

#if defined(__CUDACC__)
#define SDPA_CTS_HOST_DEVICE __host__ __device__
#else
#define SDPA_CTS_HOST_DEVICE
#endif

namespace sdpa {

// The structural masks of a problem, by value (in CUDA kernel arguments too).
struct KeyStructure {
  int causal;      // SDPA_CTS_CAUSAL_*
  bool window;     // the sliding window applies
  bool window_br;  // the window is aligned to the bottom-right diagonal
  int64_t left;    // keys allowed before the diagonal, < 0 = unbounded
  int64_t right;   // keys allowed after the diagonal, < 0 = unbounded
};

static inline SDPA_CTS_HOST_DEVICE KeyStructure key_structure(const sdpa_cts_params& p) {
  return {p.causal, p.window != 0, p.window_align == SDPA_CTS_ALIGN_BOTTOM_RIGHT, p.window_left,
          p.window_right};
}

// Keys [lo, hi) of a row: an interval, because every structural mask bounds j by i plus a
// constant on one side. Each end is clamped to [0, sb] on its own and nothing more: the
// interval is empty when hi <= lo, and then hi is still the row's causal / right bound (so
// the first and last rows of a block bound the block's keys, tile_schedule.hpp).
struct KeyInterval {
  int64_t lo;  // first attended key
  int64_t hi;  // one past the last
};

// The keys query row i of a batch element with lb valid queries and sb valid keys attends,
// within [0, sb] (see KeyInterval). Bottom-right alignment puts the diagonal at offset sb - lb.
// Window bounds beyond every key restrict nothing (and are not added, so no sum overflows).
static inline SDPA_CTS_HOST_DEVICE KeyInterval attended_keys(const KeyStructure& st, int64_t i,
                                                             int64_t lb, int64_t sb) {
  const int64_t br = sb - lb;
  int64_t lo = 0, hi = sb;
  if (st.causal == SDPA_CTS_CAUSAL_TOP_LEFT && i + 1 < hi) hi = i + 1;
  if (st.causal == SDPA_CTS_CAUSAL_BOTTOM_RIGHT && i + br + 1 < hi) hi = i + br + 1;
  if (st.window) {
    const int64_t off = st.window_br ? br : 0;
    const int64_t far = sb + lb + 1;
    if (st.left >= 0 && st.left < far && i + off - st.left > lo) lo = i + off - st.left;
    if (st.right >= 0 && st.right < far && i + off + st.right + 1 < hi) hi = i + off + st.right + 1;
  }
  if (lo > sb) lo = sb;
  if (hi < 0) hi = 0;
  return {lo, hi};
}

// Whether query i attends key j (0 <= j < sb): j inside the row's interval.
static inline SDPA_CTS_HOST_DEVICE bool attends(const KeyStructure& st, int64_t i, int64_t j,
                                                int64_t lb, int64_t sb) {
  const KeyInterval r = attended_keys(st, i, lb, sb);
  return j >= r.lo && j < r.hi;
}

}  // namespace sdpa
