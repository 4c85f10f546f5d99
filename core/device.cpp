#include "core/device.hpp"

#include <omp.h>

namespace sdpa {

Device detect_cpu() {
  Device d;
  d.name = "cpu";
  d.kind = DeviceKind::cpu;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  d.cpu.avx2 = __builtin_cpu_supports("avx2");
  d.cpu.fma = __builtin_cpu_supports("fma");
  d.cpu.f16c = __builtin_cpu_supports("f16c");
  d.cpu.avx512f = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  d.cpu.avx512_bf16 = d.cpu.avx512f && __builtin_cpu_supports("avx512bf16");
  d.cpu.avx512_fp16 = d.cpu.avx512f && __builtin_cpu_supports("avx512fp16");
#endif
  d.cpu.cores = omp_get_max_threads();
  return d;
}

const std::vector<std::string>& simulated_device_names() {
  static const std::vector<std::string> names = {
      "cpu-scalar", "cpu-avx2", "cpu-avx512", "cpu-avx512bf16", "sm50",  "sm75",
      "sm80",       "sm86",     "sm89",       "sm90",           "sm100", "sm121"};
  return names;
}

std::optional<Device> simulated_device(std::string_view name) {
  Device d;
  d.name = std::string(name);
  d.simulated = true;
  if (name.substr(0, 4) == "cpu-") {
    d.kind = DeviceKind::cpu;
    d.cpu.cores = 2;
    const bool avx2 = name != "cpu-scalar";
    const bool avx512 = name == "cpu-avx512" || name == "cpu-avx512bf16";
    if (name != "cpu-scalar" && name != "cpu-avx2" && !avx512) return std::nullopt;
    d.cpu.avx2 = d.cpu.fma = d.cpu.f16c = avx2;
    d.cpu.avx512f = avx512;
    d.cpu.avx512_bf16 = name == "cpu-avx512bf16";
    return d;
  }
  // Representative properties of each compute capability (SM counts of a common part).
  struct Gpu {
    const char* name;
    int sm, sm_count;
  };
  static const Gpu gpus[] = {{"sm50", 50, 16},    {"sm75", 75, 40},  {"sm80", 80, 108},
                             {"sm86", 86, 84},    {"sm89", 89, 128}, {"sm90", 90, 132},
                             {"sm100", 100, 148}, {"sm121", 121, 48}};
  for (const auto& g : gpus) {
    if (name == g.name) {
      d.kind = DeviceKind::cuda;
      d.cuda.sm = g.sm;
      d.cuda.sm_count = g.sm_count;
      d.cuda.cuda_runtime = 12080;
      d.cuda.cudnn_version = 91600;
      return d;
    }
  }
  return std::nullopt;
}

}  // namespace sdpa
