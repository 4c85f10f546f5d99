#include "core/device.hpp"

#include <omp.h>

#include "core/cuda_runtime.hpp"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <charconv>
#include <fstream>
#include <stdexcept>

#include "core/spec_fields.hpp"

namespace sdpa {
namespace {

// A row of core/isa_targets.def: a target, its name and the CPU features it needs.
struct IsaTargetRow {
  IsaTarget target;
  std::string_view name;
  std::vector<bool CpuFeatures::*> needs;
};
const std::vector<IsaTargetRow>& isa_rows() {
  static const std::vector<IsaTargetRow> rows = {
#define SDPA_CTS_ISA_TARGET(name, flags, ...) {IsaTarget::name, #name, {__VA_ARGS__}},
#include "core/isa_targets.def"
#undef SDPA_CTS_ISA_TARGET
  };
  return rows;
}

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  if (s.empty()) return std::nullopt;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string known_names() {
  std::string s = "cpu, cuda, auto";
  for (const auto& n : simulated_device_names()) s += ", " + n;
  return s + ", smN (30 <= N <= 199)";
}

// "MAJOR.MINOR.PATCH" (patch optional) to major * 10000 + minor * 100 + patch, or (without
// want_patch) "MAJOR.MINOR" to major * 1000 + minor * 10, CUDA's encoding.
std::optional<int> parse_version(std::string_view s, bool want_patch) {
  auto parts = split(s, '.');
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  int v[3] = {0, 0, 0};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto x = to_int(parts[i]);
    // Majors up to 999 (the encoding must fit an int); minors and patches up to 99.
    if (!x || *x < 0 || *x > (i == 0 ? 999 : 99)) return std::nullopt;
    v[i] = *x;
  }
  return want_patch ? v[0] * 10000 + v[1] * 100 + v[2] : v[0] * 1000 + v[1] * 10;
}

// Sets cpu.isa to the named target; "" on success, else why not.
std::string choose_isa(CpuFeatures& cpu, std::string_view name) {
  const auto t = parse_isa_target(name);
  if (!t)
    return "unknown ISA target '" + std::string(name) + "' (known: " + isa_target_list() + ")";
  for (IsaTarget a : available_isa_targets(cpu)) {
    if (a == *t) {
      cpu.isa = *t;
      cpu.isa_chosen = true;
      return "";
    }
  }
  return "ISA target '" + std::string(name) + "' is not available on this CPU (available: " + [&] {
    std::string s;
    for (IsaTarget a : available_isa_targets(cpu))
      s += (s.empty() ? "" : ", ") + std::string(isa_target_name(a));
    return s;
  }() + ")";
}

}  // namespace

const std::vector<IsaTarget>& all_isa_targets() {
  static const std::vector<IsaTarget> all = [] {
    std::vector<IsaTarget> t;
    for (const IsaTargetRow& r : isa_rows()) t.push_back(r.target);
    return t;
  }();
  return all;
}

std::string isa_target_list() {
  std::string s;
  for (const IsaTargetRow& r : isa_rows()) s += (s.empty() ? "" : ", ") + std::string(r.name);
  return s;
}

std::string_view isa_target_name(IsaTarget t) {
  const auto i = static_cast<std::size_t>(t);
  return i < isa_rows().size() ? isa_rows()[i].name : std::string_view("?");
}

std::optional<IsaTarget> parse_isa_target(std::string_view name) {
  for (const IsaTargetRow& r : isa_rows()) {
    if (r.name == name) return r.target;
  }
  return std::nullopt;
}

std::vector<IsaTarget> available_isa_targets(const CpuFeatures& cpu) {
  std::vector<IsaTarget> t;
  for (const IsaTargetRow& r : isa_rows()) {
    if (std::all_of(r.needs.begin(), r.needs.end(), [&](bool CpuFeatures::*f) { return cpu.*f; }))
      t.push_back(r.target);
  }
  return t;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto b = line.find_first_not_of(" \t", colon + 1);
    return b == std::string::npos ? "unknown" : line.substr(b);
  }
  return "unknown";
}

