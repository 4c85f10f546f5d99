// cuda.cudnn: PyTorch's CUDNN_ATTENTION rules (can_use_cudnn_attention in its
// cuda/sdp_utils.cpp), docs/DISPATCH.md. A model of PyTorch's choice only (Traits::model_only):
// the suite has no cuDNN kernel, run() throws, and the suite policy never selects it.
// cuDNN versions are encoded major * 10000 + minor * 100 + patch (9.16.0 = 91600).
#include <cmath>
#include <stdexcept>

#include "kernels/cuda/cudnn_rules.hpp"
#include "kernels/cuda/descriptor.hpp"

namespace sdpa::cuda {
namespace {

Capabilities cudnn_caps() {
  Capabilities c = Capabilities::every_forward_input();
  c.device = DeviceKind::cuda;
  c.dtypes = {DType::f16, DType::bf16};
  c.max_head_dim = 256;           // 128, or 256 on sm90/sm10x with new cuDNN (refined)
  c.head_dim_multiple = 8;        // d_qk and d_v multiples of 8
  c.different_v_dim = true;       // within the limits
  c.bool_mask = true;             // PyTorch makes it additive with -65504 (see DISPATCH.md)
  c.additive_mask = true;         // 2-D or 4-D masks; ours are 4-D views
  c.causal_top_left = true;       // is_causal
  c.causal_bottom_right = false;  // PyTorch's cuDNN path has no bottom-right causal
  c.window = false;               // not reachable through PyTorch's SDPA
  c.softcap = false;              // not reachable through PyTorch's SDPA
  c.dropout = true;               // p a multiple of 1/16, version gates (refined)
  c.gqa = true;                   // Hk != Hv allowed too
  c.padded_seqlens = false;       // PyTorch's SDPA has no per-batch lengths on dense inputs
  c.packed_seqlens = true;        // NestedTensor on sm90 / sm10x only (refined)
  c.lse = true;
  c.weights = false;
  c.last_dim_contiguous = true;
  c.empty_problems = false;
  c.deterministic = false;  // "cuDNN SDPA is not deterministic."
  c.batch_invariant = false;
  c.memory = MemorySpace::cuda_device;
  c.traits.pytorch = PytorchKernel::cudnn;  // first on sm9x / sm10x (rule cudnn_preferred)
  c.traits.fused_mha = true;                // native multi-head attention hands SDPA to cuDNN too
  c.traits.model_only = true;  // no cuDNN kernel in this suite: PyTorch's choice, modelled
  return c;
}

// The bounds of a gate, for its reason text ("8.9.6", "above 9.11.0 and below 9.14.0").
const CudnnVersionGate& gate_row(CudnnGate gate) {
  for (const CudnnVersionGate& g : cudnn_version_gates())
    if (g.gate == gate) return g;
  throw std::logic_error("cuda.cudnn: no version gate row");
}
std::string until_name(CudnnGate gate) { return cudnn_version_name(gate_row(gate).until_version); }

class Cudnn final : public detail::DescriptorBackend {
 public:
  Cudnn() : DescriptorBackend("cuda.cudnn", cudnn_caps()) {}

  PrecisionContract precision(DType dtype) const override {
    return detail::fused_precision(dtype, 64);
  }

