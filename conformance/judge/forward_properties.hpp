// The forward properties a backend declares and the dispatcher trusts (Capabilities::
// deterministic, batch_invariant; `explain --deterministic` selects by them), verified on
// every case the judge runs: a declaration is a claim to check, never a given.
//
//   deterministic    the forward's output bytes (O, and the LSE and weights when asked for,
//                    gaps and margins included) are the same at two thread counts
//   batch_invariant  batch element 0's output bytes are the same when it is run alone (the
//                    same problem with batch 1, the same inputs): its result depends neither
//                    on the rest of the batch nor on the batch size. Checked where B >= 2.
#pragma once

#include <optional>
#include <string>

#include "core/case_buffers.hpp"
#include "kernels/backend.hpp"

namespace sdpa::conformance {

struct ForwardPropertyOutcome {
  std::optional<std::string> failure;  // why a declared property is false (a FAIL)
  std::string note;                    // a check that could not run, and why ("" if none)
};

// Runs `backend`'s forward again as each declared property needs and compares bytes with
// `first`, the outputs of the judged run of `p` with `options`. `in` holds the case's inputs.
ForwardPropertyOutcome check_forward_properties(const Backend& backend, const Problem& p,
                                                InputBuffers& in, const OutputBuffers& first,
                                                const Device& device, const RunOptions& options);

// The thread count of the second run of a determinism check: 3 after a run at 1, else 1.
int other_thread_count(const RunOptions& options);
// "1 thread", "3 threads", "the default thread count".
std::string threads_text(int threads);

}  // namespace sdpa::conformance
