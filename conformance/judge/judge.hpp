// The one judge: runs a backend on a case's inputs with guarded buffers (in the backend's
// memory space) and judges its outputs with the per-element bound (docs/CONFORMANCE.md).
// The expected values come from the reference, or from a golden file; the reference always
// supplies the error magnitudes the bound scales with. check_case (generated data) and
// golden verification (golden files) are thin adapters over judge().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conformance/judge/tolerance.hpp"
#include "core/case_buffers.hpp"
#include "core/verdict.hpp"
#include "kernels/backend.hpp"

namespace sdpa::conformance {

struct CaseOutcome {
  Status status = Status::pass;  // the verdict
  std::string message;           // why (reasons, the worst element and its bound, ...)
  double max_abs_error = 0;      // largest |kernel - expected| over O
  double nmse = 0;  // sum (kernel - expected)^2 / sum expected^2 over finite O (information only)
  double worst_ratio = 0;   // largest |error| / tolerance over O, LSE and weights
  std::string worst_where;  // "o[b,h,i,d] = ..." of the worst ratio
  // For a backward case, the worst error / tolerance per judged part: "forward" (O, LSE,
  // weights), "dq", "dk", "dv" (empty for a forward-only case).
  std::map<std::string, double> tensor_ratios;
  // For a backward case of a backend that does not declare determinism: its gradients' bytes
  // differed between two thread counts (a backend that declares it FAILs instead).
  bool nondeterministic_backward = false;
  // "fnv1a64:" and 16 hex digits of the forward's output bytes as the backend wrote them (O,
  // then the LSE and the weights when asked for, each with its gaps and margins): the same for
  // two runs of a deterministic backend on the same inputs. "" when nothing ran to the check.
  std::string output_digest;
  // What was compared with its bound: "o", "lse", "weights", "dq", "dk", "dv", "dbias" (empty
  // when the case ended before any comparison: a decline, a guard, a throw, MISTRUSTED).
  std::vector<std::string> judged;
  // The outputs the case asks for that the backend does not return, so not judged: "lse",
  // "weights", "dbias" (requested_outputs.hpp).
  std::vector<std::string> not_returned;
};

// Expected values other than the reference's: a golden file's ([B, Hq, L, Dv] O, [B, Hq, L]
// LSE, [B, Hq, L, S] weights when the case asks for them).
struct ExpectedValues {
  const std::vector<double>* o = nullptr;        // required
  const std::vector<double>* lse = nullptr;      // required
  const std::vector<double>* weights = nullptr;  // required when the problem wants weights
  std::int64_t precision_digits = 50;            // significant digits of their source
  // A backward case's expected gradients (logical, as reference::Gradients'); when null the
  // reference's are used.
  const std::vector<double>* dq = nullptr;
  const std::vector<double>* dk = nullptr;
  const std::vector<double>* dv = nullptr;
  const std::vector<double>* dbias = nullptr;  // d bias in the mask's storage (dbias cases)
};

// Expected values of limited precision (a capture from another framework): a value of
// `digits` significant decimal digits carries its own error of up to
// kCaptureUlps * capture_unit(digits) * M (conformance/judge/magnitudes.hpp), added to every
// bound. capture_unit(d) = 0.5 * 10^(1 - d) for d <= 16, 0 for more digits (values then
// are the exact result rounded once to f64, the reference's own precision).
inline constexpr double kCaptureUlps = 16;
double capture_unit(std::int64_t digits);

// Largest B*Hq*L*S*(Dqk+Dv) for which the judge runs the quality gate's naive baseline.
inline constexpr double kNaiveBaselineMaxWork = 2e8;
// Whether the quality gate (the naive baseline) runs for `p`.
bool quality_gate_runs(const Problem& p);

// INVALID or NOT_SUPPORTED (with every reason) before anything runs, else nullopt.
std::optional<CaseOutcome> precheck(const Backend& backend, const Problem& p, const Device& device);

// Judges `backend` on problem `p` with inputs `in` (snapshot taken) on `device`. Expected
// values: `expected`, or the reference's when null. Statuses: INVALID, NOT_SUPPORTED, FAIL
// (bound broken, a guard violation, or an error after supports() said yes), MISTRUSTED,
// QUALITY_WARNING, PASS. The harness's own std::bad_alloc (buffers, mirrors, the reference)
// is thrown, not a verdict: it says nothing about the backend.
CaseOutcome judge(const Backend& backend, const Problem& p, InputBuffers& in, const Device& device,
                  const RunOptions& options, const ExpectedValues* expected = nullptr,
                  const ToleranceTable& table = {});

}  // namespace sdpa::conformance
