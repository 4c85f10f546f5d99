// The results-file route (docs/PLUGINS.md, "Results files"): for an implementation that
// cannot be loaded as a library (Python, JAX, a remote accelerator), `sdpa-cts cases export`
// writes every case's inputs in the golden schema, the user fills in `o` (and `lse`,
// `weights`) from their framework, and `sdpa-cts cases judge --results` judges those outputs with
// the one judge. A results file's outputs are a backend's outputs, not expected values: the
// expected values come from the reference, the bound from the declared precision contract.
// Backward cases (bwd): the file also holds dO; the user fills in dq, dk, dv from their
// framework's autograd, and those are judged as a backward's gradients.
#pragma once

#include <string>
#include <string_view>

#include "golden/golden_file.hpp"
#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::golden {

// A precision contract from its text: comma-separated key=value, every key optional:
//   acc=f64|f32|f16|bf16    accumulation type (default f32)
//   p=f64|f32|f16|bf16      type P is rounded to before P V (default: acc)
//   online=0|1              online softmax over key blocks (default 0)
//   block=N                 keys per block of the online softmax (default 0)
//   mma=B/E                 tensor-core accumulation: block FMAs of B products keeping E extra
//                           alignment bits, truncated (default none; docs/CONFORMANCE.md)
// e.g. "acc=f32,p=bf16,online=1,block=64". Throws std::invalid_argument naming the key.
PrecisionContract parse_contract(std::string_view text);
std::string format_contract(const PrecisionContract& c);

// A backend that "computes" one case by copying the outputs recorded for it in a results
// file into the judge's buffers. Its supports() declines a case whose file lacks an output
// the case asks for (naming the dataset), so an unfilled case is NOT_SUPPORTED, never a
// wrong verdict.
class RecordedResults final : public Backend {
 public:
  RecordedResults(std::string name, const GoldenCase& results, PrecisionContract contract,
                  std::string file);
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType) const override { return contract_; }
  Support supports(const LoweredProblem& p, const Device& device) const override;
  void run(const LoweredProblem& p, const Device& device, const RunOptions& options) const override;
  // The recorded dq, dk, dv (a backward case whose file holds them, schema version 2).
  void run_backward(const LoweredProblem& p, const Device& device,
                    const RunOptions& options) const override;

 private:
  std::string name_;
  const GoldenCase& results_;
  PrecisionContract contract_;
  std::string file_;
  Capabilities caps_;
};

}  // namespace sdpa::golden
