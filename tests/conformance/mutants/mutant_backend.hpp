// A Backend around the mutant kernel (mutant_kernel.hpp): the correct control
// (Mutation::none, named "mutant.control") or one bug of the catalog ("mutant.<name>").
// Test-only: built into the mutant test binary, never into the product libraries.
#pragma once

#include <string>

#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"
#include "tests/conformance/mutants/mutation.hpp"

namespace sdpa::testing {

class MutantBackend : public Backend {
 public:
  explicit MutantBackend(Mutation m);
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  // f32 accumulation (f64 for f64 problems), P not rounded, online softmax per key block.
  // Every mutant declares the contract of the correct kernel: a bug may not excuse itself.
  PrecisionContract precision(DType dtype) const override;
  // The same answer for every mutation: a mutant accepts what the correct kernel accepts.
  Support supports(const LoweredProblem& p, const Device& device) const override;
  void run(const LoweredProblem& p, const Device& device, const RunOptions& options) const override;

 private:
  Mutation mutation_;  // the bug (none = correct)
  std::string name_;   // "mutant.control" or "mutant.<catalog name>"
  Capabilities caps_;  // every dtype and feature except attention weights, on the CPU
};

}  // namespace sdpa::testing
