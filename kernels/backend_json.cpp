#include "kernels/backend_json.hpp"

#include <string>

namespace sdpa {

nlohmann::ordered_json backend_json(const Backend& b) {
  using json = nlohmann::ordered_json;
  const Capabilities& c = b.capabilities();
  json caps;
  json dtypes = json::array();
  for (DType t : c.dtypes) dtypes.push_back(std::string(dtype_name(t)));
  caps["dtypes"] = dtypes;
  caps["device"] = c.device == DeviceKind::cuda ? "cuda" : "cpu";
  caps["max_head_dim"] = c.max_head_dim;
  caps["head_dim_multiple"] = c.head_dim_multiple;
  caps["different_v_dim"] = c.different_v_dim;
  caps["bool_mask"] = c.bool_mask;
  caps["additive_mask"] = c.additive_mask;
  caps["causal_top_left"] = c.causal_top_left;
  caps["causal_bottom_right"] = c.causal_bottom_right;
  caps["window"] = c.window;
  caps["softcap"] = c.softcap;
  caps["dropout"] = c.dropout;
  caps["gqa"] = c.gqa;
  caps["padded_seqlens"] = c.padded_seqlens;
  caps["packed_seqlens"] = c.packed_seqlens;
  caps["lse_output"] = c.lse_output;
  caps["weights_output"] = c.weights_output;
  caps["last_dim_contiguous"] = c.last_dim_contiguous;
  caps["empty_problems"] = c.empty_problems;
  caps["deterministic"] = c.deterministic;
  caps["batch_invariant"] = c.batch_invariant;
  caps["backward"] = c.backward;
  caps["backward_needs_lse"] = c.backward_needs_lse;
  caps["bias_gradient"] = c.bias_gradient;
  caps["memory"] = memory_space_name(c.memory);
  json traits;
  traits["split_kv"] = c.traits.split_kv;
  traits["pytorch"] = pytorch_kernel_name(c.traits.pytorch);
  traits["fused_mha"] = c.traits.fused_mha;
  traits["isa_targets"] = c.traits.isa_targets;
  caps["traits"] = traits;
  json precision = json::object();
  for (DType t : c.dtypes) {
    const PrecisionContract p = b.precision(t);
    json j;
    j["accumulate"] = std::string(dtype_name(p.accumulate));
    j["p_type"] = std::string(dtype_name(p.p_type));
    j["online_softmax"] = p.online_softmax;
    j["key_block"] = p.key_block;
    if (p.mma_block > 0) {
      j["mma_block"] = p.mma_block;
      j["mma_extra_bits"] = p.mma_extra_bits;
    }
    if (c.backward) {
      j["ds_type"] = std::string(dtype_name(p.ds_type));
      j["dkv_rounded_per_head"] = p.dkv_rounded_per_head;
    }
    precision[std::string(dtype_name(t))] = j;
  }
  json out;
  out["name"] = std::string(b.name());
  out["capabilities"] = caps;
  out["precision"] = precision;
  return out;
}

}  // namespace sdpa
