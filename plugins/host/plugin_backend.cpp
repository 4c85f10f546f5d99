#include "plugins/host/plugin_backend.hpp"

#include <cctype>
#include <stdexcept>
#include <vector>

namespace sdpa::plugins {
namespace {

// The C enums mirror the project's: checked here, where the conversions rely on it.
static_assert(static_cast<int>(IsaTarget::scalar) == SDPA_CTS_ISA_SCALAR &&
              static_cast<int>(IsaTarget::avx2) == SDPA_CTS_ISA_AVX2 &&
              static_cast<int>(IsaTarget::avx512) == SDPA_CTS_ISA_AVX512 &&
              static_cast<int>(IsaTarget::avx512bf16) == SDPA_CTS_ISA_AVX512BF16);
static_assert(int(kBroadcastB) == int(SDPA_CTS_BROADCAST_B) &&
              int(kBroadcastH) == int(SDPA_CTS_BROADCAST_H) &&
              int(kBroadcastL) == int(SDPA_CTS_BROADCAST_L) &&
              int(kBroadcastS) == int(SDPA_CTS_BROADCAST_S));

constexpr DType kDtypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

int32_t dtype_code(DType t) {
  switch (t) {
    case DType::f64:
      return SDPA_CTS_DTYPE_F64;
    case DType::f32:
      return SDPA_CTS_DTYPE_F32;
    case DType::f16:
      return SDPA_CTS_DTYPE_F16;
    case DType::bf16:
      return SDPA_CTS_DTYPE_BF16;
  }
  return -1;
}

DType dtype_from(int32_t code, const std::string& backend) {
  for (DType t : kDtypes) {
    if (dtype_code(t) == code) return t;
  }
  throw std::runtime_error(backend + ": precision() returned an unknown element type " +
                           std::to_string(code));
}

sdpa_cts_layout layout(const TensorLayout& t) {
  return {{t.stride[0], t.stride[1], t.stride[2], t.stride[3]}, t.base_offset};
}

// The C problem of `p`; its pointers refer to p's vectors.
sdpa_cts_problem c_problem(const Problem& p) {
  sdpa_cts_problem c{};
  c.struct_size = sizeof c;
  c.batch = p.batch;
  c.heads_q = p.heads_q;
  c.heads_kv = p.heads_kv;
  c.len_q = p.len_q;
  c.len_kv = p.len_kv;
  c.head_dim_qk = p.head_dim_qk;
  c.head_dim_v = p.head_dim_v;
  c.dtype = dtype_code(p.dtype);
  c.q = layout(p.q);
  c.k = layout(p.k);
  c.v = layout(p.v);
  c.o = layout(p.o);
  c.causal = p.causal == Causal::top_left       ? SDPA_CTS_CAUSAL_TOP_LEFT
             : p.causal == Causal::bottom_right ? SDPA_CTS_CAUSAL_BOTTOM_RIGHT
                                                : SDPA_CTS_CAUSAL_NONE;
  c.window = p.window.enabled;
  c.window_left = p.window.left;
  c.window_right = p.window.right;
  c.window_align =
      p.window.align == Align::bottom_right ? SDPA_CTS_ALIGN_BOTTOM_RIGHT : SDPA_CTS_ALIGN_TOP_LEFT;
  c.mask = p.mask == MaskKind::boolean    ? SDPA_CTS_MASK_BOOL
           : p.mask == MaskKind::additive ? SDPA_CTS_MASK_ADDITIVE
                                          : SDPA_CTS_MASK_NONE;
  c.mask_broadcast = p.mask_broadcast;  // the same bit values (core/problem.hpp)
  c.seqlens_q = p.seqlens_q.empty() ? nullptr : p.seqlens_q.data();
  c.seqlens_kv = p.seqlens_kv.empty() ? nullptr : p.seqlens_kv.data();
  c.packed = p.packed;
  c.softcap = p.softcap;
  c.scale = effective_scale(p);
  c.scale_is_default = !p.scale.has_value();
  c.dropout_p = p.dropout_p;
  c.dropout_seed = p.dropout_seed;
  c.dropout_offset = p.dropout_offset;
  c.want_lse = p.want_lse;
  c.want_weights = p.want_weights;
  return c;
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
      : b_(b), name_(b.name), caps_(capabilities_from(b.capabilities)) {}

  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }

  PrecisionContract precision(DType dtype) const override {
    sdpa_cts_precision c{};
    c.struct_size = sizeof c;
    if (b_.precision(b_.state, dtype_code(dtype), &c) != 0) {
      throw std::runtime_error(name_ + ": precision() has no contract for " +
                               std::string(dtype_name(dtype)));
    }
    PrecisionContract out;
    out.accumulate = dtype_from(c.accumulate, name_);
    out.p_type = dtype_from(c.p_type, name_);
    out.online_softmax = c.online_softmax != 0;
    out.key_block = c.key_block;
    return out;
  }

