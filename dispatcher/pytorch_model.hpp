// The PyTorch policy's model of PyTorch itself: how its Python layer hands a problem to the
// picker (the "front end"), PyTorch's own CPU kernels as explain-only backends, and the
// backends and rules the policy chooses with. docs/DISPATCH.md, "Policies".
//
// Modelled version: PyTorch 2.15 (kModelledPytorch). Facts come from its
// aten/src/ATen/native/transformers/sdp_utils_cpp.{h,cpp} (CPU picker),
// cuda/sdp_utils.cpp (CUDA picker), torch/nn/attention/bias.py (CausalBias),
// torch/nested/_internal/sdpa.py (the jagged NestedTensor picker) and
// torch/nn/modules/activation.py (MultiheadAttention); scripts/pytorch-picker-diff.py checks
// the model against the real PyTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "kernels/backend.hpp"

namespace sdpa::dispatcher {

// The PyTorch release the policy models.
inline constexpr const char* kModelledPytorch = "2.15";

// PyTorch's CPU kernels, as backends that explain but never run (run() throws):
// torch.cpu.flash (use_flash_attention_cpp) and torch.cpu.math (the math fallback).
const Backend& pytorch_cpu_flash();
const Backend& pytorch_cpu_math();

// The backends the PyTorch policy chooses among, in PyTorch's default order: torch.cpu.flash,
// torch.cpu.math, then this build's CUDA descriptors (cuda.flash, cuda.mem_efficient,
// cuda.math, cuda.cudnn), which model PyTorch's CUDA picker.
const std::vector<const Backend*>& pytorch_model_backends();

// PyTorch's name of a backend's SDPBackend value ("flash", "efficient", "math", "cudnn"),
// or "" for a backend outside the model.
std::string pytorch_backend_name(const Backend& b);

// How a problem reaches PyTorch's picker through the public API.
enum class TorchRoute {
  sdpa,             // F.scaled_dot_product_attention on dense tensors (_fused_sdp_choice)
  causal_bias,      // attn_mask=causal_lower_right(L, S) with L != S: CausalBias._dispatch
                    // tries flash, then efficient without a mask, then SDPA with the
                    // materialised boolean mask
  nested,           // packed rows as jagged NestedTensors: the Python-side jagged picker
                    // (order flash, efficient, math, cudnn; no cuDNN preference)
  not_expressible,  // the public API cannot express it, or raises before selecting
};
const char* torch_route_name(TorchRoute r);

struct TorchCall {
  TorchRoute route = TorchRoute::sdpa;
  std::vector<std::string> not_expressible;  // every reason, when route is not_expressible
  std::vector<std::string> notes;            // conversions the Python layer makes
  Problem problem;  // what the picker sees (O contiguous: PyTorch allocates it); for
                    // causal_bias the mask-free problem flash and efficient are asked about
  std::optional<Problem> masked;  // causal_bias: the SDPA call with the materialised mask
  bool requires_grad = false;     // Q, K, V require grad (a `bwd` case): the training rules
                                  // apply; `problem` and `masked` have backward off (which
                                  // kernel runs the backward is the chosen one's business)
};

// The call PyTorch's public API makes of `p` (a valid problem).
TorchCall torch_call(const Problem& p);

// PyTorch's check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120, as data:
// in training (inputs that require grad), flash declines a head dim d with above < d <= up_to
// (with dropout only, when only_with_dropout) on each consumer architecture, whose shared
// memory cannot hold FlashAttention's backward tiles. Read by pytorch_route_checks; the
// boundary tests generate d = above, above + 1, up_to, up_to + 1 on each architecture and its
// neighbours from it.
struct FlashTrainingBand {
  std::int64_t above;  // exclusive
  std::int64_t up_to;  // inclusive; INT64_MAX for an open band
  bool only_with_dropout;
};
const std::vector<int>& flash_training_consumer_archs();  // compute capabilities, e.g. 86
const std::vector<FlashTrainingBand>& flash_training_head_dim_bands();

// Rules of the model that are not a backend's own supports(): the jagged picker's extra
// checks on NestedTensor inputs, and the training rules (inputs that require grad).
// Appends to `s`.
void pytorch_route_checks(const Backend& b, const TorchCall& call, const Device& device,
                          Support& s);

}  // namespace sdpa::dispatcher
