// The dispatcher: picks the backend that runs a problem on a device under a policy, by
// calling each backend's supports() (the one source of truth) in priority order, and
// explains the decision as data. docs/DISPATCH.md.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/problem.hpp"
#include "dispatcher/policy.hpp"
#include "dispatcher/rules.hpp"
#include "kernels/backend.hpp"
#include "kernels/registry.hpp"

namespace sdpa::dispatcher {

// One backend that declined, with every reason.
struct Rejection {
  std::string backend;               // its name
  std::vector<std::string> reasons;  // supports()'s reasons, then the policy's
};

class DispatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The policy enables no backend at all (PyTorch: "No viable backend ... turning off both
// the math kernel and the fused kernels").
class NoBackendEnabledError : public DispatchError {
 public:
  using DispatchError::DispatchError;
};

// Backends are enabled but every one declined; the message lists each with all reasons.
class NoViableBackendError : public DispatchError {
 public:
  NoViableBackendError(const std::string& message, std::vector<Rejection> rejected)
      : DispatchError(message), rejected_(std::move(rejected)) {}
  const std::vector<Rejection>& rejected() const { return rejected_; }

 private:
  std::vector<Rejection> rejected_;
};

// The reason a policy that requires determinism adds for a backend that does not declare it.
inline constexpr const char* kNotDeterministic =
    "its forward pass is not deterministic, and the policy requires determinism";

// The backend that runs `p` on `device`: the first enabled backend, in the effective
// order (explicit priority, or registry order adjusted by the rules), whose supports()
// says yes. Throws std::invalid_argument for an invalid problem or a policy naming a
// backend not in `backends`, NoBackendEnabledError, or NoViableBackendError.
//
// Under the PyTorch policy (PolicyModel::pytorch) the decision is PyTorch's: its front end
// first (torch_call()), and a backend whose picker accepts a problem its kernel then refuses
// is selected (the Explanation says it raises); under the suite policy such a backend
// declines.
const Backend& select(const Problem& p, const Device& device, const Policy& policy,
                      const std::vector<const Backend*>& backends);
// The same with the policy's backends (policy_backends()).
const Backend& select(const Problem& p, const Device& device,
                      const Policy& policy = current_policy());

// The backends a policy chooses among: this build's registry (with loaded plugins) for the
// suite policy, pytorch_model_backends() for the PyTorch policy.
const std::vector<const Backend*>& policy_backends(const Policy& policy);

// Why each backend was or was not chosen.
enum class Verdict {
  chosen,          // runs the problem
  lower_priority,  // could run it, but a backend before it in the order was chosen
  not_preferred,   // could run it and ranks before the chosen one by default, but a rule
                   // moved the chosen one ahead
  rejected,        // supports() (or the policy's determinism requirement) declined
  disabled,        // the policy does not enable it
};
const char* verdict_name(Verdict v);

struct BackendVerdict {
  std::string name;  // backend name
  Verdict verdict = Verdict::disabled;
  int rank = -1;                     // position in the effective order (0 = first), -1 disabled
  std::vector<std::string> reasons;  // rejected: every reason; otherwise one sentence
};

enum class Outcome {
  selected,
  no_backend_enabled,
  no_viable_backend,
  invalid_problem,
  not_expressible,  // PyTorch policy: the public API cannot express the problem
};
const char* outcome_name(Outcome o);

// Under the suite policy: what PyTorch (the PyTorch policy, default settings) picks for the
// same problem, and why this policy departs from it.
struct PytorchComparison {
  std::string choice;            // PyTorch's SDPBackend: flash, efficient, math, cudnn, error,
                                 // or "not_expressible"
  std::string backend;           // the model's backend ("" when none)
  bool departs = false;          // this policy's choice is not PyTorch's
  std::vector<std::string> why;  // each reason it departs (empty when it does not)
};

struct Explanation {
  PolicyModel model = PolicyModel::suite;  // the policy's model
  Outcome outcome = Outcome::invalid_problem;
  std::string chosen;                    // the chosen backend ("" unless selected)
  std::string order_source;              // "explicit priority" or "registry order"
  std::vector<std::string> order;        // the enabled backends in effective order
  std::vector<RuleFiring> rules;         // the rules that fired
  std::vector<BackendVerdict> backends;  // every backend, in registry order
  std::string message;  // invalid problem: the reason; no backend: the error select() throws
  // PyTorch policy only:
  std::string torch_route;             // torch_route_name() of the front end's route
  std::vector<std::string> front_end;  // the front end's conversions, or why not expressible
  std::string pytorch_choice;          // SDPBackend name of the choice ("error" when none)
  std::vector<std::string> raises;     // the chosen backend is selected and then raises this
  // Suite policy only:
  std::optional<PytorchComparison> pytorch;
};

// The same decision as select(), as data: every backend's verdict. It never throws for a
// problem or a missing backend (those are outcomes); it throws std::invalid_argument for a
// policy naming a backend not in `backends`, as select() does.
Explanation explain(const Problem& p, const Device& device, const Policy& policy,
                    const std::vector<const Backend*>& backends);
// The same with the policy's backends (policy_backends()).
Explanation explain(const Problem& p, const Device& device,
                    const Policy& policy = current_policy());

}  // namespace sdpa::dispatcher
