#include "plugins/host/plugin_backend.hpp"

#include <cctype>
#include <stdexcept>
#include <vector>

#include "kernels/lowered_problem.hpp"

namespace sdpa::plugins {
namespace {

// The C ISA enum mirrors the project's: checked here, where c_device() relies on it (the
// problem's enums are checked where they are lowered, kernels/lowered_problem.cpp).
static_assert(static_cast<int>(IsaTarget::scalar) == SDPA_CTS_ISA_SCALAR &&
              static_cast<int>(IsaTarget::avx2) == SDPA_CTS_ISA_AVX2 &&
              static_cast<int>(IsaTarget::avx512) == SDPA_CTS_ISA_AVX512 &&
              static_cast<int>(IsaTarget::avx512bf16) == SDPA_CTS_ISA_AVX512BF16);
// And the PyTorch kernel kinds, which capabilities_from() casts.
static_assert(static_cast<int>(PytorchKernel::none) == SDPA_CTS_PYTORCH_NONE &&
              static_cast<int>(PytorchKernel::math) == SDPA_CTS_PYTORCH_MATH &&
              static_cast<int>(PytorchKernel::flash) == SDPA_CTS_PYTORCH_FLASH &&
              static_cast<int>(PytorchKernel::efficient) == SDPA_CTS_PYTORCH_EFFICIENT &&
              static_cast<int>(PytorchKernel::cudnn) == SDPA_CTS_PYTORCH_CUDNN);

constexpr DType kDtypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

DType dtype_from(int32_t code, const std::string& backend) {
  for (DType t : kDtypes) {
    if (dtype_code(t) == code) return t;
  }
  throw std::runtime_error(backend + ": precision() returned an unknown element type " +
                           std::to_string(code));
}

sdpa_cts_device c_device(const Device& d) {
  sdpa_cts_device c{};
  c.struct_size = sizeof c;
  c.kind = d.kind == DeviceKind::cuda ? SDPA_CTS_DEVICE_CUDA : SDPA_CTS_DEVICE_CPU;
  c.name = d.name.c_str();
  c.simulated = d.simulated;
  const std::pair<bool, uint32_t> features[] = {{d.cpu.avx2, SDPA_CTS_CPU_AVX2},
                                                {d.cpu.fma, SDPA_CTS_CPU_FMA},
                                                {d.cpu.f16c, SDPA_CTS_CPU_F16C},
                                                {d.cpu.avx512f, SDPA_CTS_CPU_AVX512F},
                                                {d.cpu.avx512_bf16, SDPA_CTS_CPU_AVX512_BF16},
                                                {d.cpu.avx512_fp16, SDPA_CTS_CPU_AVX512_FP16}};
  for (auto [on, bit] : features) c.cpu_features |= on ? bit : 0u;
  c.cpu_isa = static_cast<int32_t>(d.cpu.isa);  // the same order as SDPA_CTS_ISA_*
  c.cpu_cores = d.cpu.cores;
  c.cuda_sm = d.cuda.sm;
  c.cuda_sm_count = d.cuda.sm_count;
  c.cuda_runtime = d.cuda.cuda_runtime;
  c.cudnn_version = d.cuda.cudnn_version;
  return c;
}

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(const sdpa_cts_backend& b)
      : b_(b), name_(b.name), caps_(capabilities_from(b.capabilities)) {
    // check_description() made sure that a backend declaring the backward has the entry.
    caps_.backward = has_backward(b);
  }

  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }

