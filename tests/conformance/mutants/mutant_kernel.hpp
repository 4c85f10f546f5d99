// A small scalar attention kernel with the structure of real ones, and switchable bugs.
//
// Structure (what production kernels do, so that the bugs they have can be planted):
//   - one query row at a time; keys in blocks of kKeyBlock with an online softmax (running
//     max m, running sum l, accumulator rescaled by exp(m_old - m_new) when m grows);
//   - split-KV for decode-like rows (L_b <= kSplitMaxRows, S_b > kSplitKeys): each split
//     of kSplitKeys keys yields a normalised partial output and its LSE, and the splits
//     are combined with the weights exp(lse_c - lse);
//   - GQA head mapping, causal TL/BR, windows, bool and additive masks with broadcast,
//     padded and packed variable lengths, softcap, dropout with the shared Philox
//     keep-mask (core/philox.hpp), LSE output, any strides.
// Accumulation is in f32 (f64 for f64 problems); P is not rounded below the accumulator.
// With Mutation::none it computes the contract of docs/SEMANTICS.md.
#pragma once

#include <cstdint>

#include "kernels/backend.hpp"
#include "tests/conformance/mutants/mutation.hpp"

namespace sdpa::testing {

inline constexpr std::int64_t kKeyBlock = 32;     // keys per online-softmax block
inline constexpr std::int64_t kSplitKeys = 256;   // keys per split of split-KV
inline constexpr std::int64_t kSplitMaxRows = 4;  // split-KV only for at most this many rows

// Computes O (and LSE when p.want_lse) of a valid problem into `buf`, with bug `m`.
void mutant_attention(const Problem& p, const Buffers& buf, Mutation m);

}  // namespace sdpa::testing
