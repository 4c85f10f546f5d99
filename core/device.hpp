// The device a problem runs on, as a value: detected from this machine or simulated from
// a name (`cpu-avx2`, `sm80`, ...), so every capability rule is testable anywhere. One
// grammar and one parser (parse_device) serve every command.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sdpa {

enum class DeviceKind { cpu, cuda };

// The instruction-set target a CPU kernel runs with: every CPU backend has one translation
// unit per target, chosen at run time from the device (Highway's model). The targets, their
// order and what each needs are the rows of core/isa_targets.def.
enum class IsaTarget {
#define SDPA_CTS_ISA_TARGET(name, ...) name,
#include "core/isa_targets.def"
#undef SDPA_CTS_ISA_TARGET
};
// How many targets there are; IsaTarget values are 0 .. kIsaTargetCount - 1, in the table's order.
inline constexpr std::size_t kIsaTargetCount = 0
#define SDPA_CTS_ISA_TARGET(name, ...) +1
#include "core/isa_targets.def"
#undef SDPA_CTS_ISA_TARGET
    ;
// Every target, in the table's order.
const std::vector<IsaTarget>& all_isa_targets();
// Their names, "scalar, avx2, avx512, avx512bf16" (for messages and help texts).
std::string isa_target_list();

// "scalar", "avx2", "avx512", "avx512bf16": the table's names.
std::string_view isa_target_name(IsaTarget t);
// The target of that name, or nullopt.
std::optional<IsaTarget> parse_isa_target(std::string_view name);

// Instruction-set features of a CPU that kernels choose ISA targets by.
struct CpuFeatures {
  bool avx2 = false;                  // AVX2
  bool fma = false;                   // FMA3
  bool f16c = false;                  // F16C (half <-> float conversion)
  bool avx512f = false;               // AVX-512 Foundation (with BW, DQ, VL assumed together)
  bool avx512_bf16 = false;           // AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16)
  bool avx512_fp16 = false;           // AVX512-FP16 (native half arithmetic)
  int cores = 1;                      // hardware threads available to OpenMP
  IsaTarget isa = IsaTarget::scalar;  // the target kernels run with: the best available,
                                      // or a lower one chosen by name (`isa=`, --simd)
  bool isa_chosen = false;            // true when `isa` was chosen by name rather than by detection
};

// Targets a CPU with these features can run, lowest first (always starts with scalar).
std::vector<IsaTarget> available_isa_targets(const CpuFeatures& cpu);

// How mma.sync sums its f16 / bf16 products into the f32 accumulator, as the host emulator
// computes it (docs/KERNELS.md, "Tensor-core rounding"). `block` = 0 is an ideal tensor core:
// the 16 products exactly, one rounding to nearest. Otherwise the published bit-accurate model
// of an architecture's tensor cores: the products are taken `block` at a time, in k order,
// together with the accumulator; every term of a block is aligned to the block's largest
// exponent and truncated `extra_bits` bits below the f32 significand, and the exact sum of
// the truncated terms is truncated (rounded toward zero) to f32.
struct MmaRounding {
  int block = 0;       // products per block FMA; 0 = the ideal tensor core
  int extra_bits = 0;  // alignment bits kept below the f32 significand
  std::string basis;   // the measurement the figures come from ("" for the ideal one)
};
// The measured model of the tensor cores of compute capability `sm` (f16 / bf16 inputs, f32
// accumulator), or nullopt where none is published.
std::optional<MmaRounding> measured_mma_rounding(int sm);
// Properties of a CUDA device that backend rules depend on.
struct CudaProperties {
  int sm = 0;                      // compute capability * 10 + minor, e.g. 80, 86, 90, 121
  int sm_count = 0;                // streaming multiprocessors
  int cuda_runtime = 0;            // CUDA runtime version, e.g. 12040
  std::string model;               // the GPU's name as the driver gives it ("" when simulated)
  std::size_t memory = 0;          // bytes of global memory (0 when simulated)
  int cudnn_version = 0;           // cuDNN version as major*10000 + minor*100 + patch; 0 = none
  bool cudnn_nested = false;       // PyTorch's TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED is set
                                   // (cuDNN takes NestedTensor inputs only then)
  bool emulated = false;           // a simulated GPU whose fused kernels run on the host emulator
                                   // (option emulate=1; docs/KERNELS.md, "The emulator")
  std::size_t smem_per_block = 0;  // bytes of shared memory one block may use (the opt-in
                                   // maximum, cudaDevAttrMaxSharedMemoryPerBlockOptin)
  int regs_per_sm = 0;             // 32-bit registers of one multiprocessor
  MmaRounding mma;                 // how the emulator's mma.sync rounds (option mma=, emulated
                                   // GPUs only: a GPU rounds as its hardware does)
};

