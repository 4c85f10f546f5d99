#include "kernels/cpu/simd_target.hpp"

#include <stdexcept>

namespace sdpa::cpu {

std::string_view simd_target_name(SimdTarget t) {
  switch (t) {
    case SimdTarget::scalar:
      return "scalar";
    case SimdTarget::avx2:
      return "avx2";
    case SimdTarget::avx512:
      return "avx512";
    case SimdTarget::avx512bf16:
      return "avx512bf16";
  }
  return "?";
}

std::vector<SimdTarget> available_simd_targets(const CpuFeatures& cpu) {
  std::vector<SimdTarget> t = {SimdTarget::scalar};
  if (cpu.avx2 && cpu.fma && cpu.f16c) t.push_back(SimdTarget::avx2);
  if (cpu.avx512f && cpu.fma && cpu.f16c) t.push_back(SimdTarget::avx512);
  if (cpu.avx512f && cpu.avx512_bf16 && cpu.fma && cpu.f16c) t.push_back(SimdTarget::avx512bf16);
  return t;
}

SimdTarget choose_simd_target(const CpuFeatures& cpu, std::string_view forced) {
  const auto avail = available_simd_targets(cpu);
  if (forced.empty()) return avail.back();
  for (SimdTarget t :
       {SimdTarget::scalar, SimdTarget::avx2, SimdTarget::avx512, SimdTarget::avx512bf16}) {
    if (simd_target_name(t) != forced) continue;
    for (SimdTarget a : avail) {
      if (a == t) return t;
    }
    throw std::invalid_argument("SIMD target '" + std::string(forced) +
                                "' is not available on this CPU");
  }
  throw std::invalid_argument("unknown SIMD target '" + std::string(forced) +
                              "' (known: scalar, avx2, avx512, avx512bf16)");
}

}  // namespace sdpa::cpu