  Support supports(const Problem& p, const Device& device) const override {
    Support s;
    check_capabilities(caps_, p, device, s);
    const sdpa_cts_problem cp = c_problem(p);
    const sdpa_cts_device cd = c_device(device);
    b_.supports(b_.state, &cp, &cd, &PluginBackend::decline, &s);
    return s;
  }

  void run(const Problem& p, const Buffers& buf, const Device& device,
           const RunOptions& options) const override {
    const sdpa_cts_problem cp = c_problem(p);
    const sdpa_cts_device cd = c_device(device);
    sdpa_cts_buffers cb{};
    cb.struct_size = sizeof cb;
    cb.q = buf.q;
    cb.k = buf.k;
    cb.v = buf.v;
    cb.mask = buf.mask;
    cb.o = buf.o;
    cb.lse = buf.lse;
    cb.weights = buf.weights;
    cb.memory =
        buf.memory == MemorySpace::cuda_device ? SDPA_CTS_MEMORY_CUDA_DEVICE : SDPA_CTS_MEMORY_HOST;
    std::vector<char> error(1024, '\0');
    if (b_.run(b_.state, &cp, &cb, &cd, options.threads, error.data(), error.size()) != 0) {
      error.back() = '\0';
      throw std::runtime_error(name_ + ": " + (error[0] ? error.data() : "run() failed"));
    }
  }

 private:
  // A reason as the reports can hold it: never empty, at most kMaxReason characters.
  static void decline(void* context, const char* reason) {
    std::string r = reason ? reason : "(declined without a reason)";
    if (r.empty()) r = "(declined with an empty reason)";
    if (r.size() > kMaxReason) {
      r.resize(kMaxReason);
      r += "... (truncated by sdpa-cts)";
    }
    static_cast<Support*>(context)->decline(std::move(r));
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
  caps.different_v_dim = on(SDPA_CTS_CAP_DIFFERENT_V_DIM);
  caps.bool_mask = on(SDPA_CTS_CAP_BOOL_MASK);
  caps.additive_mask = on(SDPA_CTS_CAP_ADDITIVE_MASK);
  caps.causal_top_left = on(SDPA_CTS_CAP_CAUSAL_TOP_LEFT);
  caps.causal_bottom_right = on(SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT);
  caps.window = on(SDPA_CTS_CAP_WINDOW);
  caps.softcap = on(SDPA_CTS_CAP_SOFTCAP);
  caps.dropout = on(SDPA_CTS_CAP_DROPOUT);
  caps.gqa = on(SDPA_CTS_CAP_GQA);
  caps.padded_seqlens = on(SDPA_CTS_CAP_PADDED_SEQLENS);
  caps.packed_seqlens = on(SDPA_CTS_CAP_PACKED_SEQLENS);
  caps.lse_output = on(SDPA_CTS_CAP_LSE);
  caps.weights_output = on(SDPA_CTS_CAP_WEIGHTS);
  caps.last_dim_contiguous = on(SDPA_CTS_CAP_LAST_DIM_CONTIGUOUS);
  caps.empty_problems = on(SDPA_CTS_CAP_EMPTY_PROBLEMS);
  caps.deterministic = on(SDPA_CTS_CAP_DETERMINISTIC);
  caps.batch_invariant = on(SDPA_CTS_CAP_BATCH_INVARIANT);
  caps.memory =
      c.memory == SDPA_CTS_MEMORY_CUDA_DEVICE ? MemorySpace::cuda_device : MemorySpace::host;
  caps.traits.split_kv = (c.traits & SDPA_CTS_TRAIT_SPLIT_KV) != 0;
  if (c.traits & SDPA_CTS_TRAIT_MATH) caps.traits.pytorch = PytorchKernel::math;
  if (c.traits & SDPA_CTS_TRAIT_CUDNN) caps.traits.pytorch = PytorchKernel::cudnn;
  caps.traits.fused_mha = (c.traits & SDPA_CTS_TRAIT_FUSED_MHA) != 0;
  return caps;
}

std::string check_description(const sdpa_cts_backend& b) {
  if (b.struct_size < sizeof(sdpa_cts_backend)) {
    return "backend struct_size " + std::to_string(b.struct_size) + " is smaller than " +
           std::to_string(sizeof(sdpa_cts_backend));
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
  if (c.head_dim_multiple < 1 || c.max_head_dim < 0) {
    return "backend '" + name + "': head_dim_multiple must be >= 1 and max_head_dim >= 0";
  }
  return "";
}

std::unique_ptr<const Backend> make_plugin_backend(const sdpa_cts_backend& b) {
  return std::make_unique<PluginBackend>(b);
}

}  // namespace sdpa::plugins
