// The device a problem runs on, as a value: detected from this machine or simulated from
// a name (`cpu-avx2`, `sm80`, ...), so every capability rule is testable anywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa {

enum class DeviceKind { cpu, cuda };

// Instruction-set features of a CPU that kernels choose SIMD targets by.
struct CpuFeatures {
  bool avx2 = false;         // AVX2
  bool fma = false;          // FMA3
  bool f16c = false;         // F16C (half <-> float conversion)
  bool avx512f = false;      // AVX-512 Foundation (with BW, DQ, VL assumed together)
  bool avx512_bf16 = false;  // AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16)
  bool avx512_fp16 = false;  // AVX512-FP16 (native half arithmetic)
  int cores = 1;             // hardware threads available to OpenMP
};

// Properties of a CUDA device that backend rules depend on.
struct CudaProperties {
  int sm = 0;             // compute capability * 10 + minor, e.g. 80, 86, 90, 121
  int sm_count = 0;       // streaming multiprocessors
  int cuda_runtime = 0;   // CUDA runtime version, e.g. 12040
  int cudnn_version = 0;  // cuDNN version as major*10000 + minor*100 + patch; 0 = none
};

struct Device {
  std::string name;                   // "cpu" (detected), "cpu-avx2", "sm80", ...
  DeviceKind kind = DeviceKind::cpu;  // which family
  bool simulated = false;             // true when made from a name, not detected
  CpuFeatures cpu;                    // meaningful for kind == cpu
  CudaProperties cuda;                // meaningful for kind == cuda
};

// The CPU this process runs on.
Device detect_cpu();

// A device from its name: cpu-scalar, cpu-avx2, cpu-avx512, cpu-avx512bf16, sm50, sm75,
// sm80, sm86, sm89, sm90, sm100, sm121. nullopt for an unknown name.
std::optional<Device> simulated_device(std::string_view name);

// Names simulated_device() accepts, in a stable order.
const std::vector<std::string>& simulated_device_names();

}  // namespace sdpa
