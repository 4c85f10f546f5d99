// Device names: simulated devices, generic compute capabilities, property overrides,
// detection, descriptions, and the errors for bad names.
#include "core/device.hpp"

#include <gtest/gtest.h>

#include "core/cuda_runtime.hpp"

namespace sdpa {
namespace {

std::string error_of(const std::string& text) {
  auto r = parse_device(text);
  if (auto* e = std::get_if<std::string>(&r)) return *e;
  return "(parsed)";
}

TEST(Device, EverySimulatedNameParses) {
  for (const auto& n : simulated_device_names()) {
    const Device d = parse_device_or_throw(n);
    EXPECT_EQ(d.name, n);
    EXPECT_TRUE(d.simulated);
    EXPECT_EQ(d.kind, n.rfind("sm", 0) == 0 ? DeviceKind::cuda : DeviceKind::cpu);
  }
  EXPECT_EQ(parse_device_or_throw("sm86").cuda.sm, 86);
  EXPECT_EQ(parse_device_or_throw("sm121").cuda.sm_count, 48);
}

TEST(Device, GenericComputeCapabilities) {
  const Device d = parse_device_or_throw("sm103");
  EXPECT_EQ(d.kind, DeviceKind::cuda);
  EXPECT_EQ(d.cuda.sm, 103);
  EXPECT_EQ(d.cuda.sm_count, 80);
  EXPECT_EQ(d.cuda.cudnn_version, 91600);
  EXPECT_TRUE(d.simulated);
  EXPECT_EQ(parse_device_or_throw("sm30").cuda.sm, 30);
  EXPECT_EQ(parse_device_or_throw("sm199").cuda.sm, 199);
  EXPECT_EQ(error_of("sm29"),
            "device 'sm29': 'sm29' is not a compute capability smN with 30 <= N <= 199");
  EXPECT_EQ(error_of("sm200"),
            "device 'sm200': 'sm200' is not a compute capability smN with 30 <= N <= 199");
  EXPECT_EQ(error_of("smx"),
            "device 'smx': 'smx' is not a compute capability smN with 30 <= N <= 199");
}

TEST(Device, Overrides) {
  const Device d = parse_device_or_throw("sm90:cudnn=9.12.3:sms=66:cuda=13.1");
  EXPECT_EQ(d.name, "sm90:cudnn=9.12.3:sms=66:cuda=13.1");
  EXPECT_EQ(d.cuda.cudnn_version, 91203);
  EXPECT_EQ(d.cuda.sm_count, 66);
  EXPECT_EQ(d.cuda.cuda_runtime, 13010);
  EXPECT_EQ(parse_device_or_throw("sm80:cudnn=none").cuda.cudnn_version, 0);
  EXPECT_EQ(parse_device_or_throw("sm80:cudnn=8.9").cuda.cudnn_version, 80900);
  EXPECT_EQ(parse_device_or_throw("cpu-avx2:cores=16").cpu.cores, 16);
  EXPECT_EQ(parse_device_or_throw("cpu:cores=3").cpu.cores, 3);
}

TEST(Device, OverrideErrorsNameTheOption) {
  EXPECT_EQ(error_of("sm90:cudnn=9"),
            "device 'sm90:cudnn=9': option 'cudnn': expected a version MAJOR.MINOR.PATCH or "
            "'none', got '9'");
  // Found by fuzz/targets/parsers.cpp: a huge major overflowed the int encoding.
  EXPECT_EQ(error_of("sm90:cudnn=492403.0.0"),
            "device 'sm90:cudnn=492403.0.0': option 'cudnn': expected a version MAJOR.MINOR.PATCH "
            "or 'none', got '492403.0.0'");
  EXPECT_EQ(error_of("sm90:cuda=4000000.0"),
            "device 'sm90:cuda=4000000.0': option 'cuda': expected a version MAJOR.MINOR, got "
            "'4000000.0'");
  EXPECT_EQ(error_of("sm90:cudnn=9.100.0"),
            "device 'sm90:cudnn=9.100.0': option 'cudnn': expected a version MAJOR.MINOR.PATCH or "
            "'none', got '9.100.0'");
  EXPECT_EQ(error_of("sm90:cuda=x"),
            "device 'sm90:cuda=x': option 'cuda': expected a version MAJOR.MINOR, got 'x'");
  EXPECT_EQ(error_of("sm90:sms=0"),
            "device 'sm90:sms=0': option 'sms': expected a positive SM count, got '0'");
  EXPECT_EQ(error_of("cpu-avx2:cores=-1"),
            "device 'cpu-avx2:cores=-1': option 'cores': expected a positive core count, got '-1'");
  EXPECT_EQ(error_of("sm90:cores=4"),
            "device 'sm90:cores=4': unknown option 'cores' for a GPU (known: cudnn, cuda, sms, "
            "smem, cudnn_nested, emulate, mma)");
  EXPECT_EQ(error_of("cpu-avx2:cudnn=9.1.0"),
            "device 'cpu-avx2:cudnn=9.1.0': unknown option 'cudnn' for a CPU (known: cores, isa)");
  EXPECT_EQ(error_of("sm90:fast"), "device 'sm90:fast': option 'fast' is not key=value");
}

// "scalar, avx2, ...": every target of core/isa_targets.def, each with `prefix`.
std::string target_list(const std::string& prefix) {
  std::string s;
  for (IsaTarget t : all_isa_targets())
    s += (s.empty() ? "" : ", ") + prefix + std::string(isa_target_name(t));
  return s;
}

// The one table of targets (core/isa_targets.def), as its users rely on it: in ascending
// order (each target's simulated CPU runs every earlier target, and no later one), unique
// names that parse back, a simulated cpu-<name> device for each that runs exactly up to it.
TEST(Device, TheTargetTableIsOrderedAndSelfConsistent) {
  const std::vector<IsaTarget>& all = all_isa_targets();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), IsaTarget::scalar);
  EXPECT_EQ(all.size(), kIsaTargetCount);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(all[i]), i) << "IsaTarget values are the table's indices";
    const std::string name(isa_target_name(all[i]));
    EXPECT_EQ(parse_isa_target(name), all[i]) << name;
    const Device d = parse_device_or_throw("cpu-" + name);
    EXPECT_EQ(d.cpu.isa, all[i]) << name;
    const std::vector<IsaTarget> runs = available_isa_targets(d.cpu);
    EXPECT_EQ(runs, std::vector<IsaTarget>(all.begin(), all.begin() + static_cast<long>(i) + 1))
        << "cpu-" << name << " runs exactly the targets up to its own";
  }
  EXPECT_EQ(isa_target_list(), target_list(""));
}

