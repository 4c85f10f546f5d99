// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC 2011), the counter-based generator
// cuRAND and PyTorch use, and the dropout keep-mask of SEMANTICS.md built on it.
#pragma once

#include <array>
#include <cstdint>

namespace sdpa {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

// Ten rounds of Philox4x32 on one 128-bit counter; pure and thread-safe.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// Threshold of the keep test for dropout probability p in [0, 1):
// round-to-nearest of p * 2^32, saturated to 2^32 - 1.
std::uint32_t dropout_threshold(double p);

// keep(b, h, i, j) of SEMANTICS.md:
//   key     = seed (low 32 bits in key[0], high 32 bits in key[1]),
//   counter = offset + ((b * Hq + h) * L + i) * S + j  (64-bit, wrapping), placed in
//             counter words 0 (low half) and 1 (high half), words 2 and 3 zero,
//   keep    = (first output word) >= threshold.
// L and S are the logical (unpacked, maximum) lengths of the problem.
bool dropout_keep(std::uint64_t seed, std::uint64_t offset, std::uint32_t threshold, std::int64_t b,
                  std::int64_t h, std::int64_t i, std::int64_t j, std::int64_t heads_q,
                  std::int64_t len_q, std::int64_t len_kv);

}  // namespace sdpa
