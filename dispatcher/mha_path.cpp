#include "dispatcher/mha_path.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace sdpa::dispatcher {
namespace {

using reference::MhaMaskKind;

std::string dname(DType t) { return std::string(dtype_name(t)); }

std::vector<FastPathCheck> fast_path_checks(const MhaCall& c) {
  const auto& m = c.mha;
  const bool float_mask =
      m.attn_mask == MhaMaskKind::floating || m.key_padding_mask == MhaMaskKind::floating;
  const bool any_mask = m.attn_mask != MhaMaskKind::none || m.key_padding_mask != MhaMaskKind::none;
  const bool packed_weight = reference::same_embed_dims(m);  // in_proj_weight exists
  // PyTorch sets the float-mask text first and lets every failing check of the if/elif chain
  // that follows overwrite it; the grad check runs only when nothing was set. The list is in
  // the order that decides the text: the chain, then the float mask, then grad and bias.
  FastPathCheck float_check{"no floating-point masks", !float_mask,
                            "floating-point masks are not supported for fast path."};
  return {
      {"fast path enabled", c.fastpath_enabled,
       "torch.backends.mha.get_fastpath_enabled() was not True"},
      {"batched input", c.batched, "input not batched; expected query.dim() of 3 but got 2"},
      {"self-attention", c.self_attention,
       "non-self attention was used (query, key, and value are not the same Tensor)"},
      {"in_proj_bias dtype matches query", !m.bias || c.param_dtype == c.dtype,
       "dtypes of query (" + dname(c.dtype) + ") and self.in_proj_bias (" + dname(c.param_dtype) +
           ") don't match"},
      {"in_proj_weight present", packed_weight, "in_proj_weight was None"},
      {"in_proj_weight dtype matches query", c.param_dtype == c.dtype,
       "dtypes of query (" + dname(c.dtype) + ") and self.in_proj_weight (" + dname(c.param_dtype) +
           ") don't match"},
      {"not training", !c.training, "training is enabled"},
      {"even num_heads", m.num_heads % 2 == 0, "self.num_heads is not even"},
      {"batch_first", m.batch_first, "batch_first was not True"},
      {"no bias_k", !m.add_bias_kv, "self.bias_k was not None"},
      {"no bias_v", !m.add_bias_kv, "self.bias_v was not None"},
      {"no add_zero_attn", !m.add_zero_attn, "add_zero_attn was enabled"},
      {"_qkv_same_embed_dim", packed_weight, "_qkv_same_embed_dim was not True"},
      {"NestedTensor without masks", !(c.nested && any_mask),
       "supplying both src_key_padding_mask and src_mask at the same time is not supported with "
       "NestedTensor input"},
      {"autocast off", !c.autocast, "autocast is enabled"},
      float_check,
      {"no grad", !c.requires_grad,
       "grad is enabled and at least one of query or the input/output projection weights or "
       "biases requires_grad"},
      {"in_proj_bias present", m.bias,
       "in_proj_bias is None (bias=False): the fast path needs it, and PyTorch falls back "
       "without setting why_not_fast_path"},
  };
}

std::string need_weights_text(const MhaCall& c) {
  return c.need_weights_explicit ? "need_weights=1"
                                 : "need_weights=1 by default (the call did not pass "
                                   "need_weights=False)";
}

}  // namespace

const char* route_name(MhaRoute r) {
  switch (r) {
    case MhaRoute::fast_sdpa:
      return "fast_sdpa";
    case MhaRoute::fast_materialized:
      return "fast_materialized";
    case MhaRoute::slow_sdpa:
      return "slow_sdpa";
    case MhaRoute::slow_materialized:
      return "slow_materialized";
    case MhaRoute::error:
      return "error";
  }
  return "?";
}

MhaPath pick_mha_path(const MhaCall& c, const Device& device, const Policy& policy) {
  return pick_mha_path(c, device, policy, policy_backends(policy));
}

