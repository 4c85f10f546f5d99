#include "core/philox.hpp"

#include <cmath>

namespace sdpa {

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c[2];
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32),
                        lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32),
                        lo1 = static_cast<std::uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

std::uint32_t dropout_threshold(double p) {
  if (!(p > 0)) return 0;
  const double t = std::nearbyint(std::ldexp(p, 32));  // exact scaling, round to nearest even
  return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(t);
}

bool dropout_keep(std::uint64_t seed, std::uint64_t offset, std::uint32_t threshold, std::int64_t b,
                  std::int64_t h, std::int64_t i, std::int64_t j, std::int64_t heads_q,
                  std::int64_t len_q, std::int64_t len_kv) {
  if (threshold == 0) return true;
  // Unsigned arithmetic: wraps instead of overflowing for huge logical shapes.
  const std::uint64_t linear =
      ((static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(heads_q) +
        static_cast<std::uint64_t>(h)) *
           static_cast<std::uint64_t>(len_q) +
       static_cast<std::uint64_t>(i)) *
          static_cast<std::uint64_t>(len_kv) +
      static_cast<std::uint64_t>(j);
  const std::uint64_t ctr = offset + linear;
  const PhiloxCounter out = philox4x32_10(
      {static_cast<std::uint32_t>(ctr), static_cast<std::uint32_t>(ctr >> 32), 0u, 0u},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  return out[0] >= threshold;
}

}  // namespace sdpa