Device detect_cpu() {
  Device d;
  d.name = "cpu";
  d.kind = DeviceKind::cpu;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  d.cpu.avx2 = __builtin_cpu_supports("avx2");
  d.cpu.fma = __builtin_cpu_supports("fma");
  // F16C and AVX512-FP16 from CPUID itself: not every compiler's __builtin_cpu_supports
  // knows them (Clang 14 does not).
  unsigned a = 0, b = 0, c = 0, dx = 0;
  d.cpu.f16c = __get_cpuid(1, &a, &b, &c, &dx) && (c & (1u << 29)) != 0;
  const bool leaf7 = __get_cpuid_count(7, 0, &a, &b, &c, &dx) != 0;
  d.cpu.avx512f = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  d.cpu.avx512_bf16 = d.cpu.avx512f && __builtin_cpu_supports("avx512bf16");
  d.cpu.avx512_fp16 = d.cpu.avx512f && leaf7 && (dx & (1u << 23)) != 0;
#endif
  d.cpu.cores = omp_get_max_threads();
  d.cpu.isa = available_isa_targets(d.cpu).back();
  return d;
}

std::optional<Device> detect_cuda() {
  const auto gpu = cuda_runtime::probe(nullptr);
  if (!gpu) return std::nullopt;
  Device d;
  d.name = "cuda";
  d.kind = DeviceKind::cuda;
  d.cuda.sm = gpu->sm;
  d.cuda.sm_count = gpu->sm_count;
  d.cuda.cuda_runtime = gpu->runtime_version;
  d.cuda.cudnn_version = gpu->cudnn_version;
  d.cuda.model = gpu->model;
  d.cuda.memory = gpu->memory;
  const CudaArchLimits table = cuda_arch_limits(d.cuda.sm);
  d.cuda.smem_per_block =
      gpu->smem_per_block_optin > 0 ? gpu->smem_per_block_optin : table.smem_per_block;
  d.cuda.regs_per_sm = gpu->regs_per_sm > 0 ? gpu->regs_per_sm : table.regs_per_sm;
  return d;
}

CudaArchLimits cuda_arch_limits(int sm) {
  // Maximum shared memory per thread block (opt-in) by compute capability, in KiB, from the
  // CUDA C++ Programming Guide's technical specifications; every listed architecture has
  // 64 Ki 32-bit registers per multiprocessor.
  struct Row {
    int sm, smem_kib;
  };
  static const Row rows[] = {{50, 48}, {52, 48},  {53, 48},   {60, 48},   {61, 48},  {62, 48},
                             {70, 96}, {72, 96},  {75, 64},   {80, 163},  {86, 99},  {87, 163},
                             {89, 99}, {90, 227}, {100, 227}, {103, 227}, {120, 99}, {121, 99}};
  CudaArchLimits l;
  l.smem_per_block = std::size_t{48} * 1024;
  l.regs_per_sm = 64 * 1024;
  const Row* best = nullptr;
  for (const Row& r : rows) {
    if (r.sm <= sm && r.sm / 10 == sm / 10 && (!best || r.sm > best->sm)) best = &r;
  }
  if (best) {
    l.smem_per_block = static_cast<std::size_t>(best->smem_kib) * 1024;
    if (best->sm != sm) l.basis = "as " + sm_name(best->sm);
  } else {
    l.basis = "CUDA's minimum";
  }
  return l;
}