// The launch limits of a compute capability that kernels are checked against: CUDA's
// published per-architecture values (docs/KERNELS.md, "Device limits"). A compute capability
// not in the table takes the nearest known one below it of the same major version, else the
// limits every CUDA device has (48 KiB of shared memory per block, 64 Ki registers).
struct CudaArchLimits {
  std::size_t smem_per_block = 0;  // bytes, opt-in maximum per block
  int regs_per_sm = 0;             // 32-bit registers per multiprocessor
  std::string basis;               // "" when the table lists this compute capability, else
                                   // where the limits come from ("as sm87", "CUDA's minimum")
};
CudaArchLimits cuda_arch_limits(int sm);

struct Device {
  std::string name;                   // "cpu" (detected), "cpu-avx2", "sm80", ...
  DeviceKind kind = DeviceKind::cpu;  // which family
  bool simulated = false;             // true when made from a name, not detected
  CpuFeatures cpu;                    // meaningful for kind == cpu
  CudaProperties cuda;                // meaningful for kind == cuda
};

// The CPU this process runs on, with its best ISA target.
Device detect_cpu();
// This machine's CPU model as the OS names it (/proc/cpuinfo "model name"), or "unknown".
std::string cpu_model_name();

// The GPU of this process (device 0, through the CUDA runtime: core/cuda_runtime.hpp), or
// nullopt: a build without the CUDA runtime, no driver, or no device.
std::optional<Device> detect_cuda();
// Why detect_cuda() found none ("" when it found one).
std::string cuda_unavailable_reason();

// detect_cuda() if it finds one, else detect_cpu().
Device default_device();

// A device from its plain name: cpu-scalar, cpu-avx2, cpu-avx512, cpu-avx512bf16, sm50,
// sm75, sm80, sm86, sm89, sm90, sm100, sm120, sm121. nullopt for an unknown name.
std::optional<Device> simulated_device(std::string_view name);

// Names simulated_device() accepts, in a stable order.
const std::vector<std::string>& simulated_device_names();

// The one device grammar of every command (--device):
//   "cpu"            this machine's CPU (detected)
//   "cuda"           the detected GPU (an error in a build without CUDA)
//   "auto"           the detected GPU if any, else the CPU
//   a simulated name cpu-scalar, cpu-avx2, cpu-avx512, cpu-avx512bf16, sm50 ... sm121,
//   or any smN with 30 <= N <= 199 (a generic GPU of that compute capability)
// optionally followed by ":key=value" overrides, separated by ':':
//   GPUs: cudnn=MAJOR.MINOR.PATCH (or "none"), cuda=MAJOR.MINOR, sms=N, cudnn_nested=0|1,
//         smem=KIB (shared memory per block), emulate=0|1, mma=ideal|measured (how the
//         emulator's mma.sync rounds: measured_mma_rounding; needs emulate=1)
//   CPUs: cores=N, isa=scalar|avx2|avx512|avx512bf16 (a target the CPU has)
// Example: "sm90:cudnn=9.12.0:sms=66". The error names the device and the part at fault.
std::variant<Device, std::string> parse_device(std::string_view text);

// parse_device, or throws std::invalid_argument with its message.
Device parse_device_or_throw(std::string_view text);

// `d` with its ISA target chosen by name ("" keeps it). Throws std::invalid_argument for an
// unknown name or a target the CPU lacks.
Device with_isa_target(Device d, std::string_view isa);

// A device kernels can run on in this process: the detected CPU, a simulated CPU whose
// features this CPU has (the simulation then restricts the ISA targets), a detected GPU, or
// a simulated GPU with emulate=1 (its fused kernels run on the host emulator). Throws
// std::invalid_argument naming the device otherwise (any other simulated GPU runs nothing).
Device runnable_device(const Device& d);

// "sm80", "sm121" (compute capability names).
std::string sm_name(int sm);
// cuDNN version as "9.16.0", or "none" for 0.
std::string cudnn_version_name(int version);

// One line: "sm80 (simulated): CUDA sm80, 108 SMs, CUDA 12.8, cuDNN 9.16.0" or
// "cpu (detected): CPU, AVX2 FMA F16C, 2 cores".
std::string describe_device(const Device& d);

}  // namespace sdpa