  Support supports(const LoweredProblem& lowered, const Device& device) const override {
    const sdpa_cts_params& p = lowered.params();
    Support s;
    if (!detail::check_cuda_device(capabilities(), device, s)) return s;
    const int v = device.cuda.cudnn_version;
    const int sm = device.cuda.sm;
    const std::string have = " (device has " + cudnn_version_name(v) + ")";
    if (v <= 0) {
      s.decline("no cuDNN library on " + device.name + "; cuDNN attention needs " +
                until_name(CudnnGate::no_sdpa) + " or newer");
      return s;
    }
    if (cudnn_gate_applies(CudnnGate::no_sdpa, v)) {
      s.decline("cuDNN " + cudnn_version_name(v) + " has no SDPA; it needs " +
                until_name(CudnnGate::no_sdpa));
    }
    const bool dropout = p.dropout_p > 0;
    if (dropout && cudnn_gate_applies(CudnnGate::dropout_disabled, v)) {
      const CudnnVersionGate& g = gate_row(CudnnGate::dropout_disabled);
      s.decline("dropout is disabled with cuDNN above " + cudnn_version_name(g.from_version - 1) +
                " and below " + cudnn_version_name(g.until_version) + have);
    }
    Capabilities generic = capabilities();
    generic.max_head_dim = 0;  // the limit depends on arch and version, checked below
    check_capabilities(generic, lowered, device, s);
    detail::check_sm_range(name(), device, s);
    if (dropout && std::fmod(p.dropout_p * 16.0, 1.0) != 0.0) {
      s.decline("dropout p=" + format_p(p.dropout_p) + " is not a multiple of 1/16");
    }
    check_head_dims(p, sm, v, s);
    if (dropout && cudnn_gate_applies(CudnnGate::dropout, v)) {
      s.decline("dropout needs cuDNN " + until_name(CudnnGate::dropout) + " or newer" + have);
    }
    if (p.len_kv % 64 != 0 && cudnn_gate_applies(CudnnGate::kv_len_multiple_64, v)) {
      s.decline("S=" + std::to_string(p.len_kv) + " is not a multiple of 64, needed below cuDNN " +
                until_name(CudnnGate::kv_len_multiple_64) + have);
    }
    if (p.len_q < 64 && cudnn_gate_applies(CudnnGate::q_len_at_least_64, v)) {
      s.decline("L=" + std::to_string(p.len_q) + " is below 64, needed before cuDNN " +
                until_name(CudnnGate::q_len_at_least_64) + have);
    }
    if (dropout && (p.len_q % 64 != 0 || p.len_kv % 64 != 0) &&
        cudnn_gate_applies(CudnnGate::dropout_lens_64, v)) {
      s.decline("with dropout, L=" + std::to_string(p.len_q) +
                " and S=" + std::to_string(p.len_kv) + " must be multiples of 64 before cuDNN " +
                until_name(CudnnGate::dropout_lens_64) + have);
    }
    if (p.len_kv == 1) s.decline("S=1 (a single key) is not supported");
    if (p.len_q == 1 && dropout) s.decline("L=1 with dropout is not supported");
    if (p.batch > 65535) s.decline("batch " + std::to_string(p.batch) + " exceeds 65535");
    if (p.heads_q > 65535) s.decline("hq " + std::to_string(p.heads_q) + " exceeds 65535");
    detail::check_mask_last_dim_stride(lowered, s);
    if (p.packed) {
      if (!device.cuda.cudnn_nested) {
        s.decline(
            "packed variable-length rows (NestedTensor inputs) need PyTorch's "
            "TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED switch (device option cudnn_nested=1)");
      }
      if (sm / 10 != 9 && sm / 10 != 10) {
        s.decline("packed variable-length rows need an sm9x or sm10x device, device is " +
                  sm_name(sm));
      }
      if (p.len_q <= 128) {
        s.decline("packed variable-length rows need a maximum query length above 128 (L=" +
                  std::to_string(p.len_q) + ")");
      }
      detail::check_packed_nonempty(lowered, s);
    }
    return s;
  }

 private:
  static std::string format_p(double p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", p);
    return buf;
  }

  // d_qk and d_v up to the limit of cudnn_head_dim_cuts(), or one of cudnn_head_dim_pairs().
  static void check_head_dims(const sdpa_cts_params& p, int sm, int v, Support& s) {
    const int limit = cudnn_head_dim_limit(sm, v);
    for (const CudnnHeadDimPair& pair : cudnn_head_dim_pairs()) {
      if (sm >= pair.from_sm && sm <= pair.to_sm && v >= pair.from_version &&
          p.head_dim_qk == pair.dqk && p.head_dim_v == pair.dv) {
        return;
      }
    }
    for (auto [n, d] : {std::pair{"dqk", p.head_dim_qk}, std::pair{"dv", p.head_dim_v}}) {
      if (d > limit) {
        s.decline(std::string("head dim ") + n + "=" + std::to_string(d) +
                  " exceeds cuDNN's limit of " + std::to_string(limit) + " on " + sm_name(sm) +
                  " with cuDNN " + cudnn_version_name(v));
      }
    }
  }
};

}  // namespace

const Backend& cudnn_backend() {
  static const Cudnn b;
  return b;
}

}  // namespace sdpa::cuda