std::optional<MmaRounding> measured_mma_rounding(int sm) {
  // f16 / bf16 inputs with an f32 accumulator, from the bit-accurate models of Khattak and
  // Mikaitis, "Accurate models of NVIDIA tensor cores" (arXiv:2512.07004, 2025), validated on
  // 10^5 random inputs per format against each GPU; A100's agrees with Fasi, Higham, Mikaitis
  // and Pranesh, "Numerical behavior of NVIDIA tensor cores" (PeerJ Comput. Sci. 7:e330,
  // 2021), and the same authors' HPEC 2025 methodology found an RTX 3060 (sm86) identical to
  // A100. Architectures without a published model have none here.
  struct Row {
    int sm, block, extra_bits;
    const char* basis;
  };
  static const Row rows[] = {
      {80, 8, 1, "A100, Khattak & Mikaitis 2025"},
      {86, 8, 1, "RTX 3060 = A100, Khattak & Mikaitis 2025"},
      {89, 8, 1, "Ada RTX 1000, Khattak & Mikaitis 2025"},
      {90, 16, 2, "H100, Khattak & Mikaitis 2025"},
  };
  for (const Row& r : rows) {
    if (r.sm == sm) return MmaRounding{r.block, r.extra_bits, r.basis};
  }
  return std::nullopt;
}

std::string cuda_unavailable_reason() {
  std::string why;
  return cuda_runtime::probe(&why) ? "" : why;
}

Device default_device() {
  if (auto d = detect_cuda()) return *d;
  return detect_cpu();
}

const std::vector<std::string>& simulated_device_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const IsaTargetRow& r : isa_rows()) n.push_back("cpu-" + std::string(r.name));
    for (const char* sm :
         {"sm50", "sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "sm120", "sm121"})
      n.push_back(sm);
    return n;
  }();
  return names;
}

std::optional<Device> simulated_device(std::string_view name) {
  Device d;
  d.name = std::string(name);
  d.simulated = true;
  if (name.substr(0, 4) == "cpu-") {
    const auto target = parse_isa_target(name.substr(4));
    if (!target) return std::nullopt;
    d.kind = DeviceKind::cpu;
    d.cpu.cores = 2;
    // Exactly the features its target needs (core/isa_targets.def).
    for (bool CpuFeatures::*f : isa_rows()[static_cast<std::size_t>(*target)].needs)
      d.cpu.*f = true;
    d.cpu.isa = *target;
    d.cpu.isa_chosen = true;  // named by the device: a simulated CPU runs exactly its target
    return d;
  }
  // Representative properties of each compute capability (SM counts of a common part).
  struct Gpu {
    const char* name;
    int sm, sm_count;
  };
  static const Gpu gpus[] = {{"sm50", 50, 16},    {"sm75", 75, 40},    {"sm80", 80, 108},
                             {"sm86", 86, 84},    {"sm89", 89, 128},   {"sm90", 90, 132},
                             {"sm100", 100, 148}, {"sm120", 120, 170}, {"sm121", 121, 48}};
  for (const auto& g : gpus) {
    if (name == g.name) {
      d.kind = DeviceKind::cuda;
      d.cuda.sm = g.sm;
      d.cuda.sm_count = g.sm_count;
      d.cuda.cuda_runtime = 12080;
      d.cuda.cudnn_version = 91600;
      const CudaArchLimits l = cuda_arch_limits(g.sm);
      d.cuda.smem_per_block = l.smem_per_block;
      d.cuda.regs_per_sm = l.regs_per_sm;
      return d;
    }
  }
  return std::nullopt;
}

