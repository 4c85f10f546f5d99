// The overflow guard of the CPU kernels (cpu.math, cpu.flash, cpu.mem_efficient).
// Internal linkage: cpu.flash includes it in translation units compiled for different SIMD
// targets, and an inline function with external linkage could be merged across them.
#pragma once

#include <cmath>
#include <cstdint>

namespace sdpa::cpu {

// Overflow guard, shared by the CPU kernels. The unnormalised sum acc = sum_j p_j v_j
// (p_j = exp(s_j - m) <= 1) can leave the f32 range, by a factor up to the number of keys,
// although the output acc / l never does (it is a convex combination of the v_j). A row whose
// accumulator came out non-finite while its softmax statistics are finite is computed again
// with P scaled by 2^-k, k = overflow_shift(keys), so that |acc| <= 2^-k keys max|v| stays
// below half the f32 maximum; the output is then acc 2^k / l. Scaling by a power of two is
// exact except for p_j below 2^(k-126), whose contributions lie below the sum's resolution.
// Only rows that overflowed take this path, and whether one does depends on its own data
// only: every other row keeps its bits (determinism and batch invariance hold). V holding
// inf or NaN gives a non-finite row both times, as SEMANTICS.md requires.
static inline int overflow_shift(std::int64_t keys) {
  int k = 1;
  while (k < 62 && (std::int64_t(1) << k) < 2 * keys) ++k;
  return k;
}
template <typename T>
static inline bool any_nonfinite(const T* x, std::int64_t n, std::int64_t stride = 1) {
  bool bad = false;
  for (std::int64_t e = 0; e < n; ++e) bad |= !std::isfinite(x[e * stride]);
  return bad;
}

}  // namespace sdpa::cpu