MhaPath pick_mha_path(const MhaCall& c, const Device& device, const Policy& policy,
                      const std::vector<const Backend*>& backends) {
  if (auto r = validate(c); !r.empty()) throw std::invalid_argument("invalid MHA call: " + r);
  const auto& m = c.mha;
  MhaPath path;
  path.checks = fast_path_checks(c);
  for (const auto& k : path.checks) {
    if (!k.passed) {
      path.why_not_fast_path = k.reason;
      break;
    }
  }
  path.fast_path = path.why_not_fast_path.empty();

  // The attention as an SDPA problem: merged additive mask, H heads of E / H.
  Problem p = reference::mha_sdpa_problem(m);
  p.dtype = c.dtype;
  p.dropout_p = c.training ? m.dropout_p : 0.0;  // F.dropout only in training
  if (p.dropout_p == 0) p.dropout_seed = p.dropout_offset = 0;
  const bool gpu = device.kind == DeviceKind::cuda;

  if (path.fast_path) {
    // torch._native_multi_head_attention: q, k, v are [B, L, E] views as [B, H, L, D].
    apply_layout(p, LayoutKind::bshd, 0, 0);
    p.want_weights = m.need_weights;
    if (!gpu) {
      path.route = MhaRoute::fast_materialized;
      path.route_reason =
          "on a CPU, native multi-head attention computes bmm and a masked softmax itself";
    } else if (m.need_weights) {
      path.route = MhaRoute::fast_materialized;
      path.route_reason = need_weights_text(c) +
                          ": native multi-head attention materialises the weights (bmm "
                          "and masked softmax), no SDPA kernel";
    } else if (reference::head_dim(m) % 8 != 0) {
      path.route = MhaRoute::fast_materialized;
      path.route_reason = "head dim " + std::to_string(reference::head_dim(m)) +
                          " is not a multiple of 8: native multi-head attention uses bmm and a "
                          "masked softmax";
    } else if (m.attn_mask != MhaMaskKind::none || m.key_padding_mask != MhaMaskKind::none) {
      // native_multi_head_attention_cuda: the fused path needs !mask.has_value().
      path.route = MhaRoute::fast_materialized;
      path.route_reason =
          "the call has a mask: native multi-head attention on CUDA hands SDPA only calls "
          "without one, and uses bmm and a masked softmax";
    } else {
      path.sdpa = explain(p, device, policy, backends);
      const Backend* chosen = nullptr;
      for (const Backend* b : backends) {
        if (b->name() == path.sdpa.chosen) chosen = b;
      }
      const bool fused = chosen && chosen->capabilities().traits.fused_mha;
      path.route = fused ? MhaRoute::fast_sdpa : MhaRoute::fast_materialized;
      path.reaches_sdpa = fused;
      path.route_reason =
          fused ? "need_weights=0, head dim a multiple of 8, no mask and the SDPA picker chose " +
                      path.sdpa.chosen
          : path.sdpa.chosen.empty()
              ? "the SDPA picker found no backend for it: native multi-head attention uses bmm "
                "and a masked softmax"
              : "the SDPA picker chose " + path.sdpa.chosen +
                    ", not flash, mem-efficient or cuDNN: native multi-head attention uses bmm "
                    "and a masked softmax";
    }
    path.sdpa_problem = p;
    if (!path.reaches_sdpa) path.sdpa = explain(p, device, policy, backends);
    return path;
  }

  if (c.nested) {
    path.route = MhaRoute::error;
    path.route_reason =
        "MultiheadAttention does not support NestedTensor outside of its fast path. The fast path "
        "was not hit because " +
        path.why_not_fast_path;
    path.sdpa_problem = p;
    return path;
  }
  if (m.need_weights) {
    path.route = MhaRoute::slow_materialized;
    path.route_reason = need_weights_text(c) +
                        ": multi_head_attention_forward computes softmax(QK^T) itself to return "
                        "the weights; no SDPA kernel runs (pass need_weights=False to reach SDPA)";
    p.want_weights = true;
  } else {
    path.route = MhaRoute::slow_sdpa;
    path.reaches_sdpa = true;
    p.want_weights = false;
    if (m.is_causal && m.key_padding_mask == MhaMaskKind::none) {
      // The attn_mask is dropped and is_causal passed to SDPA.
      p.mask = MaskKind::none;
      p.mask_broadcast = 0;
      p.causal = Causal::top_left;
      path.route_reason =
          "need_weights=0: F.scaled_dot_product_attention with is_causal=True (the is_causal "
          "hint replaces attn_mask when there is no key_padding_mask)";
    } else {
      path.route_reason = "need_weights=0: F.scaled_dot_product_attention";
    }
  }
  path.sdpa_problem = p;
  path.sdpa = explain(p, device, policy, backends);
  return path;
}

}  // namespace sdpa::dispatcher
