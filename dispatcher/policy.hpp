// The selection policy: which backends may run and in which order. Thread-local and
// scoped (RAII), unlike PyTorch's process-global flags; a process default underneath,
// which the environment can set for CI (SDPA_CTS_BACKENDS). docs/DISPATCH.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa::dispatcher {

// Which picker a policy models. Policies as data: each model is a backend set, a rule set
// and a front end (docs/DISPATCH.md, "Policies").
enum class PolicyModel {
  suite,    // this build's backends (and plugins) with every named rule
  pytorch,  // PyTorch's own picker, exactly (dispatcher/pytorch_model.hpp): PyTorch's CPU
            // kernels and the CUDA descriptors, rule cudnn_preferred only, PyTorch's front end
};
// "suite", "pytorch".
const char* policy_model_name(PolicyModel m);
// The model of that name; throws std::invalid_argument naming the known ones.
PolicyModel parse_policy_model(std::string_view name);

struct Policy {
  // nullopt: every registered backend is enabled; else exactly these (possibly none).
  std::optional<std::vector<std::string>> enabled;
  // Explicit priority, first = preferred; registered backends it does not list follow in
  // registry order. Empty: registry order, adjusted by the named rules.
  std::vector<std::string> priority;
  // Apply the named device and shape rules (they never override an explicit priority).
  bool heuristics = true;
  // Decline backends whose capabilities do not declare a deterministic forward pass.
  bool require_deterministic = false;
  // The picker modelled; the fields above apply to either.
  PolicyModel model = PolicyModel::suite;
};

// The environment variable that sets the process default for CI.
inline constexpr const char* kBackendsEnv = "SDPA_CTS_BACKENDS";

// The policy an SDPA_CTS_BACKENDS value means: "a,b,c" enables exactly a, b and c with that
// priority; "none" enables nothing; "" or "all" imposes nothing. Spaces around names are
// ignored. Throws std::invalid_argument naming the variable for an empty name ("a,,b").
// Names are checked against the registry when the policy is used.
Policy policy_from_backends_env(std::string_view value);

// The process default: read from SDPA_CTS_BACKENDS on first use (a bad value throws
// std::invalid_argument from this call and from every selection that uses it).
Policy default_policy();
// Replaces the process default (every thread without a scope sees it).
void set_default_policy(Policy policy);
// Forgets the process default so the next use reads the environment again.
void reload_default_policy();

// The policy in force on this thread: the innermost scope's, else the process default.
Policy current_policy();

// Sets this thread's policy for the lifetime of the object and restores the previous one
// on destruction (also when an exception unwinds the scope). Scopes nest.
class ScopedBackends {
 public:
  // Enables exactly `backends` (duplicates dropped, order kept). With set_priority their
  // order becomes the priority, followed by the previous explicit priority's other entries;
  // without it the previous priority stays. Other fields are kept. PyTorch: sdpa_kernel.
  explicit ScopedBackends(const std::vector<std::string>& backends, bool set_priority = false);
  // Sets a whole policy.
  explicit ScopedBackends(Policy policy);
  ~ScopedBackends();
  ScopedBackends(const ScopedBackends&) = delete;
  ScopedBackends& operator=(const ScopedBackends&) = delete;

 private:
  std::optional<Policy> saved_;  // this thread's scope before this one (nullopt: none)
};

}  // namespace sdpa::dispatcher
