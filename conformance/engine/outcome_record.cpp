#include "conformance/engine/outcome_record.hpp"

namespace sdpa::conformance {

void set_outcome(CaseRecord& r, const CaseOutcome& o) {
  r.status = o.status;
  r.message = o.message;
  r.max_abs_error = o.max_abs_error;
  r.nmse = o.nmse;
  r.worst_ratio = o.worst_ratio;
  r.worst_where = o.worst_where;
  r.tensor_ratios = o.tensor_ratios;
  r.nondeterministic_backward = o.nondeterministic_backward;
  r.output_digest = o.output_digest;
  r.judged = o.judged;
  r.not_returned = o.not_returned;
}

}  // namespace sdpa::conformance
