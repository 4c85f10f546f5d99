// A case from fuzzer bytes: the shape first, through the sampler's own choices (so every
// decoded case is valid and every feature of the contract is reachable), then the data
// recipe, which picks the adversarial generators (huge and tiny logits, NaN and infinities,
// subnormals, masked blocks) as often as the plain ones. Sizes stay small (kFuzzMaxLen,
// kFuzzMaxWork) so that one execution takes milliseconds, except that one input in eight
// (its last field) is decode-like with kFuzzLongKeys more keys, under a larger budget:
// split-KV kernels split only above 256 keys, and a fuzzer that never gets there cannot
// find their bugs.
#pragma once

#include "conformance/engine/case_sampler.hpp"
#include "core/case_id.hpp"
#include "fuzz/fuzz_input.hpp"

namespace sdpa::fuzz {

inline constexpr std::int64_t kFuzzMaxLen = 80;         // L and S
inline constexpr std::int64_t kFuzzMaxWork = 1 << 16;   // B*Hq*L*S*max(Dqk, Dv)
inline constexpr std::int64_t kFuzzMaxHeadDim = 136;    // Dqk and Dv
inline constexpr std::int64_t kFuzzLongKeys = 256;      // keys added to a long-keys input
inline constexpr std::int64_t kFuzzLongWork = 1 << 21;  // its work budget

// The sampler options the decoded cases are built with.
conformance::SamplerOptions fuzz_sampler_options();

// Decodes the next fields of `in` into sampler choices and builds the case.
Case case_from_bytes(FuzzInput& in);

}  // namespace sdpa::fuzz