TEST(Device, UnknownNamesListTheKnownOnes) {
  EXPECT_EQ(error_of("tpu"),
            "unknown device 'tpu' (known: cpu, cuda, auto, " + target_list("cpu-") +
                ", sm50, sm75, sm80, sm86, sm89, sm90, sm100, sm120, sm121, smN (30 <= N "
                "<= "
                "199))");
  EXPECT_NE(error_of("").find("unknown device ''"), std::string::npos);
  EXPECT_THROW(parse_device_or_throw("cpu-avx3"), std::invalid_argument);
}

// On a machine without a GPU (every CI machine): with or without the CUDA runtime in the
// build, `cuda` names why there is none, and `auto` is the CPU. On a GPU it is that GPU.
TEST(Device, DetectionWithoutAGpuSaysWhy) {
  if (const auto gpu = detect_cuda()) {
    EXPECT_EQ(gpu->kind, DeviceKind::cuda);
    EXPECT_GE(gpu->cuda.sm, 30);
    EXPECT_EQ(default_device().kind, DeviceKind::cuda);
    GTEST_SKIP() << "this machine has a GPU: " << describe_device(*gpu);
  }
  const std::string why = cuda_unavailable_reason();
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(error_of("cuda"), "device 'cuda': no CUDA device detected (" + why + ")");
  if (!cuda_runtime::linked()) {
    EXPECT_EQ(why, "this build has no CUDA runtime (SDPA_CTS_CUDA, docs/KERNELS.md)");
  } else {
    EXPECT_NE(why.find("cuda"), std::string::npos) << why;
  }
  EXPECT_EQ(default_device().kind, DeviceKind::cpu);
  EXPECT_EQ(parse_device_or_throw("auto").name, "cpu");
  const Device cpu = parse_device_or_throw("cpu");
  EXPECT_FALSE(cpu.simulated);
  EXPECT_GE(cpu.cpu.cores, 1);
}