  PrecisionContract precision(DType dtype) const override {
    sdpa_cts_precision c{};
    c.struct_size = sizeof c;
    c.ds_type = -1;  // a plugin of ABI 2.0 does not know the field: the accumulate type
    if (b_.precision(b_.state, dtype_code(dtype), &c) != 0) {
      throw std::runtime_error(name_ + ": precision() has no contract for " +
                               std::string(dtype_name(dtype)));
    }
    PrecisionContract out;
    out.accumulate = dtype_from(c.accumulate, name_);
    out.p_type = dtype_from(c.p_type, name_);
    out.online_softmax = c.online_softmax != 0;
    out.key_block = c.key_block;
    out.ds_type = c.ds_type == -1 ? out.accumulate : dtype_from(c.ds_type, name_);
    out.dkv_rounded_per_head = c.dkv_rounded_per_head != 0;
    if (c.mma_block < 0 || c.mma_block > 64 || c.mma_extra_bits < 0 || c.mma_extra_bits > 24 ||
        (c.mma_block == 0 && c.mma_extra_bits != 0)) {
      throw std::runtime_error(name_ + ": precision() for " + std::string(dtype_name(dtype)) +
                               ": mma_block " + std::to_string(c.mma_block) + " / mma_extra_bits " +
                               std::to_string(c.mma_extra_bits) +
                               " out of range (0 to 64 products, 0 to 24 bits; bits only with "
                               "a block)");
    }
    out.mma_block = c.mma_block;
    out.mma_extra_bits = c.mma_extra_bits;
    return out;
  }

  Support supports(const LoweredProblem& lowered, const Device& device) const override {
    Support s;
    check_capabilities(caps_, lowered, device, s);
    if (caps_.memory == MemorySpace::cuda_device && device.kind == DeviceKind::cuda &&
        device.cuda.emulated) {
      // ABI 2 passes only pointers into the space the capabilities declare; an emulated GPU
      // would get host memory standing in for the device (conformance/judge/memory_space.hpp).
      s.decline("its run() takes CUDA device memory, and " + device.name +
                " is emulated on the host: a plugin needs a real GPU");
    }
    const sdpa_cts_device cd = c_device(device);
    DeclineContext context{&s, s.reasons.size()};
    b_.supports(b_.state, &lowered.params(), &cd, &PluginBackend::decline, &context);
    return s;
  }

  void run(const LoweredProblem& lowered, const Device& device,
           const RunOptions& options) const override {
    if (lowered.memory() != caps_.memory) {
      throw std::runtime_error(name_ + ": the buffers are in " +
                               memory_space_name(lowered.memory()) +
                               " memory, the plugin declares " + memory_space_name(caps_.memory));
    }
    const sdpa_cts_device cd = c_device(device);
    std::vector<char> error(1024, '\0');
    if (b_.run(b_.state, &lowered.params(), &cd, options.threads, error.data(), error.size()) !=
        0) {
      error.back() = '\0';
      throw std::runtime_error(name_ + ": " + (error[0] ? error.data() : "run() failed"));
    }
  }

  void run_backward(const LoweredProblem& lowered, const Device& device,
                    const RunOptions& options) const override {
    if (!caps_.backward) throw std::logic_error(name_ + " has no backward pass");
    const sdpa_cts_device cd = c_device(device);
    std::vector<char> error(1024, '\0');
    if (b_.run_backward(b_.state, &lowered.params(), &cd, options.threads, error.data(),
                        error.size()) != 0) {
      error.back() = '\0';
      throw std::runtime_error(name_ + ": " + (error[0] ? error.data() : "run_backward() failed"));
    }
  }

 private:
  // Where supports() declines into: the host's reasons are the first host_reasons ones.
  struct DeclineContext {
    Support* support;
    std::size_t host_reasons;
  };

  // A reason as the reports can hold it: never empty, at most kMaxReason characters, and
  // not a repeat of a reason the host's capability check already gave (a plugin that
  // declines in supports() what its capabilities exclude would otherwise print it twice).
  static void decline(void* context, const char* reason) {
    auto& c = *static_cast<DeclineContext*>(context);
    std::string r = reason ? reason : "(declined without a reason)";
    if (r.empty()) r = "(declined with an empty reason)";
    if (r.size() > kMaxReason) {
      r.resize(kMaxReason);
      r += "... (truncated by sdpa-cts)";
    }
    for (std::size_t i = 0; i < c.host_reasons; ++i) {
      if (c.support->reasons[i] == r) return;
    }
    c.support->decline(std::move(r));
  }
  static constexpr std::size_t kMaxReason = 4096;

  const sdpa_cts_backend& b_;
  std::string name_;
  Capabilities caps_;
};

}  // namespace

