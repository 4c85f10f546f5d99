#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"
#include "sdpa_cts/plugin.h"

namespace sdpa {

const char* memory_space_name(MemorySpace m) {
  switch (m) {
    case MemorySpace::host:
      return "host";
    case MemorySpace::cuda_device:
      return "cuda_device";
    case MemorySpace::test_device:
      return "test_device";
  }
  return "?";
}

const char* pytorch_kernel_name(PytorchKernel k) {
  switch (k) {
    case PytorchKernel::none:
      return "";
    case PytorchKernel::math:
      return "math";
    case PytorchKernel::flash:
      return "flash";
    case PytorchKernel::efficient:
      return "efficient";
    case PytorchKernel::cudnn:
      return "cudnn";
  }
  return "";
}

const std::vector<FeatureInfo>& feature_table() {
  static const std::vector<FeatureInfo> table = {
#define SDPA_CTS_FEATURE(name, abi_bit, kind, profile_tag, example_case, reason) \
  {#name, abi_bit, FeatureKind::kind, profile_tag, example_case, reason},
#include "kernels/features.def"
#undef SDPA_CTS_FEATURE
  };
  return table;
}

const FeatureInfo& feature_info(Feature f) { return feature_table()[static_cast<std::size_t>(f)]; }

Capabilities Capabilities::every_forward_input() {
  Capabilities c;
#define SDPA_CTS_FEATURE(name, abi_bit, kind, profile_tag, example_case, reason) \
  c.name = FeatureKind::kind == FeatureKind::accepts;
#include "kernels/features.def"
#undef SDPA_CTS_FEATURE
  c.backward = c.bias_gradient = false;  // the backward is declared by a backend that has one
  return c;
}

bool* Capabilities::feature(std::string_view feature_name) {
#define SDPA_CTS_FEATURE(name, abi_bit, kind, profile_tag, example_case, reason) \
  if (feature_name == #name) return &name;
#include "kernels/features.def"
#undef SDPA_CTS_FEATURE
  return nullptr;
}

const bool* Capabilities::feature(std::string_view feature_name) const {
  return const_cast<Capabilities*>(this)->feature(feature_name);
}

void Backend::run_backward(const LoweredProblem&, const Device&, const RunOptions&) const {
  throw std::logic_error(std::string(name()) + " has no backward pass");
}

// Policy: one reason per violated feature, the feature table's text (kernels/features.def) with
// the values at fault; the table's test (tests/kernels/feature_table_test.cpp) runs each row's
// example case through this function.
void check_capabilities(const Capabilities& caps, const LoweredProblem& lowered,
                        const Device& device, Support& s) {
  const sdpa_cts_params& p = lowered.params();
  const DType dtype = lowered.dtype();
  auto reason = [](Feature f) { return std::string(feature_info(f).reason); };
  if (p.backward && !caps.backward) s.decline(reason(Feature::backward));
  if (p.bias_grad && !caps.bias_gradient) s.decline(reason(Feature::bias_gradient));
  if (p.backward && caps.backward && caps.backward_needs_lse && !p.want_lse)
    s.decline(reason(Feature::backward_needs_lse));
  if (device.kind != caps.device) {
    s.decline(std::string("runs on ") + (caps.device == DeviceKind::cpu ? "CPU" : "CUDA") +
              " devices, not on " + device.name);
  }
  if (std::find(caps.dtypes.begin(), caps.dtypes.end(), dtype) == caps.dtypes.end()) {
    std::string list;
    for (DType t : caps.dtypes) list += (list.empty() ? "" : ", ") + std::string(dtype_name(t));
    s.decline("dtype " + std::string(dtype_name(dtype)) + " is not supported (supported: " + list +
              ")");
  }
  for (auto [name, dim] : {std::pair{"dqk", p.head_dim_qk}, std::pair{"dv", p.head_dim_v}}) {
    if (caps.max_head_dim > 0 && dim > caps.max_head_dim) {
      s.decline(std::string("head dim ") + name + "=" + std::to_string(dim) + " exceeds " +
                std::to_string(caps.max_head_dim));
    }
    if (caps.head_dim_multiple > 1 && dim % caps.head_dim_multiple != 0) {
      s.decline(std::string("head dim ") + name + "=" + std::to_string(dim) +
                " is not a multiple of " + std::to_string(caps.head_dim_multiple));
    }
  }
  if (!caps.different_v_dim && p.head_dim_qk != p.head_dim_v) {
    s.decline("dv=" + std::to_string(p.head_dim_v) + " " + reason(Feature::different_v_dim) + "=" +
              std::to_string(p.head_dim_qk));
  }
  if (!caps.bool_mask && p.mask_kind == SDPA_CTS_MASK_BOOL) s.decline(reason(Feature::bool_mask));
  if (!caps.additive_mask && p.mask_kind == SDPA_CTS_MASK_ADDITIVE)
    s.decline(reason(Feature::additive_mask));
  if (!caps.causal_top_left && p.causal == SDPA_CTS_CAUSAL_TOP_LEFT)
    s.decline(reason(Feature::causal_top_left));
  if (!caps.causal_bottom_right && p.causal == SDPA_CTS_CAUSAL_BOTTOM_RIGHT)
    s.decline(reason(Feature::causal_bottom_right));
  if (!caps.window && p.window) s.decline(reason(Feature::window));
  if (!caps.softcap && p.softcap > 0) s.decline(reason(Feature::softcap));
  if (!caps.dropout && p.dropout_p > 0) s.decline(reason(Feature::dropout));
  if (!caps.gqa && p.heads_kv != p.heads_q) {
    s.decline(reason(Feature::gqa) + " (hq=" + std::to_string(p.heads_q) +
              ", hkv=" + std::to_string(p.heads_kv) + ")");
  }
  if (!caps.padded_seqlens && !p.packed && p.varlen) s.decline(reason(Feature::padded_seqlens));
  if (!caps.packed_seqlens && p.packed) s.decline(reason(Feature::packed_seqlens));
  if (!caps.lse && p.want_lse) s.decline(reason(Feature::lse));
  if (!caps.weights && p.want_weights) s.decline(reason(Feature::weights));
  if (caps.last_dim_contiguous) {
    for (auto [name, stride] : {std::pair{"q", p.q_stride}, std::pair{"k", p.k_stride},
                                std::pair{"v", p.v_stride}, std::pair{"o", p.o_stride}}) {
      if (stride[3] != 1) {
        s.decline(std::string(name) + " " + reason(Feature::last_dim_contiguous) + " " +
                  std::to_string(stride[3]) + ", not 1");
      }
    }
  }
  if (!caps.empty_problems && (p.batch == 0 || p.heads_q == 0 || p.len_q == 0 || p.len_kv == 0 ||
                               p.head_dim_qk == 0 || p.head_dim_v == 0)) {
    s.decline(reason(Feature::empty_problems));
  }
}

}  // namespace sdpa