std::variant<Device, std::string> parse_device(std::string_view text) {
  const std::string whole(text);
  auto parts = split(text, ':');
  const std::string_view base = parts[0];
  std::optional<Device> dev;
  if (base == "cpu") {
    dev = detect_cpu();
  } else if (base == "cuda") {
    dev = detect_cuda();
    if (!dev) return "device 'cuda': no CUDA device detected (" + cuda_unavailable_reason() + ")";
  } else if (base == "auto") {
    dev = default_device();
  } else if (auto sim = simulated_device(base)) {
    dev = sim;
  } else if (base.size() > 2 && base.substr(0, 2) == "sm") {
    auto sm = to_int(base.substr(2));
    if (!sm || *sm < 30 || *sm > 199) {
      return "device '" + whole + "': '" + std::string(base) +
             "' is not a compute capability smN with 30 <= N <= 199";
    }
    // A generic GPU of this compute capability, with the same defaults as the named ones.
    Device d = *simulated_device("sm80");
    d.name = std::string(base);
    d.cuda.sm = *sm;
    d.cuda.sm_count = 80;
    const CudaArchLimits l = cuda_arch_limits(*sm);
    d.cuda.smem_per_block = l.smem_per_block;
    d.cuda.regs_per_sm = l.regs_per_sm;
    dev = d;
  } else {
    return "unknown device '" + std::string(base) + "' (known: " + known_names() + ")";
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view opt = parts[i];
    const auto eq = opt.find('=');
    if (eq == std::string_view::npos) {
      return "device '" + whole + "': option '" + std::string(opt) + "' is not key=value";
    }
    const std::string key(opt.substr(0, eq));
    const std::string_view value = opt.substr(eq + 1);
    const bool gpu = dev->kind == DeviceKind::cuda;
    auto bad = [&](const std::string& what) {
      return "device '" + whole + "': option '" + key + "': " + what + ", got '" +
             std::string(value) + "'";
    };
    if (key == "cudnn" && gpu) {
      if (value == "none") {
        dev->cuda.cudnn_version = 0;
      } else {
        auto v = parse_version(value, true);
        if (!v) return bad("expected a version MAJOR.MINOR.PATCH or 'none'");
        dev->cuda.cudnn_version = *v;
      }
    } else if (key == "cuda" && gpu) {
      auto v = parse_version(value, false);
      if (!v) return bad("expected a version MAJOR.MINOR");
      dev->cuda.cuda_runtime = *v;
    } else if (key == "sms" && gpu) {
      auto v = to_int(value);
      if (!v || *v < 1) return bad("expected a positive SM count");
      dev->cuda.sm_count = *v;
    } else if (key == "smem" && gpu) {
      auto v = to_int(value);
      if (!v || *v < 1 || *v > 1024)
        return bad("expected KiB of shared memory per block, 1 to 1024");
      dev->cuda.smem_per_block = static_cast<std::size_t>(*v) * 1024;
    } else if (key == "cudnn_nested" && gpu) {
      if (value != "0" && value != "1") return bad("expected 0 or 1");
      dev->cuda.cudnn_nested = value == "1";
    } else if (key == "emulate" && gpu) {
      if (value != "0" && value != "1") return bad("expected 0 or 1");
      if (!dev->simulated) return bad("only a simulated GPU (smNN) is emulated");
      dev->cuda.emulated = value == "1";
    } else if (key == "mma" && gpu) {
      if (value == "ideal") {
        dev->cuda.mma = MmaRounding{};
      } else if (value == "measured") {
        auto m = measured_mma_rounding(dev->cuda.sm);
        if (!m) {
          return bad("no published model of " + sm_name(dev->cuda.sm) +
                     "'s tensor cores (measured: sm80, sm86, sm89, sm90)");
        }
        dev->cuda.mma = *m;
      } else {
        return bad("expected 'ideal' or 'measured'");
      }
    } else if (key == "cores" && !gpu) {
      auto v = to_int(value);
      if (!v || *v < 1) return bad("expected a positive core count");
      dev->cpu.cores = *v;
    } else if (key == "isa" && !gpu) {
      if (auto why = choose_isa(dev->cpu, value); !why.empty()) {
        return "device '" + whole + "': option 'isa': " + why;
      }
    } else {
      return "device '" + whole + "': unknown option '" + key + "' for a " +
             (gpu ? "GPU (known: cudnn, cuda, sms, smem, cudnn_nested, emulate, mma)"
                  : "CPU (known: cores, isa)");
    }
    dev->name.append(":").append(opt);
  }
  if (dev->cuda.mma.block > 0 && !dev->cuda.emulated) {
    return "device '" + whole +
           "': option 'mma=measured' sets how the host emulator's mma.sync rounds: it needs "
           "emulate=1 (a GPU rounds as its hardware does)";
  }
  return *dev;
}