TEST(Device, Descriptions) {
  EXPECT_EQ(describe_device(parse_device_or_throw("sm80")),
            "sm80 (simulated): CUDA sm80, 108 SMs, 163 KiB shared memory per block, CUDA 12.8, "
            "cuDNN 9.16.0");
  EXPECT_EQ(describe_device(parse_device_or_throw("sm90:cudnn=none")),
            "sm90:cudnn=none (simulated): CUDA sm90, 132 SMs, 227 KiB shared memory per block, "
            "CUDA 12.8, cuDNN none");
  EXPECT_EQ(describe_device(parse_device_or_throw("cpu-scalar")),
            "cpu-scalar (simulated): CPU, scalar only, 2 cores");
  EXPECT_EQ(describe_device(parse_device_or_throw("cpu-avx512bf16")),
            "cpu-avx512bf16 (simulated): CPU, AVX2 FMA F16C AVX-512 AVX512-BF16, 2 cores");
  EXPECT_NE(describe_device(parse_device_or_throw("cpu")).find("cpu (detected): CPU, "),
            std::string::npos);
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

TEST(Device, IsaTargetOverrideChoosesATargetTheCpuHas) {
  const Device d = parse_device_or_throw("cpu-avx512:isa=avx2");
  EXPECT_EQ(d.cpu.isa, IsaTarget::avx2);
  EXPECT_TRUE(d.cpu.isa_chosen);
  EXPECT_EQ(d.name, "cpu-avx512:isa=avx2");
  EXPECT_EQ(parse_device_or_throw("cpu-avx2").cpu.isa, IsaTarget::avx2);
  EXPECT_TRUE(parse_device_or_throw("cpu-avx2").cpu.isa_chosen);
  EXPECT_FALSE(parse_device_or_throw("cpu").cpu.isa_chosen);
  EXPECT_EQ(error_of("cpu-avx2:isa=avx512"),
            "device 'cpu-avx2:isa=avx512': option 'isa': ISA target 'avx512' is not available "
            "on this CPU (available: scalar, avx2)");
  EXPECT_EQ(error_of("cpu-avx2:isa=sse"),
            "device 'cpu-avx2:isa=sse': option 'isa': unknown ISA target 'sse' (known: " +
                target_list("") + ")");
  EXPECT_EQ(error_of("sm80:isa=avx2"),
            "device 'sm80:isa=avx2': unknown option 'isa' for a GPU (known: cudnn, cuda, sms, "
            "smem, cudnn_nested, emulate, mma)");
}

// emulate=1: a simulated GPU whose fused kernels run on the host emulator, and the one
// simulated GPU that kernels can run on.
TEST(Device, EmulatedGpu) {
  const Device d = parse_device_or_throw("sm80:emulate=1");
  EXPECT_TRUE(d.cuda.emulated);
  EXPECT_TRUE(d.simulated);
  EXPECT_EQ(runnable_device(d).name, "sm80:emulate=1");
  EXPECT_NE(describe_device(d).find("emulated on the host"), std::string::npos);
  EXPECT_FALSE(parse_device_or_throw("sm80:emulate=0").cuda.emulated);
  EXPECT_EQ(error_of("sm80:emulate=yes"),
            "device 'sm80:emulate=yes': option 'emulate': expected 0 or 1, got 'yes'");
  EXPECT_EQ(error_of("cpu-avx2:emulate=1"),
            "device 'cpu-avx2:emulate=1': unknown option 'emulate' for a CPU (known: cores, isa)");
  try {
    runnable_device(parse_device_or_throw("sm80"));
    FAIL() << "a simulated GPU ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sm80:emulate=1 to run the fused CUDA kernels"),
              std::string::npos)
        << e.what();
  }
}

// mma=measured: the emulator's mma.sync rounds as the published model of the architecture's
// tensor cores (docs/KERNELS.md, "Tensor-core rounding").
TEST(Device, MeasuredTensorCoreRounding) {
  EXPECT_EQ(parse_device_or_throw("sm80:emulate=1").cuda.mma.block, 0);  // ideal by default
  const Device a100 = parse_device_or_throw("sm80:emulate=1:mma=measured");
  EXPECT_EQ(a100.cuda.mma.block, 8);
  EXPECT_EQ(a100.cuda.mma.extra_bits, 1);
  EXPECT_NE(describe_device(a100).find("mma.sync rounding as measured (A100"), std::string::npos)
      << describe_device(a100);
  const Device h100 = parse_device_or_throw("sm90:emulate=1:mma=measured");
  EXPECT_EQ(h100.cuda.mma.block, 16);
  EXPECT_EQ(h100.cuda.mma.extra_bits, 2);
  EXPECT_EQ(parse_device_or_throw("sm90:emulate=1:mma=measured:mma=ideal").cuda.mma.block, 0);
  EXPECT_EQ(error_of("sm120:emulate=1:mma=measured"),
            "device 'sm120:emulate=1:mma=measured': option 'mma': no published model of sm120's "
            "tensor cores (measured: sm80, sm86, sm89, sm90), got 'measured'");
  EXPECT_EQ(error_of("sm80:emulate=1:mma=rz"),
            "device 'sm80:emulate=1:mma=rz': option 'mma': expected 'ideal' or 'measured', got "
            "'rz'");
  EXPECT_EQ(error_of("sm80:mma=measured"),
            "device 'sm80:mma=measured': option 'mma=measured' sets how the host emulator's "
            "mma.sync rounds: it needs emulate=1 (a GPU rounds as its hardware does)");
}

TEST(Device, DetectedCpuRunsItsBestTarget) {
  const Device d = detect_cpu();
  EXPECT_EQ(d.cpu.isa, available_isa_targets(d.cpu).back());
  EXPECT_FALSE(d.cpu.isa_chosen);
}

TEST(Device, WithIsaTargetAndRunnableDevice) {
  const Device d = with_isa_target(parse_device_or_throw("cpu-avx2"), "scalar");
  EXPECT_EQ(d.cpu.isa, IsaTarget::scalar);
  EXPECT_THROW(with_isa_target(parse_device_or_throw("sm80"), "avx2"), std::invalid_argument);
  EXPECT_THROW(runnable_device(parse_device_or_throw("sm80")), std::invalid_argument);
  EXPECT_EQ(runnable_device(parse_device_or_throw("cpu-scalar")).cpu.isa, IsaTarget::scalar);
  EXPECT_EQ(runnable_device(parse_device_or_throw("cpu-scalar")).cpu.cores, detect_cpu().cpu.cores);
}

}  // namespace
}  // namespace sdpa
