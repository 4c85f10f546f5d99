// The dropout keep-mask of docs/SEMANTICS.md as the CUDA kernels compute it (the host's is
// core/philox.hpp): Philox4x32-10, counter words 0 and 1 the 64-bit counter, words 2 and 3
// zero, key = seed; keep iff the first output word >= threshold. Plain C++ for the device,
// the emulator and the tests.
#pragma once

#include "kernels/cuda/tile_schedule.hpp"

namespace sdpa::cuda::detail {

SDPA_CTS_HOST_DEVICE inline unsigned philox_word0(unsigned long long counter,
                                                  unsigned long long seed) {
  unsigned c0 = static_cast<unsigned>(counter), c1 = static_cast<unsigned>(counter >> 32), c2 = 0,
           c3 = 0;
  unsigned k0 = static_cast<unsigned>(seed), k1 = static_cast<unsigned>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0;
    const unsigned long long p1 = 0xCD9E8D57ull * c2;
    const unsigned hi0 = static_cast<unsigned>(p0 >> 32), lo0 = static_cast<unsigned>(p0);
    const unsigned hi1 = static_cast<unsigned>(p1 >> 32), lo1 = static_cast<unsigned>(p1);
    const unsigned n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return c0;
}

// The linear index of SEMANTICS.md, ((b * Hq + h) * L + i) * S + j, plus the offset, with
// bh = b * Hq + h and the logical (maximum) lengths L, S.
SDPA_CTS_HOST_DEVICE inline unsigned long long keep_counter(unsigned long long offset, long long bh,
                                                            long long len_q, long long len_kv,
                                                            long long i, long long j) {
  return offset +
         (static_cast<unsigned long long>(bh) * static_cast<unsigned long long>(len_q) +
          static_cast<unsigned long long>(i)) *
             static_cast<unsigned long long>(len_kv) +
         static_cast<unsigned long long>(j);
}

}  // namespace sdpa::cuda::detail