Device parse_device_or_throw(std::string_view text) {
  auto r = parse_device(text);
  if (auto* e = std::get_if<std::string>(&r)) throw std::invalid_argument(*e);
  return std::get<Device>(std::move(r));
}

Device with_isa_target(Device d, std::string_view isa) {
  if (isa.empty()) return d;
  if (d.kind != DeviceKind::cpu) {
    throw std::invalid_argument("device '" + d.name + "' is not a CPU: it has no ISA target");
  }
  if (auto why = choose_isa(d.cpu, isa); !why.empty()) throw std::invalid_argument(why);
  return d;
}

Device runnable_device(const Device& d) {
  if (d.kind != DeviceKind::cpu) {
    if (!d.simulated || d.cuda.emulated) return d;
    throw std::invalid_argument("device '" + d.name +
                                "' is simulated: kernels cannot run on it (use `sdpa-cts explain "
                                "--device " +
                                d.name + "`, or " + d.name +
                                ":emulate=1 to run the fused CUDA kernels on the host emulator)");
  }
  if (!d.simulated) return d;
  // A simulated CPU must be a subset of this one: its features restrict the ISA targets.
  const Device real = detect_cpu();
  const auto& s = d.cpu;
  const auto& r = real.cpu;
  if ((s.avx2 && !r.avx2) || (s.avx512f && !r.avx512f) || (s.avx512_bf16 && !r.avx512_bf16)) {
    throw std::invalid_argument("device '" + d.name + "' has features this CPU lacks");
  }
  Device out = d;
  out.cpu.cores = r.cores;
  return out;
}

std::string sm_name(int sm) { return "sm" + std::to_string(sm); }

std::string cudnn_version_name(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string describe_device(const Device& d) {
  std::string s = d.name + (d.simulated ? " (simulated): " : " (detected): ");
  if (d.kind == DeviceKind::cuda) {
    s.append("CUDA ").append(sm_name(d.cuda.sm)).append(", ");
    if (!d.cuda.model.empty()) s.append(d.cuda.model).append(", ");
    if (d.cuda.memory > 0) {
      s.append(std::to_string(d.cuda.memory >> 20)).append(" MiB, ");
    }
    s.append(std::to_string(d.cuda.sm_count)).append(" SMs, ");
    if (d.cuda.smem_per_block > 0) {
      s.append(std::to_string(d.cuda.smem_per_block / 1024))
          .append(" KiB shared memory per block, ");
    }
    s.append("CUDA ");
    s.append(std::to_string(d.cuda.cuda_runtime / 1000)).append(".");
    s.append(std::to_string(d.cuda.cuda_runtime / 10 % 100)).append(", cuDNN ");
    s.append(cudnn_version_name(d.cuda.cudnn_version));
    if (d.cuda.cudnn_nested) s.append(", cuDNN nested tensors enabled");
    if (d.cuda.emulated) s.append(", emulated on the host (the fused kernels only)");
    if (d.cuda.mma.block > 0) {
      s.append(", mma.sync rounding as measured (")
          .append(d.cuda.mma.basis)
          .append(": blocks of ")
          .append(std::to_string(d.cuda.mma.block))
          .append(" products, ")
          .append(std::to_string(d.cuda.mma.extra_bits))
          .append(" extra alignment bits, truncated)");
    }
    return s;
  }
  std::string isa;
  const std::pair<bool, const char*> feats[] = {{d.cpu.avx2, "AVX2"},
                                                {d.cpu.fma, "FMA"},
                                                {d.cpu.f16c, "F16C"},
                                                {d.cpu.avx512f, "AVX-512"},
                                                {d.cpu.avx512_bf16, "AVX512-BF16"},
                                                {d.cpu.avx512_fp16, "AVX512-FP16"}};
  for (auto [on, n] : feats) {
    if (on) isa.append(isa.empty() ? "" : " ").append(n);
  }
  s.append("CPU, ").append(isa.empty() ? std::string("scalar only") : isa).append(", ");
  s.append(std::to_string(d.cpu.cores)).append(" cores");
  return s;
}

}  // namespace sdpa
