#include "kernels/cpu/bf16_range.hpp"

#include <algorithm>
#include <cstdint>

namespace sdpa::cpu {

int smallest_bf16_exponent(const void* base, const StridedView& v) {
  using i64 = std::int64_t;
  const auto* x = static_cast<const std::uint16_t*>(base);
  int smallest = 256;
  for (i64 a = 0; a < v.shape[0]; ++a)
    for (i64 b = 0; b < v.shape[1]; ++b)
      for (i64 c = 0; c < v.shape[2]; ++c) {
        const std::uint16_t* row = x + a * v.stride[0] + b * v.stride[1] + c * v.stride[2];
        for (i64 d = 0; d < v.shape[3]; ++d) {
          const std::uint16_t bits = row[d * v.stride[3]] & 0x7fff;
          if (bits != 0) smallest = std::min(smallest, bits >> 7);
        }
      }
  return smallest;
}

}  // namespace sdpa::cpu
