// The named ordering rules of the dispatcher: device preferences and shape heuristics.
// They only reorder the enabled backends (never enable, never skip a supports() check) and
// never apply over an explicit priority. docs/DISPATCH.md, "Rules".
#pragma once

#include <functional>
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

// Limits of the shape heuristics (the rules read them; the boundary tests in
// tests/dispatcher/rule_edges_test.cpp generate both sides of each from them).
inline constexpr std::int64_t kDecodeMaxLenQ = 4;     // decode: L <= 4
inline constexpr std::int64_t kDecodeMinLenKv = 256;  // with S >= 256
inline constexpr std::int64_t kTinyMaxWork = 32768;   // B*Hq*L*S*(Dqk+Dv) <= this

// cudnn_preferred as data: PyTorch's check_prefer_cudnn_attention puts cuDNN first on a GPU
// whose major architecture is in `majors`, with a cuDNN newer than `above_version`
// (exclusive), and whose minor is in `minors` or whose CUDA runtime is at least
// `any_minor_from_runtime` (CUDA 13 builds every minor of those architectures).
struct CudnnPreference {
  std::vector<int> majors;     // 9, 10: sm9x, sm10x
  int above_version;           // cuDNN, major * 10000 + minor * 100 + patch
  std::vector<int> minors;     // 0, 3: sm90, sm100, sm103
  int any_minor_from_runtime;  // CUDA runtime, major * 1000 + minor * 10
};
const CudnnPreference& cudnn_preference();
// Whether cudnn_preferred's condition holds on `device` (a GPU).
bool cudnn_preferred_on(const Device& device);

// The two reorderings a rule may make, each keeping the relative order of the backends it
// moves and of those it leaves (a stable partition): promote moves the backends matching
// `pick` to the front, demote moves them to the back. Both return the names moved, in their
// new order. Every rule above promotes; demote is the primitive a demoting rule must use.
std::vector<std::string> promote(std::vector<const Backend*>& order,
                                 const std::function<bool(const Backend&)>& pick);
std::vector<std::string> demote(std::vector<const Backend*>& order,
                                const std::function<bool(const Backend&)>& pick);

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
