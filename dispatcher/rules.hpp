// The named ordering rules of the dispatcher: device preferences and shape heuristics.
// They only reorder the enabled backends (never enable, never skip a supports() check) and
// never apply over an explicit priority. docs/DISPATCH.md, "Rules".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "core/problem.hpp"
#include "kernels/backend.hpp"

namespace sdpa::dispatcher {

// The rules read a backend's Capabilities::traits (kernels/backend.hpp), never its name.

// One rule that fired: its name, the condition as it held, what it moved to the front.
struct RuleFiring {
  std::string name;                   // "cudnn_preferred", "decode_split_kv", ...
  std::string why;                    // the condition with the problem's values
  std::vector<std::string> promoted;  // backends moved to the front, in their new order
};

// Names of every rule, in the order they are applied.
const std::vector<std::string>& rule_names();

// Rules that are PyTorch's (mirrored) rather than this suite's own.
bool is_pytorch_rule(std::string_view name);

// Limits of the shape heuristics.
inline constexpr std::int64_t kDecodeMaxLenQ = 4;     // decode: L <= 4
inline constexpr std::int64_t kDecodeMinLenKv = 256;  // with S >= 256
inline constexpr std::int64_t kTinyMaxWork = 32768;   // B*Hq*L*S*(Dqk+Dv) <= this

// Applies every rule to `order` (the enabled backends, first = preferred) in turn; a rule
// fires when its condition holds and it has at least one backend to promote. Returns the
// rules that fired, in order.
// `only`: apply just the rules named there (nullptr: every rule). `promote_models`: a rule
// may promote a backend that only models another library's kernel (Traits::model_only, as
// cuda.cudnn); the PyTorch policy sets it, the suite policy does not, so that its rules
// never put a backend without a kernel first (registry order has such backends last).
std::vector<RuleFiring> apply_rules(const Problem& p, const Device& device,
                                    std::vector<const Backend*>& order,
                                    const std::vector<std::string>* only = nullptr,
                                    bool promote_models = false);

}  // namespace sdpa::dispatcher
