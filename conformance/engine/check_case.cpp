#include "conformance/engine/check_case.hpp"

#include "conformance/engine/data_gen.hpp"

namespace sdpa::conformance {

CaseOutcome check_case(const Backend& backend, const Case& c, const Device& device,
                       const RunOptions& options, const ToleranceTable& table) {
  // Decline before generating data: a NOT_SUPPORTED case costs no allocation.
  if (auto early = precheck(backend, c.problem, device)) return *early;
  InputBuffers in = make_inputs(c);
  return judge(backend, c.problem, in, device, options, nullptr, table);
}

}  // namespace sdpa::conformance
