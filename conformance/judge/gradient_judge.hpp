// The backward half of the judge: runs a backend's backward on a case whose forward it has
// just passed, with guarded gradient buffers, and judges dQ, dK and dV element by element
// against the reference's exact gradients with the gradients' bound
// (conformance/judge/gradient_tolerance.hpp, docs/CONFORMANCE.md).
#pragma once

#include <map>
#include <string>

#include "conformance/judge/judge.hpp"
#include "conformance/judge/tolerance.hpp"
#include "core/case_buffers.hpp"
#include "core/verdict.hpp"
#include "kernels/backend.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {

struct GradientOutcome {
  Status status = Status::pass;          // PASS or FAIL
  std::string message;                   // why it failed
  double worst_ratio = 0;                // largest |error| / tolerance over dQ, dK, dV
  std::string worst_where;               // "dk[b,h,j,e] = ..." of the worst ratio
  double max_abs_error = 0;              // largest |kernel - exact| over the gradients
  std::map<std::string, double> ratios;  // worst ratio per tensor: "dq", "dk", "dv"
  // The backward ran a second time at another thread count and its gradients' bytes differed
  // (a FAIL when the backend declares determinism; else recorded: the training profile
  // requires a deterministic backward).
  bool nondeterministic = false;
};

// `forward` is what the backend's run() got, with its O and LSE written (host memory);
// `outputs` the same outputs' guarded buffers, `ref` the reference's forward. `in` must
// hold dO. The backward runs twice, at options.threads and at another thread count (1, or 3
// when options.threads is 1), and the two runs' gradient bytes are compared.
// With `expected` holding gradients (a golden file's), those are the expected values; the
// bound is the reference's, plus for a capture of limited precision its own error
// (kCaptureUlps capture units times M, M the f64 contract's bound over 2^-53).
GradientOutcome judge_gradients(const Backend& backend, const Problem& p, InputBuffers& in,
                                OutputBuffers& outputs, const Buffers& forward,
                                const reference::Result& ref, const Device& device,
                                const RunOptions& options, const ToleranceTable& table,
                                const ExpectedValues* expected = nullptr);

}  // namespace sdpa::conformance
