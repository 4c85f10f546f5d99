// SIMD targets of the CPU kernels: chosen at run time from the CPU's features, and
// forceable to any lower target (RunOptions::simd_target) so that tests run every target
// the machine has (Highway's model).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"

namespace sdpa::cpu {

enum class SimdTarget {
  scalar,      // portable C++, no intrinsics
  avx2,        // AVX2 + FMA + F16C
  avx512,      // AVX-512 F/BW/DQ/VL
  avx512bf16,  // AVX-512 + AVX512-BF16 (vdpbf16ps)
};

std::string_view simd_target_name(SimdTarget t);

// Targets this CPU can run, lowest first (always starts with scalar).
std::vector<SimdTarget> available_simd_targets(const CpuFeatures& cpu);

// The target to use: the best available when `forced` is empty, else the named one.
// Throws std::invalid_argument for an unknown name or a target the CPU lacks.
SimdTarget choose_simd_target(const CpuFeatures& cpu, std::string_view forced);

}  // namespace sdpa::cpu
