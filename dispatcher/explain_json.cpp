#include "dispatcher/explain_json.hpp"

namespace sdpa::dispatcher {

nlohmann::json policy_json(const Policy& p) {
  nlohmann::json j;
  j["model"] = policy_model_name(p.model);
  j["enabled"] = p.enabled ? nlohmann::json(*p.enabled) : nlohmann::json("all");
  j["priority"] = p.priority;
  j["heuristics"] = p.heuristics;
  j["require_deterministic"] = p.require_deterministic;
  return j;
}

nlohmann::json explanation_json(const Explanation& e) {
  nlohmann::json j;
  j["outcome"] = outcome_name(e.outcome);
  j["chosen"] = e.chosen.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.chosen);
  j["order_source"] = e.order_source;
  j["order"] = e.order;
  j["rules"] = nlohmann::json::array();
  for (const auto& r : e.rules) {
    j["rules"].push_back({{"name", r.name}, {"why", r.why}, {"promoted", r.promoted}});
  }
  j["backends"] = nlohmann::json::array();
  for (const auto& b : e.backends) {
    j["backends"].push_back({{"name", b.name},
                             {"verdict", verdict_name(b.verdict)},
                             {"rank", b.rank},
                             {"reasons", b.reasons}});
  }
  if (!e.message.empty()) j["message"] = e.message;
  if (e.model == PolicyModel::pytorch) {
    j["pytorch_version"] = kModelledPytorch;
    j["torch_route"] = e.torch_route;
    j["front_end"] = e.front_end;
    j["pytorch_choice"] = e.pytorch_choice;
    j["raises"] = e.raises;
  }
  if (e.pytorch) {
    j["pytorch"] = {{"version", kModelledPytorch},
                    {"choice", e.pytorch->choice},
                    {"backend", e.pytorch->backend},
                    {"departs", e.pytorch->departs},
                    {"why", e.pytorch->why}};
  }
  return j;
}

namespace {

// The torch dtype spelling of an element type.
const char* torch_dtype(DType t) {
  switch (t) {
    case DType::f64:
      return "float64";
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
  }
  return "?";
}

}  // namespace

// The tensors of PyTorch's call as data, for scripts/pytorch-picker-diff.py: dense views
// [B, H, rows, D] (strides and storage offset in elements), or jagged rows [total, H, D] with
// the per-batch lengths.
nlohmann::json torch_call_json(const TorchCall& call) {
  const Problem& p = call.problem;
  nlohmann::json j;
  j["route"] = torch_route_name(call.route);
  j["requires_grad"] = call.requires_grad;
  if (call.route == TorchRoute::not_expressible) {
    j["not_expressible"] = call.not_expressible;
    return j;
  }
  j["dtype"] = torch_dtype(p.dtype);
  auto tensor = [&](const TensorLayout& t, std::int64_t heads, std::int64_t rows,
                    std::int64_t dim) {
    nlohmann::json x;
    if (p.packed) {
      x["shape"] = {rows, heads, dim};
      x["stride"] = {t.stride[2], t.stride[1], t.stride[3]};
    } else {
      x["shape"] = {p.batch, heads, rows, dim};
      x["stride"] = {t.stride[0], t.stride[1], t.stride[2], t.stride[3]};
    }
    x["offset"] = t.base_offset;
    return x;
  };
  j["q"] = tensor(p.q, p.heads_q, rows_q(p), p.head_dim_qk);
  j["k"] = tensor(p.k, p.heads_kv, rows_kv(p), p.head_dim_qk);
  j["v"] = tensor(p.v, p.heads_kv, rows_kv(p), p.head_dim_v);
  if (p.packed) {
    std::vector<std::int64_t> lq, lk;
    for (std::int64_t b = 0; b < p.batch; ++b) {
      lq.push_back(seqlen_q(p, b));
      lk.push_back(seqlen_kv(p, b));
    }
    j["seqlens_q"] = lq;
    j["seqlens_kv"] = lk;
  }
  if (p.mask == MaskKind::none) {
    j["mask"] = nullptr;
  } else {
    j["mask"] = {{"dtype", p.mask == MaskKind::boolean ? "bool" : torch_dtype(p.dtype)},
                 {"shape", {p.batch, p.heads_q, p.len_q, p.len_kv}},
                 {"broadcast",
                  {(p.mask_broadcast & kBroadcastB) != 0, (p.mask_broadcast & kBroadcastH) != 0,
                   (p.mask_broadcast & kBroadcastL) != 0, (p.mask_broadcast & kBroadcastS) != 0}}};
  }
  j["dropout_p"] = p.dropout_p;
  j["is_causal"] = p.causal == Causal::top_left;
  j["scale"] = p.scale ? nlohmann::json(*p.scale) : nlohmann::json(nullptr);
  j["enable_gqa"] = p.heads_kv != p.heads_q;
  if (call.masked) j["lower_right"] = {p.len_q, p.len_kv};
  return j;
}

}  // namespace sdpa::dispatcher
