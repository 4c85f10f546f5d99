#include "dispatcher/rules.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>

namespace sdpa::dispatcher {

// Moves the backends matching `pick` to the front, keeping the relative order of both
// groups. Returns the names moved.
std::vector<std::string> promote(std::vector<const Backend*>& order,
                                 const std::function<bool(const Backend&)>& pick) {
  std::vector<std::string> moved;
  std::stable_partition(order.begin(), order.end(), [&](const Backend* b) { return pick(*b); });
  for (const Backend* b : order) {
    if (pick(*b)) moved.emplace_back(b->name());
  }
  return moved;
}

// Moves the backends matching `pick` to the back, keeping the relative order of both groups.
std::vector<std::string> demote(std::vector<const Backend*>& order,
                                const std::function<bool(const Backend&)>& pick) {
  std::vector<std::string> moved;
  std::stable_partition(order.begin(), order.end(), [&](const Backend* b) { return !pick(*b); });
  for (const Backend* b : order) {
    if (pick(*b)) moved.emplace_back(b->name());
  }
  return moved;
}

// PyTorch's check_prefer_cudnn_attention (sdp_utils.cpp): sm9x / sm10x with cuDNN > 9.15.0,
// minor 0 or 3 unless the CUDA runtime is 13.0 or newer.
const CudnnPreference& cudnn_preference() {
  static const CudnnPreference p = {{9, 10}, 91500, {0, 3}, 13000};
  return p;
}

bool cudnn_preferred_on(const Device& device) {
  const CudnnPreference& pref = cudnn_preference();
  const int sm = device.cuda.sm, major = sm / 10, minor = sm % 10;
  const auto in = [](const std::vector<int>& v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  const bool minor_ok =
      device.cuda.cuda_runtime >= pref.any_minor_from_runtime || in(pref.minors, minor);
  return in(pref.majors, major) && device.cuda.cudnn_version > pref.above_version && minor_ok;
}

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// a * b, saturated at the int64 maximum (sizes are >= 0).
std::int64_t mul_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return INT64_MAX;
  return r;
}

}  // namespace

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = {"cudnn_preferred", "decode_split_kv",
                                                 "tiny_prefers_math"};
  return names;
}

bool is_pytorch_rule(std::string_view name) { return name == "cudnn_preferred"; }

std::vector<RuleFiring> apply_rules(const Problem& p, const Device& device,
                                    std::vector<const Backend*>& order,
                                    const std::vector<std::string>* only, bool promote_models) {
  std::vector<RuleFiring> fired;
  // A rule only promotes backends that run on this kind of device, and models of another
  // library's kernel only when asked (promote_models).
  auto fire = [&](std::string name, std::string why,
                  const std::function<bool(const Backend&)>& pick) {
    if (only && std::find(only->begin(), only->end(), name) == only->end()) return;
    auto moved = promote(order, [&](const Backend& b) {
      const Capabilities& c = b.capabilities();
      return c.device == device.kind && (promote_models || !c.traits.model_only) && pick(b);
    });
    if (!moved.empty()) fired.push_back({std::move(name), std::move(why), std::move(moved)});
  };
  const bool gpu = device.kind == DeviceKind::cuda;

  // cudnn_preferred: PyTorch's check_prefer_cudnn_attention (sdp_utils.cpp).
  if (gpu && cudnn_preferred_on(device)) {
    const int sm = device.cuda.sm, v = device.cuda.cudnn_version;
    fire("cudnn_preferred",
         sm_name(sm) + " with cuDNN " + cudnn_version_name(v) + " > " +
             cudnn_version_name(cudnn_preference().above_version) +
             ": PyTorch puts cuDNN first on sm9x / sm10x",
         [](const Backend& b) { return b.capabilities().traits.pytorch == PytorchKernel::cudnn; });
  }

  // decode_split_kv: one query row per (b, h) cannot fill the device; splitting the keys can.
  const std::int64_t units = gpu ? device.cuda.sm_count : device.cpu.cores;
  const std::int64_t bh = mul_sat(p.batch, p.heads_q);
  if (p.len_q <= kDecodeMaxLenQ && p.len_kv >= kDecodeMinLenKv && bh < units) {
    fire("decode_split_kv",
         "decode shape L=" + str(p.len_q) + " <= " + str(kDecodeMaxLenQ) + ", S=" + str(p.len_kv) +
             " >= " + str(kDecodeMinLenKv) + " and B*Hq=" + str(bh) + " < " + str(units) +
             (gpu ? " SMs" : " cores") + ": split-KV backends spread the keys over the device",
         [](const Backend& b) { return b.capabilities().traits.split_kv; });
  }

  // tiny_prefers_math: on a CPU, tiling and thread start-up cost more than tiny work.
  if (!gpu) {
    const std::int64_t work =
        mul_sat(mul_sat(mul_sat(bh, p.len_q), p.len_kv), p.head_dim_qk + p.head_dim_v);
    if (work <= kTinyMaxWork) {
      fire("tiny_prefers_math",
           "B*Hq*L*S*(Dqk+Dv)=" + str(work) + " <= " + str(kTinyMaxWork) +
               " on a CPU: the math path has no tiling or threading overhead",
           [](const Backend& b) { return b.capabilities().traits.pytorch == PytorchKernel::math; });
    }
  }
  return fired;
}

}  // namespace sdpa::dispatcher
