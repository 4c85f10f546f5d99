// One nn.MultiheadAttention forward call, as a value, and its spec-string grammar (the
// `sdpa-cts explain --mha` argument; docs/DISPATCH.md, "MHA spec"): the module and call the
// reference models (MhaProblem) plus the call-site facts PyTorch's fast-path check reads.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "core/dtype.hpp"
#include "reference/mha_reference.hpp"

namespace sdpa::reference {

// One forward call: the module and call the reference models, plus the call-site facts the
// fast-path check looks at.
struct MhaCall {
  reference::MhaProblem mha;           // sizes, flags, masks, need_weights, dropout, ...
  bool need_weights_explicit = false;  // the caller passed need_weights (else PyTorch's default)
  DType dtype = DType::f32;            // dtype of query, key and value
  DType param_dtype = DType::f32;      // dtype of in_proj_weight and in_proj_bias
  bool training = false;               // module.training
  bool self_attention = true;          // query is key is value (one tensor object)
  bool batched = true;                 // 3-D inputs; false = unbatched 2-D (needs batch 1)
  bool fastpath_enabled = true;        // torch.backends.mha.get_fastpath_enabled()
  bool autocast = false;               // torch.is_autocast_enabled()
  bool requires_grad = false;          // grad enabled and some argument requires grad
  bool nested = false;                 // query is a NestedTensor
};

// "" for a consistent call, else the first problem as "field: reason" (the MhaProblem's own
// rules first).
std::string validate(const MhaCall& call);

// The spec string of `sdpa-cts explain --mha` (docs/DISPATCH.md, "MHA spec"), e.g.
// "e64.h4.b2.l5.s5.f16.need_weights=0.batch_first=1". Errors name the field.
std::variant<MhaCall, std::string> parse_mha_spec(std::string_view spec);
MhaCall parse_mha_spec_or_throw(std::string_view spec);  // std::invalid_argument
// The canonical spec: every field, need_weights only when given explicitly.
std::string format_mha_spec(const MhaCall& call);


// kdim == vdim == embed_dim (PyTorch's _qkv_same_embed_dim: one packed in_proj_weight).
bool same_embed_dims(const MhaProblem& m);

}  // namespace sdpa::reference
