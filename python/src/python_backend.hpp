// A Python function judged as a backend: the suite's jobs (conformance/engine/runner.hpp) run
// it like any other backend, so a check from Python gives the same records, repro lines and
// reports as `sdpa-cts run`. What it takes and how it rounds is its declared contract.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>

#include "core/case_buffers.hpp"
#include "core/case_id.hpp"
#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::python {

namespace nb = nanobind;

// One case as Python sees it: its ID, parameters and inputs. During a judged run, inputs()
// are views of that run's buffers (valid for the call); otherwise the case makes its own
// inputs (generated from the ID, or read from its golden file) on first use.
struct PyCase {
  std::string id;                         // canonical case ID
  std::string golden;                     // golden file holding it, "" for generated data
  Case c;                                 // parsed
  std::shared_ptr<InputBuffers> owned;    // inputs made outside a run
  const Buffers* live = nullptr;          // the buffers of the run calling the function
  const void* live_d_out = nullptr;       // dO of a backward run
  const Problem* live_problem = nullptr;  // that run's problem: the case's own, or one batch
                                          // element of it (the judge's batch-invariance rerun)
};

// The problem inputs() and params() describe: the running call's while one is bound.
inline const Problem& problem_of(const PyCase& c) {
  return c.live_problem ? *c.live_problem : c.c.problem;
}

// The rounding and the capabilities a Python function declares (sdpa_cts.Contract).
struct PyContract {
  PrecisionContract precision;    // as for f32; the *_is_input flags override the types
  bool p_type_is_input = false;   // P rounded to the input type before P V (PyTorch's math)
  bool ds_type_is_input = false;  // P and dS rounded to the input type in the backward
  Capabilities caps;              // what it accepts (check_capabilities)
};

class PythonBackend final : public Backend {
 public:
  // grad_fn (None: no backward) maps a case bound to a backward run's buffers (its inputs and
  // d_out) to a dict of dq, dk, dv.
  PythonBackend(std::string name, nb::object fn, nb::object grad_fn, PyContract contract);
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return contract_.caps; }
  PrecisionContract precision(DType dtype) const override;
  Support supports(const LoweredProblem& p, const Device& device) const override;
  // Calls fn(case) with the case bound to `buffers`, then copies what it returned (O, or a
  // dict with "o" and optionally "lse", "weights", or a tuple (o, lse)) into them. A Python
  // exception or a malformed result is a std::runtime_error naming it (a FAIL).
  void run(const LoweredProblem& p, const Device& device, const RunOptions& options) const override;
  // Calls grad_fn(case) and copies the dq, dk, dv it returns into `grads`, in the layouts of
  // Q, K and V.
  void run_backward(const LoweredProblem& p, const Device& device,
                    const RunOptions& options) const override;

  // The case the next run() passes to fn (a Python sdpa_cts.Case wrapping a PyCase).
  void set_case(nb::object py_case) { case_ = std::move(py_case); }

 private:
  std::string name_;
  nb::object fn_;
  nb::object grad_fn_;
  PyContract contract_;
  nb::object case_;
};

}  // namespace sdpa::python
