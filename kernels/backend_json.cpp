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
  // The boolean features, by the feature table's names (kernels/features.def).
  for (const FeatureInfo& f : feature_table()) caps[f.name] = *c.feature(f.name);
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