Capabilities capabilities_from(const sdpa_cts_capabilities& c) {
  Capabilities caps;
  for (DType t : kDtypes) {
    if (c.dtypes & (1u << dtype_code(t))) caps.dtypes.push_back(t);
  }
  caps.device = c.device_kind == SDPA_CTS_DEVICE_CUDA ? DeviceKind::cuda : DeviceKind::cpu;
  caps.max_head_dim = c.max_head_dim;
  caps.head_dim_multiple = c.head_dim_multiple;
  const auto on = [&](uint32_t bit) { return (c.flags & bit) != 0; };
  // The boolean features from their ABI bits, by the feature table (kernels/features.def).
  for (const FeatureInfo& f : feature_table()) *caps.feature(f.name) = on(f.abi_bit);
  caps.memory =
      c.memory == SDPA_CTS_MEMORY_CUDA_DEVICE ? MemorySpace::cuda_device : MemorySpace::host;
  caps.traits.split_kv = (c.traits & SDPA_CTS_TRAIT_SPLIT_KV) != 0;
  caps.traits.pytorch = static_cast<PytorchKernel>(c.pytorch_kernel);  // checked on load
  caps.traits.fused_mha = (c.traits & SDPA_CTS_TRAIT_FUSED_MHA) != 0;
  return caps;
}

bool has_backward(const sdpa_cts_backend& b) {
  return (b.capabilities.flags & SDPA_CTS_CAP_BACKWARD) != 0 &&
         b.struct_size >= kBackendSizeAbi21 && b.run_backward != nullptr;
}

std::string check_description(const sdpa_cts_backend& b) {
  if (b.struct_size < kBackendSizeAbi20) {
    return "backend struct_size " + std::to_string(b.struct_size) + " is smaller than " +
           std::to_string(kBackendSizeAbi20) + " (ABI 2.0's)";
  }
  if (!b.name || !*b.name) return "a backend has no name";
  const std::string name = b.name;
  for (char ch : name) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-')) {
      return "backend name '" + name + "' has a character outside [A-Za-z0-9._-]";
    }
  }
  if (!b.precision || !b.supports || !b.run) {
    return "backend '" + name + "' lacks precision(), supports() or run()";
  }
  const sdpa_cts_capabilities& c = b.capabilities;
  if (c.struct_size < sizeof(sdpa_cts_capabilities)) {
    return "backend '" + name + "': capabilities struct_size " + std::to_string(c.struct_size) +
           " is smaller than " + std::to_string(sizeof(sdpa_cts_capabilities));
  }
  if ((c.dtypes & 0xFu) == 0) return "backend '" + name + "' accepts no element type";
  if (c.device_kind != SDPA_CTS_DEVICE_CPU && c.device_kind != SDPA_CTS_DEVICE_CUDA) {
    return "backend '" + name + "': unknown device kind " + std::to_string(c.device_kind);
  }
  if (c.memory != SDPA_CTS_MEMORY_HOST && c.memory != SDPA_CTS_MEMORY_CUDA_DEVICE) {
    return "backend '" + name + "': unknown memory space " + std::to_string(c.memory);
  }
  if (c.pytorch_kernel < SDPA_CTS_PYTORCH_NONE || c.pytorch_kernel > SDPA_CTS_PYTORCH_CUDNN) {
    return "backend '" + name + "': unknown pytorch_kernel " + std::to_string(c.pytorch_kernel);
  }
  if (c.head_dim_multiple < 1 || c.max_head_dim < 0) {
    return "backend '" + name + "': head_dim_multiple must be >= 1 and max_head_dim >= 0";
  }
  if ((c.flags & SDPA_CTS_CAP_BACKWARD) && !has_backward(b)) {
    return "backend '" + name +
           "' declares SDPA_CTS_CAP_BACKWARD but has no run_backward() (ABI 2.1's entry)";
  }
  if ((c.flags & SDPA_CTS_CAP_BIAS_GRADIENT) && !(c.flags & SDPA_CTS_CAP_BACKWARD)) {
    return "backend '" + name +
           "' declares SDPA_CTS_CAP_BIAS_GRADIENT without SDPA_CTS_CAP_BACKWARD: d bias is "
           "written by the backward";
  }
  return "";
}

std::unique_ptr<const Backend> make_plugin_backend(const sdpa_cts_backend& b) {
  return std::make_unique<PluginBackend>(b);
}

}  // namespace sdpa::plugins
