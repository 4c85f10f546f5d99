#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/backend.hpp"

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

void Backend::run_backward(const Problem&, const Buffers&, const GradientPointers&, const Device&,
                           const RunOptions&) const {
  throw std::logic_error(std::string(name()) + " has no backward pass");
}

void check_capabilities(const Capabilities& caps, const Problem& p, const Device& device,
                        Support& s) {
  if (p.backward && !caps.backward) s.decline("has no backward pass (bwd)");
  if (p.bias_grad && !caps.bias_gradient)
    s.decline("does not compute the additive mask's gradient (dbias)");
  if (p.backward && caps.backward && caps.backward_needs_lse && !p.want_lse)
    s.decline(
        "its backward recomputes P from the forward's LSE: a backward case must ask for it (lse)");
  if (device.kind != caps.device) {
    s.decline(std::string("runs on ") + (caps.device == DeviceKind::cpu ? "CPU" : "CUDA") +
              " devices, not on " + device.name);
  }
  if (std::find(caps.dtypes.begin(), caps.dtypes.end(), p.dtype) == caps.dtypes.end()) {
    std::string list;
    for (DType t : caps.dtypes) list += (list.empty() ? "" : ", ") + std::string(dtype_name(t));
    s.decline("dtype " + std::string(dtype_name(p.dtype)) +
              " is not supported (supported: " + list + ")");
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
    s.decline("dv=" + std::to_string(p.head_dim_v) +
              " differs from dqk=" + std::to_string(p.head_dim_qk));
  }
  if (!caps.bool_mask && p.mask == MaskKind::boolean)
    s.decline("boolean mask tensors are not supported");
  if (!caps.additive_mask && p.mask == MaskKind::additive)
    s.decline("additive mask tensors are not supported");
  if (!caps.causal_top_left && p.causal == Causal::top_left)
    s.decline("top-left causal masks are not supported");
  if (!caps.causal_bottom_right && p.causal == Causal::bottom_right) {
    s.decline("bottom-right causal masks are not supported");
  }
  if (!caps.window && p.window.enabled) s.decline("sliding windows are not supported");
  if (!caps.softcap && p.softcap > 0) s.decline("softcap is not supported");
  if (!caps.dropout && p.dropout_p > 0) s.decline("dropout is not supported");
  if (!caps.gqa && p.heads_kv != p.heads_q) {
    s.decline("grouped-query attention (hq=" + std::to_string(p.heads_q) +
              ", hkv=" + std::to_string(p.heads_kv) + ") is not supported");
  }
  if (!caps.padded_seqlens && !p.packed && (!p.seqlens_q.empty() || !p.seqlens_kv.empty())) {
    s.decline("per-batch sequence lengths are not supported");
  }
  if (!caps.packed_seqlens && p.packed) s.decline("packed variable-length rows are not supported");
  if (!caps.lse_output && p.want_lse) s.decline("the LSE output is not supported");
  if (!caps.weights_output && p.want_weights)
    s.decline("the attention-weights output is not supported");
  if (caps.last_dim_contiguous) {
    for (auto [name, t] :
         {std::pair{"q", &p.q}, std::pair{"k", &p.k}, std::pair{"v", &p.v}, std::pair{"o", &p.o}}) {
      if (t->stride[3] != 1) {
        s.decline(std::string(name) + " has head-dim stride " + std::to_string(t->stride[3]) +
                  ", not 1");
      }
    }
  }
  if (!caps.empty_problems) {
    if (p.batch == 0 || p.heads_q == 0 || p.len_q == 0 || p.len_kv == 0 || p.head_dim_qk == 0 ||
        p.head_dim_v == 0) {
      s.decline("empty problems (a dimension of 0) are not supported");
    }
  }
}

}  // namespace sdpa
